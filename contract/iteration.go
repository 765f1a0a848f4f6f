package contract

import (
	"fmt"
	"strings"
	"time"
)

// AgentSettings says which agent to run and how.
type AgentSettings struct {
	// Backend is the kind of agent: "claude" (also when empty), "codex",
	// "gemini" or "command" (see Backends).
	Backend string `json:"backend,omitempty"`
	// Command is the agent binary (looked up on the worker's PATH) followed
	// by any arguments that must come before ours.
	Command []string `json:"command"`
	// Model is passed as --model when set.
	Model string `json:"model,omitempty"`
	// MaxTurns is passed as --max-turns when positive.
	MaxTurns int `json:"max_turns,omitempty"`
	// ExtraArgs are appended to the agent's command line.
	ExtraArgs []string `json:"extra_args,omitempty"`
	// Prices price the tokens of backends whose agent reports no cost,
	// over agent.DefaultPrices.
	Prices Prices `json:"prices,omitempty"`
	// Timeout bounds one agent run; the activity kills the agent's whole
	// process group when it passes and reports OutcomeTimeout.
	Timeout time.Duration `json:"timeout"`
	// ResetInterrupted makes a retry of an iteration whose agent died
	// without a resumable session start over from the iteration's start
	// commit, discarding the partial changes. By default they are kept and
	// described to the agent.
	ResetInterrupted bool `json:"reset_interrupted,omitempty"`
	// Sandbox says how the agent's runs are contained.
	Sandbox SandboxSettings `json:"sandbox,omitzero"`
}

// SandboxSettings say what an agent run may reach (agent.sandbox,
// agent.network, agent.network-allow, agent.sandbox-ro and -rw).
type SandboxSettings struct {
	// Mode is "auto" (also when empty), "required" or "off".
	Mode string `json:"mode,omitempty"`
	// Network is "internet" (also when empty), "allow-list", "none" or
	// "open".
	Network string `json:"network,omitempty"`
	// NetworkAllow are hosts ("host", "host:port", "*.suffix") the egress
	// proxy lets through, besides the backend's model API.
	NetworkAllow []string `json:"network_allow,omitempty"`
	// ReadOnly and ReadWrite are paths added to the sandbox's view.
	ReadOnly  []string `json:"read_only,omitempty"`
	ReadWrite []string `json:"read_write,omitempty"`
	// Limits bound what one contained run may use (agent.limits).
	Limits AgentLimits `json:"limits,omitzero"`
}

// AgentLimits bound what one contained agent run may use; a zero field
// is the sandbox's default (sandbox.DefaultProcesses, DefaultMemory,
// DefaultTmp).
type AgentLimits struct {
	// Processes is the most processes and threads at once.
	Processes int `json:"processes,omitempty"`
	// MemoryBytes is the most memory its processes use.
	MemoryBytes int64 `json:"memory_bytes,omitempty"`
	// TmpBytes is the size of each of its file systems in memory (/tmp,
	// its home directory, /dev/shm).
	TmpBytes int64 `json:"tmp_bytes,omitempty"`
}

// TaskSettings says where the work is described and how completion is claimed.
type TaskSettings struct {
	// Mode is "prd", "progress" or "prompt"; empty means detect from files.
	Mode string `json:"mode,omitempty"`
	// CompletionPromise is the text the agent prints to claim completion;
	// empty means the mode's default.
	CompletionPromise string `json:"completion_promise,omitempty"`
	// CheckCommand, when set, is a shell command (sh -c, in the
	// workspace) that must exit 0 for a completion claim to count.
	CheckCommand string `json:"check_command,omitempty"`
	// MemoriesFile is the absolute path of the learnings file an issue
	// queue shares between its issues (issue mode).
	MemoriesFile string `json:"memories_file,omitempty"`
	// Rules are the operator's standing rules, shown in every prompt (an
	// issue queue's guidance).
	Rules []string `json:"rules,omitempty"`
	// InstructionsFile is a file of the workspace, relative to it, whose
	// text every prompt carries as the project's instructions.
	InstructionsFile string `json:"instructions_file,omitempty"`
}

