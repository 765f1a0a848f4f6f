// Package fakegithub is a stateful fake of the GitHub REST API v3 for one
// repository, served over HTTP on 127.0.0.1 for end-to-end tests.
//
// It fakes the parts of the API an issue queue uses: the authenticated user,
// the repository, issues (list, get, create, edit, lock), issue labels and
// their labeled/unlabeled events, issue comments, repository labels,
// collaborator permission levels and pull requests, and the life of a pull
// request after it is opened: the check runs and commit statuses of its
// head (and the Actions logs of its jobs), its reviews, review comments and
// review requests, its mergeability and its merge. It speaks the real wire
// format: JSON field names and shapes, status codes, error bodies
// ({"message", "errors", "documentation_url"}), Link pagination headers and
// X-RateLimit-* headers are those of api.github.com, so an unmodified
// go-github client pointed at Server.URL decodes every answer, including its
// typed errors (*github.ErrorResponse, *github.RateLimitError,
// *github.AbuseRateLimitError).
//
// Tests seed state with AddIssue, AddLabel and AddComment, inspect it with
// Issue, Pulls and Requests, and inject faults with Fail. Issues may block
// one another (GitHub's issue dependencies, see AddBlockedBy), a merge
// closes the issues its pull request's closing keywords name (see
// MergeByHuman), and with SetWebhook the server delivers the changes of
// issues and pull requests to a webhook, as GitHub does.
//
// A pull request's head and base are commits of a real git repository
// when the test gives one with SetRemote. Its checks come from
// SetCheckRun, SetStatus or a scripted CI (SetCI), its reviews from
// AddReview and AddReviewComment; its mergeable_state follows the rules
// documented at Server.RequireReviews; MergeByHuman and ClosePull end it
// as a person would.
package fakegithub

