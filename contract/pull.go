package contract

import (
	"fmt"
	"time"
)

// PullRequestID is the workflow ID of the follower of an issue's pull
// request: the issue session's ID and "/pr", one per issue, so that a
// second start of the same issue's follower is refused.
func PullRequestID(sessionID string) string { return sessionID + "/pr" }

// RoundSessionID is the workflow ID of round n (from 1) of the follower
// of an issue's pull request: the session that fixes a check, answers a
// review or brings the base in.
func RoundSessionID(sessionID string, n int) string {
	return fmt.Sprintf("%s/round-%d", sessionID, n)
}

// Labels of a pull request's life, besides LabelPROpen and LabelFailed.
const (
	// LabelMerged marks an issue whose pull request was merged.
	LabelMerged = "ralph-merged"
	// LabelQuestion marks an issue whose session waits for an answer.
	LabelQuestion = "ralph-question"
)

// States of a pull request's follower (the RalphStatus search
// attribute and the status query).
const (
	StateWaitingForChecks  State = "waiting_for_checks"
	StateWaitingForReview  State = "waiting_for_review"
	StateFixingCI          State = "fixing_ci"
	StateAddressingReview  State = "addressing_review"
	StateUpdatingBranch    State = "updating_branch"
	StateWaitingForAnswer  State = "waiting_for_answer"
	StateMerging           State = "merging"
	StateWaitingForMerge   State = "waiting_for_merge"
	StateFollowingFinished State = "finished"
)

// Ends of a pull request's follower beyond those of a session.
const (
	// ReasonMerged: the pull request was merged (by the follower or a
	// person).
	ReasonMerged Reason = "merged"
	// ReasonClosed: the pull request was closed without a merge.
	ReasonClosed Reason = "closed"
)

// Merge methods and update strategies of queue.merge-method and
// queue.update-strategy.
const (
	MergeSquash    = "squash"
	MergeMerge     = "merge"
	MergeRebase    = "rebase"
	UpdateByMerge  = "merge"
	UpdateByRebase = "rebase"
)

// PullSettings say how far the queue carries a pull request. The zero
// value (an input recorded before they existed) follows nothing: the
// issue ends at "pull request opened".
type PullSettings struct {
	// Follow is on when the queue follows its pull requests.
	Follow bool `json:"follow,omitempty"`
	// MaxFixRounds bounds the rounds that fix failing checks, per pull
	// request.
	MaxFixRounds int `json:"max_fix_rounds,omitempty"`
	// ChecksTimeout bounds the wait for a head's checks to complete.
	ChecksTimeout time.Duration `json:"checks_timeout,omitempty"`
	// MaxReviewRounds bounds the rounds that answer reviews.
	MaxReviewRounds int `json:"max_review_rounds,omitempty"`
	// TrustedBots are bot logins (with or without "[bot]") whose review
	// comments reach a prompt.
	TrustedBots []string `json:"trusted_bots,omitempty"`
	// AutoMerge merges an approved, green pull request with MergeMethod.
	AutoMerge   bool   `json:"auto_merge,omitempty"`
	MergeMethod string `json:"merge_method,omitempty"`
	// UpdateStrategy brings a moved base in: UpdateByMerge or
	// UpdateByRebase.
	UpdateStrategy string `json:"update_strategy,omitempty"`
}

// FollowInput is the input of the PullRequest workflow.
type FollowInput struct {
	// QueueID is the queue to tell when the pull request's life ends.
	QueueID string       `json:"queue_id"`
	Repo    Repo         `json:"repo"`
	Issue   Issue        `json:"issue"`
	Pull    Pull         `json:"pull"`
	Current CurrentIssue `json:"current"`
	// Base is the pull request's base branch, BaseRef its remote ref.
	Base    string `json:"base"`
	BaseRef string `json:"base_ref"`
	Clone   string `json:"clone"`
	// Settings are the queue's pull request settings; PollInterval how
	// often GitHub is read while nothing pokes the follower.
	Settings     PullSettings  `json:"settings"`
	PollInterval time.Duration `json:"poll_interval"`
	// Session is the template of each round's session, as the queue
	// made it for the issue.
	Session SessionInput `json:"session"`
	// Self is the login the worker writes as: what it wrote is never
	// feedback.
	Self string `json:"self,omitempty"`
	// Adopt makes the workflow one round on a pull request Ralph did not
	// open, asked for in a comment (queue.adopt-prs): the Adopted
	// workflow, not a follower.
	Adopt *AdoptRequest `json:"adopt,omitempty"`
	// CarryOver is filled in by continue-as-new.
	CarryOver *FollowCarryOver `json:"carry_over,omitempty"`
}

