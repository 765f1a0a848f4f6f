package queue_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/activities/github"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/workflows/issue"
	"github.com/durable-ralph/ralph/workflows/pull"
	"github.com/durable-ralph/ralph/workflows/queue"
	"github.com/durable-ralph/ralph/workflows/session"
	"github.com/durable-ralph/ralph/workflows/workflowtest"
)

var gha *github.Activities

func queueInput() contract.QueueInput {
	sess := workflowtest.SessionInput()
	sess.Task.CheckCommand = "go test ./..."
	return contract.QueueInput{
		Settings: contract.QueueSettings{
			Repo:         contract.Repo{Owner: "acme", Name: "app"},
			Clone:        "/work/app",
			Label:        "ralph-ready",
			PollInterval: time.Hour,
		},
		Session: sess,
	}
}

// queueEnv is a test environment for one queue run with GitHub and git
// activities mocked; picks plays the results of PickIssue in order (the
// last one again when they run out) and records when each ran.
type queueEnv struct {
	*testsuite.TestWorkflowEnvironment
	// mu guards what the mocks record: the test environment runs parallel
	// issues' activities on goroutines of their own.
	mu       sync.Mutex
	picks    []contract.PickResult
	pickedAt []time.Time
	// skips are the issues each pick was told to pass over.
	skips [][]int
	// dones are the issues each pick was told are done.
	dones    [][]int
	children []contract.SessionInput
	comments []string
	labels   []contract.LabelsInput
	pulls    int
	// child runs in place of each issue's session.
	child func(workflow.Context, contract.SessionInput) (contract.SessionResult, error)
	// push runs in place of PushBranch.
	push func(contract.PushInput) (contract.PushResult, error)
	// notes records the notifications sent.
	notes *workflowtest.Notes
	// changeSet runs in place of the ChangeSet of an issue that spans
	// repositories.
	changeSet func(workflow.Context, contract.ChangeSetInput) (contract.ChangeSetStatus, error)
}

func newQueueEnv(t *testing.T, result contract.SessionResult, picks ...contract.PickResult) *queueEnv {
	var ts testsuite.WorkflowTestSuite
	env := &queueEnv{TestWorkflowEnvironment: ts.NewTestWorkflowEnvironment(), picks: picks}
	env.RegisterWorkflow(queue.IssueQueue)
	env.RegisterWorkflow(issue.IssueWork)
	env.RegisterWorkflow(session.Session)
	env.RegisterWorkflowWithOptions(func(ctx workflow.Context, in contract.ChangeSetInput) (contract.ChangeSetStatus, error) {
		return env.changeSet(ctx, in)
	}, workflow.RegisterOptions{Name: contract.WorkflowChangeSet})
	env.notes = workflowtest.RegisterNotify(env.TestWorkflowEnvironment)
	env.RegisterActivity(gha)
	env.RegisterActivity(a)
	// Every issue's workflow runs (until a test says otherwise).
	env.RegisterActivityWithOptions(func(_ context.Context, ids []string) ([]string, error) { return ids, nil },
		activity.RegisterOptions{Name: contract.ActivityStillRunning})
	env.OnActivity(gha.Preflight, mock.Anything, mock.Anything).Return(contract.PreflightResult{FullName: "acme/app", DefaultBranch: "main"}, nil)
	env.OnActivity(gha.PickIssue, mock.Anything, mock.Anything).Return(func(_ context.Context, in contract.PickInput) (contract.PickResult, error) {
		env.mu.Lock()
		defer env.mu.Unlock()
		env.skips = append(env.skips, in.Skip)
		env.dones = append(env.dones, in.Done)
		env.pickedAt = append(env.pickedAt, env.Now())
		i := min(len(env.pickedAt), len(env.picks)) - 1
		return env.picks[i], nil
	})
	env.OnActivity(gha.SetLabels, mock.Anything, mock.Anything).Return(func(_ context.Context, in contract.LabelsInput) error {
		env.mu.Lock()
		defer env.mu.Unlock()
		env.labels = append(env.labels, in)
		return nil
	})
	env.OnActivity(gha.ReadIssue, mock.Anything, mock.Anything).Return(func(_ context.Context, in contract.ReadInput) (contract.IssueText, error) {
		return contract.IssueText{Number: in.Number, Title: "Add a greeting", Markdown: "# Add a greeting\n"}, nil
	})
	env.OnActivity(gha.Comment, mock.Anything, mock.Anything).Return(func(_ context.Context, in contract.CommentInput) (int64, error) {
		env.mu.Lock()
		defer env.mu.Unlock()
		env.comments = append(env.comments, in.Body)
		return 7, nil
	})
	env.OnActivity(a.PrepareIssueWorktree, mock.Anything, mock.Anything).Return(func(_ context.Context, in contract.WorktreeInput) (contract.WorktreeResult, error) {
		return contract.WorktreeResult{Dir: contract.WorktreeDir(in.Clone, in.Number), Branch: in.Branch, BaseRef: "refs/remotes/origin/main"}, nil
	})
	env.push = func(contract.PushInput) (contract.PushResult, error) {
		return contract.PushResult{Commits: 2, Pushed: true, Log: []string{"abc Add greeting"}}, nil
	}
	env.OnActivity(a.PushBranch, mock.Anything, mock.Anything).Return(func(_ context.Context, in contract.PushInput) (contract.PushResult, error) {
		return env.push(in)
	})
	env.OnActivity(gha.OpenPull, mock.Anything, mock.Anything).Return(func(context.Context, contract.PullInput) (contract.Pull, error) {
		env.mu.Lock()
		defer env.mu.Unlock()
		env.pulls++
		return contract.Pull{Number: 9, URL: "https://github.com/acme/app/pull/9", Created: true}, nil
	})
	env.child = func(workflow.Context, contract.SessionInput) (contract.SessionResult, error) { return result, nil }
	env.OnWorkflow(session.Session, mock.Anything, mock.Anything).Return(func(ctx workflow.Context, in contract.SessionInput) (contract.SessionResult, error) {
		env.mu.Lock()
		env.children = append(env.children, in)
		env.mu.Unlock()
		return env.child(ctx, in)
	})
	return env
}

