package session_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/workflows/session"
	"github.com/durable-ralph/ralph/workflows/workflowtest"
)

var a *activities.Agent

// script returns an activity implementation that plays results in order
// and records the inputs it was given.
type script struct {
	mu      sync.Mutex
	results []func(in contract.IterationInput) (contract.IterationResult, error)
	inputs  []contract.IterationInput
}

func (s *script) run(_ context.Context, in contract.IterationInput) (contract.IterationResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inputs = append(s.inputs, in)
	i := len(s.inputs) - 1
	if i >= len(s.results) {
		i = len(s.results) - 1
	}
	return s.results[i](in)
}

func ok(r contract.IterationResult) func(contract.IterationInput) (contract.IterationResult, error) {
	return func(in contract.IterationInput) (contract.IterationResult, error) {
		r.Iteration = in.Iteration
		return r, nil
	}
}

// runSession runs a session with in to its end and returns its result.
func runSession(t *testing.T, env *testsuite.TestWorkflowEnvironment, in contract.SessionInput) contract.SessionResult {
	t.Helper()
	env.ExecuteWorkflow(session.Session, in)
	var res contract.SessionResult
	require.NoError(t, env.GetWorkflowResult(&res))
	return res
}

func newEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(session.Session)
	workflowtest.RegisterNotify(env)
	env.OnActivity(a.PrepareWorkspace, mock.Anything, mock.Anything).Return(workflowtest.Prepared(), nil).Maybe()
	return env
}

