package activities

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/agent"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/words"
	"github.com/durable-ralph/ralph/process"
	"github.com/durable-ralph/ralph/sandbox"
)

// CheckAgents is the preflight of a session about to start, on the task
// queue of the session's host: every agent of in must be on this
// worker's PATH and, but for the command backend, answer --version within
// PreflightTimeout. The first that does not fails the check for good
// (ErrTypeAgentNotFound, ErrTypeAgentUnusable or
// ErrTypeInvalidAgentConfig), with a contract.AgentProblem as details so
// that the starter can say how to install it.
func (a *Agent) CheckAgents(ctx context.Context, in contract.AgentPreflightInput) (contract.AgentPreflightResult, error) {
	res := contract.AgentPreflightResult{Host: a.Host}
	if in.Workspace != nil {
		if err := CheckStart(ctx, *in.Workspace); err != nil {
			return res, a.Redact.Error(err)
		}
	}
	for _, s := range in.Agents {
		c, err := a.CheckAgent(ctx, s)
		if err != nil {
			return res, a.Redact.Error(err)
		}
		res.Agents = append(res.Agents, c)
	}
	return res, nil
}

func (a *Agent) preflightTimeout() time.Duration {
	if a.PreflightTimeout > 0 {
		return a.PreflightTimeout
	}
	return contract.PreflightVersionTimeout
}

// CheckAgent checks that the agent s can start here, on the worker of
// a.Host: its binary is on PATH and, unless it is the command backend's
// (an arbitrary command, which may take --version for a prompt and do
// work), `COMMAND --version` exits 0 within PreflightTimeout. The binary
// is run as the session's iterations run it: with the agent's
// environment, in the sandbox its agent.sandbox asks for (on no
// network, in an empty directory of its own), so that a binary that
// acts on --version is as contained as the agent; a session that
// requires a sandbox this worker cannot give fails here. It returns
// what it found.
func (a *Agent) CheckAgent(ctx context.Context, s contract.AgentSettings) (contract.AgentCheck, error) {
	host, timeout := a.Host, a.preflightTimeout()
	backend, err := BackendOf(s.Backend)
	if err != nil {
		return contract.AgentCheck{}, temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrTypeInvalidAgentConfig, nil)
	}
	if len(s.Command) == 0 || s.Command[0] == "" {
		return contract.AgentCheck{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("agent.command of backend %s is empty", backend.Name()), contract.ErrTypeInvalidAgentConfig, nil)
	}
	bin := s.Command[0]
	check := contract.AgentCheck{Backend: backend.Name(), Binary: bin}
	problem := contract.AgentProblem{Backend: backend.Name(), Binary: bin}
	path, err := exec.LookPath(bin)
	if err != nil {
		return check, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("agent binary %q (backend %s) not found on %s", bin, backend.Name(), workerPath(host)),
			contract.ErrTypeAgentNotFound, nil, problem)
	}
	check.Path = path
	if backend.Name() == "command" {
		return check, nil
	}
	dir, err := os.MkdirTemp("", "ralph-preflight-")
	if err != nil {
		return check, fmt.Errorf("check agent %s: %w", bin, err)
	}
	defer os.RemoveAll(dir)
	in := contract.IterationInput{Workspace: dir, Agent: s}
	in.Agent.Sandbox.Network = sandbox.NetNone
	c, err := a.contain(in, backend, sandbox.Command{
		Path: path,
		Args: append(append([]string(nil), s.Command[1:]...), "--version"),
		Env:  a.agentEnv(),
	})
	if err != nil {
		return check, err
	}
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var stdout strings.Builder
	run, err := process.Run(runCtx, process.Spec{
		Path:       c.cmd.Path,
		Args:       c.cmd.Args,
		Dir:        dir,
		Env:        c.cmd.Env,
		Guarded:    c.cmd.Guarded,
		ExtraFiles: c.cmd.Files,
		Ready:      c.cmd.Ready,
		Spawn:      c.cmd.Spawn,
		Stdin:      strings.NewReader(""),
		MaxLine:    4 << 10,
		OnLine:     func(line []byte, _ bool) { lineOnce(&stdout, line) },
		StderrTail: 2 << 10,
	})
	c.close()
	version := strings.Join(s.Command, " ") + " --version"
	switch {
	case errors.Is(err, sandbox.ErrStart):
		return check, fmt.Errorf("check agent %s: %w", bin, err) // retried
	case err != nil:
		return check, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("agent binary %q (backend %s) could not be started: %v", bin, backend.Name(), err),
			contract.ErrTypeAgentNotFound, nil, problem)
	case ctx.Err() != nil:
		return check, fmt.Errorf("check agent %s: %w", bin, ctx.Err())
	case runCtx.Err() != nil:
		return check, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("agent binary %q (backend %s) did not answer `%s` within %s", bin, backend.Name(), version, timeout),
			contract.ErrTypeAgentUnusable, nil, problem)
	case run.Err != nil:
		msg := fmt.Sprintf("agent binary %q (backend %s) does not work: `%s` %s", bin, backend.Name(), version, agent.ExitPhrase(run.Err))
		if tail := strings.TrimSpace(run.Stderr); tail != "" {
			msg += ": " + words.Cut(tail, agent.MaxReasonLen)
		}
		return check, temporal.NewNonRetryableApplicationError(msg, contract.ErrTypeAgentUnusable, nil, problem)
	}
	check.Version = stdout.String()
	return check, nil
}

// workerPath is the PATH of host's worker, as a message says it.
func workerPath(host string) string {
	if host == "" {
		return "the worker's PATH"
	}
	return "the PATH of host " + host + "'s worker"
}

// lineOnce keeps the first non-blank line of the output in b.
func lineOnce(b *strings.Builder, line []byte) {
	if b.Len() == 0 {
		b.WriteString(words.Cut(strings.TrimSpace(string(line)), 200))
	}
}

// InstallHint says how to install the agent binary of backend where a
// worker lacks it: the backend's CLI and its package ("Codex: npm install
// -g @openai/codex"), or for the command backend "install BINARY or fix
// agent.command".
func InstallHint(backend, binary string) string {
	if b, err := BackendOf(backend); err == nil {
		if in, ok := b.(agent.Installer); ok {
			return in.Install()
		}
	}
	return "install " + binary + " or fix agent.command"
}

// AgentFix is the sentence that tells a person how to put right an agent
// of backend whose binary a worker lacks or cannot run.
func AgentFix(backend, binary string) string {
	b, err := BackendOf(backend)
	if err != nil {
		return "Install the agent where the worker runs, or name another with --agent-command."
	}
	if _, ok := b.(agent.Installer); !ok {
		return "Install the agent where the worker runs (" + InstallHint(backend, binary) + ", --agent-command)."
	}
	return "Install the agent where the worker runs (" + InstallHint(backend, binary) + "), or name another with --agent-command."
}