// ready is a look for issues that finds issue n ready.
func ready(n int) contract.PickResult {
	return contract.PickResult{Issue: &contract.Issue{Number: n, Title: "Add a greeting", LabeledBy: "alice"}, Labelled: 1}
}

var completed = contract.SessionResult{Reason: contract.ReasonComplete, Iterations: 2,
	Totals: contract.Totals{CostUSD: 0.5, Commits: 2}}

// carried is the input of the queue's next run.
func carried(t *testing.T, env *queueEnv) contract.QueueInput {
	t.Helper()
	err := env.GetWorkflowError()
	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(err, &can), "the run continues as new: %v", err)
	var next contract.QueueInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	return next
}

func TestQueueIdleSleepsForThePollIntervalThenTakesAnIssue(t *testing.T) {
	env := newQueueEnv(t, completed, contract.PickResult{}, ready(5))
	env.ExecuteWorkflow(queue.IssueQueue, queueInput())
	require.True(t, env.IsWorkflowCompleted())
	require.Len(t, env.pickedAt, 2)
	require.GreaterOrEqual(t, env.pickedAt[1].Sub(env.pickedAt[0]), time.Hour, "the second look waited for the poll interval")

	next := carried(t, env)
	c := next.CarryOver
	require.Equal(t, 1, c.Totals.Done)
	require.Equal(t, 0.5, c.Totals.CostUSD)
	require.Len(t, c.Recent, 1)
	require.Equal(t, 9, c.Recent[0].PR)
	require.Equal(t, "main", c.Preflight.DefaultBranch, "preflight is carried, not repeated")

	require.Len(t, env.children, 1)
	child := env.children[0]
	require.Equal(t, "/work/app/.ralph/worktrees/issue-5", child.Workspace)
	require.Equal(t, "issue", child.Task.Mode)
	require.Equal(t, "go test ./...", child.Task.CheckCommand)
	require.Equal(t, "/work/app/.ralph/memories.md", child.Task.MemoriesFile)
	require.True(t, child.NotifyParent)

	require.Equal(t, []string{contract.LabelWorking}, env.labels[0].Add)
	require.Contains(t, env.labels[0].Remove, "ralph-ready")
	last := env.labels[len(env.labels)-1]
	require.Equal(t, []string{contract.LabelPROpen}, last.Add)
	require.Equal(t, []string{contract.LabelWorking}, last.Remove)
	require.Contains(t, env.comments[len(env.comments)-1], "pull request #9")
}

