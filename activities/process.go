package activities

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/agent"
	"github.com/durable-ralph/ralph/contract"
)

// Grace periods of the end of an agent process.
const (
	// killGrace is how long an agent's process group has between SIGTERM
	// and SIGKILL.
	killGrace = 3 * time.Second
	// drainGrace is how long the output of a finished agent is read after
	// its process group was killed. Only a process that left the group
	// (setsid) can still hold the pipe then; reading stops without it.
	drainGrace = time.Second
)

// agentRun is what one agent process produced.
type agentRun struct {
	summary agent.Summary
	verdict agent.Verdict
	// resumeFailed says a run that was to resume the agent's session
	// found no such session.
	resumeFailed bool
	// live are the agent's last events, and started when it started.
	live    []contract.LiveEvent
	started time.Time
}

// runAgent spawns the agent of backend in its own process group, feeds
// it the prompt, parses its stream while heartbeating, and classifies
// the end. A run resumes the agent's session resume when it is not empty.
// The iteration ends when the agent process exits: whatever it left
// running in its group is killed, so a background job that keeps stdout
// open neither holds the iteration until its timeout nor outlives it.
func (a *Agent) runAgent(ctx context.Context, in contract.IterationInput, backend agent.Backend, prompt, resume string, logw io.Writer, progress *contract.Progress, beat func(contract.Progress)) (agentRun, error) {
	bin, err := exec.LookPath(in.Agent.Command[0])
	if err != nil {
		return agentRun{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("agent binary %q not found on the worker's PATH: %v", in.Agent.Command[0], err), contract.ErrTypeAgentNotFound, err)
	}
	timeout := in.Agent.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Minute
	}
	runCtx, cancelRun := context.WithTimeout(ctx, timeout)
	defer cancelRun()

	opts := backendOptions(in.Agent)
	args := append(append([]string(nil), in.Agent.Command[1:]...), backend.Args(opts, resume)...)
	cmd := exec.CommandContext(runCtx, "/bin/sh", append([]string{"-c", groupGuard, "ralph-agent", bin}, args...)...)
	cmd.Dir = in.Workspace
	// The run's mark goes to everything it starts, so that what leaves
	// its process group (setsid, as Codex and the Gemini CLI do for the
	// commands they run) is found by its environment at the end.
	mark := runMark()
	cmd.Env = append(append(backend.Env(opts), a.agentEnv()...), mark)
	cmd.Stdin = strings.NewReader(prompt)
	// The agent and everything it starts share a process group, so one
	// signal reaches them all. The guard shell leads the group; the kernel
	// sends it SIGTERM when this worker dies, even by SIGKILL.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	cmd.Cancel = func() error {
		pgid := cmd.Process.Pid
		err := syscall.Kill(-pgid, syscall.SIGTERM)
		time.AfterFunc(killGrace, func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
		return err
	}
	// Output goes through pipes of our own, not exec's copying
	// goroutines: Wait then returns when the agent exits, whoever else
	// still holds its stdout or stderr.
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		return agentRun{}, fmt.Errorf("agent stdout: %w", err)
	}
	defer stdoutR.Close()
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		stdoutW.Close()
		return agentRun{}, fmt.Errorf("agent stderr: %w", err)
	}
	defer stderrR.Close()
	cmd.Stdout, cmd.Stderr = stdoutW, stderrW
	err = cmd.Start()
	stdoutW.Close()
	stderrW.Close()
	if err != nil {
		return agentRun{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("start agent %q: %v", bin, err), contract.ErrTypeAgentNotFound, err)
	}
	pgid := cmd.Process.Pid

	stderr := &tailBuffer{max: 8 << 10}
	stderrDone := make(chan struct{})
	go func() {
		defer close(stderrDone)
		_, _ = io.Copy(stderr, stderrR)
	}()

	parser := backend.NewParser(opts)
	live := &liveLog{redact: a.Redact, dir: in.Workspace}
	progress.StartedAt = time.Now()
	var mu sync.Mutex
	snapshot := func() contract.Progress {
		mu.Lock()
		defer mu.Unlock()
		s := parser.Summary()
		p := *progress
		if s.SessionID != "" {
			p.AgentSessionID = s.SessionID
		}
		p.CostUSD, p.Usage, p.Turns, p.Events, p.LastTool = s.CostUSD, s.Usage, s.Turns, s.Events, s.LastTool
		p.Live = live.snapshot()
		p.Tail = tail(p.StartedAt, p.Live)
		p.UpdatedAt = time.Now()
		return p
	}
	stopBeat := make(chan struct{})
	beatDone := make(chan struct{})
	go func() {
		defer close(beatDone)
		interval := a.heartbeatInterval()
		// The first beat waits one interval: an agent that is done
		// sooner needs none, and each beat is a write on the server.
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				beat(snapshot())
			case <-stopBeat:
				return
			}
		}
	}()

	log := &cappedWriter{w: logw, max: a.maxLog()}
	readDone := make(chan error, 1)
	go func() {
		readDone <- readLines(stdoutR, a.maxLine(), func(line []byte, tooLong bool) {
			if !tooLong {
				_, _ = log.Write(a.Redact.Bytes(line))
				_, _ = log.Write([]byte{'\n'})
			}
			mu.Lock()
			defer mu.Unlock()
			if tooLong {
				parser.Oversized()
				return
			}
			ev, err := parser.Line(line)
			if err == nil { // garbage lines are counted in the summary
				live.add(ev, time.Now())
			}
		})
	}()

	waitErr := cmd.Wait()
	// The agent is gone; so must be everything it left in its group, and
	// what it started in sessions of their own.
	endGroup(pgid)
	endMarked(mark)
	readErr := drain(readDone, stdoutR)
	_ = drain(wrapDone(stderrDone), stderrR)
	close(stopBeat)
	<-beatDone
	if readErr != nil && waitErr == nil {
		waitErr = readErr
	}

	// Cancellation of the activity (heartbeat timeout, session runtime
	// limit, a stop by hand) is an error for Temporal; the end of the
	// iteration's own time budget is a result.
	if ctx.Err() != nil {
		return agentRun{}, fmt.Errorf("agent iteration %d: %w", in.Iteration, ctx.Err())
	}
	mu.Lock()
	sum := parser.Summary()
	run := agentRun{summary: sum, live: live.snapshot(), started: progress.StartedAt}
	mu.Unlock()
	if runCtx.Err() != nil {
		run.verdict = agent.Verdict{
			Outcome: contract.OutcomeTimeout,
			Reason:  fmt.Sprintf("agent ran longer than the iteration timeout of %s and was killed", timeout),
		}
		return run, nil
	}
	run.verdict = parser.Verdict(waitErr, stderr.String(), time.Now())
	// A backend may learn that the session was missing from stderr,
	// which Verdict read.
	run.resumeFailed = resume != "" && parser.ResumeFailed()
	return run, nil
}

