package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	gh "github.com/google/go-github/v62/github"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"

	"github.com/durable-ralph/ralph/contract"
)

const (
	testHost   = "build-7"
	testSecret = "It's a Secret to Everybody"
)

// signal is one signal the fake Temporal got.
type signal struct{ ID, Name string }

// fakeTemporal runs the workflows in running: it records the signals they
// get and answers NotFound for any other.
type fakeTemporal struct {
	mu      sync.Mutex
	running map[string]bool
	got     []signal
	// fail, when set, is the error of every signal.
	fail error
	// delay holds each signal up, to make concurrent deliveries overlap.
	delay time.Duration
	// followers are the issues with running followers, by repository.
	followers map[string][]int
}

func (f *fakeTemporal) SignalWorkflow(_ context.Context, id, runID, name string, arg any) error {
	if runID != "" || arg != nil {
		return fmt.Errorf("unexpected run ID %q or payload %v", runID, arg)
	}
	time.Sleep(f.delay)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	if !f.running[id] {
		return serviceerror.NewNotFound("workflow not found for ID: " + id)
	}
	f.got = append(f.got, signal{id, name})
	return nil
}

func (f *fakeTemporal) Followers(_ context.Context, owner, name string) ([]int, error) {
	return f.followers[owner+"/"+name], nil
}

func (f *fakeTemporal) signals() []signal {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]signal(nil), f.got...)
}

// newFake runs the acme/app queue of testHost, the sessions of issues 3
// and 4 and the followers of issues 7 and 9.
func newFake() *fakeTemporal {
	f := &fakeTemporal{running: map[string]bool{}, followers: map[string][]int{"acme/app": {7, 9}}}
	f.running[contract.QueueWorkflowID(testHost, "acme", "app")] = true
	for _, n := range []int{3, 4} {
		f.running[contract.IssueSessionID(testHost, "acme", "app", n)] = true
	}
	for _, n := range []int{7, 9} {
		f.running[followerID(testHost, "acme", "app", n)] = true
	}
	return f
}

func newTestHandler(t *testing.T, f *fakeTemporal, file string) *Handler {
	t.Helper()
	h, err := NewHandler(Config{
		Host: testHost, Secret: []byte(testSecret), Signaler: f, Followers: f, DeliveriesFile: file,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, h.Close()) })
	return h
}

// sign is the X-Hub-Signature-256 of body with secret.
func sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// delivery is a signed POST of event with payload.
func delivery(t *testing.T, event, id string, payload any) *http.Request {
	t.Helper()
	body, err := json.Marshal(payload)
	require.NoError(t, err)
	r := httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("X-GitHub-Event", event)
	r.Header.Set("X-GitHub-Delivery", id)
	r.Header.Set("X-Hub-Signature-256", sign(testSecret, body))
	return r
}

