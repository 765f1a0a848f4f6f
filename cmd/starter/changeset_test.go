package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLoadSetFile(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"valid", `name: greeting
task: t
auto-merge: false
max-cost: 5
repos:
  - repo: acme/api
    workspace: api
  - repo: acme/web
    workspace: /abs/web
    after: [acme/api]
`, ""},
		{"unknown key", "name: g\ntask: t\nrepos:\n  - repo: acme/api\n    workspace: a\n    branch: x\n", "field branch not found"},
		{"empty", "", "is empty"},
		{"not yaml", "name: [", "set file"},
		{"a cycle", "name: g\ntask: t\nrepos:\n  - {repo: acme/api, workspace: a, after: [acme/web]}\n  - {repo: acme/web, workspace: w, after: [acme/api]}\n",
			"repos[0].after: the order has a cycle: acme/api after acme/web after acme/api"},
		{"twice", "name: g\ntask: t\nrepos:\n  - {repo: acme/api, workspace: a}\n  - {repo: acme/api, workspace: b}\n", "repos[1].repo: acme/api is repos[0] already"},
		{"negative cost", "name: g\ntask: t\nmax-cost: -1\nrepos:\n  - {repo: acme/api, workspace: a}\n", "max-cost: -1 is negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "set.yaml")
			require.NoError(t, os.WriteFile(path, []byte(tt.text), 0o644))
			f, err := loadSetFile(path)
			if tt.want != "" {
				require.ErrorContains(t, err, tt.want)
				require.ErrorContains(t, err, path, "the error names the file")
				return
			}
			require.NoError(t, err)
			require.Equal(t, filepath.Join(dir, "api"), f.Members[0].Workspace, "relative to the file")
			require.Equal(t, "/abs/web", f.Members[1].Workspace)
			require.NotNil(t, f.AutoMerge)
			require.False(t, *f.AutoMerge)
			require.Equal(t, 5.0, f.MaxCost)
			require.Equal(t, []int{0, 1}, f.Order())
		})
	}
	_, err := loadSetFile(filepath.Join(t.TempDir(), "missing.yaml"))
	require.ErrorContains(t, err, "no such file")
}

// TestChangeSetMemberOnAnotherHost: a member whose workspace is not a
// directory here but names a host runs there: its clone is that path on
// that host's worker, configured from the user's settings (its ralph.yaml
// is not read here), and the starter says so; revert-merged reaches the
// set's input.
func TestChangeSetMemberOnAnotherHost(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", "")
	dir := t.TempDir()
	path := filepath.Join(dir, "set.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`name: greeting
task: t
revert-merged: true
repos:
  - repo: acme/api
  - repo: acme/web
    host: build-box
    workspace: /srv/clones/web
    after: [acme/api]
`), 0o644))
	f, err := loadSetFile(path)
	require.NoError(t, err)
	var stderr strings.Builder
	cctx := &commandContext{Context: context.Background(), stdout: io.Discard, stderr: &stderr}
	run := changeSetCommands()[0]
	run.build(cctx)
	in, _, err := run.cmd.(*changeSetRunCommand).input(cctx, f)
	require.NoError(t, err)
	require.True(t, in.RevertMerged)
	api, web := in.Members[0], in.Members[1]
	require.Empty(t, api.Settings.Clone, "cloned by the set")
	require.Equal(t, "/srv/clones/web", web.Settings.Clone)
	require.Equal(t, "/srv/clones/web", web.Session.Workspace)
	require.Equal(t, "build-box", web.Session.Host)
	require.Contains(t, stderr.String(), "acme/web: workspace /srv/clones/web is not a directory here; it must be a clone on the worker of host build-box")
}
