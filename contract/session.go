package contract

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// AgentSlot is the payload of SignalAgentSlot.
type AgentSlot struct {
	// Iteration is the iteration that waits; a late signal about an
	// earlier one is ignored.
	Iteration int  `json:"iteration"`
	Waiting   bool `json:"waiting"`
	// Running and Max are the worker's agents when the iteration began
	// to wait.
	Running int `json:"running,omitempty"`
	Max     int `json:"max,omitempty"`
}

// Reason says why a session ended.
type Reason string

// Termination reasons.
const (
	ReasonComplete            Reason = "complete"
	ReasonStopped             Reason = "stopped"
	ReasonMaxIterations       Reason = "max_iterations"
	ReasonMaxRuntime          Reason = "max_runtime"
	ReasonMaxCost             Reason = "max_cost"
	ReasonConsecutiveFailures Reason = "consecutive_failures"
	ReasonNoProgress          Reason = "no_progress"
	ReasonCheckpointTimeout   Reason = "checkpoint_timeout"
	ReasonCancelled           Reason = "cancelled"
	// ReasonTaskFileInvalid: the agent made the task file unreadable and
	// did not repair it within the allowed attempts.
	ReasonTaskFileInvalid Reason = "task_file_invalid"
	// ReasonGitRewritten: the agent rewrote git history in a way Ralph
	// could not put right without a person.
	ReasonGitRewritten Reason = "git_rewritten"
)

// ExitCode is the starter's exit status for a session that ended with r.
func (r Reason) ExitCode() int {
	switch r {
	case ReasonComplete, ReasonStopped:
		return 0
	case ReasonMaxIterations, ReasonMaxRuntime, ReasonMaxCost:
		return 2
	case ReasonCancelled:
		return 130
	default:
		return 1
	}
}

// EndState is the state of a session that ended with r.
func (r Reason) EndState() State {
	switch r {
	case ReasonComplete:
		return StateCompleted
	case ReasonStopped, ReasonCancelled:
		return StateStopped
	case ReasonMaxIterations, ReasonMaxRuntime, ReasonMaxCost:
		return StateLimited
	}
	return StateFailed
}

// State is where a session is in its loop.
type State string

// Session states, shown by the status query and the RalphStatus search attribute.
const (
	StateStarting      State = "starting"
	StateRunning       State = "running"
	StatePaused        State = "paused"
	StateRateLimited   State = "rate_limited"
	StateAwaitingHuman State = "awaiting_human"
	StateCompleted     State = "completed"
	StateStopped       State = "stopped"
	StateFailed        State = "failed"
	// StateLimited is a session that a limit stopped (max_iterations,
	// max_runtime, max_cost): stopped by limit, not failed.
	StateLimited State = "limited"
	// StateHostOffline is a session whose host has had no worker for
	// longer than its host timeout: it waits for that worker to come back.
	StateHostOffline State = "host_offline"
	// StateWaitingForAgentSlot is a session whose iteration waits for
	// one of its worker's agent slots (worker.max-agents).
	StateWaitingForAgentSlot State = "waiting_for_agent_slot"
)

// States lists every state of a session or a queue (the RalphStatus
// search attribute), in the order a session meets them.
func States() []State {
	return []State{StateStarting, StateRunning, StateWaitingForAgentSlot, StateHostOffline, StatePaused,
		StateRateLimited, StateAwaitingHuman, StateCompleted, StateStopped, StateLimited, StateFailed, StateIdle, StateWorking, StateBudgetWait,
		StateWaitingForChecks, StateWaitingForReview, StateFixingCI, StateAddressingReview, StateUpdatingBranch,
		StateWaitingForAnswer, StateMerging, StateWaitingForMerge, StateFollowingFinished}
}

