package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/app"
	"github.com/durable-ralph/ralph/config"
	"github.com/durable-ralph/ralph/contract"
)

// TestNoWorkerNote: the note names the host and the command that starts
// a worker for it, as the connection would run it.
func TestNoWorkerNote(t *testing.T) {
	tests := []struct {
		name       string
		dev        bool
		ownHost    string
		host, want string
	}{
		{"dev_this_host", true, "laptop", "laptop", "no worker is running for host laptop: start one with `worker --dev`"},
		{"dev_other_host", true, "laptop", "box-1", "no worker is running for host box-1: start one with `worker --dev --host-id box-1`"},
		{"cluster", false, "laptop", "laptop", "no worker is running for host laptop: start one with `worker`"},
		{"legacy_session", true, "laptop", "", "no worker is running for task queue ralph: start one with `worker --dev`"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn := &connection{cfg: config.Config{TaskQueue: "ralph"}}
			conn.cfg.Dev.Enabled = tt.dev
			conn.cfg.Worker.HostID = tt.ownHost
			require.Equal(t, tt.want, noWorkerNote(conn, tt.host))
		})
	}
}

// TestStateRowSaysNoWorker: a running session whose host has no worker
// shows the note instead of a plain running; other states keep theirs
// and add it; host_offline says so already; a live worker changes
// nothing.
func TestStateRowSaysNoWorker(t *testing.T) {
	const note = "no worker is running for host box: start one with `worker --dev`"
	tests := []struct {
		name     string
		state    contract.State
		noWorker string
		want     string
	}{
		{"running", contract.StateRunning, note, "State  " + note + "; execution running"},
		{"running_with_a_worker", contract.StateRunning, "", "State  running; execution running"},
		{"awaiting_human", contract.StateAwaitingHuman, note, "State  awaiting_human; " + note + "; execution running"},
		{"host_offline", contract.StateHostOffline, note, "State  host_offline: no worker of host box takes its work; it waits, losing nothing, until one runs there again; execution running"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rows []string
			row := func(k, format string, args ...any) {
				if k == "State" {
					rows = append(rows, k+"  "+strings.TrimSpace(fmt.Sprintf(format, args...)))
				}
			}
			sessionRows(row, contract.Status{SessionID: "s", Host: "box", State: tt.state}, "running", tt.noWorker)
			require.Equal(t, []string{tt.want}, rows)
		})
	}
}

// TestListSaysNoWorker: list's table marks a running session without a
// worker and says what to do once per host below the table; -o json
// gets worker_seen and liveness_note, and nothing of either when the
// liveness is not known (an ended session).
func TestListSaysNoWorker(t *testing.T) {
	const note = "no worker is running for host laptop: start one with `worker --dev`"
	no, yes := false, true
	running := func(l livenessDoc) listDoc {
		d := newListDoc(execution(t, contract.WorkflowSession, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING,
			map[string]any{contract.SearchRalphStatus: "running", contract.SearchRalphHost: "laptop"}))
		d.livenessDoc = l
		return d
	}
	dead, live := running(livenessDoc{WorkerSeen: &no, LivenessNote: note}), running(livenessDoc{WorkerSeen: &yes})

	m := encode(t, dead)
	require.Equal(t, false, m["worker_seen"])
	require.Equal(t, note, m["liveness_note"])
	m = encode(t, live)
	require.Equal(t, true, m["worker_seen"])
	require.NotContains(t, m, "liveness_note")
	m = encode(t, running(livenessDoc{}))
	require.NotContains(t, m, "worker_seen")
	require.NotContains(t, m, "liveness_note")

	var b bytes.Buffer
	require.NoError(t, printList(&b, []listDoc{dead, dead, live}))
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 5, b.String())
	require.Contains(t, strings.Join(strings.Fields(lines[1]), " "), "running running, no worker 0")
	require.Contains(t, strings.Join(strings.Fields(lines[3]), " "), "running running 0")
	require.Equal(t, note, lines[4], "said once per host")
}

