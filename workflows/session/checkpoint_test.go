package session_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	sdkpb "go.temporal.io/api/sdk/v1"
	"go.temporal.io/sdk/testsuite"

	"github.com/durable-ralph/ralph/activities/github"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/workflows/session"
	"github.com/durable-ralph/ralph/workflows/workflowtest"
)

type step = func(contract.IterationInput) (contract.IterationResult, error)

// gha names the GitHub activities by their methods; it is never called.
var gha *github.Activities

// asks is an iteration that changed nothing and asked a question.
func asks(question string) step {
	return func(in contract.IterationInput) (contract.IterationResult, error) {
		r := workflowtest.Progressed(in.Iteration, 1)
		r.FilesChanged, r.Commit = nil, ""
		r.Checkpoint = &contract.CheckpointRequest{Type: contract.CheckpointDecision, Question: question, Options: []string{"postgres", "sqlite"}, Source: "file"}
		return r, nil
	}
}

func claims(in contract.IterationInput) (contract.IterationResult, error) {
	r := workflowtest.Progressed(in.Iteration, 3)
	r.CompletionClaimed = true
	return r, nil
}

// update sends an update and records whether it was accepted.
type update struct {
	rejected error
	accepted bool
	result   any
}

func sendUpdate(env *testsuite.TestWorkflowEnvironment, name string, arg any) *update {
	u := &update{}
	env.UpdateWorkflow(name, "", &testsuite.TestUpdateCallback{
		OnAccept: func() { u.accepted = true },
		OnReject: func(err error) { u.rejected = err },
		OnComplete: func(v any, err error) {
			u.result = v
		},
	}, arg)
	return u
}

func queryStatus(t *testing.T, env *testsuite.TestWorkflowEnvironment) contract.Status {
	t.Helper()
	v, err := env.QueryWorkflow(contract.QueryStatus)
	require.NoError(t, err)
	var st contract.Status
	require.NoError(t, v.Get(&st))
	return st
}

func TestCheckpointAnsweredAfterThreeDays(t *testing.T) {
	env := newEnv(t)
	s := &script{results: []step{ok(workflowtest.Progressed(0, 1)), asks("Which database?"), ok(workflowtest.Progressed(0, 2)), claims}}
	env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(s.run).After(time.Minute)

	var waiting contract.Status
	var stale, early, good *update
	env.RegisterDelayedCallback(func() {
		waiting = queryStatus(t, env)
		stale = sendUpdate(env, contract.UpdateRespond, contract.Answer{ID: "cp-1", Answer: "postgres"})
	}, 24*time.Hour)
	env.RegisterDelayedCallback(func() {
		good = sendUpdate(env, contract.UpdateRespond, contract.Answer{ID: "cp-2", Answer: "postgres", Reason: "we run it already"})
	}, 3*24*time.Hour)
	env.RegisterDelayedCallback(func() {
		early = sendUpdate(env, contract.UpdateRespond, contract.Answer{ID: "cp-2", Approve: true})
	}, 3*24*time.Hour+30*time.Second) // iteration 3 is running, nothing is pending

	in := workflowtest.SessionInput() // a 4h runtime limit: time waiting on a human does not count
	res := runSession(t, env, in)
	require.Equal(t, contract.ReasonComplete, res.Reason, res.Message)

	require.Equal(t, contract.StateAwaitingHuman, waiting.State)
	require.NotNil(t, waiting.Pending)
	require.Equal(t, "cp-2", waiting.Pending.ID)
	require.Equal(t, "Which database?", waiting.Pending.Question)
	require.Equal(t, []string{"postgres", "sqlite"}, waiting.Pending.Options)

	require.ErrorContains(t, stale.rejected, `checkpoint "cp-1" is not pending; the pending checkpoint is cp-2`)
	require.True(t, good.accepted)
	require.ErrorContains(t, early.rejected, "no checkpoint is pending", "an answer after the checkpoint closed is refused")

	require.Len(t, s.inputs, 4)
	require.Len(t, s.inputs[2].Guidance, 1)
	require.Contains(t, s.inputs[2].Guidance[0], `The human answered: "postgres"`)
	require.Contains(t, s.inputs[2].Guidance[0], "we run it already")
	require.Empty(t, s.inputs[3].Guidance, "the answer reaches exactly one prompt")

	st := queryStatus(t, env)
	require.Len(t, st.Answered, 1)
	require.GreaterOrEqual(t, st.HumanWait, 3*24*time.Hour-5*time.Minute)
}

func TestCheckpointTimeout(t *testing.T) {
	tests := []struct {
		name       string
		onTimeout  string
		wantReason contract.Reason
		wantIters  int
	}{
		{name: "continue", onTimeout: contract.OnTimeoutContinue, wantReason: contract.ReasonComplete, wantIters: 3},
		{name: "stop", onTimeout: contract.OnTimeoutStop, wantReason: contract.ReasonCheckpointTimeout, wantIters: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newEnv(t)
			s := &script{results: []step{asks("Ship it?"), ok(workflowtest.Progressed(0, 2)), claims}}
			env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(s.run)
			in := workflowtest.SessionInput()
			in.Checkpoints = contract.CheckpointSettings{Timeout: 2 * time.Hour, OnTimeout: tt.onTimeout}
			res := runSession(t, env, in)
			require.Equal(t, tt.wantReason, res.Reason, res.Message)
			require.Equal(t, tt.wantIters, res.Iterations)
			if tt.onTimeout == contract.OnTimeoutContinue {
				require.Contains(t, s.inputs[1].Guidance[0], "Nobody answered within 2h0m0s")
			}
		})
	}
}