func serve(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// Payloads in the shapes GitHub sends, cut to what matters.

func repository(fullName string) map[string]any {
	owner, name, _ := bytes.Cut([]byte(fullName), []byte("/"))
	return map[string]any{
		"id": 1296269, "name": string(name), "full_name": fullName, "private": false,
		"owner": map[string]any{"login": string(owner), "id": 1, "type": "Organization"},
	}
}

func sender() map[string]any { return map[string]any{"login": "alice", "id": 2, "type": "User"} }

func issue(n int, pull bool) map[string]any {
	is := map[string]any{
		"id": 1000 + n, "number": n, "title": "Add a greeting", "state": "open",
		"user": sender(), "labels": []any{map[string]any{"name": "ralph-ready"}},
	}
	if pull {
		is["pull_request"] = map[string]any{
			"url":      fmt.Sprintf("https://api.github.com/repos/acme/app/pulls/%d", n),
			"html_url": fmt.Sprintf("https://github.com/acme/app/pull/%d", n),
		}
	}
	return is
}

func pullRequest(n int, head string) map[string]any {
	return map[string]any{
		"id": 2000 + n, "number": n, "state": "open", "title": "Add a greeting",
		"head": map[string]any{"ref": head, "sha": "6dcb09b5b57875f334f61aebed695e2e4193db5e", "repo": repository("acme/app")},
		"base": map[string]any{"ref": "main", "sha": "9049f1265b7d61be4a8904a9a27120d2064dab3b", "repo": repository("acme/app")},
	}
}

func issuesEvent(action, repo string, n int) map[string]any {
	return map[string]any{"action": action, "issue": issue(n, false), "label": map[string]any{"name": "ralph-ready"},
		"repository": repository(repo), "sender": sender()}
}

// ralphLabelled is the event of Ralph's own label on an issue it took.
func ralphLabelled() map[string]any {
	e := issuesEvent("labeled", "acme/app", 5)
	e["label"] = map[string]any{"name": contract.LabelWorking}
	return e
}

func commentEvent(n int, pull bool) map[string]any {
	return map[string]any{"action": "created", "issue": issue(n, pull),
		"comment":    map[string]any{"id": 5001, "body": "Yes, keep it short.", "user": sender()},
		"repository": repository("acme/app"), "sender": sender()}
}

// mentionEvent is a comment on issue n that asks the bot for work.
func mentionEvent(n int) map[string]any {
	e := commentEvent(n, false)
	e["comment"] = map[string]any{"id": 5002, "body": "@ralph-bot add a greeting", "user": sender()}
	return e
}

// mentionOnPull is a comment on pull request n that asks the bot for a
// round (queue.adopt-prs).
func mentionOnPull(n int) map[string]any {
	e := commentEvent(n, true)
	e["comment"] = map[string]any{"id": 5003, "body": "@ralph-bot rename the flag", "user": sender()}
	return e
}

func pullEvent(action, head string) map[string]any {
	return map[string]any{"action": action, "number": 12, "pull_request": pullRequest(12, head),
		"repository": repository("acme/app"), "sender": sender()}
}

func reviewEvent(head string) map[string]any {
	return map[string]any{"action": "submitted", "pull_request": pullRequest(12, head),
		"review":     map[string]any{"id": 80, "state": "changes_requested", "body": "Please rename it.", "user": sender()},
		"repository": repository("acme/app"), "sender": sender()}
}

func reviewCommentEvent(head string) map[string]any {
	return map[string]any{"action": "created", "pull_request": pullRequest(12, head),
		"comment":    map[string]any{"id": 90, "body": "Typo here.", "path": "main.go", "line": 3, "user": sender()},
		"repository": repository("acme/app"), "sender": sender()}
}

func checkRunEvent(action string, heads ...string) map[string]any {
	var prs []any
	for i, h := range heads {
		prs = append(prs, map[string]any{"number": 12 + i, "head": map[string]any{"ref": h, "sha": "6dcb09b"}, "base": map[string]any{"ref": "main"}})
	}
	return map[string]any{"action": action,
		"check_run": map[string]any{"id": 4, "name": "lint", "status": "completed", "conclusion": "failure", "head_sha": "6dcb09b",
			"check_suite": map[string]any{"id": 5, "head_branch": "ralph/issue-9"}, "pull_requests": prs},
		"repository": repository("acme/app"), "sender": sender()}
}

func checkSuiteEvent(action, headBranch string) map[string]any {
	return map[string]any{"action": action,
		"check_suite": map[string]any{"id": 5, "head_branch": headBranch, "head_sha": "6dcb09b", "status": "completed", "conclusion": "success",
			"pull_requests": []any{map[string]any{"number": 12, "head": map[string]any{"ref": headBranch, "sha": "6dcb09b"}}}},
		"repository": repository("acme/app"), "sender": sender()}
}

func statusEvent(state string, branches ...string) map[string]any {
	var bs []any
	for _, b := range branches {
		bs = append(bs, map[string]any{"name": b, "commit": map[string]any{"sha": "6dcb09b"}})
	}
	return map[string]any{"id": 6, "sha": "6dcb09b", "name": "acme/app", "state": state, "context": "ci/build",
		"branches": bs, "repository": repository("acme/app"), "sender": sender()}
}

func TestRouting(t *testing.T) {
	queue := contract.QueueWorkflowID(testHost, "acme", "app")
	f7, f9 := followerID(testHost, "acme", "app", 7), followerID(testHost, "acme", "app", 9)
	poke := func(ids ...string) []signal {
		var s []signal
		for _, id := range ids {
			s = append(s, signal{id, contract.SignalGitHubPoke})
		}
		return s
	}
	for _, tt := range []struct {
		name    string
		event   string
		payload any
		status  int
		want    []signal
	}{
		{"issue labelled pokes the queue", "issues", issuesEvent("labeled", "acme/app", 5), http.StatusAccepted,
			[]signal{{queue, contract.SignalPoke}}},
		{"issue opened", "issues", issuesEvent("opened", "acme/app", 5), http.StatusNoContent, nil},
		{"issue closed pokes the queue (a blocker done)", "issues", issuesEvent("closed", "acme/app", 5), http.StatusAccepted,
			[]signal{{queue, contract.SignalPoke}}},
		{"issue edited pokes the queue (its dependencies)", "issues", issuesEvent("edited", "acme/app", 5), http.StatusAccepted,
			[]signal{{queue, contract.SignalPoke}}},
		{"issue unlabelled", "issues", issuesEvent("unlabeled", "acme/app", 5), http.StatusNoContent, nil},
		{"issue labelled by Ralph", "issues", ralphLabelled(), http.StatusNoContent, nil},
		{"repository without a queue here", "issues", issuesEvent("labeled", "other/app", 5), http.StatusAccepted, nil},
		{"comment on an issue wakes its session", "issue_comment", commentEvent(3, false), http.StatusAccepted,
			poke(contract.IssueSessionID(testHost, "acme", "app", 3))},
		{"comment on an issue without a session", "issue_comment", commentEvent(8, false), http.StatusAccepted, nil},
		{"a mention on an issue pokes the queue too", "issue_comment", mentionEvent(3), http.StatusAccepted,
			[]signal{{contract.IssueSessionID(testHost, "acme", "app", 3), contract.SignalGitHubPoke}, {queue, contract.SignalPoke}}},
		{"comment on a pull request wakes the followers", "issue_comment", commentEvent(12, true), http.StatusAccepted, poke(f7, f9)},
		{"a mention on a pull request pokes the queue too", "issue_comment", mentionOnPull(12), http.StatusAccepted,
			[]signal{{f7, contract.SignalGitHubPoke}, {f9, contract.SignalGitHubPoke}, {queue, contract.SignalPoke}}},
		{"pull request closed", "pull_request", pullEvent("closed", "ralph/issue-7"), http.StatusAccepted, poke(f7)},
		{"pull request pushed to", "pull_request", pullEvent("synchronize", "ralph/issue-9"), http.StatusAccepted, poke(f9)},
		{"pull request labelled", "pull_request", pullEvent("labeled", "ralph/issue-7"), http.StatusNoContent, nil},
		{"pull request of another branch", "pull_request", pullEvent("closed", "feature/x"), http.StatusNoContent, nil},
		{"pull request of a look-alike branch", "pull_request", pullEvent("closed", "ralph/issue-07"), http.StatusNoContent, nil},
		{"pull request of an issue not followed here", "pull_request", pullEvent("closed", "ralph/issue-8"), http.StatusAccepted, nil},
		{"review", "pull_request_review", reviewEvent("ralph/issue-7"), http.StatusAccepted, poke(f7)},
		{"review comment", "pull_request_review_comment", reviewCommentEvent("ralph/issue-9"), http.StatusAccepted, poke(f9)},
		{"check run completed", "check_run", checkRunEvent("completed", "ralph/issue-7"), http.StatusAccepted, poke(f7, f9)},
		{"check run of a fork's pull request", "check_run", checkRunEvent("completed"), http.StatusAccepted, poke(f9)},
		{"check run created", "check_run", checkRunEvent("created", "ralph/issue-7"), http.StatusNoContent, nil},
		{"check suite completed", "check_suite", checkSuiteEvent("completed", "ralph/issue-7"), http.StatusAccepted, poke(f7)},
		{"check suite requested", "check_suite", checkSuiteEvent("requested", "ralph/issue-7"), http.StatusNoContent, nil},
		{"status failed", "status", statusEvent("failure", "main", "ralph/issue-9"), http.StatusAccepted, poke(f9)},
		{"status pending", "status", statusEvent("pending", "ralph/issue-9"), http.StatusNoContent, nil},
		{"ping", "ping", map[string]any{"zen": "Keep it logically awesome.", "hook_id": 1}, http.StatusOK, nil},
		{"event not used", "star", map[string]any{"action": "created", "repository": repository("acme/app")}, http.StatusNoContent, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake()
			h := newTestHandler(t, f, filepath.Join(t.TempDir(), DeliveriesFileName))
			w := serve(h, delivery(t, tt.event, "72d3162e-cc78-11e3-81ab-4c9367dc0958", tt.payload))
			require.Equal(t, tt.status, w.Code, w.Body.String())
			require.ElementsMatch(t, tt.want, f.signals())
		})
	}
}