// GitSettings controls what the activities do with git.
type GitSettings struct {
	// AutoCommit commits the agent's changes after each iteration.
	AutoCommit bool `json:"auto_commit"`
	// AllowDirty lets a session start on a tree with uncommitted changes.
	AllowDirty bool `json:"allow_dirty"`
	// ProtectedPaths are the patterns (git.protected-paths) of the paths
	// an iteration may not change: one that does is not committed. nil
	// (inputs recorded before the field existed) is
	// DefaultProtectedPaths; empty protects nothing. Protected says which.
	ProtectedPaths []string `json:"protected_paths"`
}

// DefaultProtectedPaths are the protected paths of git settings that name
// none: GitHub Actions workflows, which run with the repository's secrets
// once pushed.
var DefaultProtectedPaths = []string{".github/workflows/**"}

// Protected are the patterns of the paths g protects.
func (g GitSettings) Protected() []string {
	if g.ProtectedPaths == nil {
		return DefaultProtectedPaths
	}
	return g.ProtectedPaths
}

// PrepareInput is the input of PrepareWorkspace.
type PrepareInput struct {
	SessionID string       `json:"session_id"`
	Workspace string       `json:"workspace"`
	Task      TaskSettings `json:"task"`
	Git       GitSettings  `json:"git"`
	// Worktree, when set, makes Workspace a work tree of a clone first.
	Worktree *SessionWorktree `json:"worktree,omitempty"`
	// Planning says the session plans prd.json first: there may be no
	// task file yet, and one that does not parse is the planner's to fix.
	Planning bool `json:"planning,omitempty"`
}

// PrepareResult is what PrepareWorkspace found.
type PrepareResult struct {
	Mode              string    `json:"mode"`
	CompletionPromise string    `json:"completion_promise"`
	Branch            string    `json:"branch"`
	Head              string    `json:"head"`
	Task              TaskState `json:"task"`
	Repo              string    `json:"repo"`
}

// TaskState is the state of the task file after an iteration.
type TaskState struct {
	Mode     string `json:"mode"`
	File     string `json:"file"`
	Total    int    `json:"total"`
	Done     int    `json:"done"`
	Complete bool   `json:"complete"`
	// Verifiable says whether the file can confirm completion at all (a
	// PROMPT.md without checkboxes cannot).
	Verifiable bool `json:"verifiable"`
	// CurrentID and CurrentTitle name the next unfinished story or task.
	CurrentID    string `json:"current_id,omitempty"`
	CurrentTitle string `json:"current_title,omitempty"`
}

// Roles of an iteration's agent.
const (
	// RoleExecutor does the work of the task file: what every iteration
	// did before there were roles.
	RoleExecutor = "executor"
	// RoleReviewer verifies, without changing anything, that the work
	// the task file calls done meets its acceptance criteria.
	RoleReviewer = "reviewer"
	// RolePlanner writes or extends prd.json from an idea.
	RolePlanner = "planner"
)

// PlanRequest is what a planner iteration plans.
type PlanRequest struct {
	Idea string `json:"idea"`
	// Feedback is why the last plan was not taken: its validation error
	// or a person's reason to reject it.
	Feedback string `json:"feedback,omitempty"`
}

// ReviewResult is a reviewer's verdict.
type ReviewResult struct {
	// Verdict is tasks.VerdictPass or tasks.VerdictFail.
	Verdict string `json:"verdict"`
	// Reasons are the reviewer's reasons, for the next executor.
	Reasons string `json:"reasons,omitempty"`
	// Changed are files the reviewer changed, which failed the review;
	// Ralph discarded the changes.
	Changed []string `json:"changed,omitempty"`
}

// Passed reports a pass verdict.
func (r *ReviewResult) Passed() bool { return r != nil && r.Verdict == VerdictPass }

// PlanResult is what a planner iteration left in prd.json.
type PlanResult struct {
	// Valid says prd.json is a plan Ralph can run (tasks.ValidatePlan);
	// Error says why not.
	Valid bool   `json:"valid"`
	Error string `json:"error,omitempty"`
	// Stories are the plan's stories in priority order.
	Stories []StoryBrief `json:"stories,omitempty"`
}

