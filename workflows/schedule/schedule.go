// Package schedule holds the Scheduled workflow: the action of a Temporal
// Schedule made by starter schedule add, which runs a Ralph session or
// issue queue at the schedule's times.
package schedule

import (
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/workflows/flow"
	"github.com/durable-ralph/ralph/workflows/queue"
	"github.com/durable-ralph/ralph/workflows/session"
)

// Scheduled starts the session or the issue queue of in as a child
// workflow under the ID it has when started by hand (so status, stop and
// the other commands find it), and waits for its end: while it runs, the
// schedule's overlap policy (skip, by default) skips the next times. When
// that workflow runs already (started by hand, or by another schedule)
// this run starts nothing. The child is abandoned, not cancelled, when
// this run is terminated or its schedule deleted.
func Scheduled(ctx workflow.Context, in contract.ScheduledInput) (contract.ScheduledResult, error) {
	if err := in.Validate(); err != nil {
		return contract.ScheduledResult{}, temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrTypeInvalidInput, nil)
	}
	logger := workflow.GetLogger(ctx)
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:            in.WorkflowID,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_ABANDON,
		TypedSearchAttributes: keywords(in.Keywords),
		StaticSummary:         in.Summary,
		StaticDetails:         fmt.Sprintf("Started by the schedule `%s`", in.Name),
	})
	var fut workflow.ChildWorkflowFuture
	if in.Session != nil {
		fut = workflow.ExecuteChildWorkflow(cctx, session.Session, *in.Session)
	} else {
		fut = workflow.ExecuteChildWorkflow(cctx, queue.IssueQueue, *in.Queue)
	}
	res := contract.ScheduledResult{WorkflowID: in.WorkflowID}
	err := fut.GetChildWorkflowExecution().Get(ctx, nil)
	var running *temporal.ChildWorkflowExecutionAlreadyStartedError
	switch {
	case errors.As(err, &running):
		res.Skipped = fmt.Sprintf("%s runs already: nothing started", in.WorkflowID)
		logger.Info(res.Skipped, "schedule", in.Name)
		return res, nil
	case err != nil:
		return res, fmt.Errorf("start %s: %w", in.WorkflowID, err)
	}
	logger.Info("scheduled workflow started", "schedule", in.Name, "workflow", in.WorkflowID)
	if in.Session != nil {
		var r contract.SessionResult
		err = fut.Get(ctx, &r)
		res.Reason, res.Message = r.Reason, r.Message
	} else {
		var r contract.QueueResult
		err = fut.Get(ctx, &r)
		res.Reason, res.Message = r.Reason, r.Message
	}
	if err != nil {
		// What became of the session is its own story; the schedule's
		// run ends as it should.
		res.Failure = flow.RootMessage(err)
	}
	return res, nil
}

// keywords are the keyword search attributes kws.
func keywords(kws []contract.Keyword) temporal.SearchAttributes {
	var updates []temporal.SearchAttributeUpdate
	for _, k := range kws {
		updates = append(updates, temporal.NewSearchAttributeKeyKeyword(k.Name).ValueSet(k.Value))
	}
	return temporal.NewSearchAttributes(updates...)
}
