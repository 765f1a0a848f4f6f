package testsuite_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/contract"
)

// TestWorktreeSessionsOnOneClone runs two sessions on one clone at once,
// each in a work tree of its own, and cleans one up after.
func TestWorktreeSessionsOnOneClone(t *testing.T) {
	r := newRepo(t, map[string]string{"prd.json": threeStoryPRD, "progress.txt": ""})
	se := newStarterEnv(t, scenario(t, map[string]any{"auto": true, "sleep_ms": 1500}))
	startDevWorker(t, se)

	names := []string{"alpha", "beta"}
	ids := map[string]string{}
	for _, name := range names {
		code, out := starter(t, se, "run", "--dev", "--worktree", name, r.Dir)
		require.Equal(t, 0, code, out)
		dir := contract.SessionWorktree{Clone: r.Dir, Name: name}.Dir()
		ids[name] = sessionIDOf(dir)
		require.Contains(t, out, "Started session "+ids[name]+" for "+dir)
	}
	require.NotEqual(t, ids["alpha"], ids["beta"], "a workflow ID each")

	code, out := starter(t, se, "run", "--dev", "--worktree", "../escape", r.Dir)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, `worktree name "../escape" must be 1 to 63 letters`)
	code, out = starter(t, se, "run", "--dev", "--worktree", "issue-7", r.Dir)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "taken by the issue queue")

	// Both run at once: list shows them, and a clean of a running one is
	// refused.
	waitFor(t, time.Minute, "both sessions to run", func() bool {
		_, out := starter(t, se, "list", "--dev", "--status", "running")
		return strings.Contains(out, ids["alpha"]) && strings.Contains(out, ids["beta"])
	})
	code, out = starter(t, se, "clean", "--dev", "alpha", r.Dir)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "still runs")

	code, out = starter(t, se, "run", "--dev", "--follow", "-q", "--worktree", "alpha", r.Dir)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "Attached to running session "+ids["alpha"])
	require.Contains(t, out, "ended: complete")
	betaDir := contract.SessionWorktree{Clone: r.Dir, Name: "beta"}.Dir()
	waitForStarter(t, se, "beta to complete", "complete", "status", "--dev", betaDir)

	// The agents worked in their own work trees, at the same time.
	byDir := map[string][]time.Time{}
	for _, c := range calls(t, se.env) {
		byDir[c.CWD] = append(byDir[c.CWD], c.Time)
	}
	a := byDir[filepath.Join(r.Dir, ".ralph", "worktrees", "alpha")]
	b := byDir[filepath.Join(r.Dir, ".ralph", "worktrees", "beta")]
	require.Len(t, a, 4, "three stories and the verify pass: %v", byDir)
	require.Len(t, b, 4, "%v", byDir)
	require.Empty(t, byDir[r.Dir], "no agent ran in the clone itself")
	require.True(t, a[0].Before(b[len(b)-1]) && b[0].Before(a[len(a)-1]), "the sessions overlapped: %v %v", a, b)

	// Each completed on its own branch; the clone's own branch is as it was.
	for _, name := range names {
		log := r.git("log", "--format=%s", "main..ralph/"+name)
		require.Equal(t, 3, strings.Count(log, "ralph: iteration"), log)
		require.Contains(t, r.git("show", "ralph/"+name+":prd.json"), `"passes": true`)
	}
	require.Equal(t, "main\n", r.git("rev-parse", "--abbrev-ref", "HEAD"))
	require.NotContains(t, r.read("prd.json"), `"passes": true`)
	require.Empty(t, strings.TrimSpace(r.git("status", "--porcelain")), "the clone is clean")

	code, out = starter(t, se, "status", "--dev", betaDir)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "beta of "+r.Dir+", on branch ralph/beta", "status names the work tree")

	// A dirty work tree needs --force; the branch outlives the work tree.
	alpha := contract.SessionWorktree{Clone: r.Dir, Name: "alpha"}.Dir()
	require.NoError(t, os.WriteFile(filepath.Join(alpha, "scratch.txt"), []byte("notes"), 0o644))
	code, out = starter(t, se, "clean", "--dev", "alpha", r.Dir)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "uncommitted changes (scratch.txt)")
	code, out = starter(t, se, "clean", "--dev", "--force", "alpha", r.Dir)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "Its branch ralph/alpha stays")
	require.NoDirExists(t, alpha)
	require.NotContains(t, r.git("worktree", "list"), "alpha")
	require.Contains(t, r.git("branch", "--list", "ralph/alpha"), "ralph/alpha")
	code, out = starter(t, se, "clean", "--dev", "alpha", r.Dir)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "has no work tree alpha")

	// A second run of a cleaned name continues its branch.
	code, out = starter(t, se, "run", "--dev", "--follow", "-q", "--worktree", "alpha", r.Dir)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "Started a new session")
	require.Contains(t, out, "already complete", "the branch ralph/alpha has every story done")
	for _, id := range ids {
		replayFrom(t, se, id)
	}
}