func TestQueuePokeEndsTheIdleSleep(t *testing.T) {
	env := newQueueEnv(t, completed, contract.PickResult{}, ready(5))
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(contract.SignalPoke, nil) }, time.Minute)
	env.ExecuteWorkflow(queue.IssueQueue, queueInput())
	require.Len(t, env.pickedAt, 2)
	gap := env.pickedAt[1].Sub(env.pickedAt[0])
	require.GreaterOrEqual(t, gap, time.Minute)
	require.Less(t, gap, 2*time.Minute, "poke woke the queue long before the hour")
	carried(t, env)
}

func TestQueueUntilIdleEndsComplete(t *testing.T) {
	env := newQueueEnv(t, completed, contract.PickResult{Skipped: []contract.Skipped{{Number: 2, Title: "x", Reason: "locked"}}})
	in := queueInput()
	in.Settings.UntilIdle = true
	env.ExecuteWorkflow(queue.IssueQueue, in)
	require.NoError(t, env.GetWorkflowError())
	var res contract.QueueResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, contract.ReasonComplete, res.Reason)
	require.Equal(t, 1, res.Totals.Skipped)
	require.Empty(t, env.comments, "a skipped issue is never commented on")
}

// Signals that arrive while an issue runs cross the continue-as-new
// boundary: guidance and pause are carried into the next run, and a stop
// ends the queue after the issue instead of continuing.
func TestQueueSignalsAcrossContinueAsNew(t *testing.T) {
	t.Run("guidance and pause are carried", func(t *testing.T) {
		env := newQueueEnv(t, completed, ready(5))
		env.child = func(ctx workflow.Context, _ contract.SessionInput) (contract.SessionResult, error) {
			_ = workflow.Sleep(ctx, 10*time.Minute)
			return completed, nil
		}
		env.RegisterDelayedCallback(func() {
			env.SignalWorkflow(contract.SignalGuide, "never touch migrations/")
			env.SignalWorkflow(contract.SignalPause, nil)
		}, 5*time.Minute)
		env.ExecuteWorkflow(queue.IssueQueue, queueInput())
		next := carried(t, env)
		require.Equal(t, []string{"never touch migrations/"}, next.CarryOver.Guidance)
		require.True(t, next.CarryOver.Paused)

		// The next run gives the guidance to its issue as a standing rule,
		// after it is resumed.
		env2 := newQueueEnv(t, completed, ready(6))
		env2.RegisterDelayedCallback(func() { env2.SignalWorkflow(contract.SignalResume, nil) }, time.Minute)
		env2.ExecuteWorkflow(queue.IssueQueue, next)
		carried(t, env2)
		require.Len(t, env2.children, 1)
		require.Equal(t, []string{"never touch migrations/"}, env2.children[0].Task.Rules)
	})
	t.Run("stop ends the queue after the issue", func(t *testing.T) {
		env := newQueueEnv(t, completed, ready(5))
		env.child = func(ctx workflow.Context, _ contract.SessionInput) (contract.SessionResult, error) {
			_ = workflow.Sleep(ctx, 10*time.Minute)
			return completed, nil
		}
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(contract.SignalStop, contract.StopSignal{Reason: "night is over"}) }, 5*time.Minute)
		env.ExecuteWorkflow(queue.IssueQueue, queueInput())
		require.NoError(t, env.GetWorkflowError())
		var res contract.QueueResult
		require.NoError(t, env.GetWorkflowResult(&res))
		require.Equal(t, contract.ReasonStopped, res.Reason)
		require.Equal(t, 1, res.Totals.Done, "the current issue finished first")
	})
}

func TestQueueFailedSessionPushesAndReportsWithoutPR(t *testing.T) {
	failed := contract.SessionResult{Reason: contract.ReasonMaxIterations, Message: "10 iterations ran, the limit", Iterations: 10,
		Last: &contract.IterationSummary{Iteration: 10, Outcome: "success", FilesChanged: 1}}
	env := newQueueEnv(t, failed, ready(5))
	env.ExecuteWorkflow(queue.IssueQueue, queueInput())
	next := carried(t, env)
	require.Equal(t, 1, next.CarryOver.Totals.Failed)
	require.Zero(t, env.pulls, "no pull request for a limited session")
	last := env.comments[len(env.comments)-1]
	require.Contains(t, last, "max_iterations")
	require.Contains(t, last, "iteration 10: success")
	require.Contains(t, last, "pushed with 2 commits")
	require.Equal(t, []string{contract.LabelFailed}, env.labels[len(env.labels)-1].Add)
}

