// Package gittest makes the git repositories that tests work in: real
// git, in a temporary directory, with an author of its own.
package gittest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// NewRepo is a repository on branch main in a temporary directory (its
// real path, symlinks resolved), with files (slash-separated names,
// directories made) committed as "initial" by dev@example.com.
func NewRepo(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	if resolved, err := filepath.EvalSymlinks(dir); err == nil {
		dir = resolved
	}
	Run(t, dir, "init", "-q", "-b", "main")
	Run(t, dir, "config", "user.email", "dev@example.com")
	Run(t, dir, "config", "user.name", "Dev")
	for name, content := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	}
	Run(t, dir, "add", "-A")
	Run(t, dir, "commit", "-q", "--allow-empty", "-m", "initial")
	return dir
}

// Run runs git with args in dir and returns its output; it fails t when
// git does.
func Run(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return string(out)
}
