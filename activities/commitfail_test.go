package activities

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/git"
	"github.com/durable-ralph/ralph/internal/gittest"
)

// TestCommitThatFailsOnTheLastAttemptIsAResult: the agent finished but
// its work cannot be committed (here HEAD names a branch git cannot
// create). An attempt with retries left fails, so that Temporal retries
// the commit (the recorded result spares the agent); the last attempt
// reports the iteration as not committed, with the agent's cost, rather
// than an error that would lose it.
func TestCommitThatFailsOnTheLastAttemptIsAResult(t *testing.T) {
	for _, last := range []bool{false, true} {
		dir := gittest.NewRepo(t, map[string]string{"a.txt": "a\n"})
		gittest.Run(t, dir, "branch", "x")
		gittest.Run(t, dir, "symbolic-ref", "HEAD", "refs/heads/x/y")
		require.NoError(t, os.WriteFile(filepath.Join(dir, "b.txt"), []byte("b\n"), 0o644))
		repo, err := git.Open(context.Background(), dir)
		require.NoError(t, err)
		a := &Agent{lastAttempt: last, Records: t.TempDir()}
		in := contract.IterationInput{SessionID: "s", Iteration: 1, Workspace: dir, Git: contract.GitSettings{AutoCommit: true}}
		ran := contract.IterationResult{Iteration: 1, Outcome: contract.OutcomeSuccess, CostUSD: 0.5, CompletionClaimed: true}

		res, err := a.finishCommit(context.Background(), repo, in, ran, commitPlan{})
		if !last {
			require.ErrorContains(t, err, "commit iteration 1")
			continue
		}
		require.NoError(t, err)
		require.Equal(t, 0.5, res.CostUSD)
		require.Empty(t, res.Commit)
		require.Equal(t, contract.OutcomeAgentError, res.Outcome)
		require.False(t, res.CompletionClaimed)
		require.Contains(t, res.NotCommitted, "commit iteration 1")
	}
}
