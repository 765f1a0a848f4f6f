package activities

import (
	"context"
	"encoding/base64"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/git"
)

// TestGitAuthTokenFile: git gets the token of github.token-file for an
// https origin, whatever the queue's token variable holds, and the
// variable's when there is no file.
func TestGitAuthTokenFile(t *testing.T) {
	tests := []struct {
		name, fileToken, origin string
		want                    string // the token git gets; "" for none
	}{
		{name: "the file wins", fileToken: "ghp_fromFile", origin: "https://github.com/acme/app.git", want: "ghp_fromFile"},
		{name: "else the variable", origin: "https://github.com/acme/app.git", want: "ghp_fromEnv"},
		{name: "ssh origin: none", fileToken: "ghp_fromFile", origin: "git@github.com:acme/app.git"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("RALPH_TEST_GH_TOKEN", "ghp_fromEnv")
			dir := t.TempDir()
			for _, args := range [][]string{{"init", "-q"}, {"remote", "add", "origin", tt.origin}} {
				out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
				require.NoError(t, err, "%s", out)
			}
			repo, err := git.Open(context.Background(), dir)
			require.NoError(t, err)

			a := &Agent{GitHubFileToken: tt.fileToken}
			env := a.gitAuth(context.Background(), repo, "RALPH_TEST_GH_TOKEN")
			if tt.want == "" {
				require.Empty(t, env)
				return
			}
			basic := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + tt.want))
			require.Contains(t, env, "GIT_CONFIG_VALUE_0=Authorization: Basic "+basic)
		})
	}
}
