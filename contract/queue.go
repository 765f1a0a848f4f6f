package contract

import (
	"fmt"
	"strings"
	"time"
)

// Queue states (besides running's relatives shared with sessions).
const (
	StateIdle    State = "idle"
	StateWorking State = "working"
	// StateBudgetWait is a queue that its daily budget
	// (queue.max-cost-per-day) parks until the next UTC day or a raise.
	StateBudgetWait State = "budget_wait"
)

// QueueWorkflowID is the ID of the queue of owner/name whose clone is on
// host; an empty host gives the ID queues had before hosts existed.
func QueueWorkflowID(host, owner, name string) string {
	return withHost("ralph-queue-"+idPart(owner)+"-"+idPart(name), host)
}

// IssueSessionID is the ID of the session of an issue worked on host:
// the same for every try of the issue there, so a second start attaches
// to a running one. An empty host gives the ID from before hosts existed.
func IssueSessionID(host, owner, name string, number int) string {
	return withHost(fmt.Sprintf("ralph-%s-%s-issue-%d", idPart(owner), idPart(name), number), host)
}

// withHost is id on host.
func withHost(id, host string) string {
	if host == "" {
		return id
	}
	return id + "@" + idPart(host)
}

// IssueBranch is the branch an issue's session works on.
func IssueBranch(number int) string { return fmt.Sprintf("ralph/issue-%d", number) }

func idPart(s string) string {
	s = strings.Trim(unsafeID.ReplaceAllString(s, "-"), "-")
	if s == "" {
		return "x"
	}
	return s
}

// QueueSettings configure an issue queue.
type QueueSettings struct {
	Repo Repo `json:"repo"`
	// Clone is the absolute path of the clone on the worker.
	Clone string `json:"clone"`
	// Label marks issues ready for the queue.
	Label        string        `json:"label"`
	PollInterval time.Duration `json:"poll_interval"`
	// MaxIssues ends the queue after that many issues; 0 is no limit.
	MaxIssues int `json:"max_issues,omitempty"`
	// MaxCostUSD ends the queue once its issues cost that much; 0 is no
	// limit.
	MaxCostUSD float64 `json:"max_cost_usd,omitempty"`
	// BaseBranch is where issue branches start and PRs go; empty means
	// the repository's default branch.
	BaseBranch string `json:"base_branch,omitempty"`
	Draft      bool   `json:"draft,omitempty"`
	// UntilIdle ends the queue complete when no ready issue is left and
	// no pull request is followed.
	UntilIdle bool `json:"until_idle,omitempty"`
	// Pull says how far a pull request is carried after it is opened.
	Pull PullSettings `json:"pull,omitempty"`
	// AdoptPRs lets a writer's "@bot <instruction>" on a pull request
	// Ralph did not open run one round on its branch (queue.adopt-prs).
	AdoptPRs bool `json:"adopt_prs,omitempty"`
	// MaxCostPerDay stops taking issues for the rest of a UTC day once
	// that day's issues (and rounds) cost that much; 0 is no limit.
	MaxCostPerDay float64 `json:"max_cost_per_day,omitempty"`
	// Parallel is how many issues are worked on at once, each by an
	// IssueWork workflow in a work tree of its own; 0 is 1.
	Parallel int `json:"parallel,omitempty"`
}

// Slots is how many issues the queue works on at once.
func (s QueueSettings) Slots() int { return max(s.Parallel, 1) }

// QueueInput is the input of the IssueQueue workflow.
type QueueInput struct {
	Settings QueueSettings `json:"settings"`
	// Session is the template of every issue's session: agent, limits,
	// git, checkpoints and the check command.
	Session SessionInput `json:"session"`
	// CarryOver is filled in by continue-as-new.
	CarryOver *QueueCarryOver `json:"carry_over,omitempty"`
}

// QueueTotals accumulate over the whole queue.
type QueueTotals struct {
	Done       int     `json:"done"`
	Failed     int     `json:"failed"`
	Skipped    int     `json:"skipped"`
	CostUSD    float64 `json:"cost_usd"`
	Iterations int     `json:"iterations"`
	// Merged and Closed count the followed pull requests that were
	// merged, and closed without a merge.
	Merged int `json:"merged,omitempty"`
	Closed int `json:"closed,omitempty"`
}

// Taken counts the issues the queue worked on.
func (t QueueTotals) Taken() int { return t.Done + t.Failed }