// AdoptRequest is a writer's "@bot <instruction>" on a pull request Ralph
// did not open, which queue.adopt-prs lets Ralph take: one round on its
// branch with the instruction.
type AdoptRequest struct {
	CommentID   int64  `json:"comment_id"`
	By          string `json:"by"`
	Instruction string `json:"instruction"`
	// Round numbers the request among those asked on the pull request,
	// from 1: its comment's marker.
	Round int `json:"round"`
	// Author opened the pull request; Body is its text, cleaned of
	// hidden text.
	Author string `json:"author"`
	Body   string `json:"body,omitempty"`
}

// AdoptedRoundID is the workflow ID of the round asked for on pull
// request number of owner/name, which Ralph did not open: one at a time
// on a pull request.
func AdoptedRoundID(host, owner, name string, number int) string {
	return withHost(fmt.Sprintf("ralph-%s-%s-pr-%d-round", idPart(owner), idPart(name), number), host)
}

// FollowCarryOver is what a follower keeps across continue-as-new.
type FollowCarryOver struct {
	Rounds       int `json:"rounds"`
	FixRounds    int `json:"fix_rounds"`
	ReviewRounds int `json:"review_rounds"`
	UpdateRounds int `json:"update_rounds"`
	// Addressed are the keys (FeedbackKey) of the feedback rounds
	// answered and of the comments ignored.
	Addressed []string  `json:"addressed,omitempty"`
	Ignored   []Ignored `json:"ignored,omitempty"`
	// LastPushed is the head the last round pushed.
	LastPushed string `json:"last_pushed,omitempty"`
	// ChecksSince is when the follower began to wait for the current
	// head's checks.
	ChecksSince time.Time    `json:"checks_since"`
	ChecksHead  string       `json:"checks_head,omitempty"`
	Events      []QueueEvent `json:"events,omitempty"`
	EventSeq    int          `json:"event_seq"`
	CostUSD     float64      `json:"cost_usd"`
	Iterations  int          `json:"iterations"`
	Requests    int          `json:"requests"`
}

// FollowResult is how a pull request's life ended.
type FollowResult struct {
	Reason  Reason `json:"reason"`
	Message string `json:"message,omitempty"`
	// Rounds of each kind that ran.
	FixRounds    int     `json:"fix_rounds"`
	ReviewRounds int     `json:"review_rounds"`
	UpdateRounds int     `json:"update_rounds"`
	CostUSD      float64 `json:"cost_usd"`
	Iterations   int     `json:"iterations"`
}

// FollowStatus is what the status query of a follower answers.
type FollowStatus struct {
	FollowID string `json:"follow_id"`
	Repo     string `json:"repo"`
	Issue    int    `json:"issue"`
	Pull     int    `json:"pull"`
	PullURL  string `json:"pull_url"`
	State    State  `json:"state"`
	// Waiting says what the follower waits for, in words.
	Waiting string `json:"waiting,omitempty"`
	Head    string `json:"head,omitempty"`
	// Checks is the last reading of the head's checks.
	Checks  ChecksSummary `json:"checks"`
	Reason  Reason        `json:"reason,omitempty"`
	Message string        `json:"message,omitempty"`
	FollowCarryOver
}

// PullStateInput asks for what a pull request needs now.
type PullStateInput struct {
	Repo   Repo `json:"repo"`
	Number int  `json:"number"`
	// Addressed are the feedback keys (FeedbackKey) that earlier rounds
	// answered or that were ignored: they are not returned again.
	Addressed   []string `json:"addressed,omitempty"`
	TrustedBots []string `json:"trusted_bots,omitempty"`
	// Self is the login the worker writes as (the preflight's): what it
	// wrote is never feedback.
	Self string `json:"self,omitempty"`
}

