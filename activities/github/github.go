// Package github holds the issue queue's activities that talk to GitHub
// (or GitHub Enterprise) through go-github: the preflight check, picking
// and reading an issue, labels, the progress comment and the pull request.
//
// Each write is safe to retry: it first looks for what an earlier attempt
// may have done (a comment by its marker, a pull request by its head).
// The token is the one of github.token-file the worker read when it
// started, else it is read from the worker's environment on every call;
// a worker configured with a GitHub App uses the installation's tokens
// instead (App). No token is ever part of an activity's input or result.
package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	gh "github.com/google/go-github/v62/github"
	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/contract"
)

// DefaultAPIURL is the public GitHub API.
const DefaultAPIURL = "https://api.github.com/"

// DefaultWriteInterval spaces writes as GitHub's best practices ask.
const DefaultWriteInterval = time.Second

// Token returns the name of the variable the token is read from and its
// value: name when it is set and non-empty, and for the default name
// GITHUB_TOKEN, then GH_TOKEN.
func Token(getenv func(string) string, name string) (string, string) {
	if name == "" {
		name = "GITHUB_TOKEN"
	}
	if v := getenv(name); v != "" {
		return name, v
	}
	if name == "GITHUB_TOKEN" {
		if v := getenv("GH_TOKEN"); v != "" {
			return "GH_TOKEN", v
		}
	}
	return name, ""
}

// TokenFileSource names the token of github.token-file where messages say
// which token is meant.
const TokenFileSource = "github.token-file"

// WorkerToken returns the token the worker sends for a repository whose
// token variable is tokenEnv, and where it comes from: fileToken (the
// token of github.token-file, read when the worker started) when it is
// set, whatever tokenEnv names, else the variable Token finds ("$NAME").
// The token is "" when there is none; from then names the variable to
// set.
func WorkerToken(fileToken string, getenv func(string) string, tokenEnv string) (from, token string) {
	if fileToken != "" {
		return TokenFileSource, fileToken
	}
	name, token := Token(getenv, tokenEnv)
	return "$" + name, token
}

// Activities are the GitHub activities of the issue queue. One value is
// shared by all the activities a worker runs, so that its writes are
// spaced.
type Activities struct {
	// Getenv reads the token; nil means os.Getenv.
	Getenv func(string) string
	// FileToken is the token of github.token-file, read when the worker
	// started; when set it is the token, whatever variable a repository's
	// TokenEnv names.
	FileToken string
	// App, when not nil, is the GitHub App's installation the worker
	// authenticates as: it wins over FileToken and the variables.
	App *App
	// WriteInterval is the least time between two writes; 0 means
	// DefaultWriteInterval, a negative value none.
	WriteInterval time.Duration
	// HTTPClient is the transport; nil means a client with a 20 s
	// timeout.
	HTTPClient *http.Client
	// Redact removes the worker's secret values from text that GitHub
	// gave and a prompt will carry (the output of failed checks); nil
	// removes none. It is the String of the worker's redactor: the
	// interceptor redacts results too, but only after a text was cut to
	// its limit, and a cut can leave part of a value.
	Redact func(string) string

	mu        sync.Mutex
	lastWrite time.Time
}

// client is one repository's API client.
type client struct {
	*gh.Client
	repo contract.Repo
	// tokenFrom says where the token came from: "$NAME" or
	// github.token-file; app is the GitHub App's installation instead.
	tokenFrom string
	app       *App
	a         *Activities
	// http is the client without the token, for what GitHub links to
	// elsewhere (a job's log); both count their requests in sent.
	http *http.Client
	sent *counter
}

// counter is a transport that counts the requests it sends.
type counter struct {
	next http.RoundTripper
	n    atomic.Int64
}

// RoundTrip counts r and sends it.
func (c *counter) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

// requests is how many HTTP requests c sent.
func (c *client) requests() int { return int(c.sent.n.Load()) }

func (a *Activities) client(repo contract.Repo) (*client, error) {
	getenv := a.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	var from, token string
	if a.App == nil {
		from, token = WorkerToken(a.FileToken, getenv, repo.TokenEnv)
		if token == "" {
			hint := strings.TrimPrefix(from, "$")
			if hint == "GITHUB_TOKEN" {
				hint = "GITHUB_TOKEN (or GH_TOKEN)"
			}
			return nil, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("no GitHub token: set %s in the worker's environment, or give the worker a file holding it (--github-token-file)", hint), contract.ErrTypeGitHubNoToken, nil)
		}
	}
	hc := &http.Client{Timeout: 20 * time.Second}
	if a.HTTPClient != nil {
		copied := *a.HTTPClient
		hc = &copied
	}
	sent := &counter{next: hc.Transport}
	if sent.next == nil {
		sent.next = http.DefaultTransport
	}
	hc.Transport = sent
	api, err := url.Parse(apiBase(repo.APIURL))
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("github.api-url %q: %v", repo.APIURL, err), contract.ErrTypeGitHubInvalid, nil)
	}
	var c *gh.Client
	if a.App != nil {
		// The token goes to the API alone: a redirect elsewhere goes
		// without it.
		withToken := *hc
		withToken.Transport = &onlyTo{api: api, auth: &installationAuth{app: a.App, api: api.String(), next: sent}, plain: sent}
		c = gh.NewClient(&withToken)
	} else {
		c = gh.NewClient(hc).WithAuthToken(token)
	}
	if api.String() != DefaultAPIURL {
		c.BaseURL, c.UploadURL = api, api
	}
	return &client{Client: c, repo: repo, tokenFrom: from, app: a.App, a: a, http: hc, sent: sent}, nil
}

