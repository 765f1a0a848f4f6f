package main

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/durable-ralph/ralph/app"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/workflows/session"
)

// startOrAttach starts the session unless one is already running with id.
// previous describes the last session of the workspace when it has ended
// (a new one then starts, with records of its own); with attachOnly no
// session is started.
func startOrAttach(ctx context.Context, c client.Client, taskQueue, id string, in contract.SessionInput, attachOnly bool, check func() error) (attached bool, previous string, err error) {
	desc, err := c.DescribeWorkflowExecution(ctx, id, "")
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
	case err != nil:
		return false, "", fmt.Errorf("describe session %s: %w", id, err)
	case desc.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		return true, "", nil
	default:
		info := desc.GetWorkflowExecutionInfo()
		state := attr(info.GetSearchAttributes().GetIndexedFields(), contract.SearchRalphStatus, executionStatus(info.GetStatus()))
		previous = fmt.Sprintf("%s at %s", state, info.GetCloseTime().AsTime().Local().Format("2006-01-02 15:04"))
	}
	if attachOnly {
		if previous != "" {
			return false, previous, fmt.Errorf("no session is running on %s (the last one ended %s); run without --attach-only to start a new one", in.Workspace, previous)
		}
		return false, "", fmt.Errorf("no session is running on %s; run without --attach-only to start one", in.Workspace)
	}
	// What the session would fail on at once fails here, before it
	// leaves a failed session behind.
	if err := check(); err != nil {
		return false, previous, err
	}
	_, err = c.ExecuteWorkflow(ctx, app.SessionStartOptions(id, taskQueue, in), session.Session, in)
	if err != nil {
		return false, previous, fmt.Errorf("start session %s: %w", id, err)
	}
	return false, previous, nil
}
