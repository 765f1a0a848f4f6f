package contract

import (
	"fmt"
	"strings"
	"time"
)

// Repo says which repository to talk to and how; it holds no secret.
type Repo struct {
	// Owner and Name of the repository.
	Owner string `json:"owner"`
	Name  string `json:"name"`
	// APIURL is the REST API root, ending in "/"; empty means the public
	// API.
	APIURL string `json:"api_url,omitempty"`
	// TokenEnv names the worker's environment variable that holds the
	// token; empty means GITHUB_TOKEN, then GH_TOKEN.
	TokenEnv string `json:"token_env,omitempty"`
}

// FullName is owner/name.
func (r Repo) FullName() string { return r.Owner + "/" + r.Name }

// PreflightResult is what the preflight check learned.
type PreflightResult struct {
	FullName      string `json:"full_name"`
	DefaultBranch string `json:"default_branch"`
	// Login is the login the worker writes as: the token's user, or
	// "<app slug>[bot]" for a GitHub App's installation; "" when the
	// token cannot say.
	Login string `json:"login,omitempty"`
	// CloneURL is the repository's https clone URL, as GitHub gives it.
	CloneURL string `json:"clone_url,omitempty"`
}

// PickInput asks for the next issue.
type PickInput struct {
	Repo  Repo   `json:"repo"`
	Label string `json:"label"`
	// Skip are issues the queue works on already: never picked, never
	// listed as skipped.
	Skip []int `json:"skip,omitempty"`
	// Done are issues of the repository whose pull requests the queue
	// saw merged: done as blockers, even before GitHub closes them.
	Done []int `json:"done,omitempty"`
	// Unmerged are issues of the repository whose pull requests the queue
	// saw closed without a merge, and when: their dependants wait for a
	// person.
	Unmerged []Unmerged `json:"unmerged,omitempty"`
	// Mentions, when set, looks for comments that ask the bot for work
	// when no ready issue is found.
	Mentions *MentionScan `json:"mentions,omitempty"`
}

// MentionScan says which comments to read for "@bot <instruction>".
type MentionScan struct {
	// Bot is the login the comments mention (the token's, or the GitHub
	// App's bot).
	Bot string `json:"bot"`
	// Since: comments created before it were read already.
	Since time.Time `json:"since"`
	// Handled are the comments the queue took already.
	Handled []int64 `json:"handled,omitempty"`
	// Trusted are the bots whose comments count (queue.trusted-bots).
	Trusted []string `json:"trusted,omitempty"`
}

// Mention is a comment that asks the bot for work: "@bot <instruction>"
// at the start of one of its lines.
type Mention struct {
	CommentID   int64     `json:"comment_id"`
	CreatedAt   time.Time `json:"created_at"`
	Number      int       `json:"number"`
	Title       string    `json:"title,omitempty"`
	Author      string    `json:"author"`
	Instruction string    `json:"instruction"`
	PullRequest bool      `json:"pull_request,omitempty"`
	// Pull is the pull request a comment on one asks on (set for an
	// open one whose comment's author may write).
	Pull *MentionPull `json:"pull,omitempty"`
	// Ignored says why the comment asks for nothing: its author may not
	// write, the issue is closed.
	Ignored string `json:"ignored,omitempty"`
}

// MentionPull is the pull request a mention is on: its head and base
// branches, whether its head is in a fork (where Ralph cannot push), who
// opened it, and its text.
type MentionPull struct {
	Head   string `json:"head"`
	Base   string `json:"base"`
	Fork   bool   `json:"fork,omitempty"`
	Author string `json:"author"`
	URL    string `json:"url,omitempty"`
	Body   string `json:"body,omitempty"`
}

