// Package session holds the Session workflow: the Ralph loop over one
// workspace. Each iteration is an activity that runs the agent once in a
// fresh process; between iterations the workflow counts what it cost and
// did, asks people at checkpoints, waits out usage limits and hosts that
// went away, and continues as new every so many iterations. Its states
// and the moves between them are the table in states.go. Like every
// workflow package it imports contract/ (names and payloads), flow/ and
// the SDK: it calls activities by name and links none of their code.
package session

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/workflows/flow"
	"github.com/durable-ralph/ralph/workflows/notify"
)

// recentLimit bounds the iteration summaries a session keeps in its status
// and carries across continue-as-new.
const recentLimit = 10

// logLimit bounds the iteration summaries a run keeps for the iterations
// query: more than a run makes before it continues as new.
const logLimit = 200

// Session runs a Ralph loop: the agent, again and again on one workspace,
// each iteration a fresh process, until the task file confirms the work is
// done or a limit ends the session.
func Session(ctx workflow.Context, in contract.SessionInput) (contract.SessionResult, error) {
	s, err := newSession(ctx, in)
	if err != nil {
		return contract.SessionResult{}, err
	}
	return s.run(ctx)
}

// session is one workflow run of a session. Its state is st, the
// carry-over itself (samples-go safe_message_handler keeps one
// serializable state the same way): continue-as-new hands it on whole,
// and the status query reads it. The other fields belong to this run.
type session struct {
	in     contract.SessionInput
	st     contract.CarryOver
	logger log.Logger
	// status holds what the status query shows beyond st: the state
	// label, the pending checkpoint, the running iteration (statusNow).
	status contract.Status
	// log is every iteration of this run (up to logLimit), for the
	// iterations query.
	log        []contract.IterationSummary
	stopReason string
	// limitAsks counts this run's limit questions, limitNote says why
	// the last answer to one did not raise the limit.
	limitAsks  int
	limitNote  string
	ranThisRun int
	// deadlineTimer fires at the runtime deadline; re-armed whenever the
	// deadline moves.
	deadlineTimer  workflow.Future
	cancelDeadline workflow.CancelFunc
	// answer is the answer to the pending checkpoint, once given.
	answer *contract.Answer
	// published is the status last pushed to search attributes, at
	// publishedAt.
	published   *contract.Status
	publishedAt time.Time
	// minRunAge says whether this run waits for minRunAge before it
	// continues as new (GetVersion run-min-age); nil until asked.
	minRunAge *bool
	// publishThrottle says whether this run spaces pushes of the
	// iteration and cost (GetVersion publish-throttle); nil until asked.
	publishThrottle *bool
	signals         signals
	// drains says whether this run takes pending signals itself before it
	// decides (see drainSignals); runs recorded before it did not.
	drains bool
	// host routes the workspace activities to the workspace's machine.
	host flow.Host
	// beforeOffline is the state to go back to when the host is back.
	beforeOffline contract.State
	// stopped delivers when a stop is requested, to end a wait for a host
	// that may never come back.
	stopped workflow.Channel
	// notes sends the session's notifications.
	notes notify.Notifier
	// rewoundRun is the reset run whose rewound signal the session has
	// taken (awaitRewind).
	rewoundRun string
}

// versionDrainSignals is the change ID of drainSignals and of waiting for
// update handlers before the session ends.
const versionDrainSignals = "drain-signals"

// versionLimitedState is the change ID of the state of a session that a
// limit ended: limited, no longer failed.
const versionLimitedState = "limited-state"

// versionCompleteAtPrepare is the change ID of ending a session complete
// at prepare when its task file is already done.
const versionCompleteAtPrepare = "complete-at-prepare"

func newSession(ctx workflow.Context, in contract.SessionInput) (*session, error) {
	if err := in.Validate(); err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrTypeInvalidInput, nil)
	}
	s := &session{in: in, st: initialState(ctx, in)}
	s.status = contract.Status{
		Workspace: in.Workspace,
		Host:      in.Host,
		Worktree:  in.Worktree,
		State:     contract.StateStarting,
		Roles:     in.RoleNames(),
	}
	s.logger = log.With(workflow.GetLogger(ctx), "session", s.st.SessionID)
	s.notes = notify.Notifier{Session: in.Workspace, Logger: s.logger}
	if is := in.Issue; is != nil {
		s.notes.Session = fmt.Sprintf("%s#%d", is.Repo.FullName(), is.Number)
	}
	s.log = append([]contract.IterationSummary(nil), s.st.Recent...)
	if err := s.registerQueries(ctx); err != nil {
		return nil, err
	}
	if err := s.registerUpdates(ctx); err != nil {
		return nil, err
	}
	s.signals = newSignals(ctx)
	s.stopped = workflow.NewBufferedChannel(ctx, 1)
	s.host = flow.Host{ID: in.Host, Timeout: in.HostTimeout, Offline: s.hostOffline, Stop: s.stopped}
	workflow.Go(ctx, s.listenAgentSlots)
	s.drains = workflow.GetVersion(ctx, versionDrainSignals, workflow.DefaultVersion, 1) >= 1
	if s.drains {
		workflow.Go(ctx, s.listen)
	} else {
		workflow.Go(ctx, s.listenSelecting)
	}
	return s, nil
}