// IssueOutcome is what became of one issue.
type IssueOutcome struct {
	Number     int     `json:"number"`
	Title      string  `json:"title"`
	SessionID  string  `json:"session_id"`
	Reason     Reason  `json:"reason"`
	Message    string  `json:"message,omitempty"`
	PR         int     `json:"pr,omitempty"`
	PRURL      string  `json:"pr_url,omitempty"`
	Iterations int     `json:"iterations"`
	CostUSD    float64 `json:"cost_usd"`
	Commits    int     `json:"commits"`
	Pushed     bool    `json:"pushed,omitempty"`
	// Head is the pushed branch's head commit and Log its commits'
	// subjects, newest first (at most 20): what a change set tells the
	// members that build on this one.
	Head string   `json:"head,omitempty"`
	Log  []string `json:"log,omitempty"`
	// Change is the pushed branch's change (PushResult.Change), cut
	// short when ChangeCut.
	Change     string    `json:"change,omitempty"`
	ChangeCut  bool      `json:"change_cut,omitempty"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	// Run is the queue run (from 1) that worked on the issue.
	Run int `json:"run"`
	// ChangeSet names the set that worked on an issue spanning several
	// repositories: complete, it merged its pull requests.
	ChangeSet string `json:"change_set,omitempty"`
}

// Succeeded reports an issue that ended with a pull request (or, worked
// on as a change set, with its pull requests merged).
func (o IssueOutcome) Succeeded() bool {
	return o.Reason == ReasonComplete && (o.PR != 0 || o.ChangeSet != "")
}

// QueueEvent is one line of the queue's story, for --follow.
type QueueEvent struct {
	Seq   int       `json:"seq"`
	At    time.Time `json:"at"`
	Issue int       `json:"issue,omitempty"`
	Text  string    `json:"text"`
}

// CurrentIssue is the issue the queue works on.
type CurrentIssue struct {
	Number    int    `json:"number"`
	Title     string `json:"title"`
	URL       string `json:"url,omitempty"`
	LabeledBy string `json:"labeled_by,omitempty"`
	// Asked says LabeledBy asked for the work in a comment.
	Asked      bool               `json:"asked,omitempty"`
	SessionID  string             `json:"session_id"`
	Branch     string             `json:"branch"`
	Worktree   string             `json:"worktree,omitempty"`
	StartedAt  time.Time          `json:"started_at"`
	Phase      string             `json:"phase"`
	Iterations []IterationSummary `json:"iterations,omitempty"`
	// Workflow is the ID of the workflow that works on the issue when it
	// is not its IssueWork: the ChangeSet of an issue that spans several
	// repositories.
	Workflow string `json:"workflow,omitempty"`
}

// WorkID is the ID of the workflow that works on the issue.
func (c CurrentIssue) WorkID() string {
	if c.Workflow != "" {
		return c.Workflow
	}
	return IssueWorkID(c.SessionID)
}

// QueueCarryOver is what a queue carries into its next run: totals,
// bounded recent outcomes and events, guidance and flags, nothing of the
// last issue's own state.
type QueueCarryOver struct {
	StartedAt time.Time      `json:"started_at"`
	Totals    QueueTotals    `json:"totals"`
	Recent    []IssueOutcome `json:"recent,omitempty"`
	Guidance  []string       `json:"guidance,omitempty"`
	Runs      int            `json:"runs"`
	Paused    bool           `json:"paused,omitempty"`
	// Stop carries a stop that arrived at the boundary.
	Stop      string          `json:"stop,omitempty"`
	Preflight PreflightResult `json:"preflight"`
	Events    []QueueEvent    `json:"events,omitempty"`
	EventSeq  int             `json:"event_seq"`
	Skipped   []Skipped       `json:"skipped,omitempty"`
	// Poke carries a poke that arrived at the boundary.
	Poke bool `json:"poke,omitempty"`
	// Following are the issues whose pull requests a follower carries
	// (their PullRequest workflows run), or whose change set carries its
	// pull requests to the merge (Sets: the set's workflow ID by issue).
	Following []int          `json:"following,omitempty"`
	Sets      map[int]string `json:"sets,omitempty"`
	// Day is the UTC day (2006-01-02) DayCostUSD was spent on.
	Day        string  `json:"day,omitempty"`
	DayCostUSD float64 `json:"day_cost_usd,omitempty"`
	// DayAsks counts the budget questions asked on Day: each has an ID
	// of its own, so a late answer to one cannot answer the next.
	DayAsks int `json:"day_asks,omitempty"`
	// Working are the issues whose IssueWork workflows run, as each last
	// told the queue.
	Working []CurrentIssue `json:"working,omitempty"`
	// Waiting are the ready issues that wait for others (the last look's),
	// Said what the queue said of each (on the issue and in its story),
	// Merged the issues whose pull requests it saw merged (the latest).
	Waiting []Waiting  `json:"waiting,omitempty"`
	Said    []WaitSaid `json:"said,omitempty"`
	Merged  []int      `json:"merged,omitempty"`
	// MentionsSince is when the comments read for "@bot <instruction>"
	// end, Handled the comments it took.
	MentionsSince time.Time `json:"mentions_since,omitempty"`
	Handled       []int64   `json:"handled,omitempty"`
	// Adopted are the pull requests Ralph did not open whose rounds it
	// started (queue.adopt-prs), one entry a round, the latest.
	Adopted []int `json:"adopted,omitempty"`
	// Unmerged are the issues whose pull requests it saw closed without
	// a merge (the latest).
	Unmerged []Unmerged `json:"unmerged,omitempty"`
}

// WaitSaid is what a queue said an issue waits for.
type WaitSaid struct {
	Number int    `json:"number"`
	Text   string `json:"text"`
}

// QueueStatus is the answer of a queue's status query.
type QueueStatus struct {
	QueueID    string `json:"queue_id"`
	Repo       string `json:"repo"`
	Clone      string `json:"clone"`
	Label      string `json:"label"`
	BaseBranch string `json:"base_branch"`
	State      State  `json:"state"`
	Reason     Reason `json:"reason,omitempty"`
	Message    string `json:"message,omitempty"`
	// Budget says why the queue takes no issue while its daily budget
	// parks it (budget_wait), "" otherwise.
	Budget string `json:"budget,omitempty"`
	// Pending is the budget question (KindBudget) the queue waits on in
	// budget_wait, answered through the respond update; nil otherwise.
	// Its key is a session's (Status.Pending), so `starter respond`
	// finds it the same way.
	Pending *Checkpoint `json:"pending,omitempty"`
	// Waiting are the ready issues that wait for others or a person.
	Waiting []Waiting `json:"waiting,omitempty"`
	// Current is the issue a queue run works on itself (runs recorded
	// before issues had workflows of their own); Working are those whose
	// IssueWork workflows run.
	Current       *CurrentIssue  `json:"current,omitempty"`
	Working       []CurrentIssue `json:"working,omitempty"`
	Recent        []IssueOutcome `json:"recent,omitempty"`
	Totals        QueueTotals    `json:"totals"`
	Skipped       []Skipped      `json:"skipped,omitempty"`
	Guidance      []string       `json:"guidance,omitempty"`
	Paused        bool           `json:"paused,omitempty"`
	StopRequested bool           `json:"stop_requested,omitempty"`
	NextPollAt    time.Time      `json:"next_poll_at,omitempty"`
	Runs          int            `json:"runs"`
	StartedAt     time.Time      `json:"started_at"`
	EndedAt       time.Time      `json:"ended_at,omitempty"`
	Events        []QueueEvent   `json:"events,omitempty"`
	Settings      QueueSettings  `json:"settings"`
	// Followers are the workflow IDs of the pull requests' followers
	// that run, by issue (see PullRequestID).
	Followers []Follower `json:"followers,omitempty"`
}

// Follower is the follower of an issue's pull request.
type Follower struct {
	Issue      int    `json:"issue"`
	WorkflowID string `json:"workflow_id"`
}

// QueueResult is what a finished queue returns.
type QueueResult struct {
	Reason  Reason         `json:"reason"`
	Message string         `json:"message,omitempty"`
	Totals  QueueTotals    `json:"totals"`
	Recent  []IssueOutcome `json:"recent,omitempty"`
}

// SessionProgress is the payload of SignalSessionProgress.
type SessionProgress struct {
	SessionID string           `json:"session_id"`
	Iteration IterationSummary `json:"iteration"`
}

// IssueWorkID is the ID of the IssueWork workflow of the issue whose
// session is sessionID (IssueSessionID): one per issue.
func IssueWorkID(sessionID string) string { return sessionID + "/work" }

// IssueWorkInput is the input of the IssueWork workflow: one issue of a
// queue, and what the queue knew when it took it.
type IssueWorkInput struct {
	// QueueID is the queue to tell about the issue (SignalIssueEvent,
	// SignalIssueEnded).
	QueueID  string        `json:"queue_id"`
	Settings QueueSettings `json:"settings"`
	// Session is the queue's template of the issue's session.
	Session   SessionInput    `json:"session"`
	Issue     Issue           `json:"issue"`
	Preflight PreflightResult `json:"preflight"`
	// Guidance is the queue's standing guidance when the issue was taken.
	Guidance []string `json:"guidance,omitempty"`
	// Run is the queue run that took the issue.
	Run int `json:"run"`
}

// Signals an IssueWork workflow sends its queue.
const (
	// SignalIssueEvent carries a line of the issue's story (IssueEvent).
	SignalIssueEvent = "issue-event"
	// SignalIssueEnded carries what became of the issue (IssueEnded).
	SignalIssueEnded = "issue-ended"
)

// IssueEvent is the data of SignalIssueEvent: a line of the issue's
// story and the issue as it is now.
type IssueEvent struct {
	Issue   int          `json:"issue"`
	Text    string       `json:"text"`
	Current CurrentIssue `json:"current"`
}

// IssueEnded is the data of SignalIssueEnded, and the result of the
// IssueWork workflow.
type IssueEnded struct {
	Outcome IssueOutcome `json:"outcome"`
	// Following says a follower carries the issue's pull request on.
	Following bool `json:"following,omitempty"`
}