func TestSessionTerminationReasons(t *testing.T) {
	claim := func(done int) contract.IterationResult {
		r := workflowtest.Progressed(0, done)
		r.CompletionClaimed = true
		return r
	}
	noChange := contract.IterationResult{Outcome: contract.OutcomeSuccess, CostUSD: 0.01,
		Task: contract.TaskState{Mode: "prd", Total: 3, Done: 1, Verifiable: true}}
	failed := contract.IterationResult{Outcome: contract.OutcomeAgentError, Reason: "agent exited with status 1"}

	tests := []struct {
		name       string
		limits     func(*contract.Limits)
		results    []func(contract.IterationInput) (contract.IterationResult, error)
		delay      time.Duration
		wantReason contract.Reason
		wantIters  int
		wantCost   float64
	}{
		{
			name:       "complete_when_claim_verified",
			results:    []func(contract.IterationInput) (contract.IterationResult, error){ok(workflowtest.Progressed(0, 1)), ok(workflowtest.Progressed(0, 2)), ok(claim(3))},
			wantReason: contract.ReasonComplete, wantIters: 3, wantCost: 0.03,
		},
		{
			name:       "claim_contradicted_by_task_file_goes_on",
			results:    []func(contract.IterationInput) (contract.IterationResult, error){ok(claim(1)), ok(workflowtest.Progressed(0, 2)), ok(claim(3))},
			wantReason: contract.ReasonComplete, wantIters: 3, wantCost: 0.03,
		},
		{
			name: "claim_refused_by_check_command_goes_on",
			results: []func(contract.IterationInput) (contract.IterationResult, error){
				ok(func() contract.IterationResult {
					r := claim(3)
					r.Check = &contract.CheckResult{Command: "go test ./...", ExitCode: 1, Output: "FAIL"}
					return r
				}()),
				ok(func() contract.IterationResult {
					r := claim(3)
					r.Check = &contract.CheckResult{Command: "go test ./...", Passed: true}
					return r
				}()),
			},
			wantReason: contract.ReasonComplete, wantIters: 2, wantCost: 0.02,
		},
		{
			name:       "max_iterations",
			limits:     func(l *contract.Limits) { l.MaxIterations = 4 },
			results:    []func(contract.IterationInput) (contract.IterationResult, error){ok(workflowtest.Progressed(0, 1))},
			wantReason: contract.ReasonMaxIterations, wantIters: 4, wantCost: 0.04,
		},
		{
			name:       "max_cost",
			limits:     func(l *contract.Limits) { l.MaxCostUSD = 0.025 },
			results:    []func(contract.IterationInput) (contract.IterationResult, error){ok(workflowtest.Progressed(0, 1))},
			wantReason: contract.ReasonMaxCost, wantIters: 3, wantCost: 0.03,
		},
		{
			name:       "consecutive_failures",
			results:    []func(contract.IterationInput) (contract.IterationResult, error){ok(workflowtest.Progressed(0, 1)), ok(failed)},
			wantReason: contract.ReasonConsecutiveFailures, wantIters: 4, wantCost: 0.01,
		},
		{
			name:       "no_progress",
			results:    []func(contract.IterationInput) (contract.IterationResult, error){ok(workflowtest.Progressed(0, 1)), ok(noChange)},
			wantReason: contract.ReasonNoProgress, wantIters: 4, wantCost: 0.04,
		},
		{
			name:       "max_runtime_cancels_running_iteration",
			limits:     func(l *contract.Limits) { l.MaxRuntime = 3 * time.Hour },
			results:    []func(contract.IterationInput) (contract.IterationResult, error){ok(workflowtest.Progressed(0, 1))},
			delay:      time.Hour + time.Minute,
			wantReason: contract.ReasonMaxRuntime, wantIters: 3, wantCost: 0.02,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newEnv(t)
			in := workflowtest.SessionInput()
			if tt.limits != nil {
				tt.limits(&in.Limits)
			}
			s := &script{results: tt.results}
			call := env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(s.run)
			if tt.delay > 0 {
				call.After(tt.delay)
			}
			env.ExecuteWorkflow(session.Session, in)
			require.True(t, env.IsWorkflowCompleted())
			require.NoError(t, env.GetWorkflowError())
			var res contract.SessionResult
			require.NoError(t, env.GetWorkflowResult(&res))
			require.Equal(t, tt.wantReason, res.Reason, res.Message)
			require.Equal(t, tt.wantIters, res.Iterations)
			require.InDelta(t, tt.wantCost, res.Totals.CostUSD, 1e-9)
			for i, in := range s.inputs {
				require.Equal(t, i+1, in.Iteration, "iterations are numbered without gaps")
			}
			v, err := env.QueryWorkflow(contract.QueryStatus)
			require.NoError(t, err)
			var st contract.Status
			require.NoError(t, v.Get(&st))
			want := contract.StateFailed
			switch tt.wantReason {
			case contract.ReasonComplete:
				want = contract.StateCompleted
			case contract.ReasonStopped:
				want = contract.StateStopped
			case contract.ReasonMaxIterations, contract.ReasonMaxRuntime, contract.ReasonMaxCost:
				want = contract.StateLimited // stopped by a limit, not failed
			}
			require.Equal(t, want, st.State)
		})
	}
}

func TestSessionTotalsAndStatus(t *testing.T) {
	env := newEnv(t)
	s := &script{results: []func(contract.IterationInput) (contract.IterationResult, error){
		ok(workflowtest.Progressed(0, 1)), ok(workflowtest.Progressed(0, 2)),
		claims,
	}}
	env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(s.run).After(time.Minute)
	var mid contract.Status
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(contract.QueryStatus)
		require.NoError(t, err)
		require.NoError(t, v.Get(&mid))
	}, 90*time.Second)
	env.ExecuteWorkflow(session.Session, workflowtest.SessionInput())
	require.NoError(t, env.GetWorkflowError())

	require.Equal(t, contract.StateRunning, mid.State)
	require.Equal(t, 2, mid.Iteration)
	require.True(t, mid.Running)
	require.Len(t, mid.Recent, 1)

	v, err := env.QueryWorkflow(contract.QueryStatus)
	require.NoError(t, err)
	var st contract.Status
	require.NoError(t, v.Get(&st))
	require.Equal(t, contract.StateCompleted, st.State)
	require.Equal(t, contract.ReasonComplete, st.Reason)
	require.Equal(t, int64(360), st.Totals.Usage.Total())
	require.Equal(t, 9, st.Totals.Turns)
	require.Equal(t, 3, st.Totals.Commits)
	require.Len(t, st.Recent, 3)
	require.True(t, st.Recent[2].Verified)
	require.Equal(t, "prd", st.Mode)

	// The iterations query gives those after a number, as status knows
	// them, for a follower that must print each one.
	for _, tc := range []struct{ after, first, n int }{{0, 1, 3}, {1, 2, 2}, {3, 0, 0}} {
		v, err := env.QueryWorkflow(contract.QueryIterations, tc.after)
		require.NoError(t, err)
		var its []contract.IterationSummary
		require.NoError(t, v.Get(&its))
		require.Len(t, its, tc.n, "after %d", tc.after)
		if tc.n > 0 {
			require.Equal(t, tc.first, its[0].Iteration)
			require.Equal(t, st.Recent[len(st.Recent)-1], its[len(its)-1])
		}
	}
}

