package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/app"
	"github.com/durable-ralph/ralph/internal/devserver"
	"github.com/durable-ralph/ralph/internal/gittest"
)

// onePRD is a prd.json with one story to do, on branch (branchName).
func onePRD(branch string) string {
	return `{"project": "Widgets", "branchName": "` + branch + `", "description": "d", "userStories": [
  {"id": "US-001", "title": "List widgets", "description": "d", "acceptanceCriteria": ["list renders"], "priority": 1, "passes": false, "notes": ""}]}`
}

// TestStartUpChecksWithoutDev runs `starter run DIR` without --dev, on a
// Temporal server that TEMPORAL_ADDRESS names, on a workspace of this
// machine that a session could not start on: each is refused, saying
// why, and starts no session (list stays empty), as with --dev. A good
// workspace starts one, which list shows.
func TestStartUpChecksWithoutDev(t *testing.T) {
	useServer(t)

	notGit := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(notGit, "prd.json"), []byte(onePRD("ralph/widgets")), 0o644))
	dirty := gittest.NewRepo(t, map[string]string{"prd.json": onePRD("ralph/widgets")})
	require.NoError(t, os.WriteFile(filepath.Join(dirty, "notes.txt"), []byte("mine"), 0o644))
	tests := []struct {
		name, dir, want string
	}{
		{"no_task_file", gittest.NewRepo(t, map[string]string{"README.md": "hello"}), "no task file"},
		{"not_a_git_repository", notGit, "not a git"},
		{"uncommitted_changes", dirty, "has uncommitted changes (notes.txt)"},
		{"malformed_prd", gittest.NewRepo(t, map[string]string{"prd.json": `{"userStories": [`}), "prd.json"},
		{"invalid_branch_name", gittest.NewRepo(t, map[string]string{"prd.json": onePRD("ralph/two words")}), `prd.json: branchName "ralph/two words" is not a git branch name: it has a space`},
		{"no_such_directory", filepath.Join(t.TempDir(), "gone"), "is not a directory on this machine"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "run", tt.dir)
			require.Equal(t, 1, code, "stdout: %s\nstderr: %s", stdout, stderr)
			require.Contains(t, stderr, tt.want)
			require.NotContains(t, stdout, "Started session")
			code, list, stderr := runCLI(t, "list", "-o", "json")
			require.Equal(t, 0, code, stderr)
			require.Empty(t, list, "no session was started")
		})
	}

	good := gittest.NewRepo(t, map[string]string{"prd.json": onePRD("ralph/widgets")})
	code, stdout, stderr := runCLI(t, "run", good)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "Started session")
	// Visibility follows the start by a moment on a loaded machine.
	var list string
	require.Eventually(t, func() bool {
		_, list, _ = runCLI(t, "list", "-o", "json")
		return strings.Count(list, "\n") >= 1
	}, 10*time.Second, 200*time.Millisecond)
	require.Equal(t, 1, strings.Count(list, "\n"), list)
}

// useServer starts a Temporal server for the test and points the
// starter's commands at it as a server of their own (TEMPORAL_ADDRESS,
// not --dev), with a HOME and state directory of the test's.
func useServer(t *testing.T) {
	t.Helper()
	srv, err := devserver.Start(context.Background(), devserver.Options{SearchAttributes: app.SearchAttributes(), LogLevel: "error"})
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	t.Setenv("TEMPORAL_ADDRESS", srv.Address())
	t.Setenv("TEMPORAL_NAMESPACE", srv.Namespace())
	t.Setenv("RALPH_DEV_STATE_DIR", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(os.Getenv("HOME"), ".config"))
}
