package session_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/workflows/notify"
	"github.com/durable-ralph/ralph/workflows/session"
	"github.com/durable-ralph/ralph/workflows/workflowtest"
)

// TestSessionNotifiesItsQuestionAndItsEnd: a checkpoint question is one
// notification that names the checkpoint and its choices; the end is one
// more, with iterations, commits and cost.
func TestSessionNotifiesItsQuestionAndItsEnd(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(session.Session)
	sent := workflowtest.RegisterNotify(env)
	env.OnActivity(a.PrepareWorkspace, mock.Anything, mock.Anything).Return(workflowtest.Prepared(), nil)
	in := workflowtest.SessionInput()
	in.Checkpoints.Every = 1
	in.Limits.MaxIterations = 1
	env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(workflowtest.Progressed(1, 0), nil)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(contract.SignalCheckpoint, contract.Answer{ID: "cp-1-review", Approve: true})
	}, time.Minute)
	env.ExecuteWorkflow(session.Session, in)
	require.True(t, env.IsWorkflowCompleted())
	got := sent.List()
	require.Len(t, got, 2, "%+v", got)
	q := got[0]
	require.Equal(t, contract.NotifyQuestion, q.Event)
	require.Equal(t, "cp-1-review", q.Checkpoint)
	require.Equal(t, 1, q.Question)
	require.Equal(t, []string{"approve", "reject"}, q.Choices)
	require.Equal(t, in.Workspace, q.Session)
	require.Equal(t, contract.NotifyKey(q.WorkflowID, q.RunID, contract.NotifyQuestion, 1), q.Key)
	end := got[1]
	require.Equal(t, contract.NotifyLimit, end.Event)
	require.Contains(t, end.Text, "ended max_iterations")
	require.Contains(t, end.Details[0], "1 iteration, ")
}

// TestUndeliveredNotificationIsInStatus: a notification a channel did not
// take before notify.max-age is listed in the session's status.
func TestUndeliveredNotificationIsInStatus(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(session.Session)
	env.RegisterWorkflow(notify.Notification)
	env.RegisterActivityWithOptions(func(_ context.Context, note contract.Notification) (contract.NotifyResult, error) {
		if note.Channel == contract.ChannelSlack {
			return contract.NotifyResult{GaveUp: []string{"slack: 500 Internal Server Error"}}, nil
		}
		return contract.NotifyResult{}, nil
	}, activity.RegisterOptions{Name: contract.ActivityNotify})
	env.RegisterActivityWithOptions(func(context.Context, contract.NotifyEvent) (bool, error) { return true, nil },
		activity.RegisterOptions{Name: contract.ActivityNotifies})
	env.OnActivity(a.PrepareWorkspace, mock.Anything, mock.Anything).Return(workflowtest.Prepared(), nil)
	env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(workflowtest.Progressed(1, 0), nil)
	in := workflowtest.SessionInput()
	in.Checkpoints.Every = 1
	var st contract.Status
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(contract.QueryStatus)
		require.NoError(t, err)
		require.NoError(t, v.Get(&st))
		env.CancelWorkflow()
	}, time.Hour)
	env.ExecuteWorkflow(session.Session, in)
	require.Len(t, st.Undelivered, 1, "%+v", st)
	require.Equal(t, contract.NotifyQuestion, st.Undelivered[0].Event)
	require.Equal(t, []string{"slack: 500 Internal Server Error"}, st.Undelivered[0].GaveUp)
}

// TestNoNotificationWhereNothingIsSent: a worker with no channel for the
// event says so, and the session starts no Notification workflow.
func TestNoNotificationWhereNothingIsSent(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(session.Session)
	env.RegisterWorkflow(notify.Notification)
	var asked []contract.NotifyEvent
	env.RegisterActivityWithOptions(func(_ context.Context, e contract.NotifyEvent) (bool, error) {
		asked = append(asked, e)
		return false, nil
	}, activity.RegisterOptions{Name: contract.ActivityNotifies})
	env.RegisterActivityWithOptions(func(context.Context, contract.Notification) (contract.NotifyResult, error) {
		t.Error("a notification was sent")
		return contract.NotifyResult{}, nil
	}, activity.RegisterOptions{Name: contract.ActivityNotify})
	env.OnActivity(a.PrepareWorkspace, mock.Anything, mock.Anything).Return(workflowtest.Prepared(), nil)
	env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(workflowtest.Progressed(1, 0), nil)
	in := workflowtest.SessionInput()
	in.Limits.MaxIterations = 1
	env.ExecuteWorkflow(session.Session, in)
	require.True(t, env.IsWorkflowCompleted())
	require.Equal(t, []contract.NotifyEvent{contract.NotifyLimit}, asked)
}