// Limits bound a session. A zero duration or cost means no limit.
type Limits struct {
	MaxIterations          int           `json:"max_iterations"`
	MaxRuntime             time.Duration `json:"max_runtime"`
	MaxCostUSD             float64       `json:"max_cost_usd"`
	MaxConsecutiveFailures int           `json:"max_consecutive_failures"`
	MaxNoProgress          int           `json:"max_no_progress"`
	IterationTimeout       time.Duration `json:"iteration_timeout"`
	HeartbeatTimeout       time.Duration `json:"heartbeat_timeout"`
	// IterationsPerRun is how many iterations one workflow run holds before
	// it continues as new.
	IterationsPerRun int `json:"iterations_per_run"`
	// MaxTaskFileRepairs is how many iterations in a row may try to repair
	// a task file the agent made unreadable; 0 means
	// DefaultMaxTaskFileRepairs.
	MaxTaskFileRepairs int `json:"max_task_file_repairs,omitempty"`
	// OnLimit is what the session does at max cost, iterations or
	// runtime: OnLimitAsk waits for a person to raise the limit or stop;
	// "" or OnLimitEnd ends it limited.
	OnLimit string `json:"on_limit,omitempty"`
}

// DefaultMaxTaskFileRepairs is the repair limit of sessions that set none.
const DefaultMaxTaskFileRepairs = 2

// MessageLimit caps one guidance text and one answer (text and reason
// together), in bytes: what a person sends must never make a workflow
// task too large to complete.
const MessageLimit = 16 << 10

// GuidanceLimit bounds the guidance texts that wait for a session's next
// prompt; more drop the oldest.
const GuidanceLimit = 16

// SessionInput is the whole input of a session. It is one struct so that it
// can grow without breaking sessions that are already running.
type SessionInput struct {
	// Workspace is the absolute path of the repository on the worker.
	Workspace string        `json:"workspace"`
	Repo      string        `json:"repo,omitempty"`
	Agent     AgentSettings `json:"agent"`
	Task      TaskSettings  `json:"task"`
	Git       GitSettings   `json:"git"`
	Limits    Limits        `json:"limits"`
	// Checkpoints configures the human checkpoints of the session.
	Checkpoints CheckpointSettings `json:"checkpoints"`
	// CarryOver is filled in by continue-as-new; nil on a fresh session.
	CarryOver *CarryOver `json:"carry_over,omitempty"`
	// Fork makes a fresh session a fork of another: it prepares its work
	// tree (Worktree, from the original's commit), then adopts the
	// original's state instead of starting afresh. A run that continues
	// as new no longer has it.
	Fork *Fork `json:"fork,omitempty"`
	// NotifyParent makes a child session signal its parent (an issue
	// queue) after every iteration (SignalSessionProgress).
	NotifyParent bool `json:"notify_parent,omitempty"`
	// Host is the host ID of the worker that holds the workspace: the
	// session's workspace activities run on HostTaskQueue(its task
	// queue, Host). Empty for sessions started before hosts existed,
	// whose activities run on the session's own task queue.
	Host string `json:"host,omitempty"`
	// HostTimeout is how long a workspace activity may wait for Host's
	// worker before the session shows StateHostOffline; 0 is
	// DefaultHostTimeout.
	HostTimeout time.Duration `json:"host_timeout,omitempty"`
	// Worktree, when set, is the work tree of a clone that Workspace is
	// (its Dir): the session's first activity makes it.
	Worktree *SessionWorktree `json:"worktree,omitempty"`
	// Roles are the agents of the reviewer and the planner; nil for a
	// session of executors only, as sessions were before roles.
	Roles *Roles `json:"roles,omitempty"`
	// Fallback names the backends the executor's following iterations
	// run on while its usage limit has not reset (agent.fallback); nil
	// waits for the reset.
	Fallback *FallbackSettings `json:"fallback,omitempty"`
	// Plan makes the session plan its prd.json first (starter plan).
	Plan *PlanSettings `json:"plan,omitempty"`
	// Issue, for the session of an issue (and its pull request's rounds),
	// asks each checkpoint on the issue too and takes an answer from it.
	Issue *IssueLink `json:"issue,omitempty"`
	// Scheduled names the schedule that started the session (starter
	// schedule): its parent is that schedule's run, yet it tells people
	// its end as a session started by hand does.
	Scheduled string `json:"scheduled,omitempty"`
}