func TestQueueSecretInPushFailsTheIssueNamingWhere(t *testing.T) {
	refused := contract.SecretFinding{What: "an AWS access key ID", File: "config/aws.go", Line: 3, Commit: "abc1234def"}
	msg := "Ralph did not push ralph/issue-5: it would publish an AWS access key ID at config/aws.go:3 (commit abc1234)"
	for _, tc := range []struct {
		name    string
		session contract.SessionResult
	}{
		{"complete", completed},
		{"limited", contract.SessionResult{Reason: contract.ReasonMaxIterations, Message: "10 iterations ran, the limit", Iterations: 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newQueueEnv(t, tc.session, ready(5))
			env.push = func(contract.PushInput) (contract.PushResult, error) {
				return contract.PushResult{}, temporal.NewNonRetryableApplicationError(msg, contract.ErrTypeSecretInPush, nil, []contract.SecretFinding{refused})
			}
			env.ExecuteWorkflow(queue.IssueQueue, queueInput())
			next := carried(t, env)
			require.Equal(t, 1, next.CarryOver.Totals.Failed)
			require.Zero(t, env.pulls, "no pull request without a push")
			last := env.comments[len(env.comments)-1]
			require.Contains(t, last, "config/aws.go:3")
			require.Contains(t, last, "**failed**")
			require.Equal(t, []string{contract.LabelFailed}, env.labels[len(env.labels)-1].Add)
		})
	}
}

// TestQueueFollowsThePullRequest starts the follower of the issue's pull
// request after opening it and carries the issue as followed; the queue
// goes on (continues as new) without waiting for it.
func TestQueueFollowsThePullRequest(t *testing.T) {
	env := newQueueEnv(t, completed, ready(5))
	env.push = func(contract.PushInput) (contract.PushResult, error) {
		return contract.PushResult{Commits: 2, Pushed: true, Head: "h1"}, nil
	}
	var follows []contract.FollowInput
	var ids []string
	env.OnWorkflow(pull.PullRequest, mock.Anything, mock.Anything).Return(func(ctx workflow.Context, in contract.FollowInput) (contract.FollowResult, error) {
		follows = append(follows, in)
		ids = append(ids, workflow.GetInfo(ctx).WorkflowExecution.ID)
		return contract.FollowResult{Reason: contract.ReasonMerged}, nil
	})
	in := queueInput()
	in.Settings.Pull = contract.PullSettings{Follow: true, MaxFixRounds: 3, AutoMerge: true, MergeMethod: "squash"}
	env.ExecuteWorkflow(queue.IssueQueue, in)
	next := carried(t, env)
	require.Equal(t, []int{5}, next.CarryOver.Following)
	require.Len(t, follows, 1)
	f := follows[0]
	require.Equal(t, contract.PullRequestID(f.Current.SessionID), ids[0])
	require.Equal(t, 9, f.Pull.Number)
	require.Equal(t, contract.WorktreeDir("/work/app", 5), f.Current.Worktree)
	require.Equal(t, contract.WorktreeDir("/work/app", 5), f.Session.Workspace)
	require.Equal(t, string(contract.ModeIssue), f.Session.Task.Mode)
	require.Equal(t, "h1", f.CarryOver.LastPushed)
	require.Equal(t, in.Settings.Pull, f.Settings)
	require.NotEmpty(t, f.QueueID)
}

// TestQueueUntilIdleWaitsForFollowedPullRequests: with nothing ready but
// a pull request followed, --until-idle waits for the follower's end.
func TestQueueUntilIdleWaitsForFollowedPullRequests(t *testing.T) {
	env := newQueueEnv(t, completed, contract.PickResult{})
	in := queueInput()
	in.Settings.UntilIdle = true
	in.CarryOver = &contract.QueueCarryOver{Following: []int{5}, Preflight: contract.PreflightResult{DefaultBranch: "main"}}
	var endedAt time.Time
	env.RegisterDelayedCallback(func() {
		endedAt = env.Now()
		env.SignalWorkflow(contract.SignalPullEnded, contract.PullEnd{Issue: 5, Result: contract.FollowResult{
			Reason: contract.ReasonMerged, Message: "merged by @carol", FixRounds: 1, CostUSD: 0.25, Iterations: 1}})
	}, 30*time.Minute)
	env.ExecuteWorkflow(queue.IssueQueue, in)
	require.True(t, env.IsWorkflowCompleted())
	var res contract.QueueResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, contract.ReasonComplete, res.Reason)
	require.Equal(t, 1, res.Totals.Merged)
	require.InDelta(t, 0.25, res.Totals.CostUSD, 1e-9)
	require.False(t, endedAt.IsZero())
	require.GreaterOrEqual(t, len(env.pickedAt), 1)
}

