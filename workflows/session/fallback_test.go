package session_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/workflows/workflowtest"
)

// TestUsageLimitFallsBackUntilItResets: with agent.fallback, a usage
// limit that resets in an hour moves the following iterations to the
// fallback backend (the limited iteration runs again there at once), and
// they go back to the session's own backend once the limit has reset. A
// limit that resets sooner than agent.fallback-after is waited for.
func TestUsageLimitFallsBackUntilItResets(t *testing.T) {
	for _, tt := range []struct {
		name     string
		resetsIn time.Duration
		want     []string // the backend of each agent run
	}{
		{"resets in an hour", time.Hour, []string{"", "codex", "codex", "codex", ""}},
		{"resets in ten minutes", 10 * time.Minute, []string{"", "", "", "", ""}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env := newEnv(t)
			in := workflowtest.SessionInput()
			in.Limits.MaxIterations, in.Limits.MaxNoProgress = 4, 10
			in.Fallback = &contract.FallbackSettings{
				Agents: []contract.AgentSettings{{Backend: "codex", Command: []string{"codex"}}},
				After:  15 * time.Minute,
			}
			var mu sync.Mutex
			var ran []string
			env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(
				func(_ context.Context, in contract.IterationInput) (contract.IterationResult, error) {
					mu.Lock()
					defer mu.Unlock()
					ran = append(ran, in.Agent.Backend)
					if len(ran) == 1 {
						require.Equal(t, []string{"claude"}, in.Agent.Command)
						return contract.IterationResult{Iteration: in.Iteration, Outcome: contract.OutcomeRateLimited,
							Reason: "usage limit", RateLimitResetsAt: env.Now().Add(tt.resetsIn)}, nil
					}
					r := workflowtest.Progressed(in.Iteration, 1)
					r.CostUSD = 0.5
					return r, nil
				}).After(20 * time.Minute)
			res := runSession(t, env, in)
			require.Equal(t, contract.ReasonMaxIterations, res.Reason, res.Message)
			require.Equal(t, tt.want, ran)

			v, err := env.QueryWorkflow(contract.QueryStatus)
			require.NoError(t, err)
			var st contract.Status
			require.NoError(t, v.Get(&st))
			require.Nil(t, st.Fallback, "back on the session's own backend")
			var on []string
			for _, it := range st.Recent {
				if it.Outcome == contract.OutcomeSuccess {
					on = append(on, it.Backend)
				}
			}
			require.Equal(t, tt.want[1:], on, "each iteration says where it ran")
			if tt.resetsIn == time.Hour {
				require.Equal(t, map[string]float64{"claude": 0.5, "codex": 1.5}, st.Totals.CostByBackend)
				require.Equal(t, 1, st.Totals.RateLimitWaits, "the limit counted once")
			} else {
				require.Equal(t, map[string]float64{"claude": 2}, st.Totals.CostByBackend)
			}
		})
	}
}

// TestIterationThatFailsAfterRetriesCountsItsLastBeat: the attempts of
// an iteration all die with their heartbeat timed out; the session
// counts what the last one reported in its last heartbeat, with what it
// carried of the attempts before it.
func TestIterationThatFailsAfterRetriesCountsItsLastBeat(t *testing.T) {
	env := newEnv(t)
	in := workflowtest.SessionInput()
	in.Limits.MaxIterations, in.Limits.MaxConsecutiveFailures = 1, 5
	beat := contract.Progress{Attempt: 5, Iteration: 1, CostUSD: 0.25, Usage: contract.Usage{InputTokens: 40, OutputTokens: 2},
		EarlierCostUSD: 0.5, EarlierUsage: contract.Usage{InputTokens: 8}}
	env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(contract.IterationResult{}, temporal.NewHeartbeatTimeoutError(beat))
	res := runSession(t, env, in)
	require.Equal(t, 1, res.Totals.Failures)
	require.InDelta(t, 0.75, res.Totals.CostUSD, 1e-9, "the last attempt's and those it carried")
	require.Equal(t, int64(50), res.Totals.Usage.Total())
}

// TestNextIterationGetsTheUncountedRun: an iteration that failed after
// its retries is handed to the next iteration's input (Uncounted), with
// what the session counted of its last attempt, so that the next
// iteration's worker counts what that attempt's run cost beyond it; once
// an iteration returned a result, it is handed on no more.
func TestNextIterationGetsTheUncountedRun(t *testing.T) {
	env := newEnv(t)
	in := workflowtest.SessionInput()
	in.Limits.MaxIterations, in.Limits.MaxConsecutiveFailures = 3, 5
	beat := contract.Progress{Attempt: 5, Iteration: 1, CostUSD: 0.25, Usage: contract.Usage{InputTokens: 40}, EarlierCostUSD: 0.5}
	var inputs []contract.IterationInput
	env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(func(_ context.Context, in contract.IterationInput) (contract.IterationResult, error) {
		inputs = append(inputs, in)
		if in.Iteration == 1 { // every attempt of it
			return contract.IterationResult{}, temporal.NewHeartbeatTimeoutError(beat)
		}
		return workflowtest.Progressed(in.Iteration, 1), nil
	})
	runSession(t, env, in)
	require.Len(t, inputs, 5+2, "iteration 1's five attempts, then two")
	require.Empty(t, inputs[4].Uncounted)
	require.Equal(t, []contract.UncountedRun{{Iteration: 1, Attempt: 5, CostUSD: 0.25, Usage: contract.Usage{InputTokens: 40}}}, inputs[5].Uncounted)
	require.Empty(t, inputs[6].Uncounted, "counted by iteration 2's result")
}