// PullState is a pull request as the follower reads it.
type PullState struct {
	// State is "open" or "closed"; Merged says a closed one was merged.
	State    string `json:"state"`
	Merged   bool   `json:"merged,omitempty"`
	MergedBy string `json:"merged_by,omitempty"`
	Head     string `json:"head"`
	// HeadRef is the branch.
	HeadRef string `json:"head_ref"`
	// Mergeable is nil while GitHub computes it; MergeableState is
	// GitHub's clean, blocked, behind, dirty, unstable, draft or unknown.
	Mergeable      *bool         `json:"mergeable,omitempty"`
	MergeableState string        `json:"mergeable_state,omitempty"`
	Checks         ChecksSummary `json:"checks"`
	// Approved: at least one approval and no outstanding request for
	// changes among the latest reviews of people with write access.
	Approved         bool `json:"approved,omitempty"`
	ChangesRequested bool `json:"changes_requested,omitempty"`
	// Feedback is what people with write access (and trusted bots) said
	// that no round answered yet, oldest first; Ignored what others said.
	Feedback []Feedback `json:"feedback,omitempty"`
	Ignored  []Ignored  `json:"ignored,omitempty"`
	// Requests counts the HTTP requests the reading took (log downloads
	// too).
	Requests int `json:"requests"`
}

// ChecksSummary is the state of a head's check runs and commit statuses.
type ChecksSummary struct {
	Head    string        `json:"head,omitempty"`
	Total   int           `json:"total"`
	Pending []string      `json:"pending,omitempty"`
	Passed  int           `json:"passed"`
	Failed  []FailedCheck `json:"failed,omitempty"`
}

// Done says every check of the head completed.
func (c ChecksSummary) Done() bool { return len(c.Pending) == 0 }

// Green says every check completed and none failed.
func (c ChecksSummary) Green() bool { return c.Done() && len(c.Failed) == 0 }

// FailedCheckOutputLimit caps the output of the failed checks a fix
// round's prompt carries, all of them together.
const FailedCheckOutputLimit = 16 << 10

// FailedCheck is a check run or commit status that failed, with the end
// of what it printed (secrets redacted).
type FailedCheck struct {
	Name       string `json:"name"`
	Conclusion string `json:"conclusion"`
	URL        string `json:"url,omitempty"`
	// Output is the end of the check run's output or, for GitHub
	// Actions, of its job's log.
	Output string `json:"output,omitempty"`
}

// Kinds of feedback on a pull request.
const (
	FeedbackReview  = "review"
	FeedbackInline  = "inline"
	FeedbackComment = "comment"
)

// FeedbackNoun names feedback of kind in a sentence: "inline review
// comment", "review", "conversation comment".
func FeedbackNoun(kind string) string {
	switch kind {
	case FeedbackInline:
		return "inline review comment"
	case FeedbackComment:
		return "conversation comment"
	}
	return kind
}

// FeedbackKey identifies a piece of feedback of kind with id: GitHub
// numbers reviews, review comments and issue comments apart.
func FeedbackKey(kind string, id int64) string { return fmt.Sprintf("%s-%d", kind, id) }

// FeedbackBodyLimit caps one piece of feedback's text in a prompt.
const FeedbackBodyLimit = 8 << 10

// Feedback is one review, inline review comment or conversation comment
// a round is to answer.
type Feedback struct {
	ID     int64  `json:"id"`
	Kind   string `json:"kind"`
	Author string `json:"author"`
	// State is a review's: CHANGES_REQUESTED or COMMENTED.
	State    string `json:"state,omitempty"`
	Body     string `json:"body"`
	Path     string `json:"path,omitempty"`
	Line     int    `json:"line,omitempty"`
	DiffHunk string `json:"diff_hunk,omitempty"`
	URL      string `json:"url,omitempty"`
}

// Ignored is a comment that never reaches a prompt, and why.
type Ignored struct {
	ID     int64  `json:"id"`
	Author string `json:"author"`
	Kind   string `json:"kind"`
	Why    string `json:"why"`
}

// ReplyInput replies once to an inline review comment.
type ReplyInput struct {
	Repo      Repo   `json:"repo"`
	Pull      int    `json:"pull"`
	CommentID int64  `json:"comment_id"`
	Body      string `json:"body"`
}

// ReplyMarker is the hidden line of the follower's reply to comment id.
func ReplyMarker(id int64) string { return fmt.Sprintf("<!-- ralph:reply-%d -->", id) }

// RoundMarker is the hidden line of the summary comment of round n of the
// pull request of issue number.
func RoundMarker(number, n int) string { return fmt.Sprintf("<!-- ralph:round-%d-%d -->", number, n) }

// ReviewersInput asks for a review again.
type ReviewersInput struct {
	Repo      Repo     `json:"repo"`
	Pull      int      `json:"pull"`
	Reviewers []string `json:"reviewers"`
}

// MergeInput merges a pull request at Head with Method.
type MergeInput struct {
	Repo   Repo   `json:"repo"`
	Pull   int    `json:"pull"`
	Head   string `json:"head"`
	Method string `json:"method"`
	Title  string `json:"title,omitempty"`
}

