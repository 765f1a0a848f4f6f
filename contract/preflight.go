package contract

import "time"

// The preflight of a session's agents: before the starter starts a session
// it runs the AgentPreflight workflow, whose one activity (CheckAgents)
// runs on the task queue of the session's host and checks there that
// every agent the session's roles use can start. A failure starts
// nothing.

// Bounds of a preflight.
const (
	// DefaultPreflightPickup is how long the preflight's activity waits
	// for a worker of the host to take it (its schedule-to-start
	// timeout): longer means no worker runs for the host.
	DefaultPreflightPickup = 15 * time.Second
	// PreflightVersionTimeout bounds one agent's `--version`.
	PreflightVersionTimeout = 10 * time.Second
)

// AgentPreflightInput is the input of the AgentPreflight workflow.
type AgentPreflightInput struct {
	// Host is the host whose worker runs the check; "" is the
	// workflow's own task queue (sessions from before hosts existed).
	Host string `json:"host,omitempty"`
	// Agents are the agents to check, each once.
	Agents []AgentSettings `json:"agents"`
	// Pickup bounds the wait for a worker of Host to take the check; 0
	// is DefaultPreflightPickup.
	Pickup time.Duration `json:"pickup,omitempty"`
	// Workspace, when set, is checked there first, as the session's
	// start would (a git work tree, clean, with a readable task file and
	// a valid branchName): for a workspace the starter cannot see, on
	// another machine. A worker of an older version ignores it.
	Workspace *PrepareInput `json:"workspace,omitempty"`
}

// AgentPreflightResult is what CheckAgents found: each agent, in the order of
// AgentPreflightInput.Agents.
type AgentPreflightResult struct {
	// Host is the host ID of the worker that checked.
	Host   string       `json:"host"`
	Agents []AgentCheck `json:"agents"`
}

// AgentCheck is one agent a worker found it can run.
type AgentCheck struct {
	Backend string `json:"backend"`
	Binary  string `json:"binary"`
	// Path is where the worker found Binary on its PATH.
	Path string `json:"path"`
	// Version is the first line `--version` printed; "" for the command
	// backend, whose command has no --version to ask.
	Version string `json:"version,omitempty"`
}

// AgentProblem is the details of an ErrTypeAgentNotFound or
// ErrTypeAgentUnusable failure: which agent, so that the starter can say
// how to install it.
type AgentProblem struct {
	Backend string `json:"backend"`
	Binary  string `json:"binary"`
}

// PreflightWorkflowID is the ID of one preflight of host's agents; unique
// makes it one of its own (the starter passes a random suffix).
func PreflightWorkflowID(host, unique string) string {
	return withHost("ralph-preflight-"+idPart(unique), host)
}
