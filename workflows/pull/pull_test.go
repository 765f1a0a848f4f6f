package pull_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/activities/github"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/workflows/pull"
	"github.com/durable-ralph/ralph/workflows/session"
	"github.com/durable-ralph/ralph/workflows/workflowtest"
)

// pullEnv is a test environment of a pull request's follower: reads
// plays PullState's answers in order (the last one again when they run
// out); the writes are recorded.
type pullEnv struct {
	*testsuite.TestWorkflowEnvironment
	reads     []contract.PullState
	read      int
	rounds    []contract.RoundInput
	sessions  []string
	pushes    []contract.PushInput
	replies   []contract.ReplyInput
	reviewers []contract.ReviewersInput
	merges    []contract.MergeInput
	labels    []contract.LabelsInput
	comments  []contract.CommentInput
	ended     []contract.PullEnd
	heads     []string
}

// a names the worker's activities by their methods; it is never called.
var a *activities.Agent

// gha names the GitHub activities by their methods; it is never called.
var gha *github.Activities

func newPullEnv(t *testing.T, reads ...contract.PullState) *pullEnv {
	var ts testsuite.WorkflowTestSuite
	env := &pullEnv{TestWorkflowEnvironment: ts.NewTestWorkflowEnvironment(), reads: reads, heads: []string{"h2", "h3", "h4", "h5"}}
	env.RegisterWorkflow(pull.PullRequest)
	env.RegisterWorkflow(session.Session)
	workflowtest.RegisterNotify(env.TestWorkflowEnvironment)
	env.RegisterActivity(gha)
	env.RegisterActivity(a)
	env.OnActivity(gha.PullState, mock.Anything, mock.Anything).Return(func(_ context.Context, in contract.PullStateInput) (contract.PullState, error) {
		pr := env.reads[min(env.read, len(env.reads)-1)]
		env.read++
		// What a round addressed is never read again.
		var fresh []contract.Feedback
		for _, fb := range pr.Feedback {
			if !slices.Contains(in.Addressed, contract.FeedbackKey(fb.Kind, fb.ID)) {
				fresh = append(fresh, fb)
			}
		}
		pr.Feedback = fresh
		return pr, nil
	})
	env.OnActivity(a.PrepareRound, mock.Anything, mock.Anything).Return(func(_ context.Context, in contract.RoundInput) (contract.RoundPrepared, error) {
		env.rounds = append(env.rounds, in)
		return contract.RoundPrepared{Head: "h1"}, nil
	})
	env.OnWorkflow(session.Session, mock.Anything, mock.Anything).Return(func(ctx workflow.Context, in contract.SessionInput) (contract.SessionResult, error) {
		env.sessions = append(env.sessions, workflow.GetInfo(ctx).WorkflowExecution.ID)
		return contract.SessionResult{Reason: contract.ReasonComplete, Iterations: 1, Totals: contract.Totals{CostUSD: 0.25, Commits: 1}}, nil
	})
	env.OnActivity(a.PushBranch, mock.Anything, mock.Anything).Return(func(_ context.Context, in contract.PushInput) (contract.PushResult, error) {
		env.pushes = append(env.pushes, in)
		return contract.PushResult{Commits: 2, Pushed: true, Head: env.heads[len(env.pushes)-1]}, nil
	})
	env.OnActivity(gha.ReplyToComment, mock.Anything, mock.Anything).Return(func(_ context.Context, in contract.ReplyInput) error {
		env.replies = append(env.replies, in)
		return nil
	})
	env.OnActivity(gha.RequestReviewers, mock.Anything, mock.Anything).Return(func(_ context.Context, in contract.ReviewersInput) error {
		env.reviewers = append(env.reviewers, in)
		return nil
	})
	env.OnActivity(gha.MergePull, mock.Anything, mock.Anything).Return(func(_ context.Context, in contract.MergeInput) (contract.MergeResult, error) {
		env.merges = append(env.merges, in)
		return contract.MergeResult{Merged: true, SHA: "m1"}, nil
	})
	env.OnActivity(gha.SetLabels, mock.Anything, mock.Anything).Return(func(_ context.Context, in contract.LabelsInput) error {
		env.labels = append(env.labels, in)
		return nil
	})
	env.OnActivity(gha.Comment, mock.Anything, mock.Anything).Return(func(_ context.Context, in contract.CommentInput) (int64, error) {
		env.comments = append(env.comments, in)
		return 7, nil
	})
	env.OnSignalExternalWorkflow(mock.Anything, "queue-1", "", contract.SignalPullEnded, mock.Anything).Return(func(_, _, _, _ string, arg any) error {
		env.ended = append(env.ended, arg.(contract.PullEnd))
		return nil
	})
	return env
}

