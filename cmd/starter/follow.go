package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

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
	conn  *connection
	c     client.Client
	dc    converter.DataConverter
	id    string
	out   io.Writer
	view  View
	width int

	run   string    // the run whose iterations are read
	began time.Time // when the follower started
	// fresh: the command started the session, whose every iteration is
	// printed; a session attached to shows its last few first.
	fresh     bool
	printed   int // the last iteration printed
	started   bool
	lastState contract.State
	// lastPending is the checkpoint pending at the last poll: a new one
	// asked between two polls keeps the state awaiting_human.
	lastPending string
	// asked are the checkpoints seen pending, whose answers are told.
	asked map[string]bool
	noLog bool // the iterations query is unknown to the worker
	// workspace and key are the session's workspace and execution key,
	// once a status told them: where its raw logs are.
	workspace, key string

	live liveState
}

// liveState is what the live view printed of the running attempt.
type liveState struct {
	key       string
	iteration int
	started   time.Time
	seq       int
	lastLine  time.Time
	raw       io.ReadCloser
	// rawOut is where raw goes: the terminal, without control sequences.
	rawOut  io.Writer
	rawMiss bool
}

func newFollower(conn *connection, id string, out io.Writer, view View) *follower {
	dc := conn.dataConverter
	if dc == nil {
		dc = converter.GetDefaultDataConverter()
	}
	return &follower{conn: conn, c: conn.client, dc: dc, id: id, out: out, view: view, width: termWidth(out), began: time.Now()}
}

// poll prints what happened since the last poll.
func (f *follower) poll(ctx context.Context) {
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	desc, err := f.c.DescribeWorkflowExecution(qctx, f.id, f.run)
	if err != nil {
		if lostServer(err) && !f.conn.answers(ctx) {
			f.conn.watch.down()
		}
		return
	}
	f.conn.watch.up()
	if f.run == "" {
		f.run = desc.GetWorkflowExecutionInfo().GetExecution().GetRunId()
		if first, d := f.firstRun(qctx, desc); f.fresh && first != "" {
			f.run, desc = first, d
		}
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
		var st contract.Status
		var err error
		if f.noLog || f.untold() || (f.view == ViewRaw && f.key == "") {
			// The last answers too: a session may end right after one;
			// and where the raw logs of a session that ended before the
			// first poll are.
			if st, err = query[contract.Status](qctx, f.c, nil, f.id); err == nil {
				f.located(st)
			}
		}
		f.iterations(qctx)
		f.flushRaw()
		if err == nil && f.noLog {
			f.print(st.Recent)
		}
		if err == nil {
			f.answers(st)
		}
		return
	}
	st, err := query[contract.Status](qctx, f.c, nil, f.id)
	if err == nil {
		f.located(st)
	}
	if err == nil && f.noLog {
		f.print(st.Recent)
	}
	// The iterations first: a finished iteration's live view ends
	// before the next one's begins, and the line of the iteration that
	// asked a question comes before the question.
	f.iterations(qctx)
	if err == nil {
		f.answers(st)
		f.state(st)
	}
	if f.view != ViewQuiet {
		f.liveView(desc.GetPendingActivities(), st.Workspace)
	}
}

// firstRun is the first run of a session that started with this
// follower and has continued as new before its first poll (a run of quick
// iterations does in a second or two), with its description, so that its
// iterations are printed too; "" for a session that started more than a
// minute before (a session of the same ID that this command did not
// start).
func (f *follower) firstRun(ctx context.Context, latest *workflowservice.DescribeWorkflowExecutionResponse) (string, *workflowservice.DescribeWorkflowExecutionResponse) {
	first := latest.GetWorkflowExecutionInfo().GetFirstRunId()
	if first == "" || first == f.run {
		return "", nil
	}
	d, err := f.c.DescribeWorkflowExecution(ctx, f.id, first)
	if err != nil || d.GetWorkflowExecutionInfo().GetStartTime().AsTime().Before(f.began.Add(-time.Minute)) {
		return "", nil
	}
	return first, d
}

