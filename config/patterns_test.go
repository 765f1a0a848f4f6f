package config

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/contract"
)

// TestLoadProtectedPaths checks the ways to set git.protected-paths, the
// explicit "none" among them, and that the default is the contract's.
func TestLoadProtectedPaths(t *testing.T) {
	require.Equal(t, contract.DefaultProtectedPaths, lookupSpec("git.protected-paths").def)
	tests := []struct {
		name string
		user string // the user config file
		env  string
		args []string
		want []string
	}{
		{name: "default", want: []string{".github/workflows/**"}},
		{name: "flags", args: []string{"--protected-path", "deploy/**", "--protected-path", " .github/** "}, want: []string{"deploy/**", ".github/**"}},
		{name: "empty flag is none", args: []string{"--protected-path="}, want: []string{}},
		{name: "variable", env: ".github/workflows/** 'infra dir/**'", want: []string{".github/workflows/**", "infra dir/**"}},
		{name: "empty variable word is none", env: "''", want: []string{}},
		{name: "file list", user: "git:\n  protected-paths: [Makefile, deploy/**]\n", want: []string{"Makefile", "deploy/**"}},
		{name: "file empty list is none", user: "git:\n  protected-paths: []\n", want: []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			isolate(t)
			if tt.user != "" {
				writeUserFile(t, tt.user)
			}
			if tt.env != "" {
				t.Setenv("RALPH_GIT_PROTECTED_PATHS", tt.env)
			}
			cfg, err := load(t, t.TempDir(), tt.args...)
			require.NoError(t, err)
			require.Equal(t, tt.want, cfg.Git.ProtectedPaths)
			require.NotNil(t, cfg.Git.ProtectedPaths, "never nil: nil is the default to a session")
		})
	}
}

// TestWorkspaceCannotLiftProtection: a cloned repository's ralph.yaml may
// not set git.protected-paths, to lift the protection or otherwise.
func TestWorkspaceCannotLiftProtection(t *testing.T) {
	for _, value := range []string{"[]", "[docs/**]"} {
		t.Run(value, func(t *testing.T) {
			isolate(t)
			ws := t.TempDir()
			writeFile(t, ws, "ralph.yaml", "git:\n  allow-dirty: true\n  protected-paths: "+value+"\n")
			_, err := load(t, ws)
			require.ErrorContains(t, err, "key git.protected-paths in "+ws)
			require.ErrorContains(t, err, "set it with --protected-path, RALPH_GIT_PROTECTED_PATHS or in the user config file")
		})
	}
}