// initialState is the state a run of the session starts from: the
// carry-over of the run before, or a fresh one.
func initialState(ctx workflow.Context, in contract.SessionInput) contract.CarryOver {
	info := workflow.GetInfo(ctx)
	st := contract.CarryOver{SessionID: info.WorkflowExecution.ID, StartedAt: workflow.Now(ctx), Limits: in.Limits}
	if c := in.CarryOver; c != nil {
		st = *c
		if c.Limits.MaxIterations <= 0 {
			st.Limits = in.Limits // carried before limits were
		}
	}
	if st.ExecutionKey == "" {
		// Unique per execution chain, the same in every run of it: a
		// second session on the workspace keys its records apart.
		st.ExecutionKey = info.WorkflowExecution.ID + "." + info.FirstRunID
	}
	st.Runs++
	return st
}

// registerQueries answers the status and iterations queries.
func (s *session) registerQueries(ctx workflow.Context) error {
	err := workflow.SetQueryHandlerWithOptions(ctx, contract.QueryStatus, func() (contract.Status, error) {
		return s.statusNow(), nil
	}, workflow.QueryHandlerOptions{
		Description: "State, iteration, totals and recent iterations of this Ralph session",
	})
	if err != nil {
		return fmt.Errorf("register %s query: %w", contract.QueryStatus, err)
	}
	err = workflow.SetQueryHandlerWithOptions(ctx, contract.QueryIterations, func(after int) ([]contract.IterationSummary, error) {
		for i, it := range s.log {
			if it.Iteration > after {
				return s.log[i:], nil
			}
		}
		return nil, nil
	}, workflow.QueryHandlerOptions{
		Description: "The iterations of this run after the given number, oldest first",
	})
	if err != nil {
		return fmt.Errorf("register %s query: %w", contract.QueryIterations, err)
	}
	err = workflow.SetQueryHandlerWithOptions(ctx, contract.QueryCarryOver, func() (contract.CarryOver, error) {
		return s.carryOverNow(), nil
	}, workflow.QueryHandlerOptions{
		Description: "The session's whole state after its last finished iteration (what a fork adopts)",
	})
	if err != nil {
		return fmt.Errorf("register %s query: %w", contract.QueryCarryOver, err)
	}
	return nil
}

// statusNow is the session's status: its state st, and what this run
// shows beyond it.
func (s *session) statusNow() contract.Status {
	st, c := s.status, s.st
	st.SessionID, st.StartedAt, st.Iteration, st.Totals = c.SessionID, c.StartedAt, c.Iteration, c.Totals
	st.ConsecutiveFailures, st.NoProgress, st.Recent, st.Runs = c.ConsecutiveFailures, c.NoProgress, c.Recent, c.Runs
	st.Answered, st.TaskFileBroken, st.IgnoredAnswers, st.ReviewPending = c.Answered, c.TaskFileBroken, c.IgnoredAnswers, c.ReviewPending
	st.DroppedGuidance, st.Fallback = c.DroppedGuidance, c.Fallback
	st.Limits, st.HumanWait, st.Guidance, st.ExecutionKey = c.Limits, c.HumanWait, c.Guidance, c.ExecutionKey
	st.Mode, st.Branch, st.Task = c.Prepared.Mode, c.Prepared.Branch, c.Prepared.Task
	st.ForkedFrom, st.Rewound = c.ForkedFrom, c.Rewound
	return st
}

// end is how a session ends: a reason and a message, or an error that
// ends it cancelled (a cancellation) or failed (failed: no retry fixes
// it). The steps of the loop return one when the session is to end, nil
// when it goes on; only run turns it into the workflow's result.
type end struct {
	reason contract.Reason
	msg    string
	err    error
	failed bool
}

// endWith ends the session with reason.
func endWith(reason contract.Reason, msg string) *end { return &end{reason: reason, msg: msg} }

// endCancelled ends the session cancelled by err.
func endCancelled(err error) *end { return &end{reason: contract.ReasonCancelled, err: err} }

// endFailed ends the session failed by err, which no retry fixes.
func endFailed(err error) *end { return &end{err: err, failed: true} }

