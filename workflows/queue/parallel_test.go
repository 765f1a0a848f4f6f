package queue_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/workflows/queue"
)

// a names the worker's activities by their methods; it is never called.
var a *activities.Agent

// sessionTaking runs in place of an issue's session: it lasts the time
// took gives its issue, and records when it started.
func sessionTaking(started map[int]time.Time, took map[int]time.Duration) func(workflow.Context, contract.SessionInput) (contract.SessionResult, error) {
	return func(ctx workflow.Context, in contract.SessionInput) (contract.SessionResult, error) {
		started[in.Issue.Number] = workflow.Now(ctx)
		if err := workflow.Sleep(ctx, took[in.Issue.Number]); err != nil {
			return contract.SessionResult{}, err
		}
		return completed, nil
	}
}

// TestQueueWorksOnIssuesInParallel: with queue.parallel 2, two ready
// issues are worked on at once, each by its own IssueWork workflow and
// session; the second pick passes over the first issue; when one ends the
// queue continues as new carrying the other, still worked on.
func TestQueueWorksOnIssuesInParallel(t *testing.T) {
	env := newQueueEnv(t, completed, ready(1), ready(2), contract.PickResult{})
	started := map[int]time.Time{}
	env.child = sessionTaking(started, map[int]time.Duration{1: 10 * time.Minute, 2: 3 * time.Hour})
	in := queueInput()
	in.Settings.Parallel = 2
	start := env.Now()
	env.ExecuteWorkflow(queue.IssueQueue, in)
	next := carried(t, env)

	require.Len(t, started, 2)
	require.Equal(t, started[1], started[2], "both issues' sessions start at once")
	require.Less(t, started[2].Sub(start), time.Minute)
	require.Equal(t, [][]int{nil, {1}}, env.skips, "the second look passes over the issue being worked on; two slots taken, no third look")
	c := next.CarryOver
	require.Equal(t, 1, c.Totals.Done)
	require.InDelta(t, 0.5, c.Totals.CostUSD, 1e-9)
	require.Equal(t, 2, c.Totals.Iterations)
	require.Len(t, c.Recent, 1)
	require.Equal(t, 1, c.Recent[0].Number)
	out := c.Recent[0]
	require.GreaterOrEqual(t, out.FinishedAt.Sub(out.StartedAt), 10*time.Minute, "the outcome the IssueWork told says when it finished: %+v", out)
	require.Len(t, c.Working, 1, "issue 2 is still worked on when issue 1's end starts a fresh run")
	require.Equal(t, 2, c.Working[0].Number)
	require.Equal(t, contract.IssueSessionID("", "acme", "app", 2), c.Working[0].SessionID)
	var story []string
	for _, e := range c.Events {
		story = append(story, e.Text)
	}
	joined := strings.Join(story, "\n")
	require.Contains(t, joined, "picked #1")
	require.Contains(t, joined, "picked #2")
	require.Contains(t, joined, "#1: pull request #9 opened")
	require.NotContains(t, joined, "#2: pull request", "issue 2 has not got that far")
}

// TestQueueStopWaitsForItsIssues: a stop while issues are worked on lets
// them finish; the queue then ends stopped, with their outcomes.
func TestQueueStopWaitsForItsIssues(t *testing.T) {
	env := newQueueEnv(t, completed, ready(3))
	started := map[int]time.Time{}
	env.child = sessionTaking(started, map[int]time.Duration{3: time.Hour, 4: time.Hour})
	env.OnActivity(contract.ActivityStillRunning, mock.Anything, mock.Anything).Return(func(_ context.Context, ids []string) ([]string, error) {
		return ids, nil // every issue's workflow runs
	})
	in := queueInput()
	in.Settings.Parallel = 2
	in.CarryOver = &contract.QueueCarryOver{Preflight: contract.PreflightResult{DefaultBranch: "main"}, Runs: 1,
		Working: []contract.CurrentIssue{{Number: 4, SessionID: contract.IssueSessionID("", "acme", "app", 4)}}}
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(contract.SignalStop, contract.StopSignal{Reason: "maintenance"}) }, 5*time.Minute)
	// Issue 4's workflow (of an earlier run) tells its end late.
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(contract.SignalIssueEnded, contract.IssueEnded{Outcome: contract.IssueOutcome{Number: 4, Reason: contract.ReasonComplete, PR: 12, CostUSD: 1}})
	}, 2*time.Hour)
	env.ExecuteWorkflow(queue.IssueQueue, in)
	require.True(t, env.IsWorkflowCompleted())
	var res contract.QueueResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, contract.ReasonStopped, res.Reason)
	require.Equal(t, 2, res.Totals.Done, "both issues finished before the queue ended")
	require.Contains(t, started, 3)
}

// TestQueueFreesTheSlotOfATerminatedIssue: an issue whose workflow ended
// without telling the queue (a person terminated it) is found out by the
// check the waiting queue makes, counted failed, and its slot freed.
func TestQueueFreesTheSlotOfATerminatedIssue(t *testing.T) {
	env := newQueueEnv(t, completed, contract.PickResult{})
	var asked [][]string
	env.OnActivity(contract.ActivityStillRunning, mock.Anything, mock.Anything).Return(func(_ context.Context, ids []string) ([]string, error) {
		asked = append(asked, ids)
		return nil, nil
	})
	in := queueInput()
	in.CarryOver = &contract.QueueCarryOver{Preflight: contract.PreflightResult{DefaultBranch: "main"}, Runs: 1,
		Working: []contract.CurrentIssue{{Number: 8, Title: "Gone", SessionID: contract.IssueSessionID("", "acme", "app", 8),
			Iterations: []contract.IterationSummary{{Iteration: 4}}}}}
	env.ExecuteWorkflow(queue.IssueQueue, in)
	next := carried(t, env)
	require.Equal(t, [][]string{{contract.IssueWorkID(contract.IssueSessionID("", "acme", "app", 8))}}, asked)
	c := next.CarryOver
	require.Empty(t, c.Working)
	require.Equal(t, 1, c.Totals.Failed)
	require.Equal(t, 4, c.Totals.Iterations)
	require.Len(t, c.Recent, 1)
	require.Contains(t, c.Recent[0].Message, "ended without telling the queue")
	require.Empty(t, env.pickedAt, "one slot, held until the check freed it: the fresh run looks")
}
