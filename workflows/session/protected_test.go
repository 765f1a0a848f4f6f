package session_test

import (
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/workflows/session"
	"github.com/durable-ralph/ralph/workflows/workflowtest"
)

// TestSessionCountsSetAsideIterationsAsFailed checks that iterations whose
// work changed a protected path fail, say so in their line and tell the
// next iteration, until the failures end the session.
func TestSessionCountsSetAsideIterationsAsFailed(t *testing.T) {
	env := newEnv(t)
	setAside := func(in contract.IterationInput) (contract.IterationResult, error) {
		r := workflowtest.Progressed(in.Iteration, 1)
		r.Commit, r.Outcome, r.Reason = "", contract.OutcomeAgentError, "changed protected path .github/workflows/ci.yml"
		r.NotCommitted = "changed protected path .github/workflows/ci.yml (patch: .ralph/protected/iteration-1.patch; allow with git.protected-paths: [])"
		r.Notices = []string{"Ralph did not commit the last iteration's work"}
		return r, nil
	}
	s := &script{results: []func(contract.IterationInput) (contract.IterationResult, error){setAside}}
	env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(s.run)
	in := workflowtest.SessionInput()
	in.Git.ProtectedPaths = []string{}
	env.ExecuteWorkflow(session.Session, in)
	var res contract.SessionResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, contract.ReasonConsecutiveFailures, res.Reason)
	require.Contains(t, res.Message, "changed protected path")
	require.NotNil(t, res.Last)
	require.Contains(t, res.Last.Line(), "no commit; not committed: changed protected path .github/workflows/ci.yml (patch:")
	require.Equal(t, []string{"Ralph did not commit the last iteration's work"}, s.inputs[1].Notices, "the next iteration is told")
	require.Equal(t, []string{}, s.inputs[0].Git.ProtectedPaths, "an explicit empty list reaches the iteration")
}