func (s *session) run(ctx workflow.Context) (contract.SessionResult, error) {
	if s.in.CarryOver == nil {
		if e := s.begin(ctx); e != nil {
			return s.conclude(ctx, e)
		}
	}
	s.setState(ctx, contract.StateRunning)
	s.armDeadline(ctx)
	for {
		e, goOn := s.turn(ctx)
		if e != nil {
			return s.conclude(ctx, e)
		}
		if !goOn {
			return s.continueAsNew(ctx)
		}
	}
}

// conclude turns e into the workflow's result.
func (s *session) conclude(ctx workflow.Context, e *end) (contract.SessionResult, error) {
	switch {
	case e.failed:
		return s.fail(ctx, e.err)
	case e.err != nil:
		return s.cancelled(ctx, e.err)
	}
	return s.finish(ctx, e.reason, e.msg)
}

// begin prepares the workspace of a new session and plans its work, if it
// plans.
func (s *session) begin(ctx workflow.Context) *end {
	if err := s.prepare(ctx); errors.Is(err, flow.ErrStoppedOffline) {
		return endWith(contract.ReasonStopped, fmt.Sprintf("%s while host %s was offline (no iteration ran)", s.stopReason, s.in.Host))
	} else if err != nil {
		return endFailed(err)
	}
	if f := s.in.Fork; f != nil {
		s.adoptFork(ctx, *f)
		return nil
	}
	if s.in.Plan != nil {
		return s.plan(ctx)
	}
	if t := s.st.Prepared.Task; t.Complete && workflow.GetVersion(ctx, versionCompleteAtPrepare, workflow.DefaultVersion, 1) >= 1 {
		// Nothing to do: no agent runs for a task file that says all
		// is done.
		return endWith(contract.ReasonComplete, fmt.Sprintf("%s is already complete (%d of %d done): no iteration ran", t.File, t.Done, t.Total))
	}
	return nil
}

// minRunAge is the least age of a run that continues as new after
// limits.iterations-per-run (from GetVersion run-min-age 1 on). The
// server delays the first workflow task of a run that follows one younger
// than its WorkflowIdReuseMinimalInterval (1 s) until that interval has
// passed: a run of quick iterations goes on instead of paying that wait.
const minRunAge = 2 * time.Second

// runOldEnough reports whether this run is old enough to continue as new
// without the server's wait (always, for runs from before run-min-age).
func (s *session) runOldEnough(ctx workflow.Context) bool {
	if s.minRunAge == nil {
		on := workflow.GetVersion(ctx, "run-min-age", workflow.DefaultVersion, 1) == 1
		s.minRunAge = &on
	}
	return !*s.minRunAge || workflow.Now(ctx).Sub(workflow.GetInfo(ctx).WorkflowStartTime) >= minRunAge
}

// turn is one turn of the loop: the limits, a pause, one iteration and
// what its result asks for. It returns the session's end, if it ends, and
// goOn false when the run is to continue as new.
func (s *session) turn(ctx workflow.Context) (e *end, goOn bool) {
	// A stop or pause that came with the last result counts now, not
	// after one more iteration.
	if s.drains {
		s.drainSignals()
	}
	if e := s.rewindIfAsked(ctx); e != nil {
		return e, true
	}
	if e, reached := s.atLimit(ctx); reached {
		return e, true
	}
	if s.st.Paused {
		if err := s.pause(ctx); err != nil {
			return endCancelled(err), true
		}
		return nil, true
	}
	if s.ranThisRun >= s.st.Limits.IterationsPerRun && s.st.Limits.IterationsPerRun > 0 && s.runOldEnough(ctx) ||
		workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
		return nil, false
	}
	role := s.nextRole()
	res, timedOut, err := s.runIteration(ctx, role, nil)
	if e := s.iterationFailed(ctx, role, &res, timedOut, err); e != nil {
		return e, true
	}
	d := s.record(ctx, res)
	if d.complete && res.Checkpoint != nil && askBeforeComplete(ctx) {
		// The agent claims the work done and asks a question in the same
		// breath: the question is asked, and the loop goes on with its
		// answer (the next iteration claims again if nothing changes).
		s.logger.Info("completion claimed with a question: the question is asked first", "iteration", s.st.Iteration)
		d.complete = false
	}
	if d.complete {
		if e := s.confirmCompletion(ctx, d.msg); e != nil {
			return e, true
		}
	} else if d.done {
		return endWith(d.reason, d.msg), true
	}
	if e := s.checkpoints(ctx, res); e != nil {
		return e, true
	}
	if res.Outcome == contract.OutcomeRateLimited && !s.fallBack(ctx, res) {
		if err := s.sleepRateLimit(ctx, res); err != nil {
			return endCancelled(err), true
		}
	}
	return nil, true
}