// TestQueueDailyBudget: once a UTC day's issues cost
// queue.max-cost-per-day, the queue takes no issue before the next day;
// the day's spending is carried across continue-as-new.
func TestQueueDailyBudget(t *testing.T) {
	env := newQueueEnv(t, completed, ready(5))
	in := queueInput()
	in.Settings.MaxCostPerDay = 0.4
	start := time.Date(2026, 11, 24, 22, 0, 0, 0, time.UTC)
	env.SetStartTime(start)
	env.ExecuteWorkflow(queue.IssueQueue, in)
	next := carried(t, env)
	require.Equal(t, "2026-11-24", next.CarryOver.Day)
	require.InDelta(t, 0.5, next.CarryOver.DayCostUSD, 1e-9, "the issue's cost counts for its day")

	// The next run waits for midnight UTC before it looks again.
	env2 := newQueueEnv(t, completed, ready(6))
	env2.SetStartTime(start.Add(time.Hour))
	env2.ExecuteWorkflow(queue.IssueQueue, next)
	require.Len(t, env2.pickedAt, 1)
	require.Equal(t, time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC), env2.pickedAt[0].UTC(), "no pick before the next UTC day")
	after := carried(t, env2)
	require.Equal(t, "2026-11-25", after.CarryOver.Day)
	require.InDelta(t, 0.5, after.CarryOver.DayCostUSD, 1e-9, "a new day starts from nothing")
	var said bool
	for _, e := range after.CarryOver.Events {
		said = said || strings.Contains(e.Text, "queue.max-cost-per-day is $0.40: no new issue before 2026-11-25T00:00:00Z")
	}
	require.True(t, said, "the wait is said in the queue's story")
}

// TestQueueBudgetWaitEndsOnARaise: a queue parked by its daily budget
// shows budget_wait, refuses limits it does not have, and takes issues
// again as soon as set-limits raises the budget above today's cost.
func TestQueueBudgetWaitEndsOnARaise(t *testing.T) {
	env := newQueueEnv(t, completed, ready(6))
	in := queueInput()
	in.Settings.MaxCostPerDay = 0.4
	start := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	in.CarryOver = &contract.QueueCarryOver{StartedAt: start, Day: "2026-11-24", DayCostUSD: 0.5,
		Totals: contract.QueueTotals{CostUSD: 0.5}, Preflight: contract.PreflightResult{FullName: "acme/app", DefaultBranch: "main"}}
	env.SetStartTime(start)
	var state contract.State
	var wrong, below, raised error
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(contract.QueryStatus)
		require.NoError(t, err)
		var st contract.QueueStatus
		require.NoError(t, v.Get(&st))
		state = st.State
		send := func(req contract.SetLimitsRequest, into *error) {
			env.UpdateWorkflow(contract.UpdateSetLimits, "", &testsuite.TestUpdateCallback{
				OnAccept: func() {}, OnReject: func(err error) { *into = err }, OnComplete: func(any, error) {},
			}, req)
		}
		send(contract.SetLimitsRequest{MaxIterations: 3}, &wrong)
		send(contract.SetLimitsRequest{MaxCostUSD: 0.1}, &below)
		send(contract.SetLimitsRequest{MaxCostPerDay: 1}, &raised)
	}, time.Hour)
	env.ExecuteWorkflow(queue.IssueQueue, in)
	require.Equal(t, contract.StateBudgetWait, state)
	require.ErrorContains(t, wrong, "a queue's limits are --max-cost and --max-cost-per-day")
	require.ErrorContains(t, below, "below the $0.5000 the queue's issues already cost")
	require.NoError(t, raised)
	require.Len(t, env.pickedAt, 1)
	require.Equal(t, start.Add(time.Hour), env.pickedAt[0].UTC(), "the raise wakes it, not midnight")
	next := carried(t, env)
	require.InDelta(t, 1.0, next.Settings.MaxCostPerDay, 1e-9, "the raise is carried")
}