// Roles are the agents of a session's roles besides the executor, whose
// agent is SessionInput.Agent.
type Roles struct {
	// Reviewer, when set, reviews every completion claim the task file
	// accepts: the session completes only when it passes the work.
	Reviewer *RoleAgent `json:"reviewer,omitempty"`
	// ReviewEvery runs the reviewer after every ReviewEvery executor
	// iterations as well; 0 runs it only after completion claims.
	ReviewEvery int `json:"review_every,omitempty"`
	// Planner is the agent of planner iterations; nil means the
	// executor's agent.
	Planner *RoleAgent `json:"planner,omitempty"`
}

// RoleAgent is the agent of one role and its instructions.
type RoleAgent struct {
	Agent        AgentSettings `json:"agent"`
	Instructions string        `json:"instructions,omitempty"`
}

// PlanSettings make a session plan its task file before it works on it.
type PlanSettings struct {
	// Idea is what to plan.
	Idea string `json:"idea"`
	// Yes takes the plan without the human-verify checkpoint.
	Yes bool `json:"yes,omitempty"`
}

// MaxPlanTries is how many planner iterations in a row may write a
// prd.json Ralph cannot use before the session ends task_file_invalid.
const MaxPlanTries = 3

// DefaultHostTimeout is the host timeout of sessions that set none.
const DefaultHostTimeout = 2 * time.Minute

// SetLimitsRequest is the payload of the set-limits update. Zero fields
// stay as they are.
type SetLimitsRequest struct {
	MaxIterations int           `json:"max_iterations,omitempty"`
	MaxRuntime    time.Duration `json:"max_runtime,omitempty"`
	MaxCostUSD    float64       `json:"max_cost_usd,omitempty"`
	// MaxCostPerDay is a queue's daily budget (queue.max-cost-per-day).
	MaxCostPerDay float64 `json:"max_cost_per_day,omitempty"`
}

// CarryOver is the state a session carries into its next run.
type CarryOver struct {
	SessionID           string             `json:"session_id"`
	StartedAt           time.Time          `json:"started_at"`
	Iteration           int                `json:"iteration"`
	Totals              Totals             `json:"totals"`
	ConsecutiveFailures int                `json:"consecutive_failures"`
	NoProgress          int                `json:"no_progress"`
	Prepared            PrepareResult      `json:"prepared"`
	Recent              []IterationSummary `json:"recent,omitempty"`
	Guidance            []string           `json:"guidance,omitempty"`
	Runs                int                `json:"runs"`
	// Limits as raised by set-limits.
	Limits Limits `json:"limits"`
	// HumanWait is time spent waiting on humans, which does not count
	// against the runtime limit.
	HumanWait time.Duration        `json:"human_wait,omitempty"`
	Answered  []AnsweredCheckpoint `json:"answered,omitempty"`
	// Paused carries a pause that arrived just before continue-as-new.
	Paused bool `json:"paused,omitempty"`
	// ExecutionKey is the session execution's idempotency key in the
	// workspace (see activities.IterationInput.ExecutionKey).
	ExecutionKey string `json:"execution_key,omitempty"`
	// Notices wait for the next iteration's prompt.
	Notices []string `json:"notices,omitempty"`
	// Uncounted are the iterations that failed after their retries whose
	// last run may have finished unseen; the next iteration's result
	// counts what they cost (IterationInput.Uncounted).
	Uncounted []UncountedRun `json:"uncounted,omitempty"`
	// TaskFileBroken counts iterations in a row that ended with an
	// unreadable task file.
	TaskFileBroken int `json:"task_file_broken,omitempty"`
	// IgnoredAnswers carries the count of stale checkpoint signals.
	IgnoredAnswers int `json:"ignored_answers,omitempty"`
	// DroppedGuidance counts the guidance texts dropped, the oldest
	// first, to keep at most GuidanceLimit waiting.
	DroppedGuidance int `json:"dropped_guidance,omitempty"`
	// ReviewPending carries a completion claim that waits for the
	// reviewer; SinceReview the executor iterations since the last
	// review.
	ReviewPending bool `json:"review_pending,omitempty"`
	SinceReview   int  `json:"since_review,omitempty"`
	// Fallback is the backend the executor runs on while its own usage
	// limit has not reset; nil runs the executor's own.
	Fallback *FallbackState `json:"fallback,omitempty"`
	// ForkedFrom says which session and iteration a fork started from;
	// Rewound are the session's rewinds, oldest first.
	ForkedFrom *ForkedFrom `json:"forked_from,omitempty"`
	Rewound    []Rewind    `json:"rewound,omitempty"`
}

