// Package webhook serves GitHub's webhook deliveries to a worker: each
// delivery whose signature checks out wakes the workflow it concerns (the
// issue queue of its repository, a pull request's follower, an issue's
// session waiting for an answer) with a signal, so that it reads GitHub
// now rather than at its next poll. Polling stays on: a delivery that
// never comes costs at most a poll interval.
package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	gh "github.com/google/go-github/v62/github"
	"go.temporal.io/api/serviceerror"

	"github.com/durable-ralph/ralph/contract"
)

// Path is where the worker serves webhooks.
const Path = "/github/webhook"

// MaxBodyBytes caps a delivery's body: GitHub caps payloads at 25 MB.
const MaxBodyBytes = 25 << 20

// signalTimeout bounds the signals and the listing of one delivery.
const signalTimeout = 10 * time.Second

// Signaler sends a signal to a workflow; a Temporal client is one. An
// error that is a *serviceerror.NotFound means the workflow does not run.
type Signaler interface {
	SignalWorkflow(ctx context.Context, workflowID, runID, signalName string, arg any) error
}

// Followers lists the issues of the repository owner/name whose pull
// requests a running follower (a PullRequest workflow) carries.
type Followers interface {
	Followers(ctx context.Context, owner, name string) ([]int, error)
}

// Config configures a Handler.
type Config struct {
	// Host is the worker's host ID (worker.host-id): the workflows a
	// delivery wakes are those of this host.
	Host string
	// Secret is the webhook's secret, which every delivery's
	// X-Hub-Signature-256 is checked with. It must not be empty.
	Secret []byte
	// Signaler sends the signals.
	Signaler Signaler
	// Followers lists the followers a comment on a pull request wakes.
	Followers Followers
	// DeliveriesFile records the IDs of the deliveries that had an
	// effect, such as <state-dir>/webhook-deliveries.log.
	DeliveriesFile string
	// Logger gets one line per delivery; nil is slog.Default().
	Logger *slog.Logger
}

// Handler serves GitHub's webhook deliveries (POST only) and wakes the
// workflows they concern. A delivery whose X-GitHub-Delivery had an effect
// before has none. It is safe for concurrent use.
type Handler struct {
	host      string
	secret    []byte
	signaler  Signaler
	followers Followers
	seen      *deliveries
	log       *slog.Logger
}

// NewHandler returns the Handler cfg configures, with the deliveries its
// file recorded. Close it when it is no longer served.
func NewHandler(cfg Config) (*Handler, error) {
	switch {
	case len(cfg.Secret) == 0:
		return nil, errors.New("webhook: the secret is empty")
	case cfg.Host == "":
		return nil, errors.New("webhook: no host ID")
	case cfg.Signaler == nil || cfg.Followers == nil:
		return nil, errors.New("webhook: no signaler or followers")
	case cfg.DeliveriesFile == "":
		return nil, errors.New("webhook: no file for the deliveries")
	}
	seen, err := openDeliveries(cfg.DeliveriesFile, KeepDeliveries)
	if err != nil {
		return nil, fmt.Errorf("webhook: %w", err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Handler{
		host: cfg.Host, secret: cfg.Secret, signaler: cfg.Signaler, followers: cfg.Followers,
		seen: seen, log: log,
	}, nil
}

// Close closes the record of deliveries.
func (h *Handler) Close() error { return h.seen.close() }

// outcome is what became of a delivery, for its answer and its log line.
type outcome struct {
	status int
	// note says why, in a few words; it is the body of an error.
	note string
	repo string
	// signalled are the workflows signalled, as "signal→ID".
	signalled []string
}

// ServeHTTP answers one delivery: 405 for a method other than POST, 401
// for a missing or wrong signature, 413 for a body over MaxBodyBytes, 204
// for an event, action or branch that wakes nothing, 200 for a ping, and
// 202 once the workflows it concerns were signalled (202 too when none of
// them runs here, or when the delivery had an effect before).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	event, delivery := r.Header.Get(gh.EventTypeHeader), r.Header.Get(gh.DeliveryIDHeader)
	o := h.serve(w, r, event, delivery)
	attrs := []any{"status", o.status, "event", event, "delivery", delivery}
	if o.repo != "" {
		attrs = append(attrs, "repository", o.repo)
	}
	if len(o.signalled) > 0 {
		attrs = append(attrs, "signalled", strings.Join(o.signalled, ", "))
	}
	if o.note != "" && len(o.signalled) == 0 {
		attrs = append(attrs, "note", o.note)
	}
	level := slog.LevelInfo
	if o.status >= http.StatusInternalServerError {
		level = slog.LevelWarn
	}
	h.log.Log(r.Context(), level, "github webhook", attrs...)

	if o.status == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", http.MethodPost)
	}
	switch {
	case o.status == http.StatusNoContent:
		w.WriteHeader(o.status)
	case o.status >= http.StatusInternalServerError:
		// The details (workflow IDs, Temporal's error) are for the log.
		http.Error(w, "the delivery failed: see the worker's log", o.status)
	case o.status >= http.StatusBadRequest:
		http.Error(w, o.note, o.status)
	default:
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(o.status)
		fmt.Fprintln(w, o.note)
	}
}

