package activities_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/contract"
)

// TestFailedIterationKeepsItsStoryApart: iteration 1 failed after its
// retries, its last attempt's agent having done US-001 and its worker
// stopped before the commit (the chaos soak's case). Iteration 2 commits
// that work first, as iteration 1's interrupted work on US-001, tells its
// agent so, and its own commit holds US-002 alone. Without the worker's
// record of the failed attempt, the story is the one HEAD's task file
// has next.
func TestFailedIterationKeepsItsStoryApart(t *testing.T) {
	for _, tt := range []struct {
		name    string
		records bool
	}{
		{"with the worker's records", true},
		{"without them", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := newRepo(t, map[string]string{"prd.json": prd, "progress.txt": ""})
			env, state := scenarioEnv(t, map[string]any{"auto": true})
			ag := &activities.Agent{Env: env}
			if tt.records {
				ag.Records = t.TempDir()
			}
			first := iterationInput(dir, 1)
			first.Git.AutoCommit = false // its worker stopped before the commit
			_, err := ag.Iterate(context.Background(), first, 5, nil, nil)
			require.NoError(t, err)
			if tt.records {
				forgetResult(t, ag, 1) // nor did it record its result
			}

			in := iterationInput(dir, 2)
			in.Uncounted = []contract.UncountedRun{{Iteration: 1}}
			res, err := ag.Iterate(context.Background(), in, 1, nil, nil)
			require.NoError(t, err)
			require.Equal(t, contract.OutcomeSuccess, res.Outcome, res.Reason)
			require.Equal(t, "US-002", res.StoryID)

			log := gitRun(t, dir, "log", "-2", "--format=%s%n%(trailers:only)", "--name-status")
			require.Equal(t, []string{"story-US-002.txt"}, added(t, dir, "HEAD"), log)
			require.Equal(t, []string{"story-US-001.txt"}, added(t, dir, "HEAD~1"), log)
			require.Equal(t, "ralph: iteration 1 (interrupted): US-001 List widgets", strings.TrimSpace(gitRun(t, dir, "log", "-1", "--format=%s", "HEAD~1")))
			require.Contains(t, gitRun(t, dir, "log", "-1", "--format=%(trailers)", "HEAD~1"), "Ralph-Interrupted: 1")
			require.Empty(t, strings.TrimSpace(gitRun(t, dir, "status", "--porcelain")))

			data, err := os.ReadFile(filepath.Join(state, "calls.jsonl"))
			require.NoError(t, err)
			lines := strings.Split(strings.TrimSpace(string(data)), "\n")
			require.Len(t, lines, 2)
			var second struct {
				Prompt string `json:"prompt"`
			}
			require.NoError(t, json.Unmarshal([]byte(lines[1]), &second))
			require.Contains(t, second.Prompt, "Iteration 1 failed after its retries (the processes running it stopped). Ralph committed the work it left as ")
		})
	}
}

// added lists the files commit adds.
func added(t *testing.T, dir, commit string) []string {
	t.Helper()
	out := strings.TrimSpace(gitRun(t, dir, "diff-tree", "--no-commit-id", "-r", "--diff-filter=A", "--name-only", commit))
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}
