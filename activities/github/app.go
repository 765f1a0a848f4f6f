package github

import (
	"context"
	"crypto/rsa"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	gh "github.com/google/go-github/v62/github"
	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/contract"
)

// AppTokenSource names the installation tokens of the GitHub App where
// redacted text says which secret was there.
const AppTokenSource = "github.app-installation-token"

// tokenTimeout bounds getting an installation token outside an API
// request (whose client has a timeout of its own).
const tokenTimeout = 20 * time.Second

// keepTokens is how long after it was first used a token is still
// redacted: an installation token expires after an hour.
const keepTokens = 2 * time.Hour

// App is a GitHub App's installation that the worker authenticates as
// instead of with a token (github.app-id, github.app-installation-id,
// github.app-private-key-file). It gets the installation's tokens from
// the API that a request goes to (ghinstallation), and a new one a
// minute before the last expires. The private key and the tokens stay in
// the worker: no activity's input or result holds them.
//
// One App is shared by the worker's GitHub activities and its git
// commands, so that they share the tokens. Its methods are safe for
// concurrent use.
type App struct {
	id, installationID int64
	key                *rsa.PrivateKey
	// apiURL is the API the tokens for git come from.
	apiURL string
	base   http.RoundTripper

	mu sync.Mutex
	// installations hold each API's token, by API URL.
	installations map[string]*ghinstallation.Transport
	// issued are the tokens got so far and when each was first used,
	// for redaction.
	issued map[string]time.Time
}

// NewApp returns the installation installationID of the GitHub App id,
// whose private key is key. apiURL is the API (github.api-url) the
// tokens for git come from, "" for the public one; base sends the
// requests for tokens, nil meaning http.DefaultTransport.
func NewApp(id, installationID int64, key *rsa.PrivateKey, apiURL string, base http.RoundTripper) *App {
	if base == nil {
		base = http.DefaultTransport
	}
	return &App{
		id: id, installationID: installationID, key: key, apiURL: apiURL, base: base,
		installations: map[string]*ghinstallation.Transport{}, issued: map[string]time.Time{},
	}
}

// String names the app and its installation, for messages.
func (a *App) String() string {
	return fmt.Sprintf("the GitHub App %d's installation %d", a.id, a.installationID)
}

// Token returns a current installation token for git, from the App's
// API; it gets a new one when the last is about to expire.
func (a *App) Token(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, tokenTimeout)
	defer cancel()
	return a.token(ctx, a.apiURL)
}

// Tokens are the installation tokens the App got that have not long
// expired (keepTokens), as "NAME=value" secrets for a redactor.
func (a *App) Tokens() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for token := range a.issued {
		out = append(out, AppTokenSource+"="+token)
	}
	return out
}

// apiBase is apiURL ending in "/", the public API for "".
func apiBase(apiURL string) string {
	if apiURL == "" {
		return DefaultAPIURL
	}
	return strings.TrimSuffix(apiURL, "/") + "/"
}