func TestSessionStopSignalFinishesCurrentIteration(t *testing.T) {
	env := newEnv(t)
	s := &script{results: []func(contract.IterationInput) (contract.IterationResult, error){ok(workflowtest.Progressed(0, 1))}}
	env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(s.run).After(10 * time.Minute)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(contract.SignalStop, contract.StopSignal{Reason: "going home"})
	}, 15*time.Minute) // during iteration 2
	env.ExecuteWorkflow(session.Session, workflowtest.SessionInput())
	var res contract.SessionResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, contract.ReasonStopped, res.Reason)
	require.Equal(t, 2, res.Iterations, "the running iteration finishes")
	require.Contains(t, res.Message, "going home")
}

func TestSessionCancelled(t *testing.T) {
	env := newEnv(t)
	s := &script{results: []func(contract.IterationInput) (contract.IterationResult, error){ok(workflowtest.Progressed(0, 1))}}
	env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(s.run).After(10 * time.Minute)
	env.RegisterDelayedCallback(env.CancelWorkflow, 25*time.Minute)
	env.ExecuteWorkflow(session.Session, workflowtest.SessionInput())
	err := env.GetWorkflowError()
	require.Error(t, err)
	var canceled *temporal.CanceledError
	require.ErrorAs(t, err, &canceled)
	require.Equal(t, 130, contract.ReasonCancelled.ExitCode())
}

func TestSessionPermanentErrorFailsWithCause(t *testing.T) {
	env := newEnv(t)
	env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(contract.IterationResult{},
		temporal.NewNonRetryableApplicationError(`agent binary "claude" not found on the worker's PATH`, contract.ErrTypeAgentNotFound, nil)).Once()
	env.ExecuteWorkflow(session.Session, workflowtest.SessionInput())
	err := env.GetWorkflowError()
	require.Error(t, err)
	require.Contains(t, err.Error(), `agent binary "claude" not found`)
	env.AssertNumberOfCalls(t, "RunIteration", 1)
}

func TestSessionInvalidInput(t *testing.T) {
	env := newEnv(t)
	in := workflowtest.SessionInput()
	in.Workspace = "relative/path"
	in.Limits.MaxIterations = 0
	env.ExecuteWorkflow(session.Session, in)
	err := env.GetWorkflowError()
	require.Error(t, err)
	require.Contains(t, err.Error(), "must be an absolute path")
	require.Contains(t, err.Error(), "max iterations")
}

