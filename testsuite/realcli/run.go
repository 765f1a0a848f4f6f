package realcli

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Command is one run of a real CLI.
type Command struct {
	Bin  string
	Args []string
	Dir  string
	// Env is the CLI's whole environment.
	Env []string
	// Stdin is what the CLI reads on its standard input.
	Stdin string
}

// Run is a finished run of a real CLI.
type Run struct {
	Stdout, Stderr string
	// Err is what the run ended with: nil, or an *exec.ExitError.
	Err     error
	Elapsed time.Duration
}

// ExitCode is the run's exit status.
func (r Run) ExitCode() int {
	if ee, ok := errors.AsType[*exec.ExitError](r.Err); ok {
		return ee.ExitCode()
	}
	if r.Err != nil {
		return -1
	}
	return 0
}

// Timeout is how long Run waits for a CLI to end.
const Timeout = 2 * time.Minute

// Run runs the CLI to its end. It fails the test if the CLI does not
// start, or does not end within Timeout.
func (c Command) Run(t testing.TB) Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.Bin, c.Args...)
	cmd.Dir, cmd.Env = c.Dir, c.Env
	cmd.Stdin = strings.NewReader(c.Stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	began := time.Now()
	err := cmd.Run()
	r := Run{Stdout: stdout.String(), Stderr: stderr.String(), Err: err, Elapsed: time.Since(began)}
	if ctx.Err() != nil {
		t.Fatalf("%s %q did not end within %s; stderr:\n%s", filepath.Base(c.Bin), c.Args, Timeout, r.Stderr)
	}
	if _, ok := errors.AsType[*exec.ExitError](err); err != nil && !ok {
		t.Fatalf("%s %q: %v", filepath.Base(c.Bin), c.Args, err)
	}
	return r
}