// serve handles one request.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request, event, delivery string) outcome {
	if r.Method != http.MethodPost {
		return outcome{status: http.StatusMethodNotAllowed, note: "only POST"}
	}
	payload, o, ok := h.authenticate(w, r)
	if !ok {
		return o
	}
	if !deliveryIDRE.MatchString(delivery) {
		return outcome{status: http.StatusBadRequest, note: "missing or malformed " + gh.DeliveryIDHeader}
	}
	return h.deliver(r.Context(), event, delivery, payload)
}

// authenticate reads r's body, at most MaxBodyBytes, checks its signature
// and returns its JSON payload. When it answers false, the outcome says
// why.
func (h *Handler) authenticate(w http.ResponseWriter, r *http.Request) ([]byte, outcome, bool) {
	if r.Header.Get(gh.SHA256SignatureHeader) == "" {
		return nil, outcome{status: http.StatusUnauthorized, note: "missing " + gh.SHA256SignatureHeader}, false
	}
	if ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || (ct != "application/json" && ct != "application/x-www-form-urlencoded") {
		return nil, outcome{status: http.StatusUnsupportedMediaType, note: "content type must be application/json"}, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		if mb := new(http.MaxBytesError); errors.As(err, &mb) {
			return nil, outcome{status: http.StatusRequestEntityTooLarge, note: fmt.Sprintf("body over %d bytes", int64(MaxBodyBytes))}, false
		}
		return nil, outcome{status: http.StatusBadRequest, note: "read the body: " + err.Error()}, false
	}
	// gh.ValidatePayload compares the HMAC-SHA256 in constant time; it
	// reads the body again, now that it is known to be within bounds.
	r.Body = io.NopCloser(bytes.NewReader(body))
	payload, err := gh.ValidatePayload(r, h.secret)
	if err != nil {
		return nil, outcome{status: http.StatusUnauthorized, note: "signature check failed"}, false
	}
	return payload, outcome{}, true
}

// deliver routes an authenticated delivery and sends its signals once.
func (h *Handler) deliver(ctx context.Context, event, delivery string, payload []byte) outcome {
	if event == "ping" {
		return outcome{status: http.StatusOK, note: "pong"}
	}
	if !slices.Contains(usedEvents, event) {
		return outcome{status: http.StatusNoContent, note: "event not used"}
	}
	parsed, err := gh.ParseWebHook(event, payload)
	if err != nil {
		return outcome{status: http.StatusBadRequest, note: "malformed " + event + " payload"}
	}
	ctx, cancel := context.WithTimeout(ctx, signalTimeout)
	defer cancel()
	rt, err := h.route(ctx, parsed)
	o := outcome{repo: rt.repo}
	if err != nil {
		o.status, o.note = http.StatusInternalServerError, err.Error()
		return o
	}
	if rt.ignore != "" {
		o.status, o.note = http.StatusNoContent, rt.ignore
		return o
	}
	done, dup, err := h.seen.claim(ctx, delivery)
	if err != nil {
		o.status, o.note = http.StatusServiceUnavailable, err.Error()
		return o
	}
	if dup {
		o.status, o.note = http.StatusAccepted, "duplicate delivery: no effect"
		return o
	}
	var errs []error
	type target struct{ id, signal string }
	targets := make([]target, 0, len(rt.ids)+1)
	for _, id := range rt.ids {
		targets = append(targets, target{id, rt.signal})
	}
	if rt.queue != "" {
		targets = append(targets, target{rt.queue, contract.SignalPoke})
	}
	for _, tg := range targets {
		id := tg.id
		err := h.signaler.SignalWorkflow(ctx, id, "", tg.signal, nil)
		var nf *serviceerror.NotFound
		switch {
		case err == nil:
			o.signalled = append(o.signalled, tg.signal+"→"+id)
		case errors.As(err, &nf):
			// Not running here: no effect.
		default:
			errs = append(errs, fmt.Errorf("signal %s to %s: %w", tg.signal, id, err))
		}
	}
	// A delivery that failed is not recorded, so that GitHub's redelivery
	// tries again: a second poke of a workflow that got the first is
	// harmless.
	err = errors.Join(errs...)
	if rerr := done(err == nil && len(o.signalled) > 0); rerr != nil {
		h.log.Warn("github webhook: record the delivery", "delivery", delivery, "error", rerr)
	}
	switch {
	case err != nil:
		o.status, o.note = http.StatusInternalServerError, err.Error()
	case len(o.signalled) == 0:
		o.status, o.note = http.StatusAccepted, "no workflow to wake runs here"
	default:
		o.status, o.note = http.StatusAccepted, "signalled "+strings.Join(o.signalled, ", ")
	}
	return o
}

