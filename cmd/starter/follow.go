package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"golang.org/x/term"

	"github.com/durable-ralph/ralph/contract"
)

// View is how much of a running iteration --follow shows.
type View int

// Views of --follow.
const (
	// ViewLive prints a line per tool call and message of the agent.
	ViewLive View = iota
	// ViewQuiet prints one line per iteration.
	ViewQuiet
	// ViewRaw prints the agent's own stream, when its log is on this
	// machine.
	ViewRaw
)

// quietAfter is how long the live view waits without a new event before
// it says the agent is still working.
const quietAfter = 30 * time.Second

// follower prints a session as it runs: every iteration's line, the live
// view of the running iteration and the changes of state that need a
// person.
type follower struct {
	c     client.Client
	dc    converter.DataConverter
	id    string
	out   io.Writer
	view  View
	width int

	run       string // the run whose iterations are read
	printed   int    // the last iteration printed
	started   bool
	lastState contract.State
	noLog     bool // the iterations query is unknown to the worker

	live liveState
}

// liveState is what the live view printed of the running attempt.
type liveState struct {
	key       string
	iteration int
	started   time.Time
	seq       int
	lastLine  time.Time
	raw       *os.File
	rawMiss   bool
}

func newFollower(c client.Client, dc converter.DataConverter, id string, out io.Writer, view View) *follower {
	if dc == nil {
		dc = converter.GetDefaultDataConverter()
	}
	return &follower{c: c, dc: dc, id: id, out: out, view: view, width: termWidth(out)}
}

// termWidth is the width of the terminal out writes to: $COLUMNS, the
// terminal's own, or 100.
func termWidth(out io.Writer) int {
	var n int
	if _, err := fmt.Sscan(os.Getenv("COLUMNS"), &n); err == nil && n > 20 {
		return n
	}
	if f, ok := out.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 20 {
			return w
		}
	}
	return 100
}

// poll prints what happened since the last poll.
func (f *follower) poll(ctx context.Context) {
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	desc, err := f.c.DescribeWorkflowExecution(qctx, f.id, f.run)
	if err != nil {
		return
	}
	if f.run == "" {
		f.run = desc.GetWorkflowExecutionInfo().GetExecution().GetRunId()
	}
	// Follow the runs of the session through continue-as-new: a closed
	// run is read to its end before the next one.
	for i := 0; i < 100 && desc.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW; i++ {
		f.iterations(qctx)
		next, err := nextRun(qctx, f.c, f.id, f.run)
		if err != nil {
			return
		}
		f.run = next
		if desc, err = f.c.DescribeWorkflowExecution(qctx, f.id, f.run); err != nil {
			return
		}
	}
	if desc.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		f.iterations(qctx)
		f.flushRaw()
		if f.noLog {
			if st, err := queryStatus(qctx, f.c, f.id); err == nil {
				f.print(st.Recent)
			}
		}
		return
	}
	st, err := queryStatus(qctx, f.c, f.id)
	if err == nil {
		f.state(st)
		if f.noLog {
			f.print(st.Recent)
		}
	}
	// The iterations first: a finished iteration's live view ends
	// before the next one's begins.
	f.iterations(qctx)
	if f.view != ViewQuiet {
		f.liveView(desc.GetPendingActivities(), st.Workspace)
	}
}

// iterations prints the iterations of the followed run that are not
// printed yet.
func (f *follower) iterations(ctx context.Context) {
	if f.noLog {
		return
	}
	val, err := f.c.QueryWorkflow(ctx, f.id, f.run, contract.QueryIterations, f.printed)
	var its []contract.IterationSummary
	if err == nil {
		err = val.Get(&its)
	}
	if err != nil && strings.Contains(err.Error(), "unknown queryType") {
		// A worker of an earlier version: the status's recent
		// iterations are all it has.
		f.noLog = true
		return
	}
	if err != nil {
		return
	}
	if !f.started && len(its) > 10 {
		its = its[len(its)-10:] // attaching: the last few, as status shows
	}
	f.print(its)
}

