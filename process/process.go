// Package process runs a child process the way an unattended agent must
// be run: in a process group of its own under a guard shell that takes
// the group down with it (also when the worker dies), its stdout read
// line by line with bounded memory, the tail of its stderr kept, and,
// once it exits, everything it left running ended: what stayed in its
// group and what left it (setsid) carrying the run's mark.
package process

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Grace periods of the end of a process.
const (
	// KillGrace is how long a process group has between SIGTERM and
	// SIGKILL.
	KillGrace = 3 * time.Second
	// drainGrace is how long the output of a finished process may stay
	// empty and unread once its process group was ended, before reading
	// stops: only a process that escaped the run (left its group and
	// dropped its mark) can still hold the pipe then. Output that is in
	// the pipe is read however long a loaded machine takes to get to
	// it, for at most drainLimit in all.
	drainGrace = time.Second
	drainLimit = 30 * time.Second
)

// Spec is a process to run.
type Spec struct {
	// Path is the binary and Args its arguments.
	Path string
	Args []string
	Dir  string
	// Env is the whole environment; Run adds the run's mark.
	Env   []string
	Stdin io.Reader
	// MaxLine bounds the memory one stdout line may take: a longer line
	// reaches OnLine as tooLong, without its bytes.
	MaxLine int
	// OnLine is called for every line of stdout, in order, from one
	// goroutine.
	OnLine func(line []byte, tooLong bool)
	// StderrTail is how many bytes of the end of stderr Result keeps.
	StderrTail int
	// OnStart, when set, is told the process's PID (the leader of its
	// process group) once it runs.
	OnStart func(pid int)
	// Guarded: the process itself ends everything it starts when it gets
	// SIGTERM or ends (bubblewrap with a PID namespace of its own), so it
	// runs without the guard shell (groupGuard), one process less.
	Guarded bool
	// ExtraFiles are inherited by a Guarded process as its fds 3, 4, …;
	// Run closes them once the process has its own copies.
	ExtraFiles []*os.File
	// Ready, when set, is called with the process's PID once it started,
	// before its output is read (a sandbox's Command.Ready). When it
	// fails, Run ends the process group and returns its error.
	Ready func(pid int) error
	// Spawn, when set, starts the process in Run's place (a sandbox's
	// Command.Spawn: the process is born in the run's control group).
	// Without it Run starts it.
	Spawn func(cmd *exec.Cmd) error
}

// Result is how a process ended.
type Result struct {
	// Err is what waiting for the process or reading its output said:
	// nil for an exit status of 0, an *exec.ExitError otherwise.
	Err error
	// Stderr is the end of its stderr.
	Stderr string
}

// Run runs spec until the process exits, then ends what it left behind.
// Cancelling ctx ends the process group: SIGTERM, then SIGKILL after
// KillGrace. The error is cmd.Start's, for a process that could not
// start.
func Run(ctx context.Context, spec Spec) (Result, error) {
	cmd := exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", groupGuard, "ralph-agent", spec.Path}, spec.Args...)...)
	if spec.Guarded {
		cmd = exec.CommandContext(ctx, spec.Path, spec.Args...)
	}
	cmd.Dir = spec.Dir
	// The run's mark goes to everything it starts, so that what leaves
	// its process group (setsid, as Codex and the Gemini CLI do for the
	// commands they run) is found by its environment at the end.
	mark := runMark()
	cmd.Env = append(append([]string(nil), spec.Env...), mark)
	cmd.Stdin = spec.Stdin
	// The process and everything it starts share a process group, so
	// one signal reaches them all. The guard shell leads the group; the
	// kernel sends it SIGTERM when this worker dies, even by SIGKILL.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	cmd.Cancel = func() error {
		pgid := cmd.Process.Pid
		err := syscall.Kill(-pgid, syscall.SIGTERM)
		time.AfterFunc(KillGrace, func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
		return err
	}
	// Output goes through pipes of our own, not exec's copying
	// goroutines: Wait then returns when the process exits, whoever else
	// still holds its stdout or stderr.
	p, err := openPipes()
	if err != nil {
		return Result{}, err
	}
	defer p.close()
	cmd.Stdout, cmd.Stderr = p.stdoutW, p.stderrW
	if spec.Guarded {
		cmd.ExtraFiles = spec.ExtraFiles
	}
	window := openWindow()
	err = spec.start(cmd)
	p.closeWriters()
	for _, f := range spec.ExtraFiles {
		f.Close()
	}
	if err != nil {
		return Result{}, err
	}
	pgid := cmd.Process.Pid
	window.first = pgid
	if spec.Ready != nil {
		if err := spec.Ready(pgid); err != nil {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			_ = cmd.Wait()
			return Result{}, err
		}
	}
	if spec.OnStart != nil {
		spec.OnStart(pgid)
	}

	stderr := &Tail{Max: spec.StderrTail}
	stderrR, stdoutR := &countingReader{f: p.stderrR}, &countingReader{f: p.stdoutR}
	stderrDone := make(chan error, 1)
	go func() {
		_, _ = io.Copy(stderr, stderrR)
		stderrDone <- nil
	}()
	readDone := make(chan error, 1)
	go func() { readDone <- readLines(stdoutR, spec.MaxLine, spec.OnLine) }()

	waitErr := cmd.Wait()
	// The process is gone; so must be everything it left in its group,
	// and what it started in sessions of their own.
	EndGroup(pgid)
	endMarked(mark, window)
	readErr := drain(readDone, stdoutR)
	_ = drain(stderrDone, stderrR)
	if readErr != nil && waitErr == nil {
		waitErr = readErr
	}
	return Result{Err: waitErr, Stderr: stderr.String()}, nil
}