// usedEvents are the events a Handler acts on (besides ping).
var usedEvents = []string{
	"issues", "issue_comment", "pull_request", "pull_request_review", "pull_request_review_comment",
	"check_run", "check_suite", "status",
}

// ralphLabels are the labels Ralph puts on issues, which never make one
// ready.
var ralphLabels = []string{
	contract.LabelWorking, contract.LabelPROpen, contract.LabelFailed, contract.LabelMerged, contract.LabelQuestion,
}

// routing is whom a delivery wakes: signal sent to the workflows ids, or
// nobody and why (ignore).
type routing struct {
	repo   string
	signal string
	ids    []string
	ignore string
	// queue, when set, is poked too: a comment that may ask the bot for
	// work.
	queue string
}

// repoNameRE matches an owner or a repository name as GitHub spells them.
var repoNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// route says whom the delivery of event wakes.
func (h *Handler) route(ctx context.Context, event any) (routing, error) {
	repo := repositoryOf(event)
	owner, name := repo.GetOwner().GetLogin(), repo.GetName()
	if !repoNameRE.MatchString(owner) || !repoNameRE.MatchString(name) {
		return routing{ignore: "no repository"}, nil
	}
	rt := routing{repo: owner + "/" + name, signal: contract.SignalGitHubPoke}
	switch event.(type) {
	case *gh.IssuesEvent, *gh.IssueCommentEvent:
		return h.routeIssue(ctx, rt, owner, name, event)
	}
	branches, why := branchesOf(event)
	if why != "" {
		rt.ignore = why
		return rt, nil
	}
	for _, b := range branches {
		if n, ok := issueOfBranch(b); ok {
			if id := followerID(h.host, owner, name, n); !slices.Contains(rt.ids, id) {
				rt.ids = append(rt.ids, id)
			}
		}
	}
	if len(rt.ids) == 0 {
		rt.ignore = "no issue branch"
	}
	return rt, nil
}

