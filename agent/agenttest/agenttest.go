// Package agenttest helps the tests of the backends of package agent:
// the runs they recorded in their testdata, the lines they feed a parser,
// the exit of a process, and the check of the verdicts of recorded runs.
package agenttest

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/agent"
	"github.com/durable-ralph/ralph/contract"
)

// ExitWith is the error of a process that exited with code, as
// exec.Cmd.Wait returns it: nil for 0, a SIGKILL for -1.
func ExitWith(t testing.TB, code int) error {
	t.Helper()
	script := fmt.Sprintf("exit %d", code)
	switch code {
	case 0:
		return nil
	case -1:
		script = "kill -9 $$"
	}
	err := exec.Command("sh", "-c", script).Run()
	_, ok := errors.AsType[*exec.ExitError](err)
	require.True(t, ok, "sh -c %q: %v", script, err)
	return err
}

// Lines are the lines of the recorded stdout dir/name.jsonl.
func Lines(t testing.TB, dir, name string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, name+".jsonl"))
	require.NoError(t, err)
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	require.NoError(t, sc.Err())
	return lines
}

// Replay feeds the recorded stdout dir/name.jsonl to p and returns p
// with the events of the lines p parsed; a line p finds invalid must be
// an agent.ErrInvalidLine.
func Replay[P agent.Parser](t testing.TB, p P, dir, name string) (P, []agent.Event) {
	t.Helper()
	var events []agent.Event
	for _, l := range Lines(t, dir, name) {
		ev, err := p.Line([]byte(l))
		if err != nil {
			require.ErrorIs(t, err, agent.ErrInvalidLine)
			continue
		}
		events = append(events, ev)
	}
	return p, events
}

// Feed feeds lines to p, which must parse each, and returns the events
// that show something.
func Feed(t testing.TB, p agent.Parser, lines []string) []agent.Event {
	t.Helper()
	var events []agent.Event
	for _, l := range lines {
		ev, err := p.Line([]byte(l))
		require.NoError(t, err, l)
		if ev != (agent.Event{}) {
			events = append(events, ev)
		}
	}
	return events
}

// Recorded is the recorded stderr (dir/name.stderr) of the run name and
// the error of its recorded exit status (dir/name.exit), as ExitWith
// gives it.
func Recorded(t testing.TB, dir, name string) (stderr string, exitErr error) {
	t.Helper()
	code, err := os.ReadFile(filepath.Join(dir, name+".exit"))
	require.NoError(t, err)
	n, err := strconv.Atoi(strings.TrimSpace(string(code)))
	require.NoError(t, err)
	errOut, err := os.ReadFile(filepath.Join(dir, name+".stderr"))
	require.NoError(t, err)
	return string(errOut), ExitWith(t, n)
}

// Verdict is the verdict wanted of a recorded run.
type Verdict struct {
	// Name names the run in its directory.
	Name    string
	Outcome contract.Outcome
	// Reason is part of the wanted Reason.
	Reason       string
	ResetsAt     time.Time
	ResumeFailed bool
}

// CheckRecorded checks the verdict, at now, of each run of tests recorded
// in dir, whose output it feeds to a parser of backend: its outcome, a
// reason on one bounded line (none for a success), when the limit lifts,
// and whether the resume failed.
func CheckRecorded(t *testing.T, backend agent.Backend, dir string, now time.Time, tests []Verdict) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.Name, func(t *testing.T) {
			p, _ := Replay(t, backend.NewParser(agent.Options{}), dir, tc.Name)
			stderr, exitErr := Recorded(t, dir, tc.Name)
			v := p.Verdict(exitErr, stderr, now)
			require.Equal(t, tc.Outcome, v.Outcome, v.Reason)
			if tc.Outcome == contract.OutcomeSuccess {
				require.Empty(t, v.Reason)
			} else {
				require.Contains(t, v.Reason, tc.Reason)
				require.NotContains(t, v.Reason, "\n")
				require.LessOrEqual(t, len(v.Reason), agent.MaxReasonLen)
			}
			require.Equal(t, tc.ResetsAt, v.ResetsAt)
			require.Equal(t, tc.ResumeFailed, p.ResumeFailed())
		})
	}
}
