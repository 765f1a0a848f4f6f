package git_test

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/git"
)

// gitServer serves the bare repositories under root over https with
// git's own http-backend, asking for x-access-token and token.
func gitServer(t *testing.T, root, token string) *httptest.Server {
	t.Helper()
	backend, err := exec.Command("git", "--exec-path").Output()
	require.NoError(t, err)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		if !ok || user != "x-access-token" || pass != token {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		h := &cgi.Handler{
			Path: filepath.Join(strings.TrimSpace(string(backend)), "git-http-backend"),
			Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER=" + user},
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600))
	t.Setenv("GIT_SSL_CAINFO", ca)
	return srv
}

// TestPushWithCredentialOnAPipe: the token reaches an https remote
// through the credential helper Ralph feeds on a pipe: a push with it
// lands, one without it or with another is refused, and no prompt
// waits for a person.
func TestPushWithCredentialOnAPipe(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	sh(t, root, "git", "init", "-q", "--bare", "app.git")
	srv := gitServer(t, root, "ghs_pipeToken")
	r := newRepo(t)
	sh(t, r.Dir, "git", "remote", "add", "origin", srv.URL+"/app.git")
	sh(t, r.Dir, "git", "branch", "ralph/x")

	require.Error(t, r.Push(ctx, nil, "origin", "ralph/x"), "no credential")
	require.Error(t, r.Push(ctx, &git.Credential{Username: "x-access-token", Password: "ghs_wrong"}, "origin", "ralph/x"))
	require.NoError(t, r.Push(ctx, &git.Credential{Username: "x-access-token", Password: "ghs_pipeToken"}, "origin", "ralph/x"))
	head := strings.TrimSpace(sh(t, r.Dir, "git", "rev-parse", "ralph/x"))
	require.Equal(t, head, strings.TrimSpace(sh(t, filepath.Join(root, "app.git"), "git", "rev-parse", "ralph/x")))

	require.NoError(t, r.Fetch(ctx, &git.Credential{Username: "x-access-token", Password: "ghs_pipeToken"}, "origin", "+refs/heads/ralph/x:refs/remotes/origin/ralph/x"))
	require.NoError(t, r.Fetch(ctx, &git.Credential{Username: "x-access-token", Password: "ghs_pipeToken"}, "origin", "+refs/heads/ralph/x:refs/remotes/origin/ralph/x"),
		"a second command gets the credential again")
	_, err := os.Stat(filepath.Join(os.Getenv("HOME"), ".git-credentials"))
	require.True(t, os.IsNotExist(err), "no helper of the user's stored the token")
}
