package github_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/activities/github"
	"github.com/durable-ralph/ralph/contract"
)

const (
	appID          = 12345
	installationID = 678
	// apiPrefix is the API's path, as on GitHub Enterprise Server: the
	// app's requests must keep it.
	apiPrefix = "/api/v3"
)

// testKey is the GitHub App's private key of the tests, made once.
var testKey = sync.OnceValue(func() *rsa.PrivateKey {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return key
})

// allPermissions are the permissions the queue needs.
func allPermissions() map[string]string {
	return map[string]string{
		"contents": "write", "issues": "write", "pull_requests": "write",
		"checks": "read", "actions": "read", "statuses": "read", "metadata": "read",
	}
}

// appAPI plays GitHub for a GitHub App's installation on acme: it hands
// out installation tokens to a JWT signed by testKey, and serves the
// installation and the repository acme/app to the current token.
type appAPI struct {
	srv *httptest.Server
	t   *testing.T

	mu sync.Mutex
	// lifetime is how long a token is valid.
	lifetime time.Duration
	// permissions and selection are the installation's.
	permissions map[string]string
	selection   string
	// hidden makes the repository invisible to the installation.
	hidden bool
	// account is the installation's; suspended says it is suspended.
	account   string
	suspended bool
	// tokens are the tokens handed out, the last current.
	tokens []string
	// auth are the Authorization headers of the repository's requests.
	auth []string
	// redirect, when set, is where the repository moved.
	redirect string
}

func newAppAPI(t *testing.T) *appAPI {
	t.Helper()
	s := &appAPI{t: t, lifetime: time.Hour, permissions: allPermissions(), selection: "selected", account: "acme"}
	s.srv = httptest.NewServer(s)
	t.Cleanup(s.srv.Close)
	return s
}

// repo is acme/app on s.
func (s *appAPI) repo() contract.Repo {
	return contract.Repo{Owner: "acme", Name: "app", APIURL: s.srv.URL + apiPrefix + "/"}
}

// activities are the GitHub activities of a worker configured with the
// app of key; a token is configured too, which the app must win over.
func (s *appAPI) activities(key *rsa.PrivateKey, installation int64) *github.Activities {
	return &github.Activities{
		WriteInterval: -1,
		FileToken:     "ghp_notTheAppsToken0123456789",
		App:           github.NewApp(appID, installation, key, s.repo().APIURL, nil),
	}
}

func (s *appAPI) counts() (tokens int, auth []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.tokens), append([]string(nil), s.auth...)
}

func (s *appAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	reply := func(status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		require.NoError(s.t, json.NewEncoder(w).Encode(v))
	}
	path, ok := strings.CutPrefix(r.URL.Path, apiPrefix)
	if !ok {
		reply(http.StatusNotFound, map[string]string{"message": "Not Found"})
		return
	}
	switch {
	case strings.HasPrefix(path, "/app/"):
		if err := s.checkJWT(r.Header.Get("Authorization")); err != nil {
			reply(http.StatusUnauthorized, map[string]string{"message": err.Error()})
			return
		}
		switch {
		case r.Method == http.MethodPost && path == fmt.Sprintf("/app/installations/%d/access_tokens", installationID):
			token := fmt.Sprintf("ghs_installationToken%d", len(s.tokens)+1)
			s.tokens = append(s.tokens, token)
			reply(http.StatusCreated, map[string]any{"token": token, "expires_at": time.Now().Add(s.lifetime).UTC().Format(time.RFC3339)})
		case r.Method == http.MethodGet && path == fmt.Sprintf("/app/installations/%d", installationID):
			inst := map[string]any{
				"id": installationID, "app_id": appID, "app_slug": "ralph-app",
				"account":              map[string]any{"login": s.account},
				"html_url":             "https://github.example/organizations/acme/settings/installations/678",
				"repository_selection": s.selection,
				"permissions":          s.permissions,
			}
			if s.suspended {
				inst["suspended_at"] = time.Now().UTC().Format(time.RFC3339)
			}
			reply(http.StatusOK, inst)
		default:
			reply(http.StatusNotFound, map[string]string{"message": "Not Found"})
		}
	case r.Method == http.MethodGet && path == "/repos/acme/app":
		got := r.Header.Get("Authorization")
		s.auth = append(s.auth, got)
		switch {
		case len(s.tokens) == 0 || got != "token "+s.tokens[len(s.tokens)-1]:
			reply(http.StatusUnauthorized, map[string]string{"message": "Bad credentials"})
		case s.redirect != "":
			http.Redirect(w, r, s.redirect, http.StatusFound)
		case s.hidden:
			reply(http.StatusNotFound, map[string]string{"message": "Not Found"})
		default:
			reply(http.StatusOK, map[string]any{"full_name": "acme/app", "default_branch": "main", "has_issues": true})
		}
	default:
		reply(http.StatusNotFound, map[string]string{"message": "Not Found"})
	}
}