func TestCheckpointSignalWithStaleIDIsIgnored(t *testing.T) {
	env := newEnv(t)
	s := &script{results: []step{asks("Which database?"), claims}}
	env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(s.run)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(contract.SignalCheckpoint, contract.Answer{ID: "cp-7", Approve: true})
	}, time.Hour)
	var afterStale contract.Status
	env.RegisterDelayedCallback(func() {
		afterStale = queryStatus(t, env)
		env.SignalWorkflow(contract.SignalCheckpoint, contract.Answer{ID: "cp-1", Answer: "sqlite"})
	}, 2*time.Hour)
	env.ExecuteWorkflow(session.Session, workflowtest.SessionInput())
	var res contract.SessionResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, contract.ReasonComplete, res.Reason)
	require.Equal(t, 1, afterStale.IgnoredAnswers)
	require.NotNil(t, afterStale.Pending, "a stale signal leaves the question open")
	require.Contains(t, s.inputs[1].Guidance[0], `"sqlite"`)
}

func TestCompletionGate(t *testing.T) {
	env := newEnv(t)
	s := &script{results: []step{claims, claims}}
	env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(s.run)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(contract.SignalCheckpoint, contract.Answer{ID: "cp-1-complete", Reject: true, Reason: "the export button is missing"})
	}, time.Hour)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(contract.SignalCheckpoint, contract.Answer{ID: "cp-2-complete", Approve: true})
	}, 2*time.Hour)
	in := workflowtest.SessionInput()
	in.Checkpoints.BeforeComplete = true
	res := runSession(t, env, in)
	require.Equal(t, contract.ReasonComplete, res.Reason)
	require.Equal(t, 2, res.Iterations, "a rejected completion sends the loop on")
	require.Contains(t, res.Message, "confirmed by a human")
	require.Contains(t, s.inputs[1].Guidance[0], "the export button is missing")
}

func TestReviewGateEveryNIterations(t *testing.T) {
	env := newEnv(t)
	s := &script{results: []step{ok(workflowtest.Progressed(0, 1)), ok(workflowtest.Progressed(0, 2)), ok(workflowtest.Progressed(0, 2)), ok(workflowtest.Progressed(0, 2)), claims}}
	env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(s.run)
	var reviews []string
	for i := 1; i <= 2; i++ {
		env.RegisterDelayedCallback(func() {
			st := queryStatus(t, env)
			require.NotNil(t, st.Pending)
			reviews = append(reviews, st.Pending.ID)
			env.SignalWorkflow(contract.SignalCheckpoint, contract.Answer{ID: st.Pending.ID, Approve: i == 1, Reject: i == 2, Reason: map[bool]string{true: "", false: "use smaller commits"}[i == 1]})
		}, time.Duration(i)*time.Hour)
	}
	in := workflowtest.SessionInput()
	in.Checkpoints.Every = 2
	res := runSession(t, env, in)
	require.Equal(t, contract.ReasonComplete, res.Reason)
	require.Equal(t, []string{"cp-2-review", "cp-4-review"}, reviews)
	require.Equal(t, 5, res.Iterations)
	require.Empty(t, s.inputs[2].Guidance, "an approval adds nothing to the prompt")
	require.Equal(t, []string{"A human reviewed the work so far: use smaller commits"}, s.inputs[4].Guidance)
}

func TestSetLimits(t *testing.T) {
	env := newEnv(t)
	s := &script{results: []step{ok(workflowtest.Progressed(0, 1))}}
	env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(s.run).After(10 * time.Minute)
	var below, negative, empty, raised *update
	env.RegisterDelayedCallback(func() {
		below = sendUpdate(env, contract.UpdateSetLimits, contract.SetLimitsRequest{MaxIterations: 1, MaxCostUSD: 0.001})
		negative = sendUpdate(env, contract.UpdateSetLimits, contract.SetLimitsRequest{MaxRuntime: -time.Hour})
		empty = sendUpdate(env, contract.UpdateSetLimits, contract.SetLimitsRequest{})
		raised = sendUpdate(env, contract.UpdateSetLimits, contract.SetLimitsRequest{MaxIterations: 6})
	}, 25*time.Minute) // during iteration 3
	in := workflowtest.SessionInput()
	in.Limits.MaxIterations = 4
	res := runSession(t, env, in)
	require.Equal(t, contract.ReasonMaxIterations, res.Reason)
	require.Equal(t, 6, res.Iterations, "the raised limit holds")

	require.ErrorContains(t, below.rejected, "max iterations 1 is below the 3 iterations already run")
	require.ErrorContains(t, below.rejected, "max cost $0.00 is below the $0.0200 already spent")
	require.ErrorContains(t, negative.rejected, "must not be negative")
	require.ErrorContains(t, empty.rejected, "no limit given")
	require.NoError(t, raised.rejected)
	require.True(t, raised.accepted)
	require.Equal(t, 6, queryStatus(t, env).Limits.MaxIterations)
}

