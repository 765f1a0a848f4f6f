package app

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/sandbox"
)

// TestSessionSandboxNotice: the line a starter that is its session's
// worker prints says what becomes of that session's agents, by its own
// agent.sandbox, not the worker's default: off is uncontained even where
// bubblewrap is, required without a sandbox fails, auto without one runs
// uncontained.
func TestSessionSandboxNotice(t *testing.T) {
	box := &sandbox.Bubblewrap{Bwrap: "/usr/bin/bwrap", Socat: "/usr/bin/socat"}
	noSocat := &sandbox.Bubblewrap{Bwrap: "/usr/bin/bwrap"}
	missing := fmt.Errorf("%w: bwrap not found on PATH", sandbox.ErrUnavailable)
	tests := []struct {
		name     string
		settings contract.SandboxSettings
		box      *sandbox.Bubblewrap
		found    error
		want     string
		problem  bool
	}{
		{"off_with_a_sandbox", contract.SandboxSettings{Mode: sandbox.ModeOff}, box, nil,
			"Agents of this session run UNCONTAINED: agent.sandbox is off.", false},
		{"required_without_a_sandbox", contract.SandboxSettings{Mode: sandbox.ModeRequired}, nil, missing,
			"Agents of this session cannot run contained, and agent.sandbox is required: their iterations fail (no sandbox available: bwrap not found on PATH).", true},
		{"auto_without_a_sandbox", contract.SandboxSettings{}, nil, missing,
			"Agents of this session run UNCONTAINED (agent.sandbox auto): no sandbox available: bwrap not found on PATH.", true},
		{"required_with_a_sandbox", contract.SandboxSettings{Mode: sandbox.ModeRequired}, box, nil,
			"Agents of this session run contained: , network internet through the worker's egress proxy", false},
		{"required_without_socat", contract.SandboxSettings{Mode: sandbox.ModeRequired, Network: sandbox.NetAllowList}, noSocat, nil,
			"their iterations fail (no sandbox available: agent.network allow-list needs socat, which is not on PATH; a worker that may enter the sandbox's network namespace (root) needs none)", true},
		{"no_network_needs_no_socat", contract.SandboxSettings{Mode: sandbox.ModeRequired, Network: sandbox.NetNone}, noSocat, nil,
			"run contained: , without a network (agent.network none)", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Contains(t, sessionSandboxNotice("this session", tt.settings, tt.box, tt.found), tt.want)
			err := sandboxProblem(tt.settings, tt.box, tt.found)
			require.Equal(t, tt.problem, err != nil, "%v", err)
			if err != nil {
				require.ErrorIs(t, err, sandbox.ErrUnavailable)
			}
		})
	}
}

// TestQueueSandboxNotice: a queue's worker names the queue's sessions.
func TestQueueSandboxNotice(t *testing.T) {
	require.Equal(t, "Agents of this queue's sessions run UNCONTAINED: agent.sandbox is off.",
		sessionSandboxNotice("this queue's sessions", contract.SandboxSettings{Mode: sandbox.ModeOff}, nil, nil))
}
