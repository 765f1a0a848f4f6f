package session

import (
	"fmt"
	"strconv"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/workflows/flow"
)

// Time travel. A rewind is Temporal's reset of the session to the
// workflow task that scheduled iteration To+1, with SignalRewound in the
// reset run's first workflow task (a post-reset operation of `starter
// rewind`): the replayed state is the session's after iteration To, and
// before that iteration runs again the loop puts the workspace back
// (rewindIfAsked). A fork is a new session whose input carries the
// original's state after an iteration (read by the starter in a replay
// of the original's history, QueryCarryOver); it adopts that state once
// its work tree is made (adoptFork).

// rewindIfAsked applies a rewind that came with the reset of the
// session: the branch goes back to the commit of the iteration the
// session was reset to (RewindWorkspace, which keeps what it leaves on a
// ref), the iterations after it are counted apart (Rewound), and the
// session's records get a new key, so that no record of an abandoned
// iteration is taken for the iteration of the same number that runs
// next. A signal that does not come with a reset (sent by hand from the
// Temporal UI, or late), or that names another iteration than the
// session's, is ignored: it makes no sense now, and moving the branch
// without the reset would leave the state and the repository apart.
func (s *session) rewindIfAsked(ctx workflow.Context) *end {
	gated := s.awaitRewind(ctx)
	var sig contract.RewindSignal
	if !s.signals.rewound.ReceiveAsync(&sig) {
		return nil
	}
	for s.signals.rewound.ReceiveAsync(&sig) {
		// Only the newest counts.
	}
	if !gated {
		s.logger.Warn("rewound signal ignored: it comes from starter rewind with a reset, not alone", "to", sig.Rewind.To)
		return nil
	}
	if sig.RunID != "" {
		s.rewoundRun = sig.RunID
	}
	r := sig.Rewind
	if r.To != s.st.Iteration || r.Commit == "" || r.Ref == "" {
		s.logger.Warn("rewound signal ignored: it does not name this session's iteration", "to", r.To, "iteration", s.st.Iteration)
		return nil
	}
	in := contract.RewindInput{
		Workspace:  s.in.Workspace,
		Branch:     s.st.Prepared.Branch,
		Commit:     r.Commit,
		Ref:        r.Ref,
		Key:        s.st.ExecutionKey,
		WorkflowID: workflow.GetInfo(ctx).WorkflowExecution.ID,
		Iteration:  r.To,
	}
	opts := workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		HeartbeatTimeout:    20 * time.Second,
		Summary:             fmt.Sprintf("rewind to iteration %d", r.To),
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        time.Minute,
			MaximumAttempts:        10,
			NonRetryableErrorTypes: []string{contract.ErrTypeInvalidWorkspace},
		},
	}
	var res contract.RewindResult
	if err := s.host.Execute(ctx, opts, &res, contract.ActivityRewindWorkspace, in); err != nil {
		return endFailed(fmt.Errorf("rewind to iteration %d: %w", r.To, err))
	}
	r.OldHead, r.Ref, r.Kept, r.Key = res.OldHead, res.Ref, res.Kept, s.st.ExecutionKey
	s.st.Rewound = append(append([]contract.Rewind(nil), sig.Earlier...), r)
	s.st.ExecutionKey = rewoundKey(s.st.Rewound)
	s.st.Uncounted = nil
	if sig.Guidance != "" {
		s.onGuide(sig.Guidance)
	}
	s.logger.Info("rewound", "to", r.To, "from", r.From, "ref", r.Ref, "cancelled", res.Cancelled)
	s.upsertForkedFrom(ctx, contract.ForkedFrom{Session: workflow.GetInfo(ctx).WorkflowExecution.ID, Iteration: r.To})
	return nil
}

// rewindWait is how long the first turn of a reset run waits for the
// rewound signal of the starter that made the reset: a reset made
// elsewhere (the Temporal UI) moves no workspace, and the session goes
// on once it has waited this long.
const rewindWait = 30 * time.Second