func TestSessionRateLimitSleepsUntilReset(t *testing.T) {
	env := newEnv(t)
	start := env.Now()
	reset := start.Add(5 * time.Hour)
	var startedAt []time.Time
	s := &script{results: []func(contract.IterationInput) (contract.IterationResult, error){
		ok(workflowtest.Progressed(0, 1)),
		func(in contract.IterationInput) (contract.IterationResult, error) {
			return contract.IterationResult{Iteration: in.Iteration, Outcome: contract.OutcomeRateLimited,
				Reason: "usage limit reached", RateLimitResetsAt: reset}, nil
		},
		ok(workflowtest.Progressed(0, 2)),
		claims,
	}}
	env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in contract.IterationInput) (contract.IterationResult, error) {
			startedAt = append(startedAt, env.Now())
			return s.run(ctx, in)
		})
	in := workflowtest.SessionInput()
	in.Limits.MaxRuntime = 24 * time.Hour
	in.Limits.MaxConsecutiveFailures = 1
	res := runSession(t, env, in)
	require.Equal(t, contract.ReasonComplete, res.Reason, res.Message)
	require.Equal(t, 3, res.Iterations, "the rate-limited iteration is not counted")
	require.Equal(t, 1, res.Totals.RateLimitWaits)
	require.Equal(t, 0, res.Totals.Failures)
	require.Len(t, s.inputs, 4)
	require.Equal(t, []int{1, 2, 2, 3}, []int{s.inputs[0].Iteration, s.inputs[1].Iteration, s.inputs[2].Iteration, s.inputs[3].Iteration})
	require.False(t, startedAt[2].Before(reset), "retried at %s, before the reset at %s", startedAt[2], reset)
}

func TestSessionContinuesAsNewWithTotals(t *testing.T) {
	env := newEnv(t)
	s := &script{results: []func(contract.IterationInput) (contract.IterationResult, error){ok(workflowtest.Progressed(0, 1))}}
	env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(s.run).After(time.Second)
	in := workflowtest.SessionInput()
	in.Limits.IterationsPerRun = 2
	env.ExecuteWorkflow(session.Session, in)
	err := env.GetWorkflowError()
	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(err, &can), "want continue-as-new, got %v", err)

	// The next run starts from the carried state: numbering and totals go on.
	var next contract.SessionInput
	require.NoError(t, converterDecode(can, &next))
	require.NotNil(t, next.CarryOver)
	require.Equal(t, 2, next.CarryOver.Iteration)
	require.InDelta(t, 0.02, next.CarryOver.Totals.CostUSD, 1e-9)
	require.Equal(t, "prd", next.CarryOver.Prepared.Mode)

	env2 := newEnv(t)
	s2 := &script{results: []func(contract.IterationInput) (contract.IterationResult, error){
		claims,
	}}
	env2.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(s2.run)
	env2.ExecuteWorkflow(session.Session, next)
	var res contract.SessionResult
	require.NoError(t, env2.GetWorkflowResult(&res))
	require.Equal(t, contract.ReasonComplete, res.Reason)
	require.Equal(t, 3, res.Iterations)
	require.InDelta(t, 0.03, res.Totals.CostUSD, 1e-9)
	require.Equal(t, 3, s2.inputs[0].Iteration)
	env2.AssertNotCalled(t, "PrepareWorkspace", mock.Anything, mock.Anything)
}

// TestQuickRunsDoNotContinueAsNewTooSoon: a run younger than 2 s goes
// on past limits.iterations-per-run rather than continue as new, which
// the server would delay to 1 s after the run's start.
func TestQuickRunsDoNotContinueAsNewTooSoon(t *testing.T) {
	env := newEnv(t)
	s := &script{results: []func(contract.IterationInput) (contract.IterationResult, error){ok(workflowtest.Progressed(0, 1))}}
	env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(s.run).After(300 * time.Millisecond)
	in := workflowtest.SessionInput()
	in.Limits.IterationsPerRun, in.Limits.MaxIterations, in.Limits.MaxNoProgress = 2, 20, 20
	env.ExecuteWorkflow(session.Session, in)
	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(env.GetWorkflowError(), &can), "want continue-as-new, got %v", env.GetWorkflowError())
	var next contract.SessionInput
	require.NoError(t, converterDecode(can, &next))
	require.Equal(t, 7, next.CarryOver.Iteration, "300 ms iterations: the run continues as new once 2 s old, after the 7th")
}

