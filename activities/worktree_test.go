package activities

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/activities/github"
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
			cred, err := a.gitAuth(context.Background(), repo, "RALPH_TEST_GH_TOKEN")
			require.NoError(t, err)
			if tt.want == "" {
				require.Nil(t, cred)
				return
			}
			require.Equal(t, &git.Credential{Username: "x-access-token", Password: tt.want}, cred)
		})
	}
}

// TestGitAuthApp: with a GitHub App, git gets the installation's current
// token, from the API of github.api-url, whatever token is configured
// too; a token GitHub refuses fails for good.
func TestGitAuthApp(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	var issued atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/api/v3/app/installations/678/access_tokens" || !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
			http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"token":"ghs_gitToken%d","expires_at":%q}`, issued.Add(1), time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	}))
	t.Cleanup(srv.Close)
	t.Setenv("RALPH_TEST_GH_TOKEN", "ghp_fromEnv")
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"remote", "add", "origin", "https://github.example/acme/app.git"}} {
		out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	repo, err := git.Open(context.Background(), dir)
	require.NoError(t, err)

	tests := []struct {
		name         string
		installation int64
		want         string // the token git gets; "" when it fails
	}{
		{name: "the installation's token", installation: 678, want: "ghs_gitToken1"},
		{name: "no such installation", installation: 999},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &Agent{GitHubFileToken: "ghp_fromFile", GitHubApp: github.NewApp(12345, tt.installation, key, srv.URL+"/api/v3/", nil)}
			cred, err := a.gitAuth(context.Background(), repo, "RALPH_TEST_GH_TOKEN")
			if tt.want == "" {
				var appErr *temporal.ApplicationError
				require.ErrorAs(t, err, &appErr)
				require.True(t, appErr.NonRetryable())
				require.Contains(t, err.Error(), "a token for git: GitHub refused the GitHub App 12345's installation 999 a token (404 Not Found): check github.app-installation-id")
				return
			}
			require.NoError(t, err)
			require.Equal(t, &git.Credential{Username: "x-access-token", Password: tt.want}, cred)
			// The token is one of the secrets a push is scanned for.
			require.Contains(t, a.GitHubApp.Tokens(), github.AppTokenSource+"="+tt.want)
		})
	}
}
