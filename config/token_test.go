package config

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFileToken(t *testing.T) {
	const key = `invalid github.token-file (--github-token-file, RALPH_GITHUB_TOKEN_FILE) = `
	tests := []struct {
		name    string
		content *string // nil: no file
		mode    os.FileMode
		want    string
		wantErr string // FILE stands for the file's path
	}{
		{name: "token and newline", content: ptr("ghp_abc123\n"), mode: 0o600, want: "ghp_abc123"},
		{name: "token alone, read-only", content: ptr("ghp_abc123"), mode: 0o400, want: "ghp_abc123"},
		{name: "CRLF and spaces around", content: ptr("  ghp_abc123\r\n"), mode: 0o600, want: "ghp_abc123"},
		{name: "readable by all", content: ptr("ghp_abc123\n"), mode: 0o644,
			wantErr: "is open to group or others (mode 0644), who could read the token: make it its owner's alone with chmod 600 FILE"},
		{name: "readable by the group", content: ptr("ghp_abc123\n"), mode: 0o640,
			wantErr: "is open to group or others (mode 0640), who could read the token: make it its owner's alone with chmod 600 FILE"},
		{name: "writable by others", content: ptr("ghp_abc123\n"), mode: 0o602,
			wantErr: "is open to group or others (mode 0602), who could read the token: make it its owner's alone with chmod 600 FILE"},
		{name: "empty", content: ptr(""), mode: 0o600, wantErr: "is empty: put the GitHub token in it"},
		{name: "a newline alone", content: ptr("\n"), mode: 0o600, wantErr: "is empty: put the GitHub token in it"},
		{name: "two lines", content: ptr("ghp_abc123\nghp_def456\n"), mode: 0o600, wantErr: "holds more than one word: it must hold the GitHub token alone"},
		{name: "missing", wantErr: "cannot be read: open FILE: no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "github-token")
			if tt.content != nil {
				require.NoError(t, os.WriteFile(file, []byte(*tt.content), 0o600))
				require.NoError(t, os.Chmod(file, tt.mode))
			}
			got, err := GitHubConfig{TokenFile: file}.FileToken()
			if tt.wantErr != "" {
				require.EqualError(t, err, key+strconv.Quote(file)+": "+strings.ReplaceAll(tt.wantErr, "FILE", file))
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}

	t.Run("a directory", func(t *testing.T) {
		dir := t.TempDir()
		_, err := GitHubConfig{TokenFile: dir}.FileToken()
		require.EqualError(t, err, key+strconv.Quote(dir)+": is not a regular file: it must be a file holding the GitHub token")
	})
	t.Run("not set", func(t *testing.T) {
		got, err := GitHubConfig{}.FileToken()
		require.NoError(t, err)
		require.Empty(t, got)
	})
}

func ptr(s string) *string { return &s }

// TestLoadGitHubTokenFile: Load checks the file (a bad one is an error
// naming the key), expands ~, and a workspace's ralph.yaml may not set
// it.
func TestLoadGitHubTokenFile(t *testing.T) {
	tests := []struct {
		name    string
		mode    os.FileMode
		content string
		wantErr string
	}{
		{name: "good file", mode: 0o600, content: "ghp_abc123\n"},
		{name: "open file", mode: 0o644, content: "ghp_abc123\n", wantErr: "chmod 600 "},
		{name: "empty file", mode: 0o600, content: "", wantErr: "is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			isolate(t)
			file := filepath.Join(t.TempDir(), "token")
			require.NoError(t, os.WriteFile(file, []byte(tt.content), tt.mode))
			require.NoError(t, os.Chmod(file, tt.mode))
			cfg, err := load(t, t.TempDir(), "--github-token-file", file)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, "invalid github.token-file (--github-token-file, RALPH_GITHUB_TOKEN_FILE)")
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, file, cfg.GitHub.TokenFile)
		})
	}

	t.Run("missing file from the environment", func(t *testing.T) {
		isolate(t)
		missing := filepath.Join(t.TempDir(), "nope")
		t.Setenv("RALPH_GITHUB_TOKEN_FILE", missing)
		_, err := load(t, t.TempDir())
		require.ErrorContains(t, err, `invalid github.token-file (--github-token-file, RALPH_GITHUB_TOKEN_FILE) = "`+missing+`": cannot be read`)
	})
	t.Run("a leading ~ is expanded", func(t *testing.T) {
		isolate(t)
		home := t.TempDir()
		t.Setenv("HOME", home)
		require.NoError(t, os.WriteFile(filepath.Join(home, "gh-token"), []byte("ghp_abc123\n"), 0o600))
		cfg, err := load(t, t.TempDir(), "--github-token-file", "~/gh-token")
		require.NoError(t, err)
		require.Equal(t, filepath.Join(home, "gh-token"), cfg.GitHub.TokenFile)
	})
	t.Run("not in a workspace's ralph.yaml", func(t *testing.T) {
		_, file, err := loadRalphYAML(t, "github:\n  token-file: /home/me/.ssh/id_ed25519\n")
		require.ErrorContains(t, err, "key github.token-file in "+file+" is not allowed in a workspace's ralph.yaml")
	})
}