func TestRejected(t *testing.T) {
	body := func(n int) []byte { return bytes.Repeat([]byte(" "), n) }
	labelled, err := json.Marshal(issuesEvent("labeled", "acme/app", 5))
	require.NoError(t, err)
	for _, tt := range []struct {
		name   string
		method string
		body   []byte
		header map[string]string
		status int
	}{
		{"bad signature", http.MethodPost, labelled, map[string]string{"X-Hub-Signature-256": sign("not the secret", labelled)}, http.StatusUnauthorized},
		{"missing signature", http.MethodPost, labelled, map[string]string{"X-Hub-Signature-256": ""}, http.StatusUnauthorized},
		{"SHA-1 signature only", http.MethodPost, labelled, map[string]string{"X-Hub-Signature-256": "", "X-Hub-Signature": "sha1=0123"}, http.StatusUnauthorized},
		{"malformed signature", http.MethodPost, labelled, map[string]string{"X-Hub-Signature-256": "sha256=zz"}, http.StatusUnauthorized},
		{"body over 25 MB", http.MethodPost, body(MaxBodyBytes + 1), nil, http.StatusRequestEntityTooLarge},
		{"not POST", http.MethodGet, nil, nil, http.StatusMethodNotAllowed},
		{"not JSON", http.MethodPost, labelled, map[string]string{"Content-Type": "text/plain"}, http.StatusUnsupportedMediaType},
		{"no delivery ID", http.MethodPost, labelled, map[string]string{"X-GitHub-Delivery": ""}, http.StatusBadRequest},
		{"delivery ID that is not one", http.MethodPost, labelled, map[string]string{"X-GitHub-Delivery": "a\nb"}, http.StatusBadRequest},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake()
			h := newTestHandler(t, f, filepath.Join(t.TempDir(), DeliveriesFileName))
			r := httptest.NewRequest(tt.method, Path, bytes.NewReader(tt.body))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("X-GitHub-Event", "issues")
			r.Header.Set("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
			r.Header.Set("X-Hub-Signature-256", sign(testSecret, tt.body))
			for k, v := range tt.header {
				r.Header.Set(k, v)
			}
			w := serve(h, r)
			require.Equal(t, tt.status, w.Code, w.Body.String())
			require.Empty(t, f.signals())
		})
	}
}