func (s *session) prepare(ctx workflow.Context) error {
	opts := workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Minute,
		// The activity beats while git works: a worker that dies during
		// it is retried after this, not after the whole two minutes.
		HeartbeatTimeout: 20 * time.Second,
		Summary:          "prepare workspace",
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumAttempts:    3,
		},
	}
	var res contract.PrepareResult
	err := s.host.Execute(ctx, opts, &res, contract.ActivityPrepareWorkspace, contract.PrepareInput{
		SessionID: s.st.SessionID,
		Workspace: s.in.Workspace,
		Task:      s.in.Task,
		Git:       s.in.Git,
		Worktree:  s.in.Worktree,
		Planning:  s.in.Plan != nil,
	})
	if err != nil {
		return err
	}
	s.st.Prepared = res
	repo := s.in.Repo
	if repo == "" {
		repo = res.Repo
	}
	var attrs []temporal.SearchAttributeUpdate
	if repo != "" {
		attrs = append(attrs, flow.SearchRepo.ValueSet(repo))
	}
	if s.in.Host != "" {
		attrs = append(attrs, flow.SearchHost.ValueSet(s.in.Host))
	}
	if len(attrs) > 0 {
		if err := workflow.UpsertTypedSearchAttributes(ctx, attrs...); err != nil {
			return fmt.Errorf("upsert search attributes: %w", err)
		}
	}
	return nil
}

func (s *session) continueAsNew(ctx workflow.Context) (contract.SessionResult, error) {
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return s.cancelled(ctx, err)
	}
	// Signals that came with the last result are not yet applied.
	if s.drains {
		s.drainSignals()
	}
	if s.stopReason != "" {
		// A stop that arrived while handlers finished ends the session
		// here rather than in the next run.
		return s.finish(ctx, contract.ReasonStopped, s.stopReason)
	}
	next := s.in
	next.CarryOver = &s.st
	next.Fork = nil // adopted: the state carries it
	s.logger.Info("continuing as new", "iteration", s.st.Iteration, "runs", s.st.Runs)
	return contract.SessionResult{}, workflow.NewContinueAsNewError(ctx, Session, next)
}

func (s *session) finish(ctx workflow.Context, reason contract.Reason, msg string) (contract.SessionResult, error) {
	// An update still running (a respond, a set-limits) finishes before
	// the session does, so its caller gets its answer.
	if s.drains {
		if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
			return s.cancelled(ctx, err)
		}
	}
	s.status.Reason = reason
	s.status.EndedAt = workflow.Now(ctx)
	st := reason.EndState()
	if st == contract.StateLimited && workflow.GetVersion(ctx, versionLimitedState, workflow.DefaultVersion, 1) < 1 {
		st = contract.StateFailed // sessions of before the limited state
	}
	s.setState(ctx, st)
	s.logger.Info("session ended", "reason", reason, "message", msg)
	s.notifyEnd(ctx, st, fmt.Sprintf("ended %s: %s", reason, msg))
	var last *contract.IterationSummary
	if n := len(s.st.Recent); n > 0 {
		last = &s.st.Recent[n-1]
	}
	return contract.SessionResult{
		Last:       last,
		SessionID:  s.st.SessionID,
		Reason:     reason,
		Message:    msg,
		Iterations: s.st.Iteration,
		Totals:     s.st.Totals,
		Task:       s.st.Prepared.Task,
	}, nil
}

// cancelled records that the session was cancelled and returns err, which
// ends the workflow as cancelled.
func (s *session) cancelled(ctx workflow.Context, err error) (contract.SessionResult, error) {
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	s.status.Reason = contract.ReasonCancelled
	s.status.EndedAt = workflow.Now(ctx)
	s.setState(dctx, contract.StateStopped)
	return contract.SessionResult{}, err
}

// fail ends the session with an error no retry can fix.
func (s *session) fail(ctx workflow.Context, err error) (contract.SessionResult, error) {
	if temporal.IsCanceledError(err) {
		return contract.SessionResult{}, err
	}
	s.status.EndedAt = workflow.Now(ctx)
	s.setState(ctx, contract.StateFailed)
	msg := flow.RootMessage(err)
	if s.st.Iteration > 0 {
		msg = fmt.Sprintf("iteration %d: %s", s.st.Iteration, msg)
	}
	s.notifyEnd(ctx, contract.StateFailed, "failed: "+msg)
	return contract.SessionResult{}, temporal.NewNonRetryableApplicationError(msg, contract.ErrTypeIterationFailed, err)
}

// askBeforeComplete reports whether a question asked in the iteration
// that completes the work is asked before the session ends (from
// GetVersion ask-before-complete 1 on; before, the session completed and
// the question was dropped).
func askBeforeComplete(ctx workflow.Context) bool {
	return workflow.GetVersion(ctx, "ask-before-complete", workflow.DefaultVersion, 1) == 1
}