// token returns a current token of the installation from the API at
// apiURL.
func (a *App) token(ctx context.Context, apiURL string) (string, error) {
	api := apiBase(apiURL)
	a.mu.Lock()
	t, ok := a.installations[api]
	if !ok {
		t = ghinstallation.NewFromAppsTransport(ghinstallation.NewAppsTransportFromPrivateKey(a.base, a.id, a.key), a.installationID)
		t.BaseURL = strings.TrimSuffix(api, "/")
		a.installations[api] = t
	}
	a.mu.Unlock()

	token, err := t.Token(ctx)
	if err != nil {
		var he *ghinstallation.HTTPError
		if errors.As(err, &he) && he.Response != nil {
			// ghinstallation leaves the body of an error answer open.
			he.Response.Body.Close()
			return "", &TokenError{App: a.String(), Status: he.Response.StatusCode, Text: he.Response.Status}
		}
		return "", fmt.Errorf("get a token of %s from %s: %w", a, api, err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.issued[token]; !ok {
		a.issued[token] = time.Now()
		for old, first := range a.issued {
			if time.Since(first) > keepTokens {
				delete(a.issued, old)
			}
		}
	}
	return token, nil
}

// TokenError is GitHub's refusal of an installation token.
type TokenError struct {
	// App names the app and its installation.
	App string
	// Status is the HTTP status, and Text its line, such as
	// "401 Unauthorized".
	Status int
	Text   string
}

func (e *TokenError) Error() string {
	var hint string
	switch e.Status {
	case http.StatusUnauthorized:
		hint = ": check github.app-id and that github.app-private-key-file holds one of the app's private keys"
	case http.StatusNotFound:
		hint = ": check github.app-installation-id: the app has no such installation (it may have been uninstalled)"
	case http.StatusForbidden:
		hint = ": the installation may be suspended, or the app's key revoked"
	}
	return fmt.Sprintf("GitHub refused %s a token (%s)%s", e.App, e.Text, hint)
}

// Permanent reports whether no retry can fix e (a rate limit or a
// server error can be waited out).
func (e *TokenError) Permanent() bool {
	return e.Status >= 400 && e.Status < 500 && e.Status != http.StatusTooManyRequests
}

// installation reads the installation as the app (a JWT, which
// GET /app/installations/{id} needs): its permissions, the repositories
// it may access and the app's slug. next sends the request.
func (a *App) installation(ctx context.Context, apiURL string, next http.RoundTripper) (*gh.Installation, error) {
	api, err := url.Parse(apiBase(apiURL))
	if err != nil {
		return nil, err
	}
	jwt := ghinstallation.NewAppsTransportFromPrivateKey(next, a.id, a.key)
	c := gh.NewClient(&http.Client{Timeout: 20 * time.Second, Transport: &onlyTo{api: api, auth: jwt, plain: next}})
	c.BaseURL, c.UploadURL = api, api
	inst, _, err := c.Apps.GetInstallation(ctx, a.installationID)
	return inst, err
}

// installationAuth sends the requests to the API with the
// installation's current token.
type installationAuth struct {
	app  *App
	api  string
	next http.RoundTripper
}

// RoundTrip sends r with the token.
func (t *installationAuth) RoundTrip(r *http.Request) (*http.Response, error) {
	token, err := t.app.token(r.Context(), t.api)
	if err != nil {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, err
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "token "+token)
	return t.next.RoundTrip(r)
}

// onlyTo sends the requests to the API's scheme and host through auth,
// which adds the credential, and any other (a redirect elsewhere)
// through plain, without it.
type onlyTo struct {
	api         *url.URL
	auth, plain http.RoundTripper
}

// RoundTrip sends r.
func (t *onlyTo) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme == t.api.Scheme && strings.EqualFold(r.URL.Host, t.api.Host) {
		return t.auth.RoundTrip(r)
	}
	return t.plain.RoundTrip(r)
}

// appPermissions are the permissions of its installation the queue
// needs, as GitHub's API and the app's settings page call them.
var appPermissions = []struct {
	name, title, level string
	of                 func(*gh.InstallationPermissions) string
}{
	{"contents", "Contents", "write", (*gh.InstallationPermissions).GetContents},               // push branches, merge
	{"issues", "Issues", "write", (*gh.InstallationPermissions).GetIssues},                     // labels, comments
	{"pull_requests", "Pull requests", "write", (*gh.InstallationPermissions).GetPullRequests}, // open, answer, merge
	{"checks", "Checks", "read", (*gh.InstallationPermissions).GetChecks},                      // a head's check runs
	{"actions", "Actions", "read", (*gh.InstallationPermissions).GetActions},                   // failed jobs' logs
	{"statuses", "Commit statuses", "read", (*gh.InstallationPermissions).GetStatuses},         // a head's statuses
	{"metadata", "Metadata", "read", (*gh.InstallationPermissions).GetMetadata},                // the repository
}

// permissionRank orders the levels of a permission.
var permissionRank = map[string]int{"read": 1, "write": 2, "admin": 3}

// uiLevel is a level as the app's settings page says it.
func uiLevel(level string) string {
	if level == "write" {
		return "Read and write"
	}
	return "Read-only"
}

// preflightApp checks the GitHub App's installation: that it has the
// permissions the queue needs and may access the repository. A
// repository read with an installation token says nothing of its
// permissions, so they are the installation's, read as the app.
func (c *client) preflightApp(ctx context.Context) (contract.PreflightResult, error) {
	fail := func(format string, args ...any) (contract.PreflightResult, error) {
		return contract.PreflightResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("%s cannot work the queue of %s: ", c.app, c.repo.FullName())+fmt.Sprintf(format, args...), contract.ErrTypeGitHubPreflight, nil)
	}
	inst, err := c.app.installation(ctx, c.repo.APIURL, c.sent)
	switch {
	case status(err) == http.StatusUnauthorized:
		return contract.PreflightResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("GitHub rejected the GitHub App %d (%v): check github.app-id, that github.app-private-key-file holds one of the app's private keys, and the worker's clock", c.app.id, errorText(err)),
			contract.ErrTypeGitHubUnauthorized, nil)
	case status(err) == http.StatusNotFound:
		return contract.PreflightResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("the GitHub App %d has no installation %d: check github.app-installation-id (the number at the end of the installation's settings URL), and that the app is still installed", c.app.id, c.app.installationID),
			contract.ErrTypeGitHubNotFound, nil)
	case err != nil:
		return contract.PreflightResult{}, c.fail("read the GitHub App's installation", err)
	}
	where := "the installation's settings"
	if u := inst.GetHTMLURL(); u != "" {
		where += " (" + u + ")"
	}
	if inst.SuspendedAt != nil {
		return fail("the installation is suspended: unsuspend it in %s", where)
	}
	if account := inst.GetAccount().GetLogin(); account != "" && !strings.EqualFold(account, c.repo.Owner) {
		return fail("the installation is on %s, not %s: install the app on %s and set github.app-installation-id to that installation's ID", account, c.repo.Owner, c.repo.Owner)
	}
	var lacks, grant []string
	for _, p := range appPermissions {
		if permissionRank[p.of(inst.Permissions)] < permissionRank[p.level] {
			lacks = append(lacks, p.name+": "+p.level)
			grant = append(grant, p.title+": "+uiLevel(p.level))
		}
	}
	if len(lacks) > 0 {
		return fail("the GitHub App's installation lacks: %s. Grant them in the app's settings, Permissions & events → Repository permissions (%s), then accept the new permissions in %s, where GitHub asks the owner to review them",
			strings.Join(lacks, ", "), strings.Join(grant, "; "), where)
	}

	r, _, err := c.Repositories.Get(ctx, c.repo.Owner, c.repo.Name)
	switch {
	case status(err) == http.StatusNotFound && inst.GetRepositorySelection() == "selected":
		return fail("the installation may not access the repository: add it under Repository access in %s", where)
	case status(err) == http.StatusNotFound:
		return fail("the installation cannot see the repository, although it may access all of %s's: check github.repo", inst.GetAccount().GetLogin())
	case err != nil:
		return contract.PreflightResult{}, c.fail("read the repository", err)
	case !r.GetHasIssues():
		return fail("issues are disabled in the repository's settings")
	}
	res := contract.PreflightResult{FullName: r.GetFullName(), DefaultBranch: r.GetDefaultBranch(), CloneURL: r.GetCloneURL()}
	if slug := inst.GetAppSlug(); slug != "" {
		res.Login = slug + "[bot]"
	}
	return res, nil
}

// errorText is the status and message of a go-github error.
func errorText(err error) string {
	var er *gh.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		return fmt.Sprintf("%d %s", er.Response.StatusCode, er.Message)
	}
	return err.Error()
}