import (
	"fmt"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// DefaultBranch is the repository's default branch.
const DefaultBranch = "main"

// defaultLabelColor is the color GitHub gives labels created implicitly by
// adding them to an issue.
const defaultLabelColor = "ededed"

// roles are the repository roles SetPermission accepts, strongest first.
var roles = []string{"admin", "maintain", "write", "triage", "read", "none"}

// Server is a running fake of the GitHub REST API for one repository.
// It is safe for concurrent use; one mutex guards all state.
type Server struct {
	srv *httptest.Server

	owner, name, token, bot string

	mu        sync.Mutex
	roles     map[string]string // lower-case login -> role
	push      bool
	hasIssues bool
	issues    []*issue // issues[n-1] is number n
	labels    []*label
	comments  map[int64]*comment
	nextID    int64 // comments, events and labels
	seedBase  time.Time
	requests  []Request
	failures  []*failure
	holds     []*hold
	rateLeft  int
	rateReset time.Time
	requestN  int

	remote         string // the bare repository of SetRemote
	ci             func(sha string) []CheckRun
	ciRan          map[string]chan struct{} // closed once the CI of the SHA has run
	runs           map[string][]*checkRun   // by head SHA, in creation order
	runsByID       map[int64]*checkRun
	statuses       map[string][]*status // by SHA, oldest first
	requireReviews bool
	requireChecks  bool

	hookURL, hookSecret string    // SetWebhook's; no deliveries without a URL
	hooks               *webhooks // the delivery queue, with its own lock
}

type issue struct {
	number      int
	id          int64
	title, body string
	author      string
	state       string // "open" or "closed"
	stateReason string
	labels      []string // names of repository labels
	assignees   []string
	locked      bool
	lockReason  string
	created     time.Time
	updated     time.Time
	closed      time.Time
	closedBy    string
	comments    []*comment
	events      []*event
	pull        *pull // nil unless the issue is a pull request
	// blockedBy are the issues that block this one, in the order they
	// were added; blocking are those this one blocks.
	blockedBy, blocking []*issue
}

type pull struct {
	headOwner, head, base string
	draft                 bool
	edits                 int

	conflict       *bool    // SetConflict's override
	requested      []string // the requested reviewers who have not reviewed since
	requests       []string // every review request, in order
	reviews        []*review
	reviewComments []*reviewComment

	merged                 bool
	mergedAt               time.Time
	mergedBy, mergeMethod  string
	mergeCommit            string
	mergedHead, mergedBase string // the SHAs of head and base when merged
}

type comment struct {
	id               int64
	number           int
	author, body     string
	created, updated time.Time
	edits            int
}

type event struct {
	id                 int64
	event, actor       string
	commit             string // of a "merged" event, or a "closed" one by a merge
	label, labelColor  string
	assignee           string
	lockReason         string
	created            time.Time
	renameFrom, rename string
}

type label struct {
	id                       int64
	name, color, description string
}

type failure struct {
	method  string
	path    *regexp.Regexp
	count   int
	after   bool
	status  int
	headers map[string]string
	message string
}

// IssueSpec describes an issue (or pull request) seeded with AddIssue.
type IssueSpec struct {
	Title, Body string
	// Author is the login that opened the issue; default the repository owner.
	Author string
	// Labels are added at creation, each with a "labeled" event.
	Labels []string
	// LabeledBy is the actor of the "labeled" events for Labels; default Author.
	LabeledBy string
	// Assignees are assigned at creation, each with an "assigned" event by Author.
	Assignees []string
	// Locked locks the issue (a "locked" event by the repository owner).
	Locked bool
	// Closed closes the issue (a "closed" event by Author).
	Closed bool
	// PullRequest makes it a pull request from Head into the default branch.
	PullRequest bool
	// Head is the head branch of a pull request; default "pr-<number>".
	Head string
	// HeadOwner is the owner of the head's repository: another than the
	// repository's makes a pull request from a fork; default the
	// repository's owner.
	HeadOwner string
	// Draft makes a pull request a draft.
	Draft bool
}

// Issue is a snapshot of an issue or pull request.
type Issue struct {
	Number      int
	Title, Body string
	State       string // "open" or "closed"
	StateReason string // "", "completed", "not_planned" or "reopened"
	Author      string
	Labels      []string // sorted by name, case-insensitively, as GitHub lists them
	Assignees   []string
	Locked      bool
	PullRequest bool
	CreatedAt   time.Time
	UpdatedAt   time.Time
	Comments    []Comment // oldest first
	Events      []Event   // oldest first
}

// Comment is a snapshot of an issue comment.
type Comment struct {
	ID                   int64
	Author, Body         string
	CreatedAt, UpdatedAt time.Time
	// Edits counts the PATCHes of the comment.
	Edits int
}

// Event is a snapshot of an issue event such as "labeled", "unlabeled",
// "assigned", "unassigned", "closed", "reopened", "locked", "unlocked" or
// "renamed".
type Event struct {
	ID       int64
	Event    string
	Actor    string
	Label    string // for labeled and unlabeled
	Assignee string // for assigned and unassigned
	// CommitID is the merge commit of a merged event, and of a closed
	// event of an issue that a merged pull request closed (see
	// MergeByHuman).
	CommitID  string
	CreatedAt time.Time
}

// Pull is a snapshot of a pull request.
type Pull struct {
	Number      int
	Title, Body string
	// Head is the head branch name; HeadLabel is "owner:branch".
	Head, HeadLabel string
	Base            string
	State           string // "open" or "closed"
	Draft           bool
	Author          string
	// Edits counts the PATCHes of the pull request.
	Edits int
	// Merged tells whether it was merged, when (MergedAt), by whom
	// (MergedBy), by which method ("merge", "squash" or "rebase") and
	// into which commit of the base (MergeCommitSHA).
	Merged         bool
	MergedAt       time.Time
	MergedBy       string
	MergeMethod    string
	MergeCommitSHA string
}

// Request is one request the server answered.
type Request struct {
	Method string
	Path   string // without the query, unescaped
	Query  string // raw query
	Body   string
	Status int
	Time   time.Time
}

// New starts a fake for repository owner/name with default branch "main".
// token is the only accepted token (Authorization: "Bearer X" or "token X");
// anything else gets 401 {"message":"Bad credentials",...}. The token's user
// login is botLogin: GET /user returns it, and comments, labels and pull
// requests made through the API have it as user or actor.
//
// Initially the owner has the admin role, botLogin the write role and
// everybody else none (see SetPermission), and the token reports push access
// with issues enabled (see SetTokenPermissions).
func New(owner, name, token, botLogin string) *Server {
	now := time.Now().UTC()
	s := &Server{
		owner:     owner,
		name:      name,
		token:     token,
		bot:       botLogin,
		roles:     map[string]string{},
		push:      true,
		hasIssues: true,
		comments:  map[int64]*comment{},
		ciRan:     map[string]chan struct{}{},
		runs:      map[string][]*checkRun{},
		runsByID:  map[int64]*checkRun{},
		statuses:  map[string][]*status{},
		nextID:    1_000_000_000,
		seedBase:  now.Add(-7 * 24 * time.Hour).Truncate(time.Minute),
		rateLeft:  rateLimit,
		rateReset: now.Add(time.Hour).Truncate(time.Second),
		hooks:     newWebhooks(),
	}
	s.srv = httptest.NewServer(s)
	return s
}

// URL is the base URL of the API, with a trailing slash
// ("http://127.0.0.1:PORT/"); use it as go-github's BaseURL and UploadURL.
func (s *Server) URL() string { return s.srv.URL + "/" }

// Close shuts the server down, then stops the webhook deliveries (see
// SetWebhook) once those queued are sent, waiting for them at most a
// couple of seconds.
func (s *Server) Close() {
	s.srv.Close()
	s.hooks.stop()
}

// Owner is the repository owner's login.
func (s *Server) Owner() string { return s.owner }

// Name is the repository name.
func (s *Server) Name() string { return s.name }

// SetPermission gives login a repository role: admin, maintain, write,
// triage, read or none. It panics on any other role.
func (s *Server) SetPermission(login, role string) {
	if !slices.Contains(roles, role) {
		panic(fmt.Sprintf("fakegithub: unknown role %q", role))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.roles[strings.ToLower(login)] = role
}

// SetTokenPermissions sets what GET /repos/{owner}/{repo} reports for the
// token: permissions.push (and triage) is push, has_issues is issues. It only
// changes what is reported; requests are not refused because of it.
func (s *Server) SetTokenPermissions(push, issues bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.push = push
	s.hasIssues = issues
}

// AddIssue seeds an issue (or a pull request with spec.PullRequest) and
// returns its number. Numbers start at 1 and issues and pull requests share
// them, as on GitHub. Seeded issues are created one minute apart, starting
// a week ago, so their created_at order is their number order; the events
// for spec's labels, assignees, lock and close happen at creation time.
// A webhook (see SetWebhook) gets it as opened, then labeled for each
// label and closed if it is closed.
func (s *Server) AddIssue(spec IssueSpec) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.issues) + 1
	author := spec.Author
	if author == "" {
		author = s.owner
	}
	created := s.seedBase.Add(time.Duration(n) * time.Minute)
	is := &issue{
		number:  n,
		id:      int64(2_000_000_000 + n),
		title:   spec.Title,
		body:    spec.Body,
		author:  author,
		state:   "open",
		created: created,
		updated: created,
	}
	if spec.PullRequest {
		head := spec.Head
		if head == "" {
			head = fmt.Sprintf("pr-%d", n)
		}
		owner := s.owner
		if spec.HeadOwner != "" {
			owner = spec.HeadOwner
		}
		is.pull = &pull{headOwner: owner, head: head, base: DefaultBranch, draft: spec.Draft}
	}
	s.issues = append(s.issues, is)
	s.quietly(func() { s.seed(is, spec) })
	is.updated = created
	s.hookCreation(is)
	return n
}

