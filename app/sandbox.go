package app

import (
	"fmt"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/sandbox"
)

// SandboxProblem is why the agents of a session with the sandbox settings
// s cannot run contained on this machine (an error that wraps
// sandbox.ErrUnavailable): no usable bubblewrap, or no bridge (socat,
// or a worker that enters the sandbox's network) for a network that goes
// through the egress proxy. It is nil when they can,
// or when s does not contain them (agent.sandbox off). A worker of this
// machine finds the same at the session's first iteration.
func SandboxProblem(s contract.SandboxSettings) error {
	box, err := sandbox.Find()
	return sandboxProblem(s, box, err)
}

// sandboxProblem is SandboxProblem with what sandbox.Find found.
func sandboxProblem(s contract.SandboxSettings, box *sandbox.Bubblewrap, found error) error {
	switch {
	case s.Mode == sandbox.ModeOff:
		return nil
	case found != nil:
		return found
	}
	return box.ProxyProblem(networkOf(s))
}

// networkOf is the agent.network of s, internet when unset.
func networkOf(s contract.SandboxSettings) string {
	if s.Network == "" {
		return sandbox.NetInternet
	}
	return s.Network
}

// SessionSandboxNotice is what a worker that runs one session, or one
// queue's, says at its start about containing the agents of what (a
// starter that is its session's worker: "this session"), as their
// agent.sandbox s asks: contained, in what and on which network;
// uncontained, and why; or, when s requires a sandbox this machine
// lacks, that the iterations fail. SandboxNotice is a standing worker's,
// which runs every session.
func SessionSandboxNotice(what string, s contract.SandboxSettings) string {
	box, err := sandbox.Find()
	return sessionSandboxNotice(what, s, box, err)
}

// sessionSandboxNotice is SessionSandboxNotice with what sandbox.Find
// found.
func sessionSandboxNotice(what string, s contract.SandboxSettings, box *sandbox.Bubblewrap, found error) string {
	if s.Mode == sandbox.ModeOff {
		return fmt.Sprintf("Agents of %s run UNCONTAINED: agent.sandbox is off.", what)
	}
	if err := sandboxProblem(s, box, found); err != nil {
		if s.Mode == sandbox.ModeRequired {
			return fmt.Sprintf("Agents of %s cannot run contained, and agent.sandbox is required: their iterations fail (%v). To contain them: %s.", what, err, sandbox.InstallHint)
		}
		return fmt.Sprintf("Agents of %s run UNCONTAINED (agent.sandbox auto): %v. To contain them: %s.", what, err, sandbox.InstallHint)
	}
	network := networkOf(s)
	how := "network " + network
	switch {
	case sandbox.Proxied(network):
		how += " through the worker's egress proxy"
	case network == sandbox.NetOpen:
		how = "on the host's network (agent.network open)"
	case network == sandbox.NetNone:
		how = "without a network (agent.network none)"
	}
	return fmt.Sprintf("Agents of %s run contained: %s, %s (see agent.sandbox and agent.network).", what, box.Name(), how)
}
