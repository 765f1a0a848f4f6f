package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/contract"
)

// sessionWaiter holds the client through which a queue waits for an
// issue's session that an earlier start left running, and learns which
// of its issues' workflows still run.
type sessionWaiter struct {
	c client.Client
	// beat is how often the wait heartbeats.
	beat time.Duration
}

// AwaitSession waits for the session id to end and returns its result. It
// heartbeats while it waits, so a dead worker is noticed and the next
// attempt waits again. A session that failed, was terminated or is gone
// ends the wait with a non-retryable error of type
// contract.ErrTypeSessionEnded.
func (w *sessionWaiter) AwaitSession(ctx context.Context, id string) (contract.SessionResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type outcome struct {
		res contract.SessionResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		var o outcome
		o.err = w.c.GetWorkflow(ctx, id, "").Get(ctx, &o.res)
		done <- o
	}()
	beat := w.beat
	if beat <= 0 {
		beat = 10 * time.Second
	}
	tick := time.NewTicker(beat)
	defer tick.Stop()
	for {
		activity.RecordHeartbeat(ctx, id)
		select {
		case o := <-done:
			if o.err == nil {
				return o.res, nil
			}
			if ctx.Err() != nil {
				return contract.SessionResult{}, ctx.Err()
			}
			return contract.SessionResult{}, sessionWaitError(id, o.err)
		case <-tick.C:
		case <-ctx.Done():
			return contract.SessionResult{}, ctx.Err()
		}
	}
}

// sessionWaitError classifies why waiting for session id stopped: its end
// or its absence is final, anything else (the server unreachable) is
// retried.
func sessionWaitError(id string, err error) error {
	var ended *temporal.WorkflowExecutionError
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &ended):
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("the session %s ended without a result: %v", id, errors.Unwrap(ended)), contract.ErrTypeSessionEnded, err)
	case errors.As(err, &notFound):
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("the session %s no longer exists", id), contract.ErrTypeSessionEnded, err)
	}
	return fmt.Errorf("wait for the session %s: %w", id, err)
}

// StillRunning returns which of the workflows ids still run; one that
// does not exist does not.
func (w *sessionWaiter) StillRunning(ctx context.Context, ids []string) ([]string, error) {
	var running []string
	for _, id := range ids {
		d, err := w.c.DescribeWorkflowExecution(ctx, id, "")
		var notFound *serviceerror.NotFound
		switch {
		case errors.As(err, &notFound):
			continue
		case err != nil:
			return nil, fmt.Errorf("describe the workflow %s: %w", id, err)
		}
		if d.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			running = append(running, id)
		}
	}
	return running, nil
}