// TestExplainNamesTheAgentsBackend: the fix of a missing or broken agent
// is its own backend's install hint; without details (a worker of an
// older version) it names none.
func TestExplainNamesTheAgentsBackend(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"codex", temporal.NewNonRetryableApplicationError(`agent binary "codex" (backend codex) not found on the PATH of host box's worker`,
			contract.ErrTypeAgentNotFound, nil, contract.AgentProblem{Backend: "codex", Binary: "codex"}),
			"agent binary \"codex\" (backend codex) not found on the PATH of host box's worker\n" +
				"Install the agent where the worker runs (Codex: npm install -g @openai/codex), or name another with --agent-command."},
		{"claude", temporal.NewNonRetryableApplicationError(`agent binary "no-such-agent" not found on PATH`,
			contract.ErrTypeAgentNotFound, nil, contract.AgentProblem{Backend: "claude", Binary: "no-such-agent"}),
			"agent binary \"no-such-agent\" not found on PATH\n" +
				"Install the agent where the worker runs (Claude Code: npm install -g @anthropic-ai/claude-code), or name another with --agent-command."},
		{"gemini_unusable", temporal.NewNonRetryableApplicationError("agent binary \"gemini\" (backend gemini) does not work",
			contract.ErrTypeAgentUnusable, nil, contract.AgentProblem{Backend: "gemini", Binary: "gemini"}),
			"agent binary \"gemini\" (backend gemini) does not work\n" +
				"Install the agent where the worker runs (Gemini CLI: npm install -g @google/gemini-cli), or name another with --agent-command."},
		{"command", temporal.NewNonRetryableApplicationError(`agent binary "aider" (backend command) not found`,
			contract.ErrTypeAgentNotFound, nil, contract.AgentProblem{Backend: "command", Binary: "aider"}),
			"agent binary \"aider\" (backend command) not found\n" +
				"Install the agent where the worker runs (install aider or fix agent.command, --agent-command)."},
		{"no_details", temporal.NewNonRetryableApplicationError(`agent binary "claude" not found`, contract.ErrTypeAgentNotFound, nil),
			"agent binary \"claude\" not found\nInstall the agent where the worker runs, or name another with --agent-command."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cctx := &commandContext{Context: context.Background()}
			require.Equal(t, tt.want, cctx.explain(tt.err))
		})
	}
}

// TestWorkerFlagsIgnored: worker flags given to run with a worker of its
// own are said to be ignored, with where to give them instead; a run
// that is its own worker says nothing.
func TestWorkerFlagsIgnored(t *testing.T) {
	var b bytes.Buffer
	cctx := &commandContext{Context: context.Background(), stderr: &b}
	cctx.warnWorkerFlags(&connection{}, "session", []string{"--agent-env"})
	require.Equal(t, "The session runs on a worker of its own: --agent-env is ignored (it applies only when the starter is the worker itself: --dev, with no worker running).\n"+
		"Give it to that worker instead: worker --agent-env …   (or its RALPH_* variables or configuration file)\n", b.String())

	b.Reset()
	cctx.warnWorkerFlags(&connection{}, "queue", []string{"--agent-env", "--max-agents"})
	require.Contains(t, b.String(), "--agent-env, --max-agents are ignored (they apply only when the starter is the worker itself")
	require.Contains(t, b.String(), "Give them to that worker instead: worker --agent-env … --max-agents …")

	b.Reset()
	cctx.warnWorkerFlags(&connection{started: true}, "session", []string{"--agent-env"})
	cctx.warnWorkerFlags(&connection{}, "session", nil)
	require.Empty(t, b.String())
}

// TestAgentsOfEveryRole: the preflight checks each agent a session's
// roles use, once.
func TestAgentsOfEveryRole(t *testing.T) {
	claude := contract.AgentSettings{Command: []string{"claude"}}
	codex := contract.AgentSettings{Backend: "codex", Command: []string{"codex"}}
	gemini := contract.AgentSettings{Backend: "gemini", Command: []string{"gemini"}}
	in := contract.SessionInput{Agent: claude}
	require.Equal(t, []contract.AgentSettings{claude}, app.AgentsOf(in))
	in.Roles = &contract.Roles{Reviewer: &contract.RoleAgent{Agent: codex}}
	require.Equal(t, []contract.AgentSettings{claude, codex}, app.AgentsOf(in))
	in.Plan = &contract.PlanSettings{Idea: "x"}
	require.Equal(t, []contract.AgentSettings{claude, codex}, app.AgentsOf(in), "the planner is the executor's agent")
	in.Roles.Planner = &contract.RoleAgent{Agent: gemini}
	require.Equal(t, []contract.AgentSettings{claude, codex, gemini}, app.AgentsOf(in))
}

// TestPreflightFailureKinds: an agent's own failure is the error; a
// check no worker took says no worker runs; anything else is a warning.
func TestPreflightFailureKinds(t *testing.T) {
	var b bytes.Buffer
	cctx := &commandContext{Context: context.Background(), stderr: &b}
	conn := &connection{cfg: config.Config{TaskQueue: "ralph"}}
	conn.cfg.Dev.Enabled = true
	conn.cfg.Worker.HostID = "box"

	agent := temporal.NewNonRetryableApplicationError("missing", contract.ErrTypeAgentNotFound, nil)
	require.Equal(t, agent, cctx.preflightFailed(conn, "box", agent))

	err := cctx.preflightFailed(conn, "box", temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START, nil))
	require.EqualError(t, err, "no worker is running for host box: start one with `worker --dev`")
	require.Empty(t, b.String())

	require.NoError(t, cctx.preflightFailed(conn, "box", errors.New("unknown workflow type AgentPreflight")))
	require.Contains(t, b.String(), "warning: could not check the agents on the worker of host box (unknown workflow type AgentPreflight): starting anyway")
}