// credential names what authenticates c, for messages.
func (c *client) credential() string {
	if c.app != nil {
		return "the token of " + c.app.String()
	}
	return "the token in " + c.tokenFrom
}

// fix says how to give c a credential GitHub accepts.
func (c *client) fix() string {
	if c.app != nil {
		return "check github.app-id, github.app-installation-id and github.app-private-key-file, and that the app is installed"
	}
	return "give the worker a valid token"
}

// write waits until the next write is allowed.
func (c *client) write(ctx context.Context) error {
	iv := c.a.WriteInterval
	if iv == 0 {
		iv = DefaultWriteInterval
	}
	if iv < 0 {
		return nil
	}
	c.a.mu.Lock()
	next := c.a.lastWrite.Add(iv)
	now := time.Now()
	if next.Before(now) {
		next = now
	}
	c.a.lastWrite = next
	c.a.mu.Unlock()
	t := time.NewTimer(time.Until(next))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// fail turns a go-github error into the activity error the workflow's
// retry policy understands: rate limits wait as long as GitHub asks,
// what no retry can fix is non-retryable, the rest is retried.
func (c *client) fail(what string, err error) error {
	if err == nil {
		return nil
	}
	msg := fmt.Sprintf("GitHub %s (%s): ", what, c.repo.FullName())
	var rl *gh.RateLimitError
	var abuse *gh.AbuseRateLimitError
	var er *gh.ErrorResponse
	var te *TokenError
	switch {
	case errors.As(err, &te) && te.Permanent():
		return temporal.NewNonRetryableApplicationError(msg+te.Error(), contract.ErrTypeGitHubUnauthorized, nil)
	case errors.As(err, &te):
		return errors.New(msg + te.Error())
	case errors.As(err, &rl):
		wait := time.Until(rl.Rate.Reset.Time) + time.Second
		return rateLimited(msg+"primary rate limit exceeded: "+rl.Message, wait)
	case errors.As(err, &abuse):
		wait := time.Minute
		if abuse.RetryAfter != nil {
			wait = *abuse.RetryAfter
		}
		return rateLimited(msg+"secondary rate limit: "+abuse.Message, wait)
	case errors.As(err, &er) && er.Response != nil:
		status := er.Response.StatusCode
		text := fmt.Sprintf("%d %s", status, er.Message)
		switch {
		case status == http.StatusTooManyRequests:
			return rateLimited(msg+text, retryAfter(er.Response.Header))
		case status == http.StatusUnauthorized:
			return temporal.NewNonRetryableApplicationError(
				msg+fmt.Sprintf("%s was rejected (%s): %s", c.credential(), text, c.fix()), contract.ErrTypeGitHubUnauthorized, nil)
		case status == http.StatusForbidden:
			return temporal.NewNonRetryableApplicationError(msg+text+": the token lacks a permission this needs", contract.ErrTypeGitHubForbidden, nil)
		case status == http.StatusNotFound:
			return temporal.NewNonRetryableApplicationError(
				msg+text+fmt.Sprintf(": check github.repo and that %s can see the repository", c.credential()), contract.ErrTypeGitHubNotFound, nil)
		case status == http.StatusUnprocessableEntity:
			return temporal.NewNonRetryableApplicationError(msg+text+errorDetails(er), contract.ErrTypeGitHubInvalid, nil)
		}
		return errors.New(msg + text)
	}
	return fmt.Errorf("%s%w", msg, err)
}

func errorDetails(er *gh.ErrorResponse) string {
	var parts []string
	for _, e := range er.Errors {
		if e.Message != "" {
			parts = append(parts, e.Message)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

// rateLimited is a retryable error whose next retry waits wait.
func rateLimited(msg string, wait time.Duration) error {
	if wait < time.Second {
		wait = time.Second
	}
	return temporal.NewApplicationErrorWithOptions(fmt.Sprintf("%s; retrying in %s", msg, wait.Round(time.Second)), contract.ErrTypeGitHubRateLimited, temporal.ApplicationErrorOptions{NextRetryDelay: wait})
}

// retryAfter is how long a 429 asks to wait: Retry-After, else until
// X-RateLimit-Reset, else a minute.
func retryAfter(h http.Header) time.Duration {
	if s, err := strconv.Atoi(h.Get("Retry-After")); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if h.Get("X-RateLimit-Remaining") == "0" {
		if reset, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64); err == nil {
			return time.Until(time.Unix(reset, 0)) + time.Second
		}
	}
	return time.Minute
}

// status is the HTTP status of a go-github error, or 0.
func status(err error) int {
	var er *gh.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		return er.Response.StatusCode
	}
	return 0
}
