package testsuite_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/proto"
)

// gitCounter puts a git on PATH that counts its runs, for the figures of
// git processes per iteration. It returns a function that reads and
// resets the count.
func gitCounter(b *testing.B) func() int {
	b.Helper()
	real, err := exec.LookPath("git")
	require.NoError(b, err)
	dir := b.TempDir()
	log := filepath.Join(dir, "runs")
	shim := fmt.Sprintf("#!/bin/sh\necho >> %q\nexec %q \"$@\"\n", log, real)
	require.NoError(b, os.WriteFile(filepath.Join(dir, "git"), []byte(shim), 0o755))
	b.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return func() int {
		data, _ := os.ReadFile(log)
		os.Remove(log)
		return strings.Count(string(data), "\n")
	}
}

// cpuNow is the CPU time of this process (the embedded server and the
// worker run in it) and of its children that ended (agents, git).
func cpuNow() time.Duration {
	var self, children syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return tv(self.Utime) + tv(self.Stime) + tv(children.Utime) + tv(children.Stime)
}

// benchBareLoop is the loop people write in bash, with nothing of
// Ralph's: run the agent on the prompt, check its stream for the result
// event, commit everything.
func benchBareLoop(b *testing.B) time.Duration {
	b.Helper()
	return benchBareLoopIn(b, benchRepo(b))
}

// benchBareLoopIn runs the bare loop in the repository dir.
func benchBareLoopIn(b *testing.B, dir string) time.Duration {
	b.Helper()
	before := strings.TrimSpace(gitOut(b, dir, "rev-parse", "HEAD"))
	script := `set -e
for i in $(seq 1 "$N"); do
  out=$("$AGENT" -p --output-format stream-json --verbose --dangerously-skip-permissions < PROMPT.md)
  [[ $out == *'"type":"result"'* ]] || { echo "iteration $i: no result event" >&2; exit 1; }
  git add -A
  git commit -q -m "iteration $i"
done
`
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = dir
	cmd.Env = childEnv(append(benchEnv(b), "AGENT="+bins.claude, fmt.Sprintf("N=%d", benchIterations))...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	elapsed := time.Since(start)
	require.NoError(b, err, "bare loop: %s", out)
	count := strings.TrimSpace(gitOut(b, dir, "rev-list", "--count", before+"..HEAD"))
	require.Equal(b, fmt.Sprint(benchIterations), count, "the bare loop commits once per iteration")
	return elapsed
}

func gitOut(b *testing.B, dir string, args ...string) string {
	b.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	require.NoError(b, err, "git %v", args)
	return string(out)
}

// phases sums, over a session's history, where an iteration's time goes
// between the server and the worker.
type phases struct {
	activityQueued, activityRan, taskQueued, taskRan time.Duration
	// span is from the first run's first event to the last run's last.
	span time.Duration
}

func (p *phases) add(q phases) {
	p.activityQueued += q.activityQueued
	p.activityRan += q.activityRan
	p.taskQueued += q.taskQueued
	p.taskRan += q.taskRan
	p.span += q.span
}

// div is p over n rounds.
func (p phases) div(n int) phases {
	d := time.Duration(n)
	return phases{p.activityQueued / d, p.activityRan / d, p.taskQueued / d, p.taskRan / d, p.span / d}
}

func (p phases) String() string {
	ms := func(d time.Duration) float64 { return msPerIter(d) }
	return fmt.Sprintf("iteration activity queued %.1f ms, running %.1f ms; workflow tasks queued %.1f ms, running %.1f ms; history from first to last event %.1f ms",
		ms(p.activityQueued), ms(p.activityRan), ms(p.taskQueued), ms(p.taskRan), ms(p.span))
}

// historyCost counts the events and payload bytes of every run of
// workflow id, and the phases of its RunIteration activities and
// workflow tasks.
func historyCost(b *testing.B, c client.Client, id string) (events, bytes int, ph phases) {
	b.Helper()
	ctx := context.Background()
	latest, err := collectHistory(c.GetWorkflowHistory(ctx, id, "", false, 0))
	require.NoError(b, err)
	runID := latest.Events[0].GetWorkflowExecutionStartedEventAttributes().GetFirstExecutionRunId()
	var first time.Time
	for {
		h, err := collectHistory(c.GetWorkflowHistory(ctx, id, runID, false, 0))
		require.NoError(b, err)
		at := map[int64]time.Time{}
		for _, e := range h.Events {
			events++
			bytes += proto.Size(e)
			t := e.GetEventTime().AsTime()
			at[e.GetEventId()] = t
			if first.IsZero() {
				first = t
			}
			ph.span = t.Sub(first)
			if a := e.GetActivityTaskStartedEventAttributes(); a != nil {
				ph.activityQueued += t.Sub(at[a.GetScheduledEventId()])
			} else if a := e.GetActivityTaskCompletedEventAttributes(); a != nil {
				ph.activityRan += t.Sub(at[a.GetStartedEventId()])
			} else if a := e.GetWorkflowTaskStartedEventAttributes(); a != nil {
				ph.taskQueued += t.Sub(at[e.GetEventId()-1])
			} else if a := e.GetWorkflowTaskCompletedEventAttributes(); a != nil {
				ph.taskRan += t.Sub(at[a.GetStartedEventId()])
			}
		}
		next := h.Events[len(h.Events)-1].GetWorkflowExecutionContinuedAsNewEventAttributes()
		if next == nil {
			return events, bytes, ph
		}
		runID = next.GetNewExecutionRunId()
	}
}