func TestSessionPauseResumeAndGuidance(t *testing.T) {
	env := newEnv(t)
	s := &script{results: []func(contract.IterationInput) (contract.IterationResult, error){ok(workflowtest.Progressed(0, 1)), ok(workflowtest.Progressed(0, 2)), ok(workflowtest.Progressed(0, 2)),
		func(in contract.IterationInput) (contract.IterationResult, error) {
			r := workflowtest.Progressed(in.Iteration, 3)
			r.CompletionClaimed = true
			return r, nil
		}}}
	env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(s.run).After(10 * time.Minute)
	var paused contract.Status
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(contract.SignalPause, nil)
		env.SignalWorkflow(contract.SignalGuide, "use the existing helper in util.go")
	}, 5*time.Minute)
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(contract.QueryStatus)
		require.NoError(t, err)
		require.NoError(t, v.Get(&paused))
		env.SignalWorkflow(contract.SignalResume, nil)
	}, 3*24*time.Hour)
	in := workflowtest.SessionInput()
	in.Limits.MaxRuntime = 0 // a pause of days counts against a runtime limit
	res := runSession(t, env, in)
	require.Equal(t, contract.ReasonComplete, res.Reason)
	require.Equal(t, contract.StatePaused, paused.State)
	require.Equal(t, 1, paused.Iteration)
	require.Empty(t, s.inputs[0].Guidance)
	require.Equal(t, []string{"use the existing helper in util.go"}, s.inputs[1].Guidance)
	require.Empty(t, s.inputs[2].Guidance, "guidance is consumed once")
}

func converterDecode(can *workflow.ContinueAsNewError, v any) error {
	return converter.GetDefaultDataConverter().FromPayloads(can.Input, v)
}

func TestSessionEndsWhenTheTaskFileStaysBroken(t *testing.T) {
	env := newEnv(t)
	broken := func(in contract.IterationInput) (contract.IterationResult, error) {
		r := workflowtest.Progressed(in.Iteration, 1)
		r.Outcome = contract.OutcomeAgentError
		r.TaskFileError = "prd.json:4:58: invalid character '}'"
		r.Repair = in.Iteration > 1
		return r, nil
	}
	s := &script{results: []func(contract.IterationInput) (contract.IterationResult, error){broken}}
	env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(s.run)
	in := workflowtest.SessionInput()
	in.Limits.MaxConsecutiveFailures = 10
	res := runSession(t, env, in)
	require.Equal(t, contract.ReasonTaskFileInvalid, res.Reason)
	require.Equal(t, 1+contract.DefaultMaxTaskFileRepairs, res.Iterations, "the iteration that broke it, then the repair attempts")
	require.Contains(t, res.Message, "2 repair attempts")
	require.Contains(t, res.Message, "prd.json:4:58")
	require.Equal(t, 1, res.Reason.ExitCode())
}

func TestSessionRepairedTaskFileGoesOn(t *testing.T) {
	env := newEnv(t)
	s := &script{results: []func(contract.IterationInput) (contract.IterationResult, error){
		func(in contract.IterationInput) (contract.IterationResult, error) {
			r := workflowtest.Progressed(in.Iteration, 1)
			r.Outcome = contract.OutcomeAgentError
			r.TaskFileError = "prd.json:4:58: invalid character '}'"
			return r, nil
		},
		ok(workflowtest.Progressed(0, 1)),
		ok(workflowtest.Progressed(0, 2)),
		claims,
	}}
	env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(s.run)
	env.ExecuteWorkflow(session.Session, workflowtest.SessionInput())
	var res contract.SessionResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, contract.ReasonComplete, res.Reason)
	require.Empty(t, s.inputs[2].Notices, "a repair that kept every story needs no notice")
}

