package activities

import (
	"context"

	"go.temporal.io/sdk/activity"

	"github.com/durable-ralph/ralph/internal/attempts"
)

// recordAttempt records the running attempt in a.Attempts (its task
// token, then its agent's process), for a worker that starts again after
// this one died; the returned function removes the record when the
// attempt ends here. Without Attempts it records nothing.
func (a *Agent) recordAttempt(ctx context.Context, info activity.Info) (done func()) {
	if a.Attempts == nil {
		return func() {}
	}
	rec, err := a.Attempts.Start(attempts.Record{
		TaskToken: info.TaskToken, WorkflowID: info.WorkflowExecution.ID, RunID: info.WorkflowExecution.RunID,
		ActivityID: info.ActivityID, Attempt: info.Attempt,
	})
	if err != nil {
		// The attempt runs; a restart finds it by its heartbeat timeout.
		activity.GetLogger(ctx).Warn("attempt not recorded", "error", err)
	}
	a.agentStarted = func(pid int) { _ = rec.Agent(pid) }
	return rec.Done
}