// FallbackSettings are agent.fallback and agent.fallback-after.
type FallbackSettings struct {
	// Agents are the fallback backends' agents, tried in order.
	Agents []AgentSettings `json:"agents"`
	// After: a usage limit that resets later than this from now moves
	// the following iterations to the next agent; a sooner one is
	// waited for.
	After time.Duration `json:"after"`
}

// FallbackState says which fallback agent runs the executor's
// iterations, and until when.
type FallbackState struct {
	// Index is the running agent's place in FallbackSettings.Agents,
	// from 1.
	Index int `json:"index"`
	// Backend is its backend; Instead the executor's own, whose limit
	// resets at Until, when the iterations go back to it.
	Backend string    `json:"backend"`
	Instead string    `json:"instead"`
	Until   time.Time `json:"until"`
}

// Totals accumulate over the whole session, across continue-as-new.
type Totals struct {
	CostUSD          float64 `json:"cost_usd"`
	Usage            Usage   `json:"usage"`
	Turns            int     `json:"turns"`
	Commits          int     `json:"commits"`
	Failures         int     `json:"failures"`
	RateLimitWaits   int     `json:"rate_limit_waits"`
	CompletionClaims int     `json:"completion_claims"`
	// CostUnknown counts iterations whose cost is unknown (an agent that
	// reports none, a model without a price): CostUSD leaves them out.
	CostUnknown int `json:"cost_unknown,omitempty"`
	// CostByBackend splits CostUSD by the backend that ran, in a
	// session with agent.fallback; nil otherwise.
	CostByBackend map[string]float64 `json:"cost_by_backend,omitempty"`
}

// IterationSummary is the short record of one iteration kept in the status.
type IterationSummary struct {
	Iteration int `json:"iteration"`
	// Role is the role of the iteration's agent; empty for an executor.
	Role string `json:"role,omitempty"`
	// Verdict is a reviewer's verdict (pass, fail).
	Verdict string `json:"verdict,omitempty"`
	// CostNote says why CostUSD is not the iteration's cost.
	CostNote     string  `json:"cost_note,omitempty"`
	Outcome      Outcome `json:"outcome"`
	Reason       string  `json:"reason,omitempty"`
	CostUSD      float64 `json:"cost_usd"`
	Tokens       int64   `json:"tokens"`
	FilesChanged int     `json:"files_changed"`
	Commit       string  `json:"commit,omitempty"`
	Story        string  `json:"story,omitempty"`
	// Backend is the backend that ran a fallback iteration; "" is the
	// session's own.
	Backend    string        `json:"backend,omitempty"`
	Claimed    bool          `json:"completion_claimed,omitempty"`
	Verified   bool          `json:"completion_verified,omitempty"`
	Duration   time.Duration `json:"duration"`
	FinishedAt time.Time     `json:"finished_at"`
	// Warnings are problems of the worker that lost nothing (a result or
	// log it could not write).
	Warnings []string `json:"warnings,omitempty"`
	// Notices are what Ralph found and put right after the iteration.
	Notices []string `json:"notices,omitempty"`
	// NotCommitted says why the iteration's work was kept aside rather
	// than committed (IterationResult.NotCommitted).
	NotCommitted string `json:"not_committed,omitempty"`
	// Refused are the network destinations the sandbox refused the agent.
	Refused []string `json:"refused,omitempty"`
	// Live are the agent's last events and LiveStartedAt when it
	// started: only in the iterations query, for a follower to end the
	// iteration's live view.
	Live          []LiveEvent `json:"live,omitempty"`
	LiveStartedAt time.Time   `json:"live_started_at,omitzero"`
}

