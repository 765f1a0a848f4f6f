package activities

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/process"
	"github.com/durable-ralph/ralph/sandbox"
)

// checkOutputLimit bounds the output of a failed check kept for the next
// prompt.
const checkOutputLimit = 4 << 10

// check runs the session's completion check command in the workspace, in
// its own process group with the agent's environment and in the agent's
// sandbox, beating while it runs. It never fails the iteration: a check that cannot start has not
// passed, and the next prompt says why.
func (a *Agent) check(ctx context.Context, in contract.IterationInput, beat func()) *contract.CheckResult {
	timeout := in.Agent.Timeout
	if timeout <= 0 {
		timeout = defaultAgentTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	started := time.Now()
	res := &contract.CheckResult{Command: in.Task.CheckCommand}

	// The check runs what the agent wrote (its tests, its build): it is
	// contained as the agent is.
	c, err := a.contain(in, nil, sandbox.Command{Path: "/bin/sh", Args: []string{"-c", in.Task.CheckCommand}, Env: a.agentEnv()})
	if err != nil {
		res.ExitCode, res.Output = -1, a.Redact.String(err.Error())
		return res
	}
	defer c.close()
	cmd := exec.CommandContext(ctx, c.cmd.Path, c.cmd.Args...)
	cmd.Dir = in.Workspace
	cmd.Env = c.cmd.Env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	out := &process.Tail{Max: checkOutputLimit}
	cmd.Stdout, cmd.Stderr = out, out

	done := make(chan struct{})
	go func() {
		t := time.NewTicker(a.heartbeatInterval())
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				beat()
			}
		}
	}()
	if err = c.cmd.Start(cmd); err == nil {
		err = cmd.Wait()
	} else if cmd.Process != nil {
		_ = cmd.Wait() // the sandbox could not be set up and was killed
	}
	close(done)
	if cmd.Process != nil {
		process.EndGroup(cmd.Process.Pid)
	}
	res.Duration = time.Since(started)
	res.Output = strings.TrimSpace(a.Redact.String(out.String()))
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		res.Passed = true
	case ctx.Err() == context.DeadlineExceeded:
		res.ExitCode = -1
		res.Output = strings.TrimSpace(res.Output + fmt.Sprintf("\n(killed after %s)", timeout))
	case errors.As(err, &exitErr):
		res.ExitCode = exitErr.ExitCode()
	default:
		res.ExitCode = -1
		res.Output = strings.TrimSpace(res.Output + "\n" + err.Error())
	}
	return res
}

// checkNotice tells the next iteration that its completion claim did not
// hold.
func checkNotice(c contract.CheckResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "The last iteration claimed completion, but the completion check `%s` failed (exit status %d), so the work is not done. Fix what it reports, then claim completion again.", c.Command, c.ExitCode)
	if c.Output != "" {
		b.WriteString(" The end of its output:\n\n")
		fence := "```"
		for strings.Contains(c.Output, fence) {
			fence += "`"
		}
		fmt.Fprintf(&b, "%s\n%s\n%s", fence, c.Output, fence)
	}
	return b.String()
}