func TestSessionRepairThatDropsStoriesIsToldToTheNextIteration(t *testing.T) {
	env := newEnv(t)
	s := &script{results: []func(contract.IterationInput) (contract.IterationResult, error){
		ok(workflowtest.Progressed(0, 1)), // prd.json has 3 stories
		func(in contract.IterationInput) (contract.IterationResult, error) {
			r := workflowtest.Progressed(in.Iteration, 1)
			r.Outcome = contract.OutcomeAgentError
			r.TaskFileError = "prd.json:4:58: invalid character '}'"
			r.Task = contract.TaskState{}
			return r, nil
		},
		func(in contract.IterationInput) (contract.IterationResult, error) {
			r := workflowtest.Progressed(in.Iteration, 1)
			r.Repair = true
			r.Task.Total = 2
			return r, nil
		},
		ok(workflowtest.Progressed(0, 1)),
	}}
	env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(s.run)
	in := workflowtest.SessionInput()
	in.Limits.MaxIterations = 4
	in.Limits.MaxNoProgress = 10
	env.ExecuteWorkflow(session.Session, in)
	require.NoError(t, env.GetWorkflowError())
	require.Len(t, s.inputs, 4)
	require.Len(t, s.inputs[3].Notices, 1)
	require.Contains(t, s.inputs[3].Notices[0], "now has 2 stories or tasks where it had 3")
}

func TestSessionHaltsOnRewrittenHistoryAndPassesNotices(t *testing.T) {
	env := newEnv(t)
	s := &script{results: []func(contract.IterationInput) (contract.IterationResult, error){
		func(in contract.IterationInput) (contract.IterationResult, error) {
			r := workflowtest.Progressed(in.Iteration, 1)
			r.Notices = []string{"Ralph put main back at abc"}
			return r, nil
		},
		func(in contract.IterationInput) (contract.IterationResult, error) {
			r := workflowtest.Progressed(in.Iteration, 1)
			r.Halt = "iteration 2 rewrote git history: abc is no longer an ancestor of HEAD def"
			return r, nil
		},
	}}
	env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(s.run)
	env.ExecuteWorkflow(session.Session, workflowtest.SessionInput())
	var res contract.SessionResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, contract.ReasonGitRewritten, res.Reason)
	require.Contains(t, res.Message, "rewrote git history")
	require.Equal(t, 2, res.Iterations)
	require.Equal(t, []string{"Ralph put main back at abc"}, s.inputs[1].Notices, "the notice reaches the next iteration")
	require.Equal(t, "main", s.inputs[1].Branch)
	require.NotEmpty(t, s.inputs[0].ExecutionKey)
	require.Equal(t, s.inputs[0].ExecutionKey, s.inputs[1].ExecutionKey)
}

// A task file that is already done ends the session complete at prepare:
// no agent runs.
func TestSessionCompleteAtPrepare(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(session.Session)
	workflowtest.RegisterNotify(env)
	p := workflowtest.Prepared()
	p.Task = contract.TaskState{Mode: "prd", File: "prd.json", Total: 3, Done: 3, Complete: true, Verifiable: true}
	env.OnActivity(a.PrepareWorkspace, mock.Anything, mock.Anything).Return(p, nil)
	env.ExecuteWorkflow(session.Session, workflowtest.SessionInput())
	require.NoError(t, env.GetWorkflowError())
	var res contract.SessionResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, contract.ReasonComplete, res.Reason)
	require.Equal(t, "prd.json is already complete (3 of 3 done): no iteration ran", res.Message)
	require.Zero(t, res.Iterations)
	env.AssertNotCalled(t, "RunIteration", mock.Anything, mock.Anything)
}