// start starts cmd, through Spawn when it is set.
func (spec Spec) start(cmd *exec.Cmd) error {
	if spec.Spawn != nil {
		return spec.Spawn(cmd)
	}
	return cmd.Start()
}

// pipes are a process's stdout and stderr.
type pipes struct {
	stdoutR, stdoutW, stderrR, stderrW *os.File
}

func openPipes() (*pipes, error) {
	var p pipes
	var err error
	if p.stdoutR, p.stdoutW, err = os.Pipe(); err != nil {
		return nil, fmt.Errorf("stdout: %w", err)
	}
	if p.stderrR, p.stderrW, err = os.Pipe(); err != nil {
		p.stdoutR.Close()
		p.stdoutW.Close()
		return nil, fmt.Errorf("stderr: %w", err)
	}
	return &p, nil
}

// closeWriters closes our copies of the write ends, once the child has
// its own.
func (p *pipes) closeWriters() {
	p.stdoutW.Close()
	p.stderrW.Close()
}

func (p *pipes) close() {
	p.stdoutR.Close()
	p.stderrR.Close()
}

// drain waits for the reader of a finished process's output to reach
// the end. Every writer the run knew of is gone by then, so the end
// comes once the reader has read what is left in the pipe, which on a
// loaded machine can take seconds. Only a writer that escaped the run
// can keep the pipe open: the pipe is closed, which ends the reader,
// once it has stayed empty with nothing read for drainGrace, or after
// drainLimit in all.
func drain(done <-chan error, r *countingReader) error {
	limit := time.After(drainLimit)
	tick := time.NewTicker(drainGrace)
	defer tick.Stop()
	seen := r.read.Load()
	for {
		select {
		case err := <-done:
			return err
		case <-limit:
			r.f.Close()
			return <-done
		case <-tick.C:
			n := r.read.Load()
			if n == seen && r.pending() == 0 {
				r.f.Close()
				return <-done
			}
			seen = n
		}
	}
}

// countingReader reads a pipe and counts what it read.
type countingReader struct {
	f    *os.File
	read atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.f.Read(p)
	c.read.Add(int64(n))
	return n, err
}

// pending is how many bytes wait in the pipe (0 when that cannot be
// told). It leaves the file non-blocking, as File.Fd would not.
func (c *countingReader) pending() int {
	raw, err := c.f.SyscallConn()
	if err != nil {
		return 0
	}
	n := 0
	_ = raw.Control(func(fd uintptr) {
		n, _ = unix.IoctlGetInt(int(fd), unix.TIOCINQ) // FIONREAD
	})
	return n
}

// groupGuard runs the process ("$@") as the child of a shell that leads
// its process group and kills the whole group when it gets SIGTERM: from
// a cancellation, or from the kernel when the worker dies (Pdeathsig).
// Pdeathsig alone would reach only the process, not the tools it
// started, and an orphaned tool would race the retried iteration in the
// same workspace. The shell passes stdin on through fd 3 because a
// background job's stdin is otherwise /dev/null.
const groupGuard = `exec 3<&0; trap 'kill -KILL 0' TERM HUP INT; "$@" <&3 3<&- & wait $!`

// Tail is a writer that keeps the last Max bytes written to it.
type Tail struct {
	Max int
	mu  sync.Mutex
	buf []byte
}

// Write keeps the end of p.
func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.Max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.Max:]...)
	}
	return len(p), nil
}

// String is what t kept.
func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Clone(string(t.buf))
}