// checkJWT checks that header is "Bearer JWT" with a JWT signed RS256 by
// testKey, issued by the app and valid now.
func (s *appAPI) checkJWT(header string) error {
	jwt, ok := strings.CutPrefix(header, "Bearer ")
	if !ok {
		return errors.New("not a JWT")
	}
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return errors.New("malformed JWT")
	}
	var head struct{ Alg string }
	var claims struct {
		Iss      string
		Iat, Exp int64
	}
	for i, v := range []any{&head, &claims} {
		data, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			return err
		}
		if err := json.Unmarshal(data, v); err != nil {
			return err
		}
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return err
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	now := time.Now().Unix()
	switch {
	case head.Alg != "RS256":
		return fmt.Errorf("alg %s, not RS256", head.Alg)
	case rsa.VerifyPKCS1v15(&testKey().PublicKey, crypto.SHA256, digest[:], sig) != nil:
		return errors.New("A JSON web token could not be decoded")
	case claims.Iss != fmt.Sprint(appID):
		return fmt.Errorf("iss %q, not the app", claims.Iss)
	case claims.Iat > now || claims.Exp < now || claims.Exp-claims.Iat > 600:
		return errors.New("'Expiration time' claim ('exp') is too far in the future")
	}
	return nil
}

// TestAppTokens: the worker gets the installation's token with a JWT of
// the app, from the API of github.api-url (its path too), sends it to
// the API and gets a new one when it is about to expire; the app wins
// over a token configured too.
func TestAppTokens(t *testing.T) {
	tests := []struct {
		name       string
		lifetime   time.Duration
		wantTokens int
		wantAuth   []string
	}{
		{name: "one token while it is valid", lifetime: time.Hour, wantTokens: 1,
			wantAuth: []string{"token ghs_installationToken1", "token ghs_installationToken1"}},
		// ghinstallation renews a token a minute before it expires.
		{name: "a new token when it is about to expire", lifetime: time.Second, wantTokens: 2,
			wantAuth: []string{"token ghs_installationToken1", "token ghs_installationToken2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newAppAPI(t)
			s.lifetime = tt.lifetime
			a := s.activities(testKey(), installationID)
			for range 2 {
				res, err := a.Preflight(context.Background(), s.repo())
				require.NoError(t, err)
				require.Equal(t, contract.PreflightResult{FullName: "acme/app", DefaultBranch: "main", Login: "ralph-app[bot]"}, res)
			}
			tokens, auth := s.counts()
			require.Equal(t, tt.wantTokens, tokens)
			require.Equal(t, tt.wantAuth, auth)

			// git gets the current token (a new one when the last is
			// about to expire), and every token is redacted.
			token, err := a.App.Token(context.Background())
			require.NoError(t, err)
			tokens, _ = s.counts()
			require.Equal(t, fmt.Sprintf("ghs_installationToken%d", tokens), token)
			require.Len(t, a.App.Tokens(), tokens)
			require.Contains(t, a.App.Tokens(), github.AppTokenSource+"="+token)
		})
	}
}