// drain waits for a reader of a finished agent's output to reach the end,
// for at most drainGrace; then it closes the pipe, which ends the reader.
func drain(done <-chan error, r *os.File) error {
	select {
	case err := <-done:
		return err
	case <-time.After(drainGrace):
		r.Close()
		return <-done
	}
}

// wrapDone adapts a closed-when-done channel to drain.
func wrapDone(done <-chan struct{}) <-chan error {
	ch := make(chan error, 1)
	go func() {
		<-done
		ch <- nil
	}()
	return ch
}

// endGroup ends what is left of process group pgid: SIGTERM, then SIGKILL
// for whatever still runs after killGrace. Zombies count as gone: nothing
// may reap them here.
func endGroup(pgid int) {
	if !groupAlive(pgid) {
		return
	}
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	deadline := time.Now().Add(killGrace)
	for time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		if !groupAlive(pgid) {
			return
		}
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// markVar is the environment variable that marks the processes of one
// agent run.
const markVar = "RALPH_AGENT_RUN"

var runSeq atomic.Int64

// runMark is the KEY=value that marks one agent run's processes: unique
// on this machine.
func runMark() string {
	return fmt.Sprintf("%s=%d.%d.%d", markVar, os.Getpid(), time.Now().UnixNano(), runSeq.Add(1))
}

// endMarked ends the processes whose environment holds mark, the run's
// escapees: SIGTERM, then SIGKILL after killGrace. A process that cleared
// its environment is beyond it.
func endMarked(mark string) {
	pids := marked(mark)
	if len(pids) == 0 {
		return
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(killGrace)
	for time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		if len(marked(mark)) == 0 {
			return
		}
	}
	for _, pid := range marked(mark) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// marked lists the live processes (not zombies) whose environment holds
// mark.
func marked(mark string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	want := []byte(mark)
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(env, want) {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if bytes.Equal(kv, want) {
				if state, _, ok := procStat(pid); ok && state != 'Z' && state != 'X' {
					pids = append(pids, pid)
				}
				break
			}
		}
	}
	return pids
}

// groupAlive reports whether a process of group pgid still runs (is not
// a zombie).
func groupAlive(pgid int) bool {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		// No /proc: ask the kernel, which counts zombies as alive.
		return syscall.Kill(-pgid, 0) == nil
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		state, group, ok := procStat(pid)
		if ok && group == pgid && state != 'Z' && state != 'X' {
			return true
		}
	}
	return false
}

// procStat reads the state and process group of pid from /proc.
func procStat(pid int) (state byte, pgrp int, ok bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// pid (comm) state ppid pgrp ...; comm may hold spaces and parens.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, 0, false
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 3 || len(fields[0]) != 1 {
		return 0, 0, false
	}
	g, err := strconv.Atoi(fields[2])
	if err != nil {
		return 0, 0, false
	}
	return fields[0][0], g, true
}

// groupGuard runs the agent ("$@") as the child of a shell that leads the
// agent's process group and kills the whole group when it gets SIGTERM:
// from a cancellation, or from the kernel when the worker dies (Pdeathsig).
// Pdeathsig alone would reach only the agent, not the tools it started, and
// an orphaned tool would race the retried iteration in the same workspace.
// The shell passes the prompt on through fd 3 because a background job's
// stdin is otherwise /dev/null.
const groupGuard = `exec 3<&0; trap 'kill -KILL 0' TERM HUP INT; "$@" <&3 3<&- & wait $!`