func (f *follower) print(its []contract.IterationSummary) {
	for _, it := range its {
		if !f.started && f.printed == 0 {
			f.printed = it.Iteration - 1
		}
		if it.Iteration > f.printed {
			f.endLive(it)
			fmt.Fprintln(f.out, it.Line())
			f.printed = it.Iteration
			f.live.lastLine = time.Now()
		}
	}
	f.started = true
}

// state says what a change of the session's state asks of a person.
func (f *follower) state(st contract.Status) {
	if st.State == f.lastState {
		return
	}
	f.lastState = st.State
	switch st.State {
	case contract.StatePaused:
		fmt.Fprintf(f.out, "session is paused: %s\n", suggest("resume", f.id))
	case contract.StateRateLimited:
		fmt.Fprintln(f.out, "session is rate limited: it sleeps until the limit resets")
	case contract.StateAwaitingHuman:
		if cp := st.Pending; cp != nil {
			fmt.Fprintf(f.out, "session waits for a human: checkpoint %s (%s): %s\n", cp.ID, cp.Type, cp.Question)
			if len(cp.Options) > 0 {
				fmt.Fprintf(f.out, "  options: %s\n", strings.Join(cp.Options, " / "))
			}
			if cp.Context != "" {
				fmt.Fprintf(f.out, "  %s\n", strings.ReplaceAll(cp.Context, "\n", "\n  "))
			}
			fmt.Fprintf(f.out, "  answer: %s --approve | --reject --reason \"...\" | --answer \"...\"\n", suggest("respond", f.id, "--checkpoint", cp.ID))
		}
	}
}

// runningIteration finds the running iteration among a session's pending
// activities and decodes the progress its last heartbeat carried.
func runningIteration(dc converter.DataConverter, pending []*workflowpb.PendingActivityInfo) (*workflowpb.PendingActivityInfo, contract.Progress, bool) {
	for _, pa := range pending {
		if pa.GetActivityType().GetName() != contract.ActivityRunIteration {
			continue
		}
		var p contract.Progress
		if pa.GetHeartbeatDetails() == nil || dc.FromPayloads(pa.GetHeartbeatDetails(), &p) != nil {
			return pa, p, false
		}
		return pa, p, true
	}
	return nil, contract.Progress{}, false
}

// liveView prints what the running agent did since the last poll, read
// from the iteration's last heartbeat: it works wherever the worker runs.
func (f *follower) liveView(pending []*workflowpb.PendingActivityInfo, workspace string) {
	pa, p, ok := runningIteration(f.dc, pending)
	if !ok {
		f.flushRaw()
		return
	}
	key := fmt.Sprintf("%s/%d/%s", pa.GetActivityId(), p.Attempt, p.StartedAt)
	if key != f.live.key {
		f.flushRaw()
		f.live = liveState{key: key, iteration: p.Iteration, started: p.StartedAt, lastLine: time.Now()}
		if p.Role != "" {
			fmt.Fprintf(f.out, "  iteration %d: the %s\n", p.Iteration, p.Role)
		}
		if p.Attempt > 1 {
			fmt.Fprintf(f.out, "  (attempt %d of this iteration)\n", p.Attempt)
		}
	}
	if f.view == ViewRaw && f.rawView(p, workspace) {
		return
	}
	if len(p.Live) > 0 && p.Live[0].Seq > f.live.seq+1 {
		fmt.Fprintf(f.out, "  %s … %d more\n", contract.Elapsed(p.StartedAt, p.Live[0].At), p.Live[0].Seq-f.live.seq-1)
	}
	for _, e := range p.Live {
		if e.Seq <= f.live.seq {
			continue
		}
		fmt.Fprintln(f.out, elide(liveLine(p.StartedAt, e), f.width))
		f.live.seq = e.Seq
		f.live.lastLine = time.Now()
	}
	if time.Since(f.live.lastLine) >= quietAfter {
		fmt.Fprintln(f.out, elide("  "+contract.Elapsed(p.StartedAt, p.UpdatedAt)+" … working: "+soFar(p), f.width))
		f.live.lastLine = time.Now()
	}
}

