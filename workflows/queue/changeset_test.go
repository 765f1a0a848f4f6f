package queue_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/workflows/queue"
)

// TestQueueWorksOnAnIssueSpanningRepositoriesAsAChangeSet: a ready issue
// whose Repos: line names two repositories is worked on by a ChangeSet
// (not a session of the queue's own): the queue's repository in the
// queue's clone, the other to be cloned, each with the queue's settings,
// the issue as the origin; once the set says every pull request is open
// the slot is free and the set is followed, as a pull request's follower
// is; its end counts as the pull request's.
func TestQueueWorksOnAnIssueSpanningRepositoriesAsAChangeSet(t *testing.T) {
	spanning := contract.PickResult{Labelled: 1, Issue: &contract.Issue{Number: 5, Title: "Greet", LabeledBy: "alice",
		Repos: []contract.ChangeSetMember{{Repo: "acme/app"}, {Repo: "acme/web", After: []string{"acme/app"}}}}}
	env := newQueueEnv(t, completed, spanning, contract.PickResult{})
	var got contract.ChangeSetInput
	env.changeSet = func(ctx workflow.Context, in contract.ChangeSetInput) (contract.ChangeSetStatus, error) {
		got = in
		if err := workflow.Sleep(ctx, time.Hour); err != nil {
			return contract.ChangeSetStatus{}, err
		}
		end := contract.IssueEnded{Following: true, Outcome: contract.IssueOutcome{Number: 5, Title: "Greet", ChangeSet: in.Spec.Name, Reason: contract.ReasonComplete, CostUSD: 1.5}}
		return contract.ChangeSetStatus{State: contract.SetMerged}, workflow.SignalExternalWorkflow(ctx, in.Origin.QueueID, "", contract.SignalIssueEnded, end).Get(ctx, nil)
	}
	in := queueInput()
	in.Session.Limits.MaxCostUSD = 4
	in.Settings.BaseBranch = "develop"
	env.ExecuteWorkflow(queue.IssueQueue, in)
	next := carried(t, env)

	require.Equal(t, "acme-app-5", got.Spec.Name)
	require.Equal(t, spanning.Issue.Repos, got.Spec.Members)
	require.Len(t, got.Members, 2)
	app, web := got.Members[0], got.Members[1]
	require.Equal(t, "acme/app", app.Settings.Repo.FullName())
	require.Equal(t, "/work/app", app.Settings.Clone)
	require.Equal(t, "develop", app.Settings.BaseBranch)
	require.Equal(t, "acme/web", web.Settings.Repo.FullName())
	require.Empty(t, web.Settings.Clone, "cloned by the worker")
	require.Empty(t, web.Session.Workspace)
	require.Empty(t, web.Settings.BaseBranch, "the queue's base branch is its repository's")
	require.Equal(t, "ralph-ready", web.Settings.Label)
	require.Equal(t, 4.0, got.MaxCostUSD, "the issue's budget is the set's")
	require.NotNil(t, got.Origin)
	require.Equal(t, 5, got.Origin.Issue.Number)
	require.NotEmpty(t, got.Origin.QueueID)
	require.Empty(t, env.children, "no session of the queue's own")

	c := next.CarryOver
	require.Equal(t, 1, c.Totals.Done)
	require.InDelta(t, 1.5, c.Totals.CostUSD, 1e-9)
	require.Len(t, c.Recent, 1)
	require.Equal(t, 5, c.Recent[0].Number)
	require.Empty(t, c.Working, "the set's word freed its slot")
	require.Equal(t, []int{5}, c.Following)
	require.Equal(t, map[int]string{5: "ralph-changeset-acme-app-5"}, c.Sets)

	// The next run shows the set as #5's follower, and counts its merge.
	env2 := newQueueEnv(t, completed, contract.PickResult{})
	var followers []contract.Follower
	env2.RegisterDelayedCallback(func() {
		v, err := env2.QueryWorkflow(contract.QueryStatus)
		require.NoError(t, err)
		var st contract.QueueStatus
		require.NoError(t, v.Get(&st))
		followers = st.Followers
		env2.SignalWorkflow(contract.SignalPullEnded, contract.PullEnd{Issue: 5, Result: contract.FollowResult{
			Reason: contract.ReasonMerged, Message: "change set acme-app-5 merged", CostUSD: 0.5}})
	}, 30*time.Minute)
	next.Settings.UntilIdle = true
	env2.ExecuteWorkflow(queue.IssueQueue, next)
	var res contract.QueueResult
	require.NoError(t, env2.GetWorkflowResult(&res))
	require.Equal(t, []contract.Follower{{Issue: 5, WorkflowID: "ralph-changeset-acme-app-5"}}, followers)
	require.Equal(t, 1, res.Totals.Merged)
	require.InDelta(t, 2.0, res.Totals.CostUSD, 1e-9)
}
