package session_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/workflows/workflowtest"
)

// TestOnLimitAsk checks limits.on-limit ask: at a limit the session asks
// a person and waits; set-limits or an answer raises the limit and the
// loop goes on, stop or a timeout ends it limited.
func TestOnLimitAsk(t *testing.T) {
	type answer func(env *testsuite.TestWorkflowEnvironment, cp contract.Checkpoint)
	signal := func(text string, approve, reject bool) answer {
		return func(env *testsuite.TestWorkflowEnvironment, cp contract.Checkpoint) {
			env.SignalWorkflow(contract.SignalCheckpoint, contract.Answer{ID: cp.ID, Answer: text, Approve: approve, Reject: reject, By: "ana"})
		}
	}
	for _, tc := range []struct {
		name       string
		onLimit    string
		maxCost    float64
		maxIter    int
		timeout    time.Duration
		answers    []answer
		asked      []string // checkpoint IDs asked
		question   []string // what the first question says
		note       string   // what the second question says first
		reason     contract.Reason
		message    string
		iterations int
		limits     contract.Limits // the limits at the end (the fields set)
	}{{
		name: "set-limits raises the cost limit", onLimit: contract.OnLimitAsk, maxCost: 0.02,
		answers: []answer{func(env *testsuite.TestWorkflowEnvironment, _ contract.Checkpoint) {
			sendUpdate(env, contract.UpdateSetLimits, contract.SetLimitsRequest{MaxCostUSD: 0.10})
		}},
		asked:    []string{"cp-2-limit"},
		question: []string{"reached its cost limit: cost $0.0200 reached the limit of $0.02", "Spent so far: 2 iterations", "starter set-limits", "--max-cost"},
		reason:   contract.ReasonComplete, iterations: 3, limits: contract.Limits{MaxCostUSD: 0.10},
	}, {
		name: "stop ends it limited", onLimit: contract.OnLimitAsk, maxCost: 0.02,
		answers: []answer{signal("stop, that is enough", false, false)},
		asked:   []string{"cp-2-limit"},
		reason:  contract.ReasonMaxCost, message: "@ana chose to stop", iterations: 2,
	}, {
		name: "an answer that names no limit is asked again, approve doubles it", onLimit: contract.OnLimitAsk, maxCost: 0.02,
		answers: []answer{signal("hmm, maybe later", false, false), signal("", true, false)},
		asked:   []string{"cp-2-limit", "cp-2-limit-2"},
		note:    `The answer "answered: hmm, maybe later" did not raise the limit`,
		reason:  contract.ReasonComplete, iterations: 3, limits: contract.Limits{MaxCostUSD: 0.04},
	}, {
		name: "an answer raises the iterations", onLimit: contract.OnLimitAsk, maxIter: 1,
		answers:  []answer{signal("raise to 5 iterations", false, false)},
		asked:    []string{"cp-1-limit"},
		question: []string{"reached its iterations limit: 1 iteration ran"},
		reason:   contract.ReasonComplete, iterations: 3, limits: contract.Limits{MaxIterations: 5},
	}, {
		name: "nobody answers in time", onLimit: contract.OnLimitAsk, maxCost: 0.02, timeout: time.Hour,
		asked:  []string{"cp-2-limit"},
		reason: contract.ReasonMaxCost, message: "nobody raised the limit within 1h0m0s", iterations: 2,
	}, {
		name: "end does not ask", onLimit: contract.OnLimitEnd, maxCost: 0.02,
		reason: contract.ReasonMaxCost, iterations: 2,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t)
			s := &script{results: []step{ok(workflowtest.Progressed(0, 1)), ok(workflowtest.Progressed(0, 2)), claims}}
			env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(s.run)
			var asked []contract.Checkpoint
			var states []contract.State
			for i := range 4 {
				env.RegisterDelayedCallback(func() {
					st := queryStatus(t, env)
					if st.Pending == nil || len(asked) > 0 && asked[len(asked)-1].ID == st.Pending.ID {
						return
					}
					asked = append(asked, *st.Pending)
					states = append(states, st.State)
					if n := len(asked) - 1; n < len(tc.answers) {
						tc.answers[n](env, *st.Pending)
					}
				}, time.Duration(i+1)*10*time.Minute)
			}
			in := workflowtest.SessionInput()
			in.Limits.OnLimit = tc.onLimit
			in.Checkpoints.Timeout = tc.timeout
			if tc.maxCost > 0 {
				in.Limits.MaxCostUSD = tc.maxCost
			}
			if tc.maxIter > 0 {
				in.Limits.MaxIterations = tc.maxIter
			}
			res := runSession(t, env, in)
			require.Equal(t, tc.reason, res.Reason, res.Message)
			require.Contains(t, res.Message, tc.message)
			require.Equal(t, tc.iterations, res.Iterations)
			var ids []string
			for i, cp := range asked {
				ids = append(ids, cp.ID)
				require.Equal(t, contract.KindLimit, cp.Kind)
				require.Equal(t, contract.StateAwaitingHuman, states[i])
			}
			require.Equal(t, tc.asked, ids)
			for _, want := range tc.question {
				require.Contains(t, asked[0].Question, want)
			}
			if tc.note != "" {
				require.Contains(t, asked[1].Question, tc.note)
			}
			st := queryStatus(t, env)
			if tc.limits.MaxCostUSD > 0 {
				require.InDelta(t, tc.limits.MaxCostUSD, st.Limits.MaxCostUSD, 1e-9)
			}
			if tc.limits.MaxIterations > 0 {
				require.Equal(t, tc.limits.MaxIterations, st.Limits.MaxIterations)
			}
			if tc.reason != contract.ReasonComplete {
				require.Equal(t, contract.StateLimited, st.State)
			}
		})
	}
}