func TestDuplicateDelivery(t *testing.T) {
	file := filepath.Join(t.TempDir(), DeliveriesFileName)
	f := newFake()
	queue := signal{contract.QueueWorkflowID(testHost, "acme", "app"), contract.SignalPoke}
	h := newTestHandler(t, f, file)
	for range 2 {
		w := serve(h, delivery(t, "issues", "dup-1", issuesEvent("labeled", "acme/app", 5)))
		require.Equal(t, http.StatusAccepted, w.Code)
	}
	require.Equal(t, []signal{queue}, f.signals(), "the same delivery twice pokes once")

	// After a restart: a new handler on the same file.
	require.NoError(t, h.Close())
	h2 := newTestHandler(t, f, file)
	w := serve(h2, delivery(t, "issues", "dup-1", issuesEvent("labeled", "acme/app", 5)))
	require.Equal(t, http.StatusAccepted, w.Code)
	require.Equal(t, []signal{queue}, f.signals(), "a redelivery after a restart has no effect")
	w = serve(h2, delivery(t, "issues", "dup-2", issuesEvent("labeled", "acme/app", 5)))
	require.Equal(t, http.StatusAccepted, w.Code)
	require.Equal(t, []signal{queue, queue}, f.signals(), "another delivery pokes again")
}

func TestConcurrentDuplicates(t *testing.T) {
	f := newFake()
	f.delay = 20 * time.Millisecond
	h := newTestHandler(t, f, filepath.Join(t.TempDir(), DeliveriesFileName))
	var wg sync.WaitGroup
	codes := make([]int, 16)
	for i := range codes {
		wg.Go(func() {
			codes[i] = serve(h, delivery(t, "pull_request", "same", pullEvent("closed", "ralph/issue-7"))).Code
		})
	}
	wg.Wait()
	for _, c := range codes {
		require.Equal(t, http.StatusAccepted, c)
	}
	require.Len(t, f.signals(), 1)
}

