package git_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/git"
)

func TestClone(t *testing.T) {
	ctx := context.Background()
	src := t.TempDir()
	run := func(dir string, args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	run(src, "init", "-q", "-b", "trunk")
	require.NoError(t, os.WriteFile(filepath.Join(src, "README.md"), []byte("# app\n"), 0o644))
	run(src, "add", "README.md")
	run(src, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "first")
	origin := filepath.Join(t.TempDir(), "origin.git")
	run(src, "clone", "-q", "--bare", src, origin)

	dir := filepath.Join(t.TempDir(), "clones", "acme", "app")
	r, err := git.Clone(ctx, nil, origin, dir)
	require.NoError(t, err)
	branch, err := r.Branch(ctx)
	require.NoError(t, err)
	require.Equal(t, "trunk", branch, "the remote's default branch")
	data, err := os.ReadFile(filepath.Join(dir, "README.md"))
	require.NoError(t, err)
	require.Equal(t, "# app\n", string(data))

	_, err = git.Clone(ctx, nil, origin, dir)
	require.ErrorContains(t, err, "is not empty", "an existing clone is its owner's to bring up to date")
}