// Ralphs reports whether the pull request is one Ralph opened for an
// issue: its head is an issue's branch of the repository (IssueBranch).
func (p MentionPull) Ralphs() bool {
	n, ok := strings.CutPrefix(p.Head, "ralph/issue-")
	if !ok || p.Fork || n == "" {
		return false
	}
	for _, r := range n {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// Unmerged is an issue whose pull request was closed without a merge at
// At.
type Unmerged struct {
	Number int       `json:"number"`
	At     time.Time `json:"at"`
}

// Issue names an issue.
type Issue struct {
	Number int    `json:"number"`
	Title  string `json:"title"`
	URL    string `json:"url,omitempty"`
	// LabeledBy applied the ready label, or asked for the work in a
	// comment (Instruction).
	LabeledBy string `json:"labeled_by,omitempty"`
	// Instruction is what a comment "@bot <instruction>" asked for; ""
	// for an issue taken for its label.
	Instruction string `json:"instruction,omitempty"`
	// Repos are the repositories its "Repos:" line names, in order, when
	// it spans several: the queue works on it as a change set, one
	// member per repository.
	Repos []ChangeSetMember `json:"repos,omitempty"`
}

// By says who made an issue ready (ReadyBy).
func (is Issue) By() string { return ReadyBy(is.LabeledBy, is.Instruction != "") }

// ReadyBy says who made an issue ready: "labelled by @alice", or "asked
// for by @alice in a comment".
func ReadyBy(login string, asked bool) string {
	if asked {
		return "asked for by @" + login + " in a comment"
	}
	return "labelled by @" + login
}

// Skipped is a labelled issue the queue will not take, and why.
type Skipped struct {
	Number int    `json:"number"`
	Title  string `json:"title"`
	Reason string `json:"reason"`
}

// PickResult is the oldest issue the queue may take, if any, and the
// labelled issues before it that it may not.
type PickResult struct {
	Issue   *Issue    `json:"issue,omitempty"`
	Skipped []Skipped `json:"skipped,omitempty"`
	// Labelled counts the open issues and pull requests with the label.
	Labelled int `json:"labelled"`
	// Waiting are ready issues that wait for other issues or a person.
	Waiting []Waiting `json:"waiting,omitempty"`
	// Asked are the comments that asked the bot for work since
	// Mentions.Since, and ScannedTo the newest comment read.
	Asked     []Mention `json:"asked,omitempty"`
	ScannedTo time.Time `json:"scanned_to,omitempty"`
}

// ReadInput names the issue to read.
type ReadInput struct {
	Repo   Repo `json:"repo"`
	Number int  `json:"number"`
}

// IssueText is an issue as the agent gets it.
type IssueText struct {
	Number int      `json:"number"`
	Title  string   `json:"title"`
	URL    string   `json:"url,omitempty"`
	Labels []string `json:"labels,omitempty"`
	// Markdown is the issue's title, labels, body and the comments of
	// people with write access, cleaned of hidden text.
	Markdown string `json:"markdown"`
	// Comments counts the comments included; Dropped those left out.
	Comments int `json:"comments"`
	Dropped  int `json:"dropped"`
}

// Marker is the hidden line that identifies the queue's progress comment on
// issue number, so that every attempt edits the same comment.
func Marker(number int) string { return fmt.Sprintf("<!-- ralph:issue-%d -->", number) }

// OpenIssueInput is an issue the worker opens once in Repo, for what
// Marker names (an HTML comment, such as a change set's member's).
type OpenIssueInput struct {
	Repo Repo `json:"repo"`
	// Self is the worker's login (PreflightResult.Login): only an issue
	// it opened is taken as the one asked for.
	Self   string   `json:"self"`
	Marker string   `json:"marker"`
	Title  string   `json:"title"`
	Body   string   `json:"body"`
	Labels []string `json:"labels,omitempty"`
}

// LabelsInput changes the labels of an issue.
type LabelsInput struct {
	Repo   Repo `json:"repo"`
	Number int  `json:"number"`
	// Add and Remove name labels; removing one the issue does not have
	// is not an error.
	Add    []string `json:"add,omitempty"`
	Remove []string `json:"remove,omitempty"`
}

// CommentInput is the progress comment of an issue, or another comment
// the queue writes once and edits after.
type CommentInput struct {
	Repo   Repo   `json:"repo"`
	Number int    `json:"number"`
	Body   string `json:"body"`
	// Marker identifies the comment; empty means Marker(Number), the
	// progress comment.
	Marker string `json:"marker,omitempty"`
	// Self is the login the worker writes as: when set, only a comment of
	// its own is the one the marker names (anyone can write a marker
	// into a comment of theirs).
	Self string `json:"self,omitempty"`
}

// PullInput describes the pull request of an issue.
type PullInput struct {
	Repo   Repo   `json:"repo"`
	Number int    `json:"number"`
	Head   string `json:"head"`
	Base   string `json:"base"`
	Title  string `json:"title"`
	Body   string `json:"body"`
	Draft  bool   `json:"draft,omitempty"`
}

// Pull is an open pull request.
type Pull struct {
	Number int    `json:"number"`
	URL    string `json:"url"`
	// Created is false when the pull request already existed (an earlier
	// attempt or an earlier try of the issue) and was updated.
	Created bool `json:"created"`
}

// Labels the queue manages besides the ready label.
const (
	LabelWorking = "ralph-working"
	LabelPROpen  = "ralph-pr-open"
	LabelFailed  = "ralph-failed"
)

// ParseRepo splits "owner/name".
func ParseRepo(s string) (owner, name string, err error) {
	owner, name, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("repository %q is not of the form owner/name", s)
	}
	return owner, strings.TrimSuffix(name, ".git"), nil
}