// TestGuideFloodOnAPausedSession: 20 guide signals of 120 KB on a paused
// session; after resume it completes, each text clipped at 16 KiB and the
// oldest four dropped (said in its status), and an answer over 16 KiB is
// refused with a clear message.
func TestGuideFloodOnAPausedSession(t *testing.T) {
	env := newEnv(t)
	s := &script{results: []func(contract.IterationInput) (contract.IterationResult, error){ok(workflowtest.Progressed(0, 1)), ok(workflowtest.Progressed(0, 2)),
		func(in contract.IterationInput) (contract.IterationResult, error) {
			r := workflowtest.Progressed(in.Iteration, 3)
			r.CompletionClaimed = true
			return r, nil
		}}}
	env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(s.run).After(10 * time.Minute)
	big := strings.Repeat("g", 120<<10)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(contract.SignalPause, nil)
		for i := range 20 {
			env.SignalWorkflow(contract.SignalGuide, fmt.Sprintf("guide %02d %s", i, big))
		}
	}, 5*time.Minute)
	var paused contract.Status
	env.RegisterDelayedCallback(func() {
		paused = queryStatus(t, env)
		env.SignalWorkflow(contract.SignalResume, nil)
	}, time.Hour)
	res := runSession(t, env, workflowtest.SessionInput())
	require.Equal(t, contract.ReasonComplete, res.Reason, res.Message)
	require.Equal(t, 4, paused.DroppedGuidance)
	g := s.inputs[1].Guidance
	require.Len(t, g, contract.GuidanceLimit)
	require.True(t, strings.HasPrefix(g[0], "guide 04 "), "the oldest are dropped")
	for _, text := range g {
		require.LessOrEqual(t, len(text), contract.MessageLimit)
		require.True(t, strings.HasSuffix(text, "[clipped: the guidance was longer than 16 KiB]"))
	}
}

func TestAnswerOverTheLimitIsRefused(t *testing.T) {
	env := newEnv(t)
	s := &script{results: []step{asks("Which database?"), ok(workflowtest.Progressed(0, 2)), claims}}
	env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(s.run)
	var big, good *update
	env.RegisterDelayedCallback(func() {
		big = sendUpdate(env, contract.UpdateRespond, contract.Answer{ID: "cp-1", Answer: strings.Repeat("x", contract.MessageLimit+1)})
	}, time.Hour)
	env.RegisterDelayedCallback(func() {
		good = sendUpdate(env, contract.UpdateRespond, contract.Answer{ID: "cp-1", Answer: "postgres"})
	}, 2*time.Hour)
	res := runSession(t, env, workflowtest.SessionInput())
	require.Equal(t, contract.ReasonComplete, res.Reason, res.Message)
	require.ErrorContains(t, big.rejected, "the answer and its reason are 16385 bytes; at most 16384 (16 KiB) are taken")
	require.True(t, good.accepted)
}

// TestQuickIterationsSpaceTheirSearchAttributes checks that iterations
// shorter than publishEvery do not each write an upsert event: the
// iteration and cost are pushed at most every 5 s, a change of state at
// once, and the last push carries the session's final figures.
func TestQuickIterationsSpaceTheirSearchAttributes(t *testing.T) {
	env := newEnv(t)
	in := workflowtest.SessionInput()
	in.Limits.MaxIterations, in.Limits.MaxNoProgress = 12, 12
	s := &script{results: []func(contract.IterationInput) (contract.IterationResult, error){ok(workflowtest.Progressed(0, 1))}}
	env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(s.run).After(2 * time.Second)
	iterKey := temporal.NewSearchAttributeKeyInt64(contract.SearchRalphIteration)
	statusKey := temporal.NewSearchAttributeKeyKeyword(contract.SearchRalphStatus)
	type push struct {
		at        time.Time
		iteration int64
		state     bool
	}
	var pushes []push
	env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		sa := args.Get(0).(temporal.SearchAttributes)
		it, ok := sa.GetInt64(iterKey)
		if !ok {
			return
		}
		_, state := sa.GetKeyword(statusKey)
		pushes = append(pushes, push{env.Now(), it, state})
	}).Return(nil)
	res := runSession(t, env, in)
	require.Equal(t, contract.ReasonMaxIterations, res.Reason)

	require.NotEmpty(t, pushes)
	require.Less(t, len(pushes), 12, "one push per iteration")
	require.Equal(t, int64(12), pushes[len(pushes)-1].iteration, "the last push carries the last iteration")
	for i := 1; i < len(pushes); i++ {
		if !pushes[i].state {
			require.GreaterOrEqual(t, pushes[i].at.Sub(pushes[i-1].at), 5*time.Second, "push %d came too soon", i)
		}
	}
}