// routeIssue routes the events of issues: a label, a close, a reopen or
// an edit pokes the queue (an issue may be ready, or one an issue waits
// for done), a comment the issue's session (an answer) or, on a pull
// request, its follower.
func (h *Handler) routeIssue(ctx context.Context, rt routing, owner, name string, event any) (routing, error) {
	ignore := func(why string) (routing, error) {
		rt.ignore = why
		return rt, nil
	}
	switch e := event.(type) {
	case *gh.IssuesEvent:
		switch e.GetAction() {
		case "closed", "reopened", "edited":
			// Perhaps a blocker an issue waits for, or the text that
			// says what an issue depends on: the queue looks again.
			rt.signal, rt.ids = contract.SignalPoke, []string{contract.QueueWorkflowID(h.host, owner, name)}
			return rt, nil
		case "labeled":
		default:
			return ignore("issue " + e.GetAction())
		}
		if l := e.GetLabel().GetName(); slices.Contains(ralphLabels, l) {
			// Ralph's own labels, most often its own writes: no issue
			// becomes ready by them.
			return ignore("label " + l)
		}
		rt.signal, rt.ids = contract.SignalPoke, []string{contract.QueueWorkflowID(h.host, owner, name)}
		return rt, nil
	case *gh.IssueCommentEvent:
		if a := e.GetAction(); a != "created" && a != "edited" {
			return ignore("comment " + a)
		}
		if !e.GetIssue().IsPullRequest() {
			// Perhaps the answer to the question of the issue's session,
			// or "@bot <instruction>", which the queue reads.
			rt.ids = []string{contract.IssueSessionID(h.host, owner, name, e.GetIssue().GetNumber())}
			if e.GetAction() == "created" && strings.Contains(e.GetComment().GetBody(), "@") {
				rt.queue = contract.QueueWorkflowID(h.host, owner, name)
			}
			return rt, nil
		}
		// The payload names the pull request, not its branch: wake every
		// follower of the repository, there are few.
		issues, err := h.followers.Followers(ctx, owner, name)
		if err != nil {
			return rt, fmt.Errorf("list the followers of %s: %w", rt.repo, err)
		}
		for _, n := range issues {
			rt.ids = append(rt.ids, followerID(h.host, owner, name, n))
		}
		if e.GetAction() == "created" && strings.Contains(e.GetComment().GetBody(), "@") {
			// Perhaps "@bot <instruction>" on a pull request Ralph did
			// not open (queue.adopt-prs), which the queue reads.
			rt.queue = contract.QueueWorkflowID(h.host, owner, name)
		}
		return rt, nil
	}
	return ignore("event not used")
}

// branchesOf are the branches a pull request's or a check's event is
// about, or why it is not used.
func branchesOf(event any) (branches []string, ignore string) {
	switch e := event.(type) {
	case *gh.PullRequestEvent:
		if a := e.GetAction(); !slices.Contains([]string{"closed", "reopened", "synchronize", "edited", "ready_for_review"}, a) {
			return nil, "pull request " + a
		}
		return []string{e.GetPullRequest().GetHead().GetRef()}, ""
	case *gh.PullRequestReviewEvent:
		if a := e.GetAction(); !slices.Contains([]string{"submitted", "edited", "dismissed"}, a) {
			return nil, "review " + a
		}
		return []string{e.GetPullRequest().GetHead().GetRef()}, ""
	case *gh.PullRequestReviewCommentEvent:
		if a := e.GetAction(); a != "created" && a != "edited" {
			return nil, "review comment " + a
		}
		return []string{e.GetPullRequest().GetHead().GetRef()}, ""
	case *gh.CheckRunEvent:
		if a := e.GetAction(); a != "completed" {
			return nil, "check run " + a
		}
		if cr := e.GetCheckRun(); cr != nil {
			branches = append(headRefs(cr.PullRequests), cr.GetCheckSuite().GetHeadBranch())
		}
		return branches, ""
	case *gh.CheckSuiteEvent:
		if a := e.GetAction(); a != "completed" {
			return nil, "check suite " + a
		}
		if cs := e.GetCheckSuite(); cs != nil {
			branches = append(headRefs(cs.PullRequests), cs.GetHeadBranch())
		}
		return branches, ""
	case *gh.StatusEvent:
		if s := e.GetState(); s == "pending" {
			return nil, "status " + s
		}
		for _, b := range e.Branches {
			branches = append(branches, b.GetName())
		}
		return branches, ""
	}
	return nil, "event not used"
}

// followerID is the workflow ID of the follower of issue n's pull request
// on host.
func followerID(host, owner, name string, n int) string {
	return contract.PullRequestID(contract.IssueSessionID(host, owner, name, n))
}

// headRefs are the head branches of prs.
func headRefs(prs []*gh.PullRequest) []string {
	var refs []string
	for _, pr := range prs {
		refs = append(refs, pr.GetHead().GetRef())
	}
	return refs
}

// issueOfBranch is the issue whose branch (contract.IssueBranch) ref is.
func issueOfBranch(ref string) (int, bool) {
	s, ok := strings.CutPrefix(ref, "ralph/issue-")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || contract.IssueBranch(n) != ref {
		return 0, false
	}
	return n, true
}

// repositoryOf is the repository of a parsed event; nil when it has none.
// Every event a Handler uses names it with a GetRepo method; an event
// without one (or whose GetRepo returns another type) has none.
func repositoryOf(event any) *gh.Repository {
	if e, ok := event.(interface{ GetRepo() *gh.Repository }); ok {
		return e.GetRepo()
	}
	return nil
}