// rawView copies what the attempt's raw log gained since the last poll,
// when that log is on this machine; it reports false (once saying why)
// when it is not.
func (f *follower) rawView(p contract.Progress, workspace string) bool {
	if f.live.raw == nil && !f.live.rawMiss {
		path := filepath.Join(workspace, filepath.FromSlash(p.Log))
		file, err := os.Open(path)
		if p.Log == "" || workspace == "" || err != nil {
			f.live.rawMiss = true
			fmt.Fprintf(f.out, "  (the agent's raw stream is in %s on the worker's machine; showing the live view)\n", orDash(p.Log))
			return false
		}
		f.live.raw = file
	}
	if f.live.raw == nil {
		return false
	}
	_, _ = io.Copy(f.out, f.live.raw)
	return true
}

// endLive ends the live view of the finished iteration it, if it is the
// one shown: the rest of its raw log, or the events of its end that no
// heartbeat reported.
func (f *follower) endLive(it contract.IterationSummary) {
	if f.live.iteration != it.Iteration || f.view == ViewQuiet {
		return
	}
	if f.live.raw != nil {
		f.flushRaw()
		return
	}
	if !it.LiveStartedAt.Equal(f.live.started) {
		return // another attempt than the one shown
	}
	for _, e := range it.Live {
		if e.Seq > f.live.seq {
			fmt.Fprintln(f.out, elide(liveLine(it.LiveStartedAt, e), f.width))
			f.live.seq = e.Seq
		}
	}
}

// flushRaw copies the rest of a finished attempt's raw log and closes it.
func (f *follower) flushRaw() {
	if f.live.raw == nil {
		return
	}
	_, _ = io.Copy(f.out, f.live.raw)
	f.live.raw.Close()
	f.live.raw = nil
}

// liveLine is one line of the live view.
func liveLine(start time.Time, e contract.LiveEvent) string {
	return "  " + e.Line(start)
}

// liveTail is the running iteration's live view for status: what its last
// heartbeat says, or "" when no iteration runs.
func liveTail(dc converter.DataConverter, pending []*workflowpb.PendingActivityInfo, width int) string {
	pa, p, ok := runningIteration(dc, pending)
	if pa == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Running iteration (attempt %d", pa.GetAttempt())
	if ok && !p.StartedAt.IsZero() {
		fmt.Fprintf(&b, ", %s: %s", contract.Elapsed(p.StartedAt, p.UpdatedAt), soFar(p))
	}
	b.WriteString("):\n")
	if !ok || len(p.Live) == 0 {
		b.WriteString("  (nothing reported yet)\n")
		return b.String()
	}
	for _, e := range p.Live {
		b.WriteString(elide(liveLine(p.StartedAt, e), width))
		b.WriteByte('\n')
	}
	return b.String()
}

// soFar says how far the agent got: turns, tokens and cost.
func soFar(p contract.Progress) string {
	s := fmt.Sprintf("%d turns", p.Turns)
	if p.Turns == 1 {
		s = "1 turn"
	}
	if t := p.Usage.Total(); t > 0 {
		s += fmt.Sprintf(", %d tokens", t)
	}
	if p.CostUSD > 0 {
		s += fmt.Sprintf(", $%.4f", p.CostUSD)
	}
	if p.LastTool != "" {
		s += ", last tool " + p.LastTool
	}
	return s + " so far"
}

// elide cuts s to width columns (runes), ending in "…".
func elide(s string, width int) string {
	if width <= 1 || utf8.RuneCountInString(s) <= width {
		return s
	}
	r := []rune(s)
	return string(r[:width-1]) + "…"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// nextRun is the run that run continued as.
func nextRun(ctx context.Context, c client.Client, id, run string) (string, error) {
	it := c.GetWorkflowHistory(ctx, id, run, false, enumspb.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return "", err
		}
		if a := e.GetWorkflowExecutionContinuedAsNewEventAttributes(); a != nil {
			return a.GetNewExecutionRunId(), nil
		}
	}
	return "", fmt.Errorf("run %s of %s did not continue as new", run, id)
}