func followInput() contract.FollowInput {
	sess := workflowtest.SessionInput()
	sess.Task.Mode = string(contract.ModeIssue)
	return contract.FollowInput{
		QueueID: "queue-1",
		Repo:    contract.Repo{Owner: "acme", Name: "app"},
		Issue:   contract.Issue{Number: 5, Title: "Add a greeting", LabeledBy: "alice"},
		Pull:    contract.Pull{Number: 9, URL: "https://github.com/acme/app/pull/9"},
		Current: contract.CurrentIssue{Number: 5, SessionID: "ralph-issue-acme-app-5", Branch: "ralph/issue-5", Worktree: "/work/app/.ralph/worktrees/issue-5"},
		Base:    "main", BaseRef: "refs/remotes/origin/main", Clone: "/work/app",
		Settings: contract.PullSettings{Follow: true, MaxFixRounds: 3, MaxReviewRounds: 5, ChecksTimeout: 2 * time.Hour,
			AutoMerge: true, MergeMethod: contract.MergeSquash, UpdateStrategy: contract.UpdateByMerge},
		PollInterval: time.Minute,
		Session:      sess,
		CarryOver:    &contract.FollowCarryOver{LastPushed: "h1"},
	}
}

var (
	yes       = true
	lintFails = contract.ChecksSummary{Head: "h1", Total: 2, Passed: 1, Failed: []contract.FailedCheck{
		{Name: "lint", Conclusion: "failure", URL: "https://ci/1", Output: "x.go:1: bad indent"}}}
	pending = contract.ChecksSummary{Head: "h2", Total: 2, Pending: []string{"lint"}, Passed: 1}
	green   = contract.ChecksSummary{Head: "h2", Total: 2, Passed: 2}
)

// TestPullRequestFromFailingCheckToMerge follows a pull request whose
// check fails (a fix round whose task carries the check's output), then
// passes, then gets a review with an inline comment (a review round that
// replies to it once and asks the reviewer again), then an approval: it
// merges it, and ends merged with the issue labelled.
func TestPullRequestFromFailingCheckToMerge(t *testing.T) {
	review := []contract.Feedback{
		{ID: 11, Kind: contract.FeedbackInline, Author: "bob", Body: "Use a constant here.", Path: "x.go", Line: 3, DiffHunk: "@@ -1 +1 @@"},
		{ID: 12, Kind: contract.FeedbackReview, Author: "bob", State: "CHANGES_REQUESTED", Body: "Please fix the constant."},
	}
	env := newPullEnv(t,
		contract.PullState{State: "open", Head: "h1", Mergeable: &yes, MergeableState: "unstable", Checks: lintFails},
		contract.PullState{State: "open", Head: "h2", Mergeable: &yes, MergeableState: "unstable", Checks: pending},
		contract.PullState{State: "open", Head: "h2", Mergeable: &yes, MergeableState: "blocked", Checks: green, ChangesRequested: true, Feedback: review},
		contract.PullState{State: "open", Head: "h3", Mergeable: &yes, MergeableState: "clean", Checks: green, Approved: true, Feedback: review},
		contract.PullState{State: "closed", Merged: true, MergedBy: "ralph-bot", Head: "h3", Checks: green},
	)
	env.ExecuteWorkflow(pull.PullRequest, followInput())
	require.True(t, env.IsWorkflowCompleted())
	var res contract.FollowResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, contract.ReasonMerged, res.Reason, res.Message)
	require.Equal(t, 1, res.FixRounds)
	require.Equal(t, 1, res.ReviewRounds)
	require.InDelta(t, 0.5, res.CostUSD, 1e-9)

	require.Len(t, env.rounds, 2)
	require.Contains(t, env.rounds[0].Task, "x.go:1: bad indent", "the fix round's task carries the check's output")
	require.Contains(t, env.rounds[0].Task, "## lint: failure")
	require.Equal(t, "h1", env.rounds[0].LastPushed)
	require.Contains(t, env.rounds[1].Task, "Use a constant here.")
	require.Contains(t, env.rounds[1].Task, "`x.go` line 3")
	require.Equal(t, "h2", env.rounds[1].LastPushed, "the second round knows what the first pushed")
	require.Equal(t, []string{"ralph-issue-acme-app-5/round-1", "ralph-issue-acme-app-5/round-2"}, env.sessions)

	require.Len(t, env.replies, 1, "one reply, to the inline comment")
	require.Equal(t, int64(11), env.replies[0].CommentID)
	require.Equal(t, "Addressed in h3.", env.replies[0].Body)
	require.Equal(t, []contract.ReviewersInput{{Repo: followInput().Repo, Pull: 9, Reviewers: []string{"bob"}}}, env.reviewers)
	var summaries int
	for _, c := range env.comments {
		if c.Marker == contract.RoundMarker(5, 2) {
			summaries++
			require.Contains(t, c.Body, "Round 2 addressed 2 review comments in h3")
		}
	}
	require.Equal(t, 1, summaries)

	require.Len(t, env.merges, 1)
	require.Equal(t, contract.MergeInput{Repo: followInput().Repo, Pull: 9, Head: "h3", Method: "squash", Title: "Add a greeting (#9)"}, env.merges[0])
	require.Equal(t, []contract.LabelsInput{{Repo: followInput().Repo, Number: 5, Add: []string{contract.LabelMerged},
		Remove: []string{contract.LabelPROpen, contract.LabelQuestion}}}, env.labels)
	require.Len(t, env.ended, 1)
	require.Equal(t, 5, env.ended[0].Issue)
	require.Equal(t, contract.ReasonMerged, env.ended[0].Result.Reason)
}