// IterationInput is the input of RunIteration.
type IterationInput struct {
	SessionID string `json:"session_id"`
	// ExecutionKey names this session execution in the workspace: the
	// records under .ralph/state, the log directory, the commit trailers
	// and the refs under refs/ralph. It is unique per execution (workflow
	// ID and first run ID), so a second session on the same workspace
	// never takes the first one's records for its own. Empty in inputs
	// recorded before it existed, which keyed by SessionID.
	ExecutionKey  string        `json:"execution_key,omitempty"`
	Iteration     int           `json:"iteration"`
	MaxIterations int           `json:"max_iterations"`
	Workspace     string        `json:"workspace"`
	Agent         AgentSettings `json:"agent"`
	Task          TaskSettings  `json:"task"`
	Git           GitSettings   `json:"git"`
	// Guidance is human text for this iteration's prompt.
	Guidance []string `json:"guidance,omitempty"`
	// Branch is the session's branch: an iteration that leaves it is put
	// back. Empty when the session started on a detached HEAD.
	Branch string `json:"branch,omitempty"`
	// Notices are what Ralph found after the last iteration (a branch put
	// back), for this iteration's prompt.
	Notices []string `json:"notices,omitempty"`
	// Uncounted are earlier iterations whose last run may have finished
	// unseen: the worker counts, in this iteration's result, what such a
	// run's saved stream reports beyond what the session counted.
	Uncounted []UncountedRun `json:"uncounted,omitempty"`
	// Role is what the iteration's agent does: RoleExecutor (also when
	// empty), RoleReviewer or RolePlanner. Agent is that role's agent.
	Role string `json:"role,omitempty"`
	// RoleInstructions are the role's own instructions for its prompt.
	RoleInstructions string `json:"role_instructions,omitempty"`
	// Plan is what a planner iteration plans.
	Plan *PlanRequest `json:"plan,omitempty"`
	// Resume is the last progress of an earlier try of this iteration
	// whose worker went away (its host went offline): this try goes on
	// from there, as a retry of the same activity would.
	Resume *Progress `json:"resume,omitempty"`
}

// RoleOf is the role of in, RoleExecutor when it names none.
func (in IterationInput) RoleOf() string {
	if in.Role == "" {
		return RoleExecutor
	}
	return in.Role
}

// Key is the idempotency key of the iteration's session execution.
func (in IterationInput) Key() string {
	if in.ExecutionKey != "" {
		return in.ExecutionKey
	}
	return in.SessionID
}

// UncountedRun is an iteration that failed after its retries (its last
// attempt's worker stopped, its heartbeat timed out): its last agent
// run may have finished, its result written in the stream, with no
// attempt left to record it. Counted is what the session counted of that
// attempt's run from its last heartbeat (Attempt, CostUSD, Usage: the
// heartbeat's own), nothing of it when the last heartbeat was another
// attempt's.
type UncountedRun struct {
	Iteration int     `json:"iteration"`
	Attempt   int     `json:"attempt,omitempty"`
	CostUSD   float64 `json:"cost_usd,omitempty"`
	Usage     Usage   `json:"usage,omitzero"`
}

