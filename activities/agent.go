// Package activities is Temporal's side of a Ralph session's side
// effects: preparing the workspace, running one agent iteration as a
// short sequence of named steps (workspace, prompt, agent, inspect,
// record, commit) with one heartbeat sender, work trees and pushes. The
// plain parts live in packages of their own: the agents in agent/, task
// files and prompts in tasks/, git in git/, the process supervisor in
// process/; the payloads in contract/.
package activities

import (
	"context"
	"time"

	"github.com/durable-ralph/ralph/activities/github"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/attempts"
	"github.com/durable-ralph/ralph/redact"
)

// Defaults of Agent's tunables.
const (
	DefaultHeartbeatInterval = 2 * time.Second
	DefaultMaxLogBytes       = 64 << 20
	// DefaultMaxLineBytes bounds the memory one stream line can take. The
	// events Ralph reads (init, text, result, rate limits) are small; only
	// tool inputs and outputs grow, Claude Code truncates those far below
	// this, and Ralph does not need them.
	DefaultMaxLineBytes = 4 << 20
)

// Agent runs agent iterations on workspaces of this worker's host. Its
// fields are the worker's settings, not the session's.
type Agent struct {
	// Hidden are paths no contained agent sees even where its view
	// includes them: the worker's state directory, the user
	// configuration with the codec key (~/.ssh and the other credentials
	// of sandbox.Credentials always).
	Hidden []string
	// Env is added to the agent's environment, after the worker's
	// variables that AgentEnvAllowed lets through: NAME passes the
	// worker's variable, NAME=value sets one.
	Env []string
	// Redact removes secrets from everything the activities return,
	// record or log; nil redacts the secret-looking variables of the
	// worker's environment and of Env, and Secrets.
	Redact *redact.Redactor
	// Secrets are secret values whatever their names ("NAME=value"), such
	// as the codec key read from its file: redacted like the variables
	// whose names look secret, and refused in a push.
	Secrets []string
	// GitHubFileToken is the token of github.token-file, read when the
	// worker started: when set, git uses it for an https origin whatever
	// variable the queue's token-env names (github.WorkerToken).
	GitHubFileToken string
	// GitHubApp, when not nil, is the GitHub App's installation the
	// worker authenticates as: git gets its current token, whatever
	// GitHubFileToken and the queue's token variable hold.
	GitHubApp *github.App
	// HeartbeatInterval is how often a running iteration heartbeats;
	// default DefaultHeartbeatInterval.
	HeartbeatInterval time.Duration
	// MaxLogBytes caps the raw stream saved per iteration; default
	// DefaultMaxLogBytes.
	MaxLogBytes int64
	// MaxLineBytes is the longest stream line parsed; longer lines are
	// counted as invalid and skipped. Default DefaultMaxLineBytes.
	MaxLineBytes int
	// PreflightTimeout bounds an agent's `--version` in CheckAgents;
	// default contract.PreflightVersionTimeout.
	PreflightTimeout time.Duration
	// Host is the host ID of the worker's machine (HostReady says it).
	Host string
	// Slots caps the agents the worker runs at once; nil is no cap.
	Slots *Slots
	// OnSlot is told when an iteration starts and stops waiting for a
	// slot, so that its session can show it; nil tells nobody.
	OnSlot func(ctx context.Context, ev SlotEvent)
	// Observe is given the result of every iteration RunIteration ran
	// (the worker's metrics); nil is nobody.
	Observe func(contract.IterationResult)
	// Attempts, when set, records each running iteration attempt (its
	// task token and agent process) in the worker's state directory, so
	// that a worker starting again after this one died fails them at
	// once (app) rather than after their heartbeat timeout.
	Attempts *attempts.Dir
	// Records is the directory, out of every agent's reach (the worker's
	// state directory), where the worker keeps what it reads back of its
	// iterations: each one's result, the start of each attempt and its
	// agent's stream (see records). "" keeps none: a retry then finds an
	// iteration's work by its commit alone.
	Records string
	// ClonesDir is where the worker clones the repositories that have no
	// clone of the user's (a change set's; CloneRepo), in <owner>/<name>;
	// "" clones none.
	ClonesDir string
	// agentStarted is told the PID of the attempt's agent.
	agentStarted func(pid int)
	// lastAttempt says the running attempt is the last its retry policy
	// allows: a commit that fails then is reported in the result, so
	// that what the agent did and cost still counts.
	lastAttempt bool
}

// records is a's records (Records).
func (a *Agent) records() records { return records{dir: a.Records} }

// HostReady answers on the task queue of this worker's host: a session
// whose host was offline runs it to learn that the host is back.
func (a *Agent) HostReady(ctx context.Context) (string, error) {
	return a.Host, nil
}

func (a *Agent) heartbeatInterval() time.Duration {
	if a.HeartbeatInterval > 0 {
		return a.HeartbeatInterval
	}
	return DefaultHeartbeatInterval
}

func (a *Agent) maxLog() int64 {
	if a.MaxLogBytes > 0 {
		return a.MaxLogBytes
	}
	return DefaultMaxLogBytes
}

func (a *Agent) maxLine() int {
	if a.MaxLineBytes > 0 {
		return a.MaxLineBytes
	}
	return DefaultMaxLineBytes
}