// TestPullRequestGivesUpAfterTheFixRounds fails the same check after
// every round: after queue.max-fix-rounds the issue gets ralph-failed and
// a comment naming the check.
func TestPullRequestGivesUpAfterTheFixRounds(t *testing.T) {
	env := newPullEnv(t, contract.PullState{State: "open", Head: "h1", Mergeable: &yes, MergeableState: "unstable", Checks: lintFails})
	in := followInput()
	in.Settings.MaxFixRounds = 2
	env.ExecuteWorkflow(pull.PullRequest, in)
	var res contract.FollowResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, contract.ReasonFailed, res.Reason)
	require.Equal(t, 2, res.FixRounds)
	require.Contains(t, res.Message, "checks still fail after 2 rounds: lint (failure)")
	require.Len(t, env.rounds, 2)
	require.Equal(t, []contract.LabelsInput{{Repo: in.Repo, Number: 5, Add: []string{contract.LabelFailed}, Remove: []string{contract.LabelPROpen}}}, env.labels)
	require.Len(t, env.comments, 1)
	require.Contains(t, env.comments[0].Body, "lint (failure)")
	require.Empty(t, env.merges)
}

// TestPullRequestWaits covers the waits: checks that never finish end it
// after queue.checks-timeout; a pull request closed by a person ends it
// closed; without auto-merge a green, approved one waits for a person.
func TestPullRequestWaits(t *testing.T) {
	tests := []struct {
		name    string
		reads   []contract.PullState
		auto    bool
		reason  contract.Reason
		message string
	}{
		{"checks never finish", []contract.PullState{{State: "open", Head: "h1", Mergeable: &yes, Checks: pending}}, true,
			contract.ReasonFailed, "checks did not finish within 2h0m0s: lint"},
		{"closed by a person", []contract.PullState{{State: "open", Head: "h1", Mergeable: &yes, Checks: pending}, {State: "closed", Head: "h1"}}, true,
			contract.ReasonClosed, "closed without a merge"},
		{"merged by a person", []contract.PullState{
			{State: "open", Head: "h1", Mergeable: &yes, MergeableState: "clean", Checks: green, Approved: true},
			{State: "open", Head: "h1", Mergeable: &yes, MergeableState: "clean", Checks: green, Approved: true},
			{State: "closed", Merged: true, MergedBy: "carol", Head: "h1"}}, false,
			contract.ReasonMerged, "merged by @carol"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newPullEnv(t, tt.reads...)
			in := followInput()
			in.Settings.AutoMerge = tt.auto
			env.ExecuteWorkflow(pull.PullRequest, in)
			var res contract.FollowResult
			require.NoError(t, env.GetWorkflowResult(&res))
			require.Equal(t, tt.reason, res.Reason)
			require.Equal(t, tt.message, res.Message)
			require.Empty(t, env.rounds)
			require.Empty(t, env.merges)
		})
	}
}

// TestPullRequestConflictBringsTheBaseIn: a pull request GitHub says
// conflicts gets a round that merges the base in first.
func TestPullRequestConflictBringsTheBaseIn(t *testing.T) {
	no := false
	env := newPullEnv(t,
		contract.PullState{State: "open", Head: "h1", Mergeable: &no, MergeableState: "dirty", Checks: green},
		contract.PullState{State: "closed", Merged: true, MergedBy: "carol", Head: "h2"})
	env.ExecuteWorkflow(pull.PullRequest, followInput())
	var res contract.FollowResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, 1, res.UpdateRounds)
	require.Len(t, env.rounds, 1)
	require.Equal(t, contract.UpdateByMerge, env.rounds[0].Update)
	require.True(t, strings.HasPrefix(env.rounds[0].Task, "# The branch conflicts with `main`"))
	require.Empty(t, env.pushes[0].Lease, "a merge is pushed without force")
}

// TestPullRequestClosedDuringARound: a pull request closed by a person
// while a fix round runs ends the follower closed after the round, with
// no further round or merge.
func TestPullRequestClosedDuringARound(t *testing.T) {
	env := newPullEnv(t,
		contract.PullState{State: "open", Head: "h1", Mergeable: &yes, MergeableState: "unstable", Checks: lintFails},
		contract.PullState{State: "closed", Head: "h2"})
	env.ExecuteWorkflow(pull.PullRequest, followInput())
	var res contract.FollowResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, contract.ReasonClosed, res.Reason)
	require.Len(t, env.rounds, 1)
	require.Len(t, env.pushes, 1)
	require.Empty(t, env.merges)
	require.Equal(t, []contract.LabelsInput{{Repo: followInput().Repo, Number: 5, Remove: []string{contract.LabelPROpen, contract.LabelQuestion}}}, env.labels)
}
