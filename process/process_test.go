package process

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// run runs script with sh and returns its stdout lines and result.
func run(t *testing.T, ctx context.Context, script string, maxLine int) ([]string, Result) {
	t.Helper()
	var lines []string
	res, err := Run(ctx, Spec{
		Path: "/bin/sh", Args: []string{"-c", script}, Dir: t.TempDir(), Env: os.Environ(),
		Stdin: strings.NewReader("the prompt\n"), MaxLine: maxLine, StderrTail: 16,
		OnLine: func(line []byte, tooLong bool) {
			if tooLong {
				lines = append(lines, "<too long>")
				return
			}
			lines = append(lines, string(line))
		},
	})
	require.NoError(t, err)
	return lines, res
}

func TestRunOutput(t *testing.T) {
	tests := []struct {
		name       string
		script     string
		wantLines  []string
		wantStderr string
		wantExit   int
	}{
		{"lines_and_stdin", `echo one; read p; echo "got $p"; printf 'no newline'`, []string{"one", "got the prompt", "no newline"}, "", 0},
		{"crlf_trimmed", `printf 'a\r\nb\n'`, []string{"a", "b"}, "", 0},
		{"long_line_dropped", `echo short; head -c 100 /dev/zero | tr '\0' x; echo; echo after`, []string{"short", "<too long>", "after"}, "", 0},
		{"stderr_tail_and_exit", `echo 0123456789abcdefXYZ >&2; exit 3`, nil, "456789abcdefXYZ\n", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lines, res := run(t, context.Background(), tt.script, 50)
			require.Equal(t, tt.wantLines, lines)
			require.Equal(t, tt.wantStderr, res.Stderr)
			if tt.wantExit == 0 {
				require.NoError(t, res.Err)
				return
			}
			var exit *exec.ExitError
			require.True(t, errors.As(res.Err, &exit), "%v", res.Err)
			require.Equal(t, tt.wantExit, exit.ExitCode())
		})
	}
}

// alive reports whether pid runs (a zombie counts as dead: nothing reaps
// orphans here).
func alive(pid int) bool {
	state, _, ok := procStat(pid)
	return ok && state != 'Z' && state != 'X'
}

// pidFrom reads the pid a script wrote into file.
func pidFrom(t *testing.T, file string) int {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	require.NoError(t, err)
	return pid
}

// TestRunEndsWhatIsLeft: a background job that holds stdout open and a
// process that left the group with setsid both end with the run, and the
// run does not wait for them.
func TestRunEndsWhatIsLeft(t *testing.T) {
	dir := t.TempDir()
	inGroup, escaped := filepath.Join(dir, "group.pid"), filepath.Join(dir, "setsid.pid")
	script := `sleep 300 & echo $! > ` + inGroup + `; setsid sh -c 'echo $$ > ` + escaped + `; exec sleep 300' </dev/null >/dev/null 2>&1 & sleep 0.3; echo done`
	start := time.Now()
	lines, res := run(t, context.Background(), script, 1<<10)
	require.NoError(t, res.Err)
	require.Equal(t, []string{"done"}, lines)
	require.Less(t, time.Since(start), 2*KillGrace+drainGrace+5*time.Second)
	for _, pid := range []int{pidFrom(t, inGroup), pidFrom(t, escaped)} {
		require.Eventually(t, func() bool { return !alive(pid) }, KillGrace+2*time.Second, 50*time.Millisecond, "pid %d still runs", pid)
	}
}

// TestRunCancel: cancelling the context ends the whole group within the
// grace period.
func TestRunCancel(t *testing.T) {
	dir := t.TempDir()
	child := filepath.Join(dir, "child.pid")
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, res := run(t, ctx, `sleep 300 & echo $! > `+child+`; wait`, 1<<10)
	require.Error(t, res.Err)
	require.Less(t, time.Since(start), KillGrace+drainGrace+5*time.Second)
	pid := pidFrom(t, child)
	require.Eventually(t, func() bool { return !alive(pid) }, KillGrace+2*time.Second, 50*time.Millisecond)
}

// TestRunMissingBinary: the guard shell starts, and the missing binary
// is its exit status 127 (the caller looks binaries up before Run).
func TestRunMissingBinary(t *testing.T) {
	res, err := Run(context.Background(), Spec{Path: "/nonexistent/agent", Dir: t.TempDir(), StderrTail: 1 << 10, OnLine: func([]byte, bool) {}})
	require.NoError(t, err)
	var exit *exec.ExitError
	require.True(t, errors.As(res.Err, &exit), "%v", res.Err)
	require.Equal(t, 127, exit.ExitCode())
	require.Contains(t, res.Stderr, "/nonexistent/agent")
}

// TestRunBadDir: a process that cannot start is Run's error.
func TestRunBadDir(t *testing.T) {
	_, err := Run(context.Background(), Spec{Path: "/bin/true", Dir: "/nonexistent/dir", OnLine: func([]byte, bool) {}})
	require.Error(t, err)
}

// TestRunReadsWhatIsLeftInThePipe: output the process left in the pipe
// when it exited is read in full however long the reader takes to get
// to it (a loaded machine), longer than drainGrace.
func TestRunReadsWhatIsLeftInThePipe(t *testing.T) {
	dir := t.TempDir()
	gate := filepath.Join(dir, "go")
	// The rest is written only once the reader has taken the first
	// line, so it waits in the pipe, not in the reader's buffer.
	script := `echo first; while [ ! -e ` + gate + ` ]; do sleep 0.01; done; seq 1 5000`
	var lines []string
	res, err := Run(context.Background(), Spec{
		Path: "/bin/sh", Args: []string{"-c", script}, Dir: dir, Env: os.Environ(),
		MaxLine: 1 << 10, StderrTail: 16,
		OnLine: func(line []byte, tooLong bool) {
			if len(lines) == 0 {
				require.NoError(t, os.WriteFile(gate, nil, 0o644))
				time.Sleep(drainGrace + time.Second)
			}
			lines = append(lines, string(line))
		},
	})
	require.NoError(t, err)
	require.NoError(t, res.Err)
	require.Len(t, lines, 5001)
	require.Equal(t, "5000", lines[len(lines)-1])
}