// iterations prints the iterations of the followed run that are not
// printed yet.
func (f *follower) iterations(ctx context.Context) {
	if f.noLog {
		return
	}
	val, err := ask(ctx, f.c, nil, f.id, f.run, contract.QueryIterations, f.printed)
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
	if !f.started && !f.fresh && len(its) > 10 {
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

// untold reports a checkpoint seen pending whose answer is not told yet.
func (f *follower) untold() bool {
	for _, told := range f.asked {
		if !told {
			return true
		}
	}
	return false
}

// answers tells how the checkpoints seen pending were answered: by whom
// and through what, or that nobody answered in time.
func (f *follower) answers(st contract.Status) {
	if cp := st.Pending; cp != nil {
		if f.asked == nil {
			f.asked = map[string]bool{}
		}
		if _, seen := f.asked[cp.ID]; !seen {
			f.asked[cp.ID] = false
		}
	}
	for _, a := range st.Answered {
		told, asked := f.asked[a.Checkpoint.ID]
		if !asked || told {
			continue
		}
		f.asked[a.Checkpoint.ID] = true
		if a.TimedOut {
			fmt.Fprintf(f.out, "checkpoint %s timed out: nobody answered, the session goes on\n", a.Checkpoint.ID)
			continue
		}
		fmt.Fprintf(f.out, "checkpoint %s %s %s\n", a.Checkpoint.ID, a.Answer.Said(), a.Answer.Who())
	}
}

// state says what a change of the session's state asks of a person.
func (f *follower) state(st contract.Status) {
	pending := ""
	if st.Pending != nil {
		pending = st.Pending.ID
	}
	if st.State == f.lastState && pending == f.lastPending {
		return
	}
	f.lastState, f.lastPending = st.State, pending
	switch st.State {
	case contract.StatePaused:
		fmt.Fprintf(f.out, "session is paused: %s\n", f.conn.suggest("resume", f.id))
	case contract.StateRateLimited:
		fmt.Fprintln(f.out, "session is rate limited: it sleeps until the limit resets")
	case contract.StateAwaitingHuman, contract.StateWaitingForAnswer:
		if cp := st.Pending; cp != nil {
			fmt.Fprintf(f.out, "session waits for a human: checkpoint %s (%s): %s\n", cp.ID, cp.Type, cp.Question)
			if len(cp.Options) > 0 {
				fmt.Fprintf(f.out, "  options: %s\n", strings.Join(cp.Options, " / "))
			}
			if cp.Context != "" {
				fmt.Fprintf(f.out, "  %s\n", strings.ReplaceAll(cp.Context, "\n", "\n  "))
			}
			fmt.Fprintf(f.out, "  answer: %s --approve | --reject --reason \"...\" | --answer \"...\"\n", f.conn.suggest("respond", f.id, "--checkpoint", cp.ID))
		}
	}
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

// located keeps where the raw logs of the session st is the status of
// are: its workspace and execution key.
func (f *follower) located(st contract.Status) {
	if st.Workspace != "" {
		f.workspace = st.Workspace
	}
	if key := cmp.Or(st.ExecutionKey, st.SessionID); key != "" {
		f.key = key
	}
}

// endLive ends the live view of the finished iteration it: the rest of
// its raw log, or the events of its end that no heartbeat reported. An
// iteration that no heartbeat showed (an agent that was done before its
// first, in a second or so) gets the events its result recorded, or with
// --raw its log when that is on this machine; only the iterations of a
// session attached to that ended before this follower came are not
// played again.
func (f *follower) endLive(it contract.IterationSummary) {
	if f.view == ViewQuiet {
		return
	}
	shown := f.live.iteration == it.Iteration
	if shown && f.live.raw != nil {
		f.flushRaw()
		return
	}
	if !shown && !f.started && !f.fresh {
		return
	}
	if !shown && f.view == ViewRaw && f.rawEnded(it) {
		return
	}
	seq := 0
	if shown && it.LiveStartedAt.Equal(f.live.started) {
		seq = f.live.seq // the attempt shown: what it showed is not repeated
	}
	if len(it.Live) > 0 && it.Live[0].Seq > seq+1 {
		fmt.Fprintf(f.out, "  %s … %d more\n", contract.Elapsed(it.LiveStartedAt, it.Live[0].At), it.Live[0].Seq-seq-1)
	}
	for _, e := range it.Live {
		if e.Seq > seq {
			fmt.Fprintln(f.out, elide(liveLine(it.LiveStartedAt, e), f.width))
			seq = e.Seq
		}
	}
	if shown {
		f.live.seq = seq
	}
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

// serverWatch says when the server of a connection is lost and when it is
// back, one line each time.
type serverWatch struct {
	mu      sync.Mutex
	out     io.Writer
	address string
	lost    bool
}

// down says the server is lost, unless it said so already.
func (w *serverWatch) down() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.lost && w.out != nil {
		fmt.Fprintf(w.out, "lost the Temporal server at %s: waiting for it\n", w.address)
	}
	w.lost = true
}

// up says the server is back, when it was lost.
func (w *serverWatch) up() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.lost && w.out != nil {
		fmt.Fprintln(w.out, "the Temporal server is back")
	}
	w.lost = false
}

// lostServer reports whether err says that the server did not answer,
// rather than what it answered.
func lostServer(err error) bool {
	if err == nil {
		return false
	}
	if _, ok := errors.AsType[*temporal.WorkflowExecutionError](err); ok {
		return false
	}
	if _, ok := errors.AsType[*temporal.CanceledError](err); ok {
		return false
	}
	if _, ok := errors.AsType[*serviceerror.Unavailable](err); ok {
		return true
	}
	if _, ok := errors.AsType[*serviceerror.DeadlineExceeded](err); ok {
		return true
	}
	if _, ok := errors.AsType[*serviceerror.Canceled](err); ok {
		return true
	}
	return errors.Is(err, context.DeadlineExceeded)
}

// answers reports whether the server answers a health check now.
func (c *connection) answers(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	_, err := c.client.CheckHealth(ctx, &client.CheckHealthRequest{})
	return err == nil
}

// maxServerBackoff is the longest wait between two looks for a lost
// server.
const maxServerBackoff = 10 * time.Second

// await waits for the workflow id to end (through continue-as-new) and
// decodes its result into valuePtr. A server that does not answer ends
// nothing: await says it lost the server, looks for it again with
// backoff, says when it is back and waits on. Only the workflow's own end,
// or ctx's, ends the wait.
func (c *connection) await(ctx context.Context, id string, valuePtr any) error {
	for {
		err := c.client.GetWorkflow(ctx, id, "").Get(ctx, valuePtr)
		if err == nil || ctx.Err() != nil || !lostServer(err) {
			return err
		}
		if err := c.waitForServer(ctx); err != nil {
			return err
		}
	}
}

// waitForServer returns once the server answers, having said that it was
// lost and is back if it did not answer at first.
func (c *connection) waitForServer(ctx context.Context) error {
	backoff := time.Second
	for !c.answers(ctx) {
		c.watch.down()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxServerBackoff)
	}
	c.watch.up()
	// An error of a server that answers: wait a moment before asking
	// again rather than spin.
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Second):
		return nil
	}
}