func TestSetLimitsRaisesRuntimeDuringIteration(t *testing.T) {
	env := newEnv(t)
	s := &script{results: []step{ok(workflowtest.Progressed(0, 1))}}
	env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(s.run).After(time.Hour)
	var raised *update
	env.RegisterDelayedCallback(func() {
		raised = sendUpdate(env, contract.UpdateSetLimits, contract.SetLimitsRequest{MaxRuntime: 5*time.Hour + 30*time.Minute})
	}, 90*time.Minute)
	in := workflowtest.SessionInput()
	in.Limits.MaxRuntime = 2*time.Hour + 30*time.Minute
	res := runSession(t, env, in)
	require.True(t, raised.accepted)
	require.Equal(t, contract.ReasonMaxRuntime, res.Reason)
	require.Equal(t, 6, res.Iterations, "iterations 1-5 finish, the 6th is cut off at 5h30m")
	require.Len(t, s.inputs, 5, "the cancelled 6th iteration never returns")
}

func TestDetailsShowThePendingQuestion(t *testing.T) {
	env := newEnv(t)
	s := &script{results: []step{asks("Which database?"), claims}}
	env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(s.run)
	var md *sdkpb.WorkflowMetadata
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow("__temporal_workflow_metadata")
		require.NoError(t, err)
		md = &sdkpb.WorkflowMetadata{}
		require.NoError(t, v.Get(md))
		env.SignalWorkflow(contract.SignalCheckpoint, contract.Answer{ID: "cp-1", Approve: true})
	}, time.Hour)
	env.ExecuteWorkflow(session.Session, workflowtest.SessionInput())
	require.NoError(t, env.GetWorkflowError())

	details := md.GetCurrentDetails()
	require.Contains(t, details, "**awaiting_human**")
	require.Contains(t, details, "Which database?")
	require.Contains(t, details, "postgres / sqlite")
	require.Contains(t, details, `{"id": "cp-1", "approve": true}`)
	require.Contains(t, details, "starter respond default-test-workflow-id --checkpoint cp-1 --approve")

	var names []string
	for _, d := range md.GetDefinition().GetSignalDefinitions() {
		require.NotEmpty(t, d.GetDescription(), d.GetName())
		names = append(names, d.GetName())
	}
	for _, d := range md.GetDefinition().GetUpdateDefinitions() {
		require.NotEmpty(t, d.GetDescription(), d.GetName())
		names = append(names, d.GetName())
	}
	for _, d := range md.GetDefinition().GetQueryDefinitions() {
		if !strings.HasPrefix(d.GetName(), "__") {
			require.NotEmpty(t, d.GetDescription(), d.GetName())
			names = append(names, d.GetName())
		}
	}
	require.ElementsMatch(t, []string{"stop", "pause", "resume", "guide", "checkpoint", "agent-slot", "notify-gave-up", "rewound", "respond", "set-limits", "status", "iterations", "carry-over"}, names)
}

// TestQuestionWithTheClaimIsAsked: an agent that claims the work
// complete and asks a question in the same iteration has its question
// asked; the loop goes on with the answer, and the next claim completes.
func TestQuestionWithTheClaimIsAsked(t *testing.T) {
	env := newEnv(t)
	claimsAndAsks := func(in contract.IterationInput) (contract.IterationResult, error) {
		r, _ := claims(in)
		r.Task = contract.TaskState{Mode: "prd", File: "prd.json", Done: 3, Total: 3, Complete: true, Verifiable: true}
		r.Checkpoint = &contract.CheckpointRequest{Type: contract.CheckpointDecision, Question: "Keep the old endpoint?", Options: []string{"yes", "no"}, Source: "file"}
		return r, nil
	}
	claimsDone := func(in contract.IterationInput) (contract.IterationResult, error) {
		r, _ := claims(in)
		r.Task = contract.TaskState{Mode: "prd", File: "prd.json", Done: 3, Total: 3, Complete: true, Verifiable: true}
		return r, nil
	}
	s := &script{results: []step{claimsAndAsks, claimsDone}}
	env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(s.run)
	var waiting contract.Status
	env.RegisterDelayedCallback(func() {
		waiting = queryStatus(t, env)
		sendUpdate(env, contract.UpdateRespond, contract.Answer{ID: "cp-1", Answer: "no"})
	}, time.Hour)
	res := runSession(t, env, workflowtest.SessionInput())
	require.Equal(t, contract.ReasonComplete, res.Reason, res.Message)
	require.NotNil(t, waiting.Pending, "the question was asked")
	require.Equal(t, "Keep the old endpoint?", waiting.Pending.Question)
	require.Equal(t, 2, res.Iterations)
	require.Contains(t, s.inputs[1].Guidance[0], `The human answered: "no"`)
}