// A delivery whose signal failed has no effect recorded: its redelivery
// signals.
func TestFailedDeliveryIsNotRecorded(t *testing.T) {
	f := newFake()
	f.fail = errors.New("connection refused")
	h := newTestHandler(t, f, filepath.Join(t.TempDir(), DeliveriesFileName))
	w := serve(h, delivery(t, "issues", "again", issuesEvent("labeled", "acme/app", 5)))
	require.Equal(t, http.StatusInternalServerError, w.Code)
	require.NotContains(t, w.Body.String(), "connection refused", "the details are for the log")

	f.fail = nil
	w = serve(h, delivery(t, "issues", "again", issuesEvent("labeled", "acme/app", 5)))
	require.Equal(t, http.StatusAccepted, w.Code)
	require.Len(t, f.signals(), 1)
}

func TestNewHandlerNeedsSecret(t *testing.T) {
	f := newFake()
	_, err := NewHandler(Config{Host: testHost, Signaler: f, Followers: f, DeliveriesFile: filepath.Join(t.TempDir(), "d.log")})
	require.ErrorContains(t, err, "secret")
}

func TestIssueOfBranch(t *testing.T) {
	for _, tt := range []struct {
		ref  string
		n    int
		isOK bool
	}{
		{"ralph/issue-1", 1, true},
		{"ralph/issue-1234", 1234, true},
		{"ralph/issue-0", 0, false},
		{"ralph/issue-01", 0, false},
		{"ralph/issue-+1", 0, false},
		{"ralph/issue-", 0, false},
		{"refs/heads/ralph/issue-1", 0, false},
		{"main", 0, false},
	} {
		n, ok := issueOfBranch(tt.ref)
		require.Equal(t, tt.isOK, ok, tt.ref)
		require.Equal(t, tt.n, n, tt.ref)
	}
}

func TestRepositoryOf(t *testing.T) {
	payload := []byte(`{"repository": {"name": "r", "owner": {"login": "o"}}}`)
	for _, event := range usedEvents {
		parsed, err := gh.ParseWebHook(event, payload)
		require.NoError(t, err, event)
		repo := repositoryOf(parsed)
		require.Equal(t, "o/r", repo.GetOwner().GetLogin()+"/"+repo.GetName(), event)
	}
	// A push names its repository with another type: not one a Handler
	// uses.
	push, err := gh.ParseWebHook("push", payload)
	require.NoError(t, err)
	require.Nil(t, repositoryOf(push))
	require.Nil(t, repositoryOf(nil))
	require.Nil(t, repositoryOf("not an event"))
}
