package schedule_test

import (
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/workflows/schedule"
	"github.com/durable-ralph/ralph/workflows/session"
	"github.com/durable-ralph/ralph/workflows/workflowtest"
)

var a *activities.Agent

// TestScheduledRunsTheSessionAndWaits: a schedule's run starts the session
// as its child, waits for its end and reports it; the session tells
// people its end as one started by hand does.
func TestScheduledRunsTheSessionAndWaits(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(schedule.Scheduled)
	env.RegisterWorkflow(session.Session)
	sent := workflowtest.RegisterNotify(env)
	env.OnActivity(a.PrepareWorkspace, mock.Anything, mock.Anything).Return(workflowtest.Prepared(), nil)
	env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(workflowtest.Progressed(1, 1), nil)
	in := workflowtest.SessionInput()
	in.Limits.MaxIterations = 2
	in.Scheduled = "nightly"
	env.ExecuteWorkflow(schedule.Scheduled, contract.ScheduledInput{Name: "nightly", WorkflowID: "ralph-repo-abc@host", Session: &in,
		Keywords: []contract.Keyword{{Name: contract.SearchRalphHost, Value: "host"}}})
	var res contract.ScheduledResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, contract.ScheduledResult{WorkflowID: "ralph-repo-abc@host", Reason: contract.ReasonMaxIterations, Message: "2 iterations ran, the limit"}, res)
	var ends int
	for _, n := range sent.List() {
		if n.Event == contract.NotifyLimit {
			ends++
		}
	}
	require.Equal(t, 1, ends, "the scheduled session tells its end: %+v", sent.List())
}

func TestScheduledRefusesABadInput(t *testing.T) {
	for _, in := range []contract.ScheduledInput{
		{Name: "bad name", WorkflowID: "x", Session: &contract.SessionInput{}},
		{Name: "n", Session: &contract.SessionInput{}},
		{Name: "n", WorkflowID: "x"},
		{Name: "n", WorkflowID: "x", Session: &contract.SessionInput{}, Queue: &contract.QueueInput{}},
	} {
		var suite testsuite.WorkflowTestSuite
		env := suite.NewTestWorkflowEnvironment()
		env.RegisterWorkflow(schedule.Scheduled)
		env.ExecuteWorkflow(schedule.Scheduled, in)
		require.Error(t, env.GetWorkflowError(), "%+v", in)
	}
}