// Status is the answer of the status query.
type Status struct {
	SessionID string `json:"session_id"`
	Workspace string `json:"workspace"`
	// Host is the host ID of the machine that holds the workspace.
	Host string `json:"host,omitempty"`
	// Worktree is the work tree of a clone the session works in, if any.
	Worktree *SessionWorktree `json:"worktree,omitempty"`
	// Role is the role of the running (or last) iteration's agent,
	// empty for an executor; Roles says which roles the session has
	// ("executor, reviewer").
	Role  string `json:"role,omitempty"`
	Roles string `json:"roles,omitempty"`
	// ReviewPending says a completion claim waits for the reviewer.
	ReviewPending bool `json:"review_pending,omitempty"`
	// Plan are the stories of the plan the planner wrote, while a
	// session plans.
	Plan      []StoryBrief `json:"plan,omitempty"`
	State     State        `json:"state"`
	Reason    Reason       `json:"reason,omitempty"`
	Iteration int          `json:"iteration"`
	Running   bool         `json:"running"`
	StartedAt time.Time    `json:"started_at"`
	// EndedAt is set when the session has ended.
	EndedAt             time.Time `json:"ended_at,omitempty"`
	Limits              Limits    `json:"limits"`
	Totals              Totals    `json:"totals"`
	Mode                string    `json:"mode,omitempty"`
	Branch              string    `json:"branch,omitempty"`
	Task                TaskState `json:"task"`
	ConsecutiveFailures int       `json:"consecutive_failures"`
	NoProgress          int       `json:"no_progress"`
	StopRequested       bool      `json:"stop_requested,omitempty"`
	// Pending is the checkpoint the session waits on, if any.
	Pending *Checkpoint `json:"pending,omitempty"`
	// Answered are the most recent answered checkpoints.
	Answered []AnsweredCheckpoint `json:"answered,omitempty"`
	// Ignored are the latest comments on the issue that could not answer
	// a checkpoint (their authors lack write access).
	Ignored []Ignored `json:"ignored,omitempty"`
	// Guidance is human text waiting for the next prompt.
	Guidance []string `json:"guidance,omitempty"`
	// ExecutionKey names this execution's records in the workspace.
	ExecutionKey string `json:"execution_key,omitempty"`
	// TaskFileBroken counts iterations in a row that ended with an
	// unreadable task file.
	TaskFileBroken int `json:"task_file_broken,omitempty"`
	// IgnoredAnswers counts checkpoint signals that matched no pending
	// checkpoint.
	IgnoredAnswers int `json:"ignored_answers,omitempty"`
	// Undelivered are the notifications of the session that a channel
	// did not take before notify.max-age (the last NotifyGaveUpLimit).
	Undelivered []NotifyGaveUp `json:"undelivered,omitempty"`
	// DroppedGuidance counts guidance texts dropped (the oldest) while
	// more than GuidanceLimit waited for a prompt.
	DroppedGuidance int `json:"dropped_guidance,omitempty"`
	// Fallback is the fallback backend the executor runs on now.
	Fallback *FallbackState `json:"fallback,omitempty"`
	// HumanWait is the time spent waiting on humans (excluded from the
	// runtime limit).
	HumanWait time.Duration `json:"human_wait,omitempty"`
	// ForkedFrom and Rewound say what the session was forked or rewound
	// from (CarryOver's).
	ForkedFrom *ForkedFrom        `json:"forked_from,omitempty"`
	Rewound    []Rewind           `json:"rewound,omitempty"`
	Paused     bool               `json:"paused,omitempty"`
	Recent     []IterationSummary `json:"recent,omitempty"`
	Runs       int                `json:"runs"`
}

// SessionResult is what a finished session returns.
type SessionResult struct {
	SessionID  string    `json:"session_id"`
	Reason     Reason    `json:"reason"`
	Message    string    `json:"message,omitempty"`
	Iterations int       `json:"iterations"`
	Totals     Totals    `json:"totals"`
	Task       TaskState `json:"task"`
	// Last is the last iteration's summary.
	Last *IterationSummary `json:"last,omitempty"`
}

// StopSignal is the payload of the stop signal (it may be empty).
type StopSignal struct {
	Reason string `json:"reason,omitempty"`
}

