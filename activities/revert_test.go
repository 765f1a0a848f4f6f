package activities_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/contract"
)

// TestPrepareRevert: the branch that reverts a squash-merged change is
// pushed as one commit on origin's main as it is now; a retry keeps what
// the first attempt pushed; a change later commits rewrote does not
// revert cleanly and says so, for good.
func TestPrepareRevert(t *testing.T) {
	dev, origin := pushClone(t, "greeting.go", "package api\n\nconst Greeting = \"hello\"\n")
	gitRun(t, dev, "checkout", "-q", "main")
	gitRun(t, dev, "merge", "-q", "--squash", "ralph/issue-7")
	gitRun(t, dev, "commit", "-q", "-m", "Add a greeting (#2)")
	merged := strings.TrimSpace(gitRun(t, dev, "rev-parse", "HEAD"))
	require.NoError(t, os.WriteFile(filepath.Join(dev, "later.txt"), []byte("later\n"), 0o644))
	gitRun(t, dev, "add", "-A")
	gitRun(t, dev, "commit", "-q", "-m", "later work")
	gitRun(t, dev, "push", "-q", "origin", "main")
	main := strings.TrimSpace(gitRun(t, dev, "rev-parse", "HEAD"))

	ag := &activities.Agent{ClonesDir: filepath.Join(t.TempDir(), "clones"), Records: t.TempDir()}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(ag)
	val, err := env.ExecuteActivity(ag.CloneRepo, contract.CloneInput{Repo: contract.Repo{Owner: "acme", Name: "api"}, URL: origin})
	require.NoError(t, err)
	var cloned contract.CloneResult
	require.NoError(t, val.Get(&cloned))

	revert := func(commit, branch string) (contract.RevertResult, error) {
		val, err := env.ExecuteActivity(ag.PrepareRevert, contract.RevertInput{Clone: cloned.Dir, Base: "main", Commit: commit, Branch: branch,
			Subject: "Revert \"Add a greeting (#2)\"", Body: "Change set greeting rolled back: acme/web failed."})
		var res contract.RevertResult
		if err == nil {
			require.NoError(t, val.Get(&res))
		}
		return res, err
	}
	first, err := revert(merged, "ralph/revert-greeting-2")
	require.NoError(t, err)
	require.Equal(t, first.Head, strings.TrimSpace(gitRun(t, origin, "rev-parse", "ralph/revert-greeting-2")), "pushed")
	require.Equal(t, main, strings.TrimSpace(gitRun(t, origin, "rev-parse", first.Head+"^")), "on main as origin has it")
	files := gitRun(t, origin, "ls-tree", "--name-only", first.Head)
	require.NotContains(t, files, "greeting.go")
	require.Contains(t, files, "later.txt")
	again, err := revert(merged, "ralph/revert-greeting-2")
	require.NoError(t, err)
	require.Equal(t, first, again, "a retry keeps the pushed branch")

	require.NoError(t, os.WriteFile(filepath.Join(dev, "greeting.go"), []byte("package api\n\nconst Greeting = \"hi\"\n"), 0o644))
	gitRun(t, dev, "commit", "-q", "-am", "hi")
	gitRun(t, dev, "push", "-q", "origin", "main")
	_, err = revert(merged, "ralph/revert-greeting-3")
	require.ErrorContains(t, err, "does not revert cleanly onto main")
	require.ErrorContains(t, err, contract.ErrTypeRevertConflict)
}