// awaitRewind waits, at the first turn a reset run takes live, for the
// rewound signal that `starter rewind` sends the run once its reset is
// made (the server takes no signal with the reset itself). Whether a
// turn is that one is recorded in the history (a version marker per
// iteration, only in reset runs), so a replay of the run, or of a later
// reset run made from it, waits exactly where the run waited. A run is
// a reset run when its ID is not the one it was created with; it waits
// until a rewound signal for it (rewoundRun) has come. It reports
// whether a rewound signal came while it waited: the only one the
// session takes.
func (s *session) awaitRewind(ctx workflow.Context) bool {
	info := workflow.GetInfo(ctx)
	run := info.WorkflowExecution.RunID
	if info.OriginalRunID == "" || run == info.OriginalRunID || s.rewoundRun == run {
		return false
	}
	if workflow.GetVersion(ctx, fmt.Sprintf(contract.RewindGate, s.st.Iteration), workflow.DefaultVersion, 1) != 1 {
		return false
	}
	got, err := workflow.AwaitWithTimeout(ctx, rewindWait, func() bool { return s.signals.rewound.Len() > 0 })
	if err != nil || got {
		return got && err == nil
	}
	// Reset from elsewhere: the workspace stays as it is.
	var here string
	_ = workflow.SideEffect(ctx, func(workflow.Context) any { return run }).Get(&here)
	s.rewoundRun = here
	s.logger.Warn("reset without starter rewind: the workspace was not moved back", "iteration", s.st.Iteration)
	s.st.Notices = append(s.st.Notices, fmt.Sprintf(
		"This session was reset to just after iteration %d from outside Ralph: the repository was not moved back, so it may hold work of later iterations. Check git log before you go on.", s.st.Iteration))
	return false
}

// rewoundKey is the execution key of the iterations after the last of
// rewinds: the first key of the session with the rewind's number.
func rewoundKey(rewinds []contract.Rewind) string {
	first := rewinds[0].Key
	return first + ".r" + strconv.Itoa(len(rewinds))
}

// adoptFork makes the state of a fresh fork the original's after the
// iteration it forked at: its iteration count, totals, guidance, answers
// and failure streaks go on from there. What is the fork's own stays:
// its ID, key, start, work tree (prepared) and limits.
func (s *session) adoptFork(ctx workflow.Context, f contract.Fork) {
	st := f.State
	own := s.st
	st.SessionID, st.StartedAt, st.ExecutionKey, st.Runs = own.SessionID, own.StartedAt, own.ExecutionKey, own.Runs
	st.Prepared, st.Limits = own.Prepared, own.Limits
	st.Iteration = f.From.Iteration
	st.Rewound, st.Uncounted, st.Paused, st.HumanWait = nil, nil, false, 0
	st.Notices = nil
	from := f.From
	st.ForkedFrom = &from
	s.st = st
	s.log = append([]contract.IterationSummary(nil), st.Recent...)
	if f.Guidance != "" {
		s.onGuide(f.Guidance)
	}
	s.logger.Info("forked", "from", from.String(), "branch", s.st.Prepared.Branch)
	s.upsertForkedFrom(ctx, from)
}

// upsertForkedFrom sets RalphForkedFrom, which finds forks and rewound
// sessions in the Temporal UI.
func (s *session) upsertForkedFrom(ctx workflow.Context, from contract.ForkedFrom) {
	if err := workflow.UpsertTypedSearchAttributes(ctx, flow.SearchForkedFrom.ValueSet(from.String())); err != nil {
		s.logger.Warn("search attribute not set", "key", contract.SearchRalphForkedFrom, "error", err)
	}
}

// carryOverNow is the session's state after its last finished iteration,
// for QueryCarryOver: while an iteration runs, its number is counted
// already, but nothing of it is.
func (s *session) carryOverNow() contract.CarryOver {
	c := s.st
	if s.status.Running {
		c.Iteration--
	}
	c.Recent = append([]contract.IterationSummary(nil), c.Recent...)
	c.Guidance = append([]string(nil), c.Guidance...)
	c.Answered = append([]contract.AnsweredCheckpoint(nil), c.Answered...)
	return c
}