var unsafeID = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// SessionWorkflowID is the workflow ID of the session for a workspace on
// host. It is derived from the host ID and the absolute path, so running
// the starter again on the same workspace finds the same session, and the
// same path on two machines makes two sessions. An empty host gives the
// ID of sessions started before hosts existed (LegacySessionWorkflowID).
func SessionWorkflowID(host, workspace string) string {
	id := LegacySessionWorkflowID(workspace)
	if host != "" {
		id += "@" + idPart(host)
	}
	return id
}

// LegacySessionWorkflowID is the ID that sessions started before hosts
// existed have: derived from the path alone.
func LegacySessionWorkflowID(workspace string) string {
	abs := filepath.Clean(workspace)
	sum := sha256.Sum256([]byte(abs))
	name := strings.Trim(unsafeID.ReplaceAllString(filepath.Base(abs), "-"), "-")
	if name == "" {
		name = "root"
	}
	if len(name) > 40 {
		name = name[:40]
	}
	return "ralph-" + name + "-" + hex.EncodeToString(sum[:4])
}

// RoleNames lists the roles of a session started with in.
func (in SessionInput) RoleNames() string {
	if in.Roles == nil && in.Plan == nil {
		return ""
	}
	names := []string{RoleExecutor}
	if in.Roles != nil && in.Roles.Reviewer != nil {
		names = append(names, RoleReviewer)
	}
	if in.Plan != nil {
		names = append(names, RolePlanner)
	}
	return strings.Join(names, ", ")
}

// AgentOf is the agent of role: its own, or the executor's.
func (in SessionInput) AgentOf(role string) RoleAgent {
	var ra *RoleAgent
	if r := in.Roles; r != nil {
		switch role {
		case RoleReviewer:
			ra = r.Reviewer
		case RolePlanner:
			ra = r.Planner
		}
	}
	if ra == nil {
		return RoleAgent{Agent: in.Agent}
	}
	return *ra
}

// Validate checks a session's input: what a Session refuses to start
// with, and what a queue refuses as the template of its issues' sessions.
func (in SessionInput) Validate() error {
	var problems []string
	if in.Workspace == "" || !filepath.IsAbs(in.Workspace) {
		problems = append(problems, fmt.Sprintf("workspace %q must be an absolute path", in.Workspace))
	}
	if len(in.Agent.Command) == 0 || in.Agent.Command[0] == "" {
		problems = append(problems, "agent command is empty")
	}
	l := in.Limits
	if l.MaxIterations < 1 {
		problems = append(problems, "max iterations must be at least 1")
	}
	if l.MaxRuntime < 0 || l.MaxCostUSD < 0 {
		problems = append(problems, "max runtime and max cost must not be negative")
	}
	if l.IterationTimeout <= 0 || l.HeartbeatTimeout <= 0 {
		problems = append(problems, "iteration and heartbeat timeouts must be positive")
	}
	if len(problems) > 0 {
		return fmt.Errorf("invalid session input: %s", strings.Join(problems, "; "))
	}
	return nil
}

// Validate checks a change of limits against what the session used: its
// iterations, its cost and its working time; a limit below what is used
// is refused.
func (req SetLimitsRequest) Validate(iterations int, cost float64, used time.Duration) error {
	var problems []string
	if req.MaxIterations < 0 || req.MaxRuntime < 0 || req.MaxCostUSD < 0 {
		problems = append(problems, "limits must not be negative")
	}
	if req == (SetLimitsRequest{}) {
		problems = append(problems, "no limit given")
	}
	if req.MaxCostPerDay != 0 {
		problems = append(problems, "a daily budget is a queue's limit (set-limits --queue DIR --max-cost-per-day)")
	}
	if req.MaxIterations > 0 && req.MaxIterations < iterations {
		problems = append(problems, fmt.Sprintf("max iterations %d is below the %d iterations already run", req.MaxIterations, iterations))
	}
	if req.MaxCostUSD > 0 && req.MaxCostUSD < cost {
		problems = append(problems, fmt.Sprintf("max cost $%.2f is below the $%.4f already spent", req.MaxCostUSD, cost))
	}
	if req.MaxRuntime > 0 && req.MaxRuntime < used {
		problems = append(problems, fmt.Sprintf("max runtime %s is below the %s already used", req.MaxRuntime, used.Round(time.Second)))
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}
