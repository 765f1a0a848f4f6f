// Package workflows holds the deterministic side of Durable Ralph: the
// Session workflow that runs a Ralph loop and its contract with the outside
// world (task queue, workflow IDs, message names and payload types).
package workflows

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/activities/stream"
)

// TaskQueue is the default task queue of sessions and their activities.
const TaskQueue = "ralph"

// Message names. They are part of the contract with the starter CLI and with
// people who signal sessions from the Temporal UI.
const (
	SignalGuide      = "guide"
	SignalPause      = "pause"
	SignalResume     = "resume"
	SignalStop       = "stop"
	SignalCheckpoint = "checkpoint"
	UpdateRespond    = "respond"
	UpdateSetLimits  = "set-limits"
	QueryStatus      = "status"
)

// Search attributes the session keeps current, so the UI and
// `temporal workflow list --query` can find sessions by state.
var (
	SearchRalphStatus    = temporal.NewSearchAttributeKeyKeyword("RalphStatus")
	SearchRalphIteration = temporal.NewSearchAttributeKeyInt64("RalphIteration")
	SearchRalphCostUSD   = temporal.NewSearchAttributeKeyFloat64("RalphCostUSD")
	SearchRalphRepo      = temporal.NewSearchAttributeKeyKeyword("RalphRepo")
)

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
)

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
}

// SessionInput is the whole input of a session. It is one struct so that it
// can grow without breaking sessions that are already running.
type SessionInput struct {
	// Workspace is the absolute path of the repository on the worker.
	Workspace string                   `json:"workspace"`
	Repo      string                   `json:"repo,omitempty"`
	Agent     activities.AgentSettings `json:"agent"`
	Task      activities.TaskSettings  `json:"task"`
	Git       activities.GitSettings   `json:"git"`
	Limits    Limits                   `json:"limits"`
	// CarryOver is filled in by continue-as-new; nil on a fresh session.
	CarryOver *CarryOver `json:"carry_over,omitempty"`
}

// CarryOver is the state a session carries into its next run.
type CarryOver struct {
	SessionID           string                   `json:"session_id"`
	StartedAt           time.Time                `json:"started_at"`
	Iteration           int                      `json:"iteration"`
	Totals              Totals                   `json:"totals"`
	ConsecutiveFailures int                      `json:"consecutive_failures"`
	NoProgress          int                      `json:"no_progress"`
	Prepared            activities.PrepareResult `json:"prepared"`
	Recent              []IterationSummary       `json:"recent,omitempty"`
	Guidance            []string                 `json:"guidance,omitempty"`
	Runs                int                      `json:"runs"`
}

// Totals accumulate over the whole session, across continue-as-new.
type Totals struct {
	CostUSD          float64      `json:"cost_usd"`
	Usage            stream.Usage `json:"usage"`
	Turns            int          `json:"turns"`
	Commits          int          `json:"commits"`
	Failures         int          `json:"failures"`
	RateLimitWaits   int          `json:"rate_limit_waits"`
	CompletionClaims int          `json:"completion_claims"`
}

// IterationSummary is the short record of one iteration kept in the status.
type IterationSummary struct {
	Iteration    int            `json:"iteration"`
	Outcome      stream.Outcome `json:"outcome"`
	Reason       string         `json:"reason,omitempty"`
	CostUSD      float64        `json:"cost_usd"`
	Tokens       int64          `json:"tokens"`
	FilesChanged int            `json:"files_changed"`
	Commit       string         `json:"commit,omitempty"`
	Story        string         `json:"story,omitempty"`
	Claimed      bool           `json:"completion_claimed,omitempty"`
	Verified     bool           `json:"completion_verified,omitempty"`
	Duration     time.Duration  `json:"duration"`
	FinishedAt   time.Time      `json:"finished_at"`
}

// Status is the answer of the status query.
type Status struct {
	SessionID string    `json:"session_id"`
	Workspace string    `json:"workspace"`
	State     State     `json:"state"`
	Reason    Reason    `json:"reason,omitempty"`
	Iteration int       `json:"iteration"`
	Running   bool      `json:"running"`
	StartedAt time.Time `json:"started_at"`
	// EndedAt is set when the session has ended.
	EndedAt             time.Time            `json:"ended_at,omitempty"`
	Limits              Limits               `json:"limits"`
	Totals              Totals               `json:"totals"`
	Mode                string               `json:"mode,omitempty"`
	Branch              string               `json:"branch,omitempty"`
	Task                activities.TaskState `json:"task"`
	ConsecutiveFailures int                  `json:"consecutive_failures"`
	NoProgress          int                  `json:"no_progress"`
	StopRequested       bool                 `json:"stop_requested,omitempty"`
	Recent              []IterationSummary   `json:"recent,omitempty"`
	Runs                int                  `json:"runs"`
}

// SessionResult is what a finished session returns.
type SessionResult struct {
	SessionID  string               `json:"session_id"`
	Reason     Reason               `json:"reason"`
	Message    string               `json:"message,omitempty"`
	Iterations int                  `json:"iterations"`
	Totals     Totals               `json:"totals"`
	Task       activities.TaskState `json:"task"`
}

// StopSignal is the payload of the stop signal (it may be empty).
type StopSignal struct {
	Reason string `json:"reason,omitempty"`
}

var unsafeID = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// SessionWorkflowID is the workflow ID of the session for a workspace. It is
// derived from the absolute path, so running the starter again on the same
// workspace finds the same session.
func SessionWorkflowID(workspace string) string {
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
