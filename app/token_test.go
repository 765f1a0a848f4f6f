package app_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/app"
	"github.com/durable-ralph/ralph/config"
	"github.com/durable-ralph/ralph/redact"
)

// TestGitHubTokenFile: the token of github.token-file reaches the GitHub
// activities and the agent runner (for git), and is one of the worker's
// secrets, redacted as the variable's would be.
func TestGitHubTokenFile(t *testing.T) {
	const token = "ghp_fromTheTokenFile0123456789"
	tests := []struct {
		name    string
		content string
		mode    os.FileMode
		want    string // the token; "" when NewGitHub fails
	}{
		{name: "good file", content: token + "\n", mode: 0o600, want: token},
		{name: "open file", content: token + "\n", mode: 0o644},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "github-token")
			require.NoError(t, os.WriteFile(file, []byte(tt.content), 0o600))
			require.NoError(t, os.Chmod(file, tt.mode))
			cfg := config.Config{GitHub: config.GitHubConfig{TokenFile: file, TokenEnv: "GITHUB_TOKEN"}}

			gh, err := app.NewGitHub(cfg)
			agent := app.NewAgent(cfg)
			if tt.want == "" {
				require.ErrorContains(t, err, "chmod 600 "+file)
				require.Empty(t, agent.GitHubFileToken)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, gh.FileToken)
			require.Equal(t, tt.want, agent.GitHubFileToken)
			r := redact.New(nil, agent.Secrets...)
			require.Equal(t, "push with [REDACTED:github.token-file]", r.String("push with "+token))
		})
	}
}