// IterationResult is what one iteration did. Agent-level failures are
// results, not errors: the workflow counts them.
type IterationResult struct {
	Iteration int `json:"iteration"`
	// Role is the role of the iteration's agent; empty for an executor.
	Role string `json:"role,omitempty"`
	// Review is a reviewer's verdict; Plan what a planner wrote.
	Review *ReviewResult `json:"review,omitempty"`
	Plan   *PlanResult   `json:"plan,omitempty"`
	// Live are the agent's last events (at most LiveLimit) and
	// LiveStartedAt when it started: the end of the live view, which no
	// heartbeat reports once the iteration is done.
	Live          []LiveEvent `json:"live,omitempty"`
	LiveStartedAt time.Time   `json:"live_started_at,omitzero"`
	Outcome       Outcome     `json:"outcome"`
	// Reason explains a non-success outcome in one line.
	Reason string `json:"reason,omitempty"`

	AgentSessionID string  `json:"agent_session_id,omitempty"`
	Model          string  `json:"model,omitempty"`
	CostUSD        float64 `json:"cost_usd"`
	// CostNote says why CostUSD is not the run's cost ("cost unknown:
	// no price for model …"); empty when it is.
	CostNote string        `json:"cost_note,omitempty"`
	Usage    Usage         `json:"usage"`
	NumTurns int           `json:"num_turns"`
	Duration time.Duration `json:"duration"`
	// ResultText is the agent's final text, truncated.
	ResultText string `json:"result_text,omitempty"`
	// RateLimitResetsAt is set when Outcome is OutcomeRateLimited and the
	// agent said when the limit resets.
	RateLimitResetsAt time.Time `json:"rate_limit_resets_at,omitempty"`

	CompletionClaimed bool `json:"completion_claimed"`
	// Resumed says the agent's own session was resumed after the worker
	// running an earlier attempt died.
	Resumed bool      `json:"resumed,omitempty"`
	Task    TaskState `json:"task"`
	// StoryID and StoryTitle name what this iteration worked on, when known.
	StoryID    string `json:"story_id,omitempty"`
	StoryTitle string `json:"story_title,omitempty"`

	FilesChanged []string `json:"files_changed,omitempty"`
	// AgentCommits counts commits the agent made itself.
	AgentCommits int `json:"agent_commits"`
	// Commit is the commit Ralph made for this iteration, if any.
	Commit string `json:"commit,omitempty"`
	// InterruptedCommit is the commit Ralph made of what a dead attempt
	// of the iteration left, before the iteration ran again.
	InterruptedCommit string `json:"interrupted_commit,omitempty"`
	Head              string `json:"head"`
	// LogFile is the raw stream of the agent, relative to the workspace.
	LogFile string `json:"log_file,omitempty"`
	// Checkpoint is a question the agent asked a human, if any.
	Checkpoint *CheckpointRequest `json:"checkpoint,omitempty"`
	// TaskFileError is set when the task file is unreadable after the
	// iteration: the parse error, with file:line:col where known.
	TaskFileError string `json:"task_file_error,omitempty"`
	// Repair says this iteration was asked to repair the task file.
	Repair bool `json:"repair,omitempty"`
	// Notices are for the next iteration's prompt: what Ralph found and
	// put right after this one (a branch left, history rewound).
	Notices []string `json:"notices,omitempty"`
	// Halt is set when the session must stop because of what the agent
	// did to git and Ralph could not put right; it says what happened.
	Halt string `json:"halt,omitempty"`
	// NotCommitted says why Ralph did not commit the iteration's work and
	// kept it aside instead, such as "changed protected path
	// .github/workflows/ci.yml (patch: …)"; the iteration counts as
	// failed.
	NotCommitted string `json:"not_committed,omitempty"`
	// Warnings are problems of the worker that lost nothing of the work,
	// such as a result or log that could not be written.
	Warnings []string `json:"warnings,omitempty"`
	// Ref keeps the iteration's last commit reachable (refs/ralph/…).
	Ref string `json:"ref,omitempty"`
	// Check is the completion check run after a completion claim, when
	// the session has a check command.
	Check *CheckResult `json:"check,omitempty"`
	// Contained names the sandbox the agent ran in; empty for a run
	// without one.
	Contained string `json:"contained,omitempty"`
	// Refused are the destinations the sandbox's egress proxy refused
	// the agent (host:port), each once.
	Refused []string `json:"refused,omitempty"`
}

// CheckResult is what the completion check command did.
type CheckResult struct {
	Command  string `json:"command"`
	ExitCode int    `json:"exit_code"`
	Passed   bool   `json:"passed"`
	// Output is the end of its combined output.
	Output   string        `json:"output,omitempty"`
	Duration time.Duration `json:"duration"`
}

// Checkpoint types an agent may ask for.
const (
	CheckpointHumanVerify = "human-verify"
	CheckpointDecision    = "decision"
	CheckpointHumanAction = "human-action"
)

// CheckpointRequest is a question the agent asked by writing
// .ralph/checkpoint.json or by a checkpoint tag in its final text.
type CheckpointRequest struct {
	Type     string   `json:"type"`
	Question string   `json:"question"`
	Options  []string `json:"options,omitempty"`
	Context  string   `json:"context,omitempty"`
	// Source is "file" or "tag".
	Source string `json:"source"`
}

// Progressed reports whether the iteration changed any file or made any commit.
func (r IterationResult) Progressed() bool {
	return len(r.FilesChanged) > 0 || r.AgentCommits > 0 || r.Commit != ""
}