// MergeResult says whether the pull request is merged, and if not why.
type MergeResult struct {
	Merged bool   `json:"merged"`
	SHA    string `json:"sha,omitempty"`
	// Refused is GitHub's reason when it would not merge (not
	// mergeable, head moved, a review missing).
	Refused string `json:"refused,omitempty"`
}

// RoundInput prepares an issue's work tree for a round: the branch
// brought up to date with origin (a person's commits are built upon) and
// the round's task written to FeedbackFile.
type RoundInput struct {
	Clone    string `json:"clone"`
	Worktree string `json:"worktree"`
	Branch   string `json:"branch"`
	BaseRef  string `json:"base_ref"`
	// Task is the round's text: what the pull request needs now.
	Task string `json:"task"`
	// Update brings the base in first: UpdateByMerge or UpdateByRebase
	// ("" none). Conflicts are left for the round's agent to resolve.
	Update string `json:"update,omitempty"`
	// LastPushed is the head the follower last pushed: when origin's
	// branch moved away from it (a person's push, even by force), origin's
	// branch is taken as it is.
	LastPushed string `json:"last_pushed,omitempty"`
	TokenEnv   string `json:"token_env,omitempty"`
}

// RoundPrepared says what the preparation did.
type RoundPrepared struct {
	// Pulled counts commits taken from origin's branch (a person's).
	Pulled int `json:"pulled,omitempty"`
	// Conflicts are the files the update left in conflict.
	Conflicts []string `json:"conflicts,omitempty"`
	// Rebased says the branch was rebased: its push needs a lease.
	Rebased bool   `json:"rebased,omitempty"`
	Head    string `json:"head"`
	// Remote is origin's branch head as fetched ("" when it is gone).
	Remote string `json:"remote,omitempty"`
}

// FeedbackFile holds the task of a pull request's round in an issue's
// work tree, beside IssueFile; git never sees it.
const FeedbackFile = ".ralph/feedback.md"

// SignalPullEnded is the signal a follower sends its queue when the pull
// request's life ends.
const SignalPullEnded = "pull-ended"

// SignalGitHubPoke wakes a workflow that waits on GitHub (a pull
// request's follower, an issue's session waiting for an answer on the
// issue): GitHub says something changed, read it now. The worker's
// webhook sends it.
const SignalGitHubPoke = "github-poke"

// PullEnd is the data of SignalPullEnded.
type PullEnd struct {
	// Repo is the pull request's repository (a change set follows pull
	// requests of several, whose issue numbers may be the same).
	Repo   Repo         `json:"repo,omitzero"`
	Issue  int          `json:"issue"`
	Result FollowResult `json:"result"`
}

// IssueLink ties a session to its GitHub issue: its checkpoints are asked
// there as a comment (QuestionMarker), with the LabelQuestion label, and a
// comment by a person with write access answers them.
type IssueLink struct {
	Repo   Repo `json:"repo"`
	Number int  `json:"number"`
	// LabeledBy added the ready label: the question mentions them.
	LabeledBy string `json:"labeled_by,omitempty"`
	// Self is the login the worker writes as.
	Self string `json:"self,omitempty"`
	// PollInterval is how often the issue is read for an answer, when no
	// webhook pokes the session first.
	PollInterval time.Duration `json:"poll_interval"`
}

// QuestionMarker is the hidden line of the comment that asks checkpoint
// id of session on its issue.
func QuestionMarker(session, id string) string {
	return fmt.Sprintf("<!-- ralph:question-%s-%s -->", session, id)
}

// AnswerInput asks for the answer to a question comment on an issue.
type AnswerInput struct {
	Repo   Repo   `json:"repo"`
	Number int    `json:"number"`
	Marker string `json:"marker"`
	Self   string `json:"self,omitempty"`
	// Ignored are the comment IDs already reported as ignored.
	Ignored []int64 `json:"ignored,omitempty"`
}

// IssueAnswer is the first comment after the question by a person with
// write access, if any, and the comments of others since.
type IssueAnswer struct {
	Found     bool   `json:"found"`
	Author    string `json:"author,omitempty"`
	Body      string `json:"body,omitempty"`
	CommentID int64  `json:"comment_id,omitempty"`
	// Asked says the question comment exists.
	Asked   bool      `json:"asked"`
	Ignored []Ignored `json:"ignored,omitempty"`
}

// AnswerLimit caps an answer's text, as it caps a signal's.
const AnswerLimit = 16 << 10