// TestAppPreflight: the preflight names what the installation lacks and
// where to grant it, and what keeps the app from its installation or
// the repository; each fails the queue for good.
func TestAppPreflight(t *testing.T) {
	otherKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	tests := []struct {
		name         string
		key          *rsa.PrivateKey
		installation int64
		change       func(s *appAPI)
		wantType     string
		want         []string
	}{
		{name: "lacks checks and actions", change: func(s *appAPI) {
			delete(s.permissions, "checks")
			delete(s.permissions, "actions")
		}, wantType: contract.ErrTypeGitHubPreflight, want: []string{
			"the GitHub App 12345's installation 678 cannot work the queue of acme/app: the GitHub App's installation lacks: checks: read, actions: read.",
			"Grant them in the app's settings, Permissions & events → Repository permissions (Checks: Read-only; Actions: Read-only)",
			"then accept the new permissions in the installation's settings (https://github.example/organizations/acme/settings/installations/678)",
		}},
		{name: "reads what it must write", change: func(s *appAPI) {
			s.permissions["contents"] = "read"
			s.permissions["pull_requests"] = "read"
		}, wantType: contract.ErrTypeGitHubPreflight, want: []string{
			"lacks: contents: write, pull_requests: write.",
			"(Contents: Read and write; Pull requests: Read and write)",
		}},
		{name: "the repository is not among the installation's", change: func(s *appAPI) { s.hidden = true },
			wantType: contract.ErrTypeGitHubPreflight, want: []string{
				"the installation may not access the repository: add it under Repository access in the installation's settings (https://github.example/organizations/acme/settings/installations/678)",
			}},
		{name: "a repository the installation cannot see", change: func(s *appAPI) { s.selection, s.hidden = "all", true },
			wantType: contract.ErrTypeGitHubPreflight, want: []string{
				"the installation cannot see the repository, although it may access all of acme's: check github.repo",
			}},
		{name: "installed on another account", change: func(s *appAPI) { s.account = "umbrella" },
			wantType: contract.ErrTypeGitHubPreflight, want: []string{
				"the installation is on umbrella, not acme: install the app on acme and set github.app-installation-id to that installation's ID",
			}},
		{name: "a suspended installation", change: func(s *appAPI) { s.suspended = true },
			wantType: contract.ErrTypeGitHubPreflight, want: []string{
				"the installation is suspended: unsuspend it in the installation's settings (https://github.example/organizations/acme/settings/installations/678)",
			}},
		{name: "a key that is not the app's", key: otherKey, wantType: contract.ErrTypeGitHubUnauthorized, want: []string{
			"GitHub rejected the GitHub App 12345 (401 A JSON web token could not be decoded): check github.app-id, that github.app-private-key-file holds one of the app's private keys, and the worker's clock",
		}},
		{name: "no such installation", installation: 999, wantType: contract.ErrTypeGitHubNotFound, want: []string{
			"the GitHub App 12345 has no installation 999: check github.app-installation-id",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newAppAPI(t)
			if tt.change != nil {
				tt.change(s)
			}
			key, installation := testKey(), int64(installationID)
			if tt.key != nil {
				key = tt.key
			}
			if tt.installation != 0 {
				installation = tt.installation
			}
			_, err := s.activities(key, installation).Preflight(context.Background(), s.repo())
			var appErr *temporal.ApplicationError
			require.ErrorAs(t, err, &appErr)
			require.Equal(t, tt.wantType, appErr.Type())
			require.True(t, appErr.NonRetryable())
			for _, want := range tt.want {
				require.Contains(t, err.Error(), want)
			}
		})
	}
}

// TestAppTokenRefused: GitHub's refusal of a token fails an activity
// for good, naming the settings to check.
func TestAppTokenRefused(t *testing.T) {
	s := newAppAPI(t)
	otherKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	a := s.activities(otherKey, installationID)
	_, err = a.PickIssue(context.Background(), contract.PickInput{Repo: s.repo(), Label: "ralph-ready"})
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	require.Equal(t, contract.ErrTypeGitHubUnauthorized, appErr.Type())
	require.True(t, appErr.NonRetryable())
	require.Contains(t, err.Error(), "GitHub refused the GitHub App 12345's installation 678 a token (401 Unauthorized): check github.app-id and that github.app-private-key-file holds one of the app's private keys")

	_, err = a.App.Token(context.Background())
	var te *github.TokenError
	require.ErrorAs(t, err, &te)
	require.Equal(t, http.StatusUnauthorized, te.Status)
	require.Empty(t, a.App.Tokens())
}

// TestAppTokenStaysWithTheAPI: a redirect elsewhere is followed without
// the installation's token.
func TestAppTokenStaysWithTheAPI(t *testing.T) {
	var mu sync.Mutex
	var elsewhere []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		elsewhere = append(elsewhere, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"full_name":"acme/app","default_branch":"main","has_issues":true}`)
	}))
	t.Cleanup(other.Close)
	s := newAppAPI(t)
	s.redirect = other.URL + "/moved"

	_, err := s.activities(testKey(), installationID).Preflight(context.Background(), s.repo())
	require.NoError(t, err)
	_, auth := s.counts()
	require.Equal(t, []string{"token ghs_installationToken1"}, auth)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{""}, elsewhere)
}