// Progress is the heartbeat detail of a running iteration. A retried
// attempt reads the last one to know what the dead attempt had done.
type Progress struct {
	// Tail is Live as lines for a person, first so that the Temporal
	// UI's Pending Activities tab shows it at the top of the heartbeat.
	Tail    []string `json:"tail,omitempty"`
	Attempt int      `json:"attempt"`
	// Iteration is the number of the running iteration, Role what its
	// agent does (empty for an executor).
	Iteration      int     `json:"iteration,omitempty"`
	Role           string  `json:"role,omitempty"`
	StartHead      string  `json:"start_head"`
	AgentSessionID string  `json:"agent_session_id,omitempty"`
	CostUSD        float64 `json:"cost_usd"`
	Turns          int     `json:"turns"`
	Usage          Usage   `json:"usage"`
	// EarlierCostUSD and EarlierUsage are what attempts before this one
	// reported and no result has counted yet (they died too): the
	// attempt that ends the iteration counts them once.
	EarlierCostUSD float64 `json:"earlier_cost_usd,omitempty"`
	EarlierUsage   Usage   `json:"earlier_usage,omitzero"`
	// StoryID and StoryTitle name what the iteration was asked to do.
	StoryID    string    `json:"story_id,omitempty"`
	StoryTitle string    `json:"story_title,omitempty"`
	Events     int       `json:"events"`
	LastTool   string    `json:"last_tool,omitempty"`
	UpdatedAt  time.Time `json:"updated_at"`
	// StartedAt is when this attempt started.
	StartedAt time.Time `json:"started_at,omitzero"`
	// Live is what the agent did last, oldest first, at most LiveLimit
	// events: the live view of `starter run --follow` and `status`, and
	// of the Temporal UI's pending activity. It is not carried from a
	// dead attempt to the next.
	Live []LiveEvent `json:"live,omitempty"`
	// ReviewStart is the workspace as a reviewer iteration found it,
	// which it must leave as it is; a retried attempt keeps the first
	// attempt's.
	ReviewStart *Snapshot `json:"review_start,omitempty"`
	// Log is the attempt's raw stream log, relative to the workspace, on
	// the worker's machine.
	Log string `json:"log,omitempty"`
}

// Bounds of Progress.Live, which travels in every heartbeat: a few KiB.
const (
	LiveLimit     = 10
	LiveTextLimit = 240
)

// Kinds of LiveEvent.
const (
	LiveTool  = "tool"
	LiveSays  = "says"
	LiveError = "error"
)

// LiveEvent is one thing a running agent did: a tool call, a message or
// an error it reported.
type LiveEvent struct {
	// Seq numbers the events of an attempt from 1, so that a reader
	// prints each once and knows how many it missed.
	Seq  int       `json:"seq"`
	At   time.Time `json:"at"`
	Kind string    `json:"kind"`
	// Name is the tool's name (LiveTool).
	Name string `json:"name,omitempty"`
	// Text is the tool's subject, the message or the error, on one line
	// of at most LiveTextLimit bytes.
	Text string `json:"text,omitempty"`
}

// CheckpointFile is where an agent writes a question for a human,
// relative to the workspace.
const CheckpointFile = StateDir + "/checkpoint.json"

// StoryBrief is one line of a plan for a person to read.
type StoryBrief struct {
	ID       string   `json:"id"`
	Title    string   `json:"title"`
	Priority int      `json:"priority"`
	Passes   bool     `json:"passes,omitempty"`
	Criteria []string `json:"criteria,omitempty"`
}

// Snapshot is the state of a work tree that Restore puts back: HEAD, the
// index, and the content of every file git does not ignore, tracked or
// not. It is made of objects in the repository; nothing is written to the
// work tree.
type Snapshot struct {
	Head string
	// Index is the tree of the index, "" when the index could not be
	// written as a tree (a merge in progress).
	Index string
	// Tree is the tree of the work tree's files.
	Tree string
}

// FileName names the task file for a person.
func (t TaskState) FileName() string {
	if t.File != "" {
		return t.File
	}
	return "the task file"
}

// PlanText is the plan for a person: one line per story, its criteria
// under it.
func PlanText(stories []StoryBrief) string {
	var b strings.Builder
	for _, st := range stories {
		b.WriteString(fmt.Sprintf("%d. %s %s\n", st.Priority, st.ID, st.Title))
		for _, c := range st.Criteria {
			b.WriteString("   - " + c + "\n")
		}
	}
	return strings.TrimRight(b.String(), "\n")
}