// seed makes the changes of spec to the issue is that AddIssue adds, at
// its creation.
func (s *Server) seed(is *issue, spec IssueSpec) {
	labeledBy := spec.LabeledBy
	if labeledBy == "" {
		labeledBy = is.author
	}
	for _, l := range spec.Labels {
		s.addLabel(is, l, labeledBy, is.created)
	}
	for _, a := range spec.Assignees {
		s.assign(is, a, is.author, is.created)
	}
	if spec.Locked {
		s.lock(is, "", s.owner, is.created)
	}
	if spec.Closed {
		s.setState(is, "closed", "completed", is.author, is.created)
	}
}

// AddLabel adds label to issue number (creating the repository label if
// needed) with a "labeled" event by actor, now. It does nothing if the issue
// already has the label. It panics if there is no such issue.
func (s *Server) AddLabel(number int, label, actor string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addLabel(s.mustIssue(number), label, actor, s.now())
}

// RemoveLabel removes label from issue number with an "unlabeled" event by
// actor, now. It does nothing if the issue does not have the label. It panics
// if there is no such issue.
func (s *Server) RemoveLabel(number int, label, actor string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.removeLabel(s.mustIssue(number), label, actor, s.now())
}

// AddComment adds a comment by author to issue number, now, and returns its
// id. It panics if there is no such issue.
func (s *Server) AddComment(number int, author, body string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addComment(s.mustIssue(number), author, body).id
}

// SetState opens ("open") or closes ("closed") issue or pull request number
// with a "reopened" or "closed" event by actor, now. It panics if there is no
// such issue.
func (s *Server) SetState(number int, state, actor string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	reason := "completed"
	if state == "open" {
		reason = "reopened"
	}
	s.setState(s.mustIssue(number), state, reason, actor, s.now())
}

