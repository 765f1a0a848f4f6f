package activities_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/contract"
)

// TestCloneRepoChecksWhatAgentsWorkedIn: the worker clones a change
// set's repository once; a later set opens that clone as it opens every
// workspace agents worked in (against its pin) before it runs git there,
// so a commondir an agent planted in the clone's git directory (leading
// git to a configuration of its own) makes it refuse, and so does a
// clone of another repository at that place.
func TestCloneRepoChecksWhatAgentsWorkedIn(t *testing.T) {
	_, origin := pushClone(t, "x.txt", "x")
	ag := &activities.Agent{ClonesDir: filepath.Join(t.TempDir(), "clones"), Records: t.TempDir()}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(ag)
	clone := func(url string) (string, error) {
		val, err := env.ExecuteActivity(ag.CloneRepo, contract.CloneInput{Repo: contract.Repo{Owner: "acme", Name: "api"}, URL: url})
		if err != nil {
			return "", err
		}
		var res contract.CloneResult
		require.NoError(t, val.Get(&res))
		return res.Dir, nil
	}
	dir, err := clone(origin)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(ag.ClonesDir, "acme", "api"), dir)
	require.FileExists(t, filepath.Join(dir, "README.md"))
	again, err := clone(origin)
	require.NoError(t, err, "a later set fetches the clone again")
	require.Equal(t, dir, again)

	_, err = clone("/elsewhere/api.git")
	require.ErrorContains(t, err, "is a clone of")

	evil := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".git", "commondir"), []byte(evil), 0o644))
	_, err = clone(origin)
	require.ErrorContains(t, err, "commondir")
}
