package session_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/workflows/workflowtest"
)

// TestRewoundSignalAloneIsIgnored: the rewound signal moves a branch only
// with the reset it comes with (starter rewind). Sent alone (by hand from
// the Temporal UI), even naming the session's own iteration, it is
// dropped: the branch would move while the state stays.
func TestRewoundSignalAloneIsIgnored(t *testing.T) {
	env := newEnv(t)
	s := &script{results: []step{ok(workflowtest.Progressed(0, 1)), ok(workflowtest.Progressed(0, 2)), claims}}
	env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(s.run).After(time.Minute)
	var rewinds atomic.Int32
	env.OnActivity(a.RewindWorkspace, mock.Anything, mock.Anything).Return(
		func(context.Context, contract.RewindInput) (contract.RewindResult, error) {
			rewinds.Add(1)
			return contract.RewindResult{}, nil
		}).Maybe()
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(contract.SignalRewound, contract.RewindSignal{Rewind: contract.Rewind{
			To: 2, Commit: "c0ffee1", Ref: contract.RewoundRef("s", 1)}})
	}, 90*time.Second) // iteration 2 runs: the next turn is after 2

	res := runSession(t, env, workflowtest.SessionInput())
	require.Equal(t, contract.ReasonComplete, res.Reason, res.Message)
	require.Len(t, s.inputs, 3, "no iteration was run again")
	require.Zero(t, rewinds.Load(), "no branch moved")
	st := queryStatus(t, env)
	require.Empty(t, st.Rewound)
}

// TestForkAdoptsTheOriginalsState: a fork goes on from the original's
// state after the iteration it was forked at, with its own ID and key,
// the guidance given to it, and totals that start at the original's.
func TestForkAdoptsTheOriginalsState(t *testing.T) {
	env := newEnv(t)
	s := &script{results: []step{ok(workflowtest.Progressed(0, 3)), claims}}
	env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(s.run)
	in := workflowtest.SessionInput()
	from := contract.ForkedFrom{Session: "ralph-app-1234@laptop", Iteration: 2, Commit: "c0ffee2", CostUSD: 0.5}
	in.Fork = &contract.Fork{From: from, Guidance: "try the other way", State: contract.CarryOver{
		SessionID: "ralph-app-1234@laptop", ExecutionKey: "ralph-app-1234@laptop.run-1", Iteration: 2,
		Totals:   contract.Totals{CostUSD: 0.5, Commits: 2},
		Guidance: []string{"waiting since iteration 2"},
		Rewound:  []contract.Rewind{{To: 1}},
		Answered: []contract.AnsweredCheckpoint{{Checkpoint: contract.Checkpoint{ID: "cp-1"}}},
	}}

	res := runSession(t, env, in)
	require.Equal(t, contract.ReasonComplete, res.Reason, res.Message)
	require.Equal(t, 3, s.inputs[0].Iteration, "the fork goes on after iteration 2")
	require.Equal(t, []string{"waiting since iteration 2", "try the other way"}, s.inputs[0].Guidance)
	require.NotEqual(t, "ralph-app-1234@laptop.run-1", s.inputs[0].ExecutionKey, "a key of its own")
	require.Equal(t, 4, res.Iterations)
	require.InDelta(t, 0.5+0.01+0.01, res.Totals.CostUSD, 1e-9, "the original's cost, then the fork's own")
	st := queryStatus(t, env)
	require.Equal(t, &from, st.ForkedFrom)
	require.Empty(t, st.Rewound, "the original's rewinds are its own")
	require.Len(t, st.Answered, 1, "the original's answers are kept")
}