// Issue returns a copy of issue (or pull request) number. It panics if there
// is no such issue.
func (s *Server) Issue(number int) Issue {
	s.mu.Lock()
	defer s.mu.Unlock()
	is := s.mustIssue(number)
	out := Issue{
		Number:      is.number,
		Title:       is.title,
		Body:        is.body,
		State:       is.state,
		StateReason: is.stateReason,
		Author:      is.author,
		Labels:      s.sortedLabels(is),
		Assignees:   slices.Clone(is.assignees),
		Locked:      is.locked,
		PullRequest: is.pull != nil,
		CreatedAt:   is.created,
		UpdatedAt:   is.updated,
	}
	for _, c := range is.comments {
		out.Comments = append(out.Comments, Comment{
			ID: c.id, Author: c.author, Body: c.body,
			CreatedAt: c.created, UpdatedAt: c.updated, Edits: c.edits,
		})
	}
	for _, e := range is.events {
		out.Events = append(out.Events, Event{
			ID: e.id, Event: e.event, Actor: e.actor, Label: e.label,
			Assignee: e.assignee, CommitID: e.commit, CreatedAt: e.created,
		})
	}
	return out
}

// Issues returns copies of all issues and pull requests, by number.
func (s *Server) Issues() []Issue {
	s.mu.Lock()
	n := len(s.issues)
	s.mu.Unlock()
	out := make([]Issue, 0, n)
	for i := 1; i <= n; i++ {
		out = append(out, s.Issue(i))
	}
	return out
}

// Pulls returns copies of all pull requests, by number.
func (s *Server) Pulls() []Pull {
	return s.pulls(func(*issue) bool { return true })
}

// MergedPulls returns copies of the merged pull requests, by number.
func (s *Server) MergedPulls() []Pull {
	return s.pulls(func(is *issue) bool { return is.pull.merged })
}

// Pull returns a copy of pull request number. It panics if there is no
// such pull request.
func (s *Server) Pull(number int) Pull {
	s.mu.Lock()
	defer s.mu.Unlock()
	return pullSnapshot(s.mustPull(number))
}

// pulls returns copies of the pull requests that keep selects, by number.
func (s *Server) pulls(keep func(*issue) bool) []Pull {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Pull
	for _, is := range s.issues {
		if is.pull != nil && keep(is) {
			out = append(out, pullSnapshot(is))
		}
	}
	return out
}

func pullSnapshot(is *issue) Pull {
	p := is.pull
	return Pull{
		Number:         is.number,
		Title:          is.title,
		Body:           is.body,
		Head:           p.head,
		HeadLabel:      p.headOwner + ":" + p.head,
		Base:           p.base,
		State:          is.state,
		Draft:          p.draft,
		Author:         is.author,
		Edits:          p.edits,
		Merged:         p.merged,
		MergedAt:       p.mergedAt,
		MergedBy:       p.mergedBy,
		MergeMethod:    p.mergeMethod,
		MergeCommitSHA: p.mergeCommit,
	}
}

// Labels returns the names of the repository's labels, in creation order.
func (s *Server) Labels() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.labels))
	for _, l := range s.labels {
		out = append(out, l.name)
	}
	return out
}

// Requests returns every request served so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Fail makes the next count requests whose method matches method
// (case-insensitively; "" or "*" matches any) and whose path (without query,
// e.g. "/repos/o/r/pulls") matches the unanchored regexp pathRE answer status
// with headers and the body {"message": message, "documentation_url": ...}.
// With after=true the request is first performed normally (state changes) and
// then answered with the failure instead (e.g. a pull request created but the
// answer is a 502).
//
// headers override the default ones (X-RateLimit-*, Content-Type, ...). The
// documentation_url is the one GitHub sends with such a message: a message
// mentioning a "secondary rate limit" gets GitHub's secondary-rate-limits URL,
// which is what go-github needs to return *github.AbuseRateLimitError. For a
// primary rate limit pass status 403 and X-RateLimit-Remaining: 0.
//
// Rules are matched in the order they were added; a count <= 0 adds none.
// Fail panics if pathRE does not compile.
func (s *Server) Fail(method, pathRE string, count int, after bool, status int, headers map[string]string, message string) {
	re := regexp.MustCompile(pathRE)
	if count <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures = append(s.failures, &failure{
		method: method, path: re, count: count, after: after,
		status: status, headers: headers, message: message,
	})
}

// Hold makes the next request whose method and path match perform its
// change and then wait to answer: done is closed once the change is made,
// and the answer (its own, or a Fail rule's) goes out when release is
// closed. Tests use it to kill a client between GitHub's change and the
// client's learning of it.
func (s *Server) Hold(method, pathRE string, done, release chan struct{}) {
	re := regexp.MustCompile(pathRE)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holds = append(s.holds, &hold{method: method, path: re, done: done, release: release})
}
