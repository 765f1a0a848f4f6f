package issue_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/activities/github"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/workflows/issue"
	"github.com/durable-ralph/ralph/workflows/session"
	"github.com/durable-ralph/ralph/workflows/workflowtest"
)

// a and gha name the worker's activities by their methods; they are
// never called.
var (
	a   *activities.Agent
	gha *github.Activities
)

// TestIssueWorkTellsItsQueue: an IssueWork works on its issue from claim
// to pull request, tells its queue every line of the issue's story with
// the issue as it is then, and at the end what became of it, which it
// returns too; its status query shows the issue as it is worked on.
func TestIssueWorkTellsItsQueue(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(issue.IssueWork)
	env.RegisterWorkflow(session.Session)
	workflowtest.RegisterNotify(env)
	env.RegisterActivity(gha)
	env.RegisterActivity(a)
	env.OnActivity(gha.SetLabels, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(gha.ReadIssue, mock.Anything, mock.Anything).Return(contract.IssueText{Number: 5, Title: "Add a greeting", Markdown: "# Add a greeting\n"}, nil)
	env.OnActivity(gha.Comment, mock.Anything, mock.Anything).Return(int64(7), nil)
	env.OnActivity(a.PrepareIssueWorktree, mock.Anything, mock.Anything).Return(contract.WorktreeResult{Dir: "/work/app/.ralph/worktrees/issue-5", Branch: "ralph/issue-5"}, nil)
	env.OnActivity(a.PushBranch, mock.Anything, mock.Anything).Return(contract.PushResult{Commits: 2, Pushed: true}, nil)
	env.OnActivity(gha.OpenPull, mock.Anything, mock.Anything).Return(contract.Pull{Number: 9, URL: "https://github.com/acme/app/pull/9", Created: true}, nil)
	var rules []string
	env.OnWorkflow(session.Session, mock.Anything, mock.Anything).Return(func(ctx workflow.Context, in contract.SessionInput) (contract.SessionResult, error) {
		rules = in.Task.Rules
		if err := workflow.Sleep(ctx, 10*time.Minute); err != nil {
			return contract.SessionResult{}, err
		}
		return contract.SessionResult{Reason: contract.ReasonComplete, Iterations: 2, Totals: contract.Totals{CostUSD: 0.5, Commits: 2}}, nil
	})
	var mu sync.Mutex
	var events []contract.IssueEvent
	var ended []contract.IssueEnded
	env.OnSignalExternalWorkflow(mock.Anything, "ralph-queue-acme-app", "", contract.SignalIssueEvent, mock.Anything).Return(
		func(_, _, _, _ string, arg any) error {
			mu.Lock()
			defer mu.Unlock()
			events = append(events, arg.(contract.IssueEvent))
			return nil
		})
	env.OnSignalExternalWorkflow(mock.Anything, "ralph-queue-acme-app", "", contract.SignalIssueEnded, mock.Anything).Return(
		func(_, _, _, _ string, arg any) error {
			mu.Lock()
			defer mu.Unlock()
			ended = append(ended, arg.(contract.IssueEnded))
			return nil
		})
	var during contract.CurrentIssue
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(contract.QueryStatus)
		require.NoError(t, err)
		require.NoError(t, v.Get(&during))
	}, 5*time.Minute)

	sess := workflowtest.SessionInput()
	env.ExecuteWorkflow(issue.IssueWork, contract.IssueWorkInput{
		QueueID: "ralph-queue-acme-app",
		Settings: contract.QueueSettings{
			Repo: contract.Repo{Owner: "acme", Name: "app"}, Clone: "/work/app", Label: "ralph-ready", PollInterval: time.Hour,
		},
		Session: sess, Issue: contract.Issue{Number: 5, Title: "Add a greeting", LabeledBy: "alice"},
		Preflight: contract.PreflightResult{DefaultBranch: "main"}, Guidance: []string{"use tabs"}, Run: 3,
	})
	require.NoError(t, env.GetWorkflowError())
	var res contract.IssueEnded
	require.NoError(t, env.GetWorkflowResult(&res))

	out := res.Outcome
	require.Equal(t, contract.ReasonComplete, out.Reason)
	require.Equal(t, 9, out.PR)
	require.Equal(t, 3, out.Run)
	require.Equal(t, 10*time.Minute, out.FinishedAt.Sub(out.StartedAt))
	require.False(t, res.Following, "queue.follow is off")
	require.Equal(t, []contract.IssueEnded{res}, ended, "the queue is told what became of the issue, once")

	require.Equal(t, []string{"use tabs"}, rules, "the session gets the queue's guidance of when it took the issue")
	require.Equal(t, "running", during.Phase)
	require.Equal(t, contract.IssueSessionID("", "acme", "app", 5), during.SessionID)
	var story []string
	for _, ev := range events {
		require.Equal(t, 5, ev.Issue)
		require.Equal(t, 5, ev.Current.Number, "each line carries the issue as it is then: %+v", ev)
		story = append(story, ev.Text)
	}
	joined := strings.Join(story, "\n")
	require.Contains(t, joined, `picked #5 "Add a greeting" (labelled by @alice)`)
	require.Contains(t, joined, "#5: pull request #9 opened")
}
