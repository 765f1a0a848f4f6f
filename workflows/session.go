package workflows

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/durable-ralph/ralph/internal/words"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/contract"
)

// recentLimit bounds the iteration summaries a session keeps in its status
// and carries across continue-as-new.
const recentLimit = 10

// logLimit bounds the iteration summaries a run keeps for the iterations
// query: more than a run makes before it continues as new.
const logLimit = 200

// defaultRateLimitWait is how long a session sleeps when the agent was rate
// limited without saying when the limit resets.
const defaultRateLimitWait = 15 * time.Minute

// rateLimitMargin is added to a reset time: limits reset on the provider's
// clock, not ours.
const rateLimitMargin = time.Minute

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

// session is the state of one workflow run of a session.
type session struct {
	in     contract.SessionInput
	logger log.Logger
	status contract.Status

	prepared contract.PrepareResult
	guidance []string
	paused   bool
	// log is every iteration of this run (up to logLimit), for the
	// iterations query.
	log        []contract.IterationSummary
	stopReason string
	ranThisRun int
	// limits are the session's limits as raised by set-limits.
	limits contract.Limits
	// humanWait is time spent waiting on humans (checkpoints, pauses); it
	// moves the runtime deadline.
	humanWait time.Duration
	// deadlineTimer fires at the runtime deadline; re-armed whenever the
	// deadline moves.
	deadlineTimer  workflow.Future
	cancelDeadline workflow.CancelFunc
	// answer is the answer to the pending checkpoint, once given.
	answer *contract.Answer
	// published is the status last pushed to search attributes.
	published *contract.Status
	signals   signals
	// key is the execution's idempotency key in the workspace.
	key string
	// notices wait for the next iteration's prompt.
	notices []string
	// sinceReview counts executor iterations since the last review.
	sinceReview int
	// drains says whether this run takes pending signals itself before it
	// decides (see drainSignals); runs recorded before it did not.
	drains bool
	// host routes the workspace activities to the workspace's machine.
	host host
	// beforeOffline is the state to go back to when the host is back.
	beforeOffline contract.State
	// stopped delivers when a stop is requested, to end a wait for a host
	// that may never come back.
	stopped workflow.Channel
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
	if err := validateInput(in); err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrTypeInvalidInput, nil)
	}
	s := &session{in: in, limits: in.Limits}
	s.status = contract.Status{
		SessionID: workflow.GetInfo(ctx).WorkflowExecution.ID,
		Workspace: in.Workspace,
		Host:      in.Host,
		Worktree:  in.Worktree,
		State:     contract.StateStarting,
		StartedAt: workflow.Now(ctx),
		Limits:    in.Limits,
	}
	if c := in.CarryOver; c != nil {
		s.status.SessionID = c.SessionID
		s.status.StartedAt = c.StartedAt
		s.status.Iteration = c.Iteration
		s.status.Totals = c.Totals
		s.status.ConsecutiveFailures = c.ConsecutiveFailures
		s.status.NoProgress = c.NoProgress
		s.status.Recent = c.Recent
		s.status.Runs = c.Runs
		s.guidance = c.Guidance
		s.setPrepared(c.Prepared)
		if c.Limits.MaxIterations > 0 {
			s.limits = c.Limits
		}
		s.humanWait = c.HumanWait
		s.status.Answered = c.Answered
		s.paused = c.Paused
		s.key = c.ExecutionKey
		s.notices = c.Notices
		s.status.TaskFileBroken = c.TaskFileBroken
		s.status.IgnoredAnswers = c.IgnoredAnswers
		s.status.ReviewPending = c.ReviewPending
		s.sinceReview = c.SinceReview
	}
	s.status.Roles = in.RoleNames()
	if s.key == "" {
		// Unique per execution chain, the same in every run of it: a
		// second session on the workspace keys its records apart.
		info := workflow.GetInfo(ctx)
		s.key = info.WorkflowExecution.ID + "." + info.FirstRunID
	}
	s.status.ExecutionKey = s.key
	s.status.Runs++
	s.status.Limits = s.limits
	s.status.HumanWait = s.humanWait
	s.status.Guidance = s.guidance
	s.logger = log.With(workflow.GetLogger(ctx), "session", s.status.SessionID)

	err := workflow.SetQueryHandlerWithOptions(ctx, contract.QueryStatus, func() (contract.Status, error) {
		return s.status, nil
	}, workflow.QueryHandlerOptions{
		Description: "State, iteration, totals and recent iterations of this Ralph session",
	})
	if err != nil {
		return nil, fmt.Errorf("register %s query: %w", contract.QueryStatus, err)
	}
	s.log = append([]contract.IterationSummary(nil), s.status.Recent...)
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
		return nil, fmt.Errorf("register %s query: %w", contract.QueryIterations, err)
	}
	if err := s.registerUpdates(ctx); err != nil {
		return nil, err
	}
	s.signals = newSignals(ctx)
	s.stopped = workflow.NewBufferedChannel(ctx, 1)
	s.host = host{id: in.Host, timeout: in.HostTimeout, offline: s.hostOffline, stop: s.stopped}
	workflow.Go(ctx, s.listenAgentSlots)
	s.drains = workflow.GetVersion(ctx, versionDrainSignals, workflow.DefaultVersion, 1) >= 1
	if s.drains {
		workflow.Go(ctx, s.listen)
	} else {
		workflow.Go(ctx, s.listenSelecting)
	}
	return s, nil
}

func validateInput(in contract.SessionInput) error {
	var problems []string
	if in.Workspace == "" || !filepath.IsAbs(in.Workspace) {
		problems = append(problems, fmt.Sprintf("workspace %q must be an absolute path", in.Workspace))
	}
	if len(in.Agent.Command) == 0 || in.Agent.Command[0] == "" {
		problems = append(problems, "agent command is empty")
	}
	l := in.Limits
	if l.MaxIterations < 1 {
		problems = append(problems, "max iterations must be at least 1")
	}
	if l.MaxRuntime < 0 || l.MaxCostUSD < 0 {
		problems = append(problems, "max runtime and max cost must not be negative")
	}
	if l.IterationTimeout <= 0 || l.HeartbeatTimeout <= 0 {
		problems = append(problems, "iteration and heartbeat timeouts must be positive")
	}
	if len(problems) > 0 {
		return fmt.Errorf("invalid session input: %s", strings.Join(problems, "; "))
	}
	return nil
}

// signals are the session's signal channels.
type signals struct {
	stop, pause, resume, guide, checkpoint workflow.ReceiveChannel
}

func newSignals(ctx workflow.Context) signals {
	return signals{
		stop: workflow.GetSignalChannelWithOptions(ctx, contract.SignalStop, workflow.SignalChannelOptions{
			Description: "Finish the current iteration, then end the session as stopped",
		}),
		pause: workflow.GetSignalChannelWithOptions(ctx, contract.SignalPause, workflow.SignalChannelOptions{
			Description: "Pause before the next iteration",
		}),
		resume: workflow.GetSignalChannelWithOptions(ctx, contract.SignalResume, workflow.SignalChannelOptions{
			Description: "Resume a paused session",
		}),
		guide: workflow.GetSignalChannelWithOptions(ctx, contract.SignalGuide, workflow.SignalChannelOptions{
			Description: "Text added to the next iteration's prompt (a JSON string)",
		}),
		checkpoint: workflow.GetSignalChannelWithOptions(ctx, contract.SignalCheckpoint, workflow.SignalChannelOptions{
			Description: `Answer the pending checkpoint, whose ID the status query and the workflow's details show: {"id": "<ID>", "approve": true} or {"id": "<ID>", "reject": true, "reason": "…"} or {"id": "<ID>", "answer": "…"}`,
		}),
	}
}

// listen records control signals as they arrive; the loop reads the
// fields. It waits for signals without receiving them, so that they stay
// in their channels until taken: the loop takes them itself (drainSignals)
// when one arrives in the same workflow task as the result it acts on, and
// the listener only runs once the loop blocks.
func (s *session) listen(ctx workflow.Context) {
	for {
		err := workflow.Await(ctx, func() bool {
			return s.signals.stop.Len()+s.signals.pause.Len()+s.signals.resume.Len()+
				s.signals.guide.Len()+s.signals.checkpoint.Len() > 0
		})
		if err != nil {
			return
		}
		s.drainSignals()
	}
}

// listenSelecting is the listener of runs recorded before drainSignals: it
// receives signals in a selector, which takes a signal out of its channel
// as soon as it is delivered, before the listener runs.
func (s *session) listenSelecting(ctx workflow.Context) {
	for {
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(s.signals.stop, func(c workflow.ReceiveChannel, _ bool) {
			var sig contract.StopSignal
			c.Receive(ctx, &sig)
			s.onStop(sig)
		})
		sel.AddReceive(s.signals.pause, func(c workflow.ReceiveChannel, _ bool) {
			c.Receive(ctx, nil)
			s.paused = true
		})
		sel.AddReceive(s.signals.resume, func(c workflow.ReceiveChannel, _ bool) {
			c.Receive(ctx, nil)
			s.paused = false
		})
		sel.AddReceive(s.signals.guide, func(c workflow.ReceiveChannel, _ bool) {
			var text string
			c.Receive(ctx, &text)
			s.onGuide(text)
		})
		sel.AddReceive(s.signals.checkpoint, func(c workflow.ReceiveChannel, _ bool) {
			var ans contract.Answer
			c.Receive(ctx, &ans)
			s.onCheckpoint(ans)
		})
		sel.Select(ctx)
		if ctx.Err() != nil {
			return
		}
	}
}

// drainSignals applies every signal that has arrived but that the
// listener has not taken yet. A signal delivered in the same workflow task
// as the result the loop acts on reaches the listener only after the loop
// blocks again; before the loop hands its state on (continue-as-new) or
// ends, it takes them itself, in the order of the listener.
func (s *session) drainSignals() {
	for {
		got := false
		var sig contract.StopSignal
		for s.signals.stop.ReceiveAsync(&sig) {
			s.onStop(sig)
			sig, got = contract.StopSignal{}, true
		}
		for s.signals.pause.ReceiveAsync(nil) {
			s.paused, got = true, true
		}
		for s.signals.resume.ReceiveAsync(nil) {
			s.paused, got = false, true
		}
		var text string
		for s.signals.guide.ReceiveAsync(&text) {
			s.onGuide(text)
			text, got = "", true
		}
		var ans contract.Answer
		for s.signals.checkpoint.ReceiveAsync(&ans) {
			s.onCheckpoint(ans)
			ans, got = contract.Answer{}, true
		}
		if !got {
			return
		}
	}
}

func (s *session) onStop(sig contract.StopSignal) {
	s.stopped.SendAsync(true)
	s.stopReason = "stop requested"
	if sig.Reason != "" {
		s.stopReason = "stop requested: " + sig.Reason
	}
	s.status.StopRequested = true
}

func (s *session) onGuide(text string) {
	if text = strings.TrimSpace(text); text != "" {
		s.addGuidance(text)
	}
}

func (s *session) onCheckpoint(ans contract.Answer) {
	if err := s.validateAnswer(ans); err != nil {
		// A signal cannot be refused; a stale or malformed one is
		// dropped and counted, never applied to another question.
		s.status.IgnoredAnswers++
		s.logger.Warn("checkpoint signal ignored", "id", ans.ID, "error", err)
		return
	}
	s.answer = &ans
}

func (s *session) run(ctx workflow.Context) (contract.SessionResult, error) {
	if s.in.CarryOver == nil {
		if err := s.prepare(ctx); errors.Is(err, errStoppedOffline) {
			return s.finish(ctx, contract.ReasonStopped, fmt.Sprintf("%s while host %s was offline (no iteration ran)", s.stopReason, s.in.Host))
		} else if err != nil {
			return s.fail(ctx, err)
		}
		if s.in.Plan != nil {
			if r, done, err := s.plan(ctx); done || err != nil {
				return r, err
			}
		} else if t := s.prepared.Task; t.Complete && workflow.GetVersion(ctx, versionCompleteAtPrepare, workflow.DefaultVersion, 1) >= 1 {
			// Nothing to do: no agent runs for a task file that says
			// all is done.
			return s.finish(ctx, contract.ReasonComplete, fmt.Sprintf("%s is already complete (%d of %d done): no iteration ran", t.File, t.Done, t.Total))
		}
	}
	s.setState(ctx, contract.StateRunning)
	s.armDeadline(ctx)

	for {
		// A stop or pause that came with the last result counts now,
		// not after one more iteration.
		if s.drains {
			s.drainSignals()
		}
		if reason, msg, done := s.limitReached(ctx); done {
			return s.finish(ctx, reason, msg)
		}
		if s.paused {
			if err := s.pause(ctx); err != nil {
				return s.cancelled(ctx, err)
			}
			continue
		}
		if s.ranThisRun >= s.limits.IterationsPerRun && s.limits.IterationsPerRun > 0 ||
			workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			return s.continueAsNew(ctx)
		}

		role := s.nextRole()
		res, timedOut, err := s.runIteration(ctx, role, nil)
		if r, done, err := s.iterationFailed(ctx, role, &res, timedOut, err); done || err != nil {
			return r, err
		}
		d := s.record(ctx, res)
		if d.complete {
			if result, done, err := s.confirmCompletion(ctx, d.msg); err != nil {
				return s.cancelled(ctx, err)
			} else if done {
				return result, nil
			}
		} else if d.done {
			return s.finish(ctx, d.reason, d.msg)
		}
		if result, done, err := s.checkpoints(ctx, res); err != nil {
			return s.cancelled(ctx, err)
		} else if done {
			return result, nil
		}
		if res.Outcome == contract.OutcomeRateLimited {
			if err := s.sleepRateLimit(ctx, res); err != nil {
				return s.cancelled(ctx, err)
			}
		}
	}
}

func (s *session) prepare(ctx workflow.Context) error {
	opts := workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Minute,
		Summary:             "prepare workspace",
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumAttempts:    3,
		},
	}
	var res contract.PrepareResult
	err := s.host.execute(ctx, opts, &res, contract.ActivityPrepareWorkspace, contract.PrepareInput{
		SessionID: s.status.SessionID,
		Workspace: s.in.Workspace,
		Task:      s.in.Task,
		Git:       s.in.Git,
		Worktree:  s.in.Worktree,
		Planning:  s.in.Plan != nil,
	})
	if err != nil {
		return err
	}
	s.setPrepared(res)
	repo := s.in.Repo
	if repo == "" {
		repo = res.Repo
	}
	var attrs []temporal.SearchAttributeUpdate
	if repo != "" {
		attrs = append(attrs, contract.SearchRalphRepo.ValueSet(repo))
	}
	if s.in.Host != "" {
		attrs = append(attrs, contract.SearchRalphHost.ValueSet(s.in.Host))
	}
	if len(attrs) > 0 {
		if err := workflow.UpsertTypedSearchAttributes(ctx, attrs...); err != nil {
			return fmt.Errorf("upsert search attributes: %w", err)
		}
	}
	return nil
}

func (s *session) setPrepared(p contract.PrepareResult) {
	s.prepared = p
	s.status.Mode = p.Mode
	s.status.Branch = p.Branch
	if s.status.Task.Mode == "" {
		s.status.Task = p.Task
	}
}

// runIteration runs the next iteration, raced against the session's runtime
// limit. When the limit wins, the iteration is cancelled (which kills the
// agent's process group) and timedOut is true.
func (s *session) runIteration(ctx workflow.Context, role string, plan *contract.PlanRequest) (res contract.IterationResult, timedOut bool, err error) {
	s.status.Iteration++
	s.status.Running = true
	s.status.Role = roleField(role)
	if s.status.Roles != "" {
		s.status.Role = role
	}
	s.ranThisRun++
	s.publish(ctx)
	defer func() { s.status.Running = false }()

	in := contract.IterationInput{
		SessionID:     s.status.SessionID,
		ExecutionKey:  s.key,
		Iteration:     s.status.Iteration,
		MaxIterations: s.limits.MaxIterations,
		Workspace:     s.in.Workspace,
		Agent:         s.in.Agent,
		Task:          s.iterationTask(),
		Git:           s.in.Git,
		Guidance:      s.guidance,
		Branch:        s.prepared.Branch,
		Notices:       s.notices,
	}
	if role != contract.RoleExecutor {
		in.Role, in.Plan = role, plan
		ra := s.in.AgentOf(role)
		in.Agent, in.RoleInstructions = ra.Agent, ra.Instructions
	}
	in.Agent.Timeout = s.limits.IterationTimeout
	consumed := len(s.guidance)
	if role == contract.RoleReviewer {
		// A reviewer reads the guidance; it stays for the executor
		// who is to act on it.
		consumed = 0
	}

	actCtx, cancel := workflow.WithCancel(ctx)
	opts := s.host.options(ctx, workflow.ActivityOptions{
		// The activity enforces IterationTimeout itself and reports a
		// timeout as a result; StartToClose is the backstop for a worker
		// that cannot.
		StartToCloseTimeout: s.limits.IterationTimeout + 2*time.Minute,
		HeartbeatTimeout:    s.limits.HeartbeatTimeout,
		WaitForCancellation: true,
		Summary:             s.iterationSummary(role),
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    time.Minute,
			MaximumAttempts:    5,
			NonRetryableErrorTypes: []string{
				contract.ErrTypeAgentNotFound,
				contract.ErrTypeAgentPermanent,
				contract.ErrTypeInvalidWorkspace,
				contract.ErrTypeInvalidTaskFile,
				contract.ErrTypeInvalidAgentConfig,
			},
		},
	})
	var fut workflow.Future
	for {
		fut = workflow.ExecuteActivity(workflow.WithActivityOptions(actCtx, opts), contract.ActivityRunIteration, in)
		done := false
		for !done && !timedOut {
			sel := workflow.NewSelector(ctx)
			sel.AddFuture(fut, func(f workflow.Future) {
				err = f.Get(ctx, &res)
				done = true
			})
			if deadline := s.deadlineTimer; deadline != nil {
				sel.AddFuture(deadline, func(f workflow.Future) {
					// A timer that was cancelled (the deadline moved, or the
					// session is cancelled) is not the runtime running out.
					if f.Get(ctx, nil) == nil {
						timedOut = true
					}
				})
			}
			sel.Select(ctx)
			if ctx.Err() != nil {
				// The session itself was cancelled: the activity is being
				// cancelled with it; wait until its agent is gone.
				_ = fut.Get(ctx, nil)
				return res, false, temporal.NewCanceledError()
			}
		}
		if busy, last := isSlotBusy(err); busy && !timedOut {
			// Its worker's agents were all busy: the same iteration
			// waits on in a new attempt, as it would have in this one.
			if last != nil && last.StartHead != "" {
				in.Resume = last
			}
			err = nil
			continue
		}
		gone, last := isHostGone(err)
		if timedOut || !gone || !s.host.routed() {
			break
		}
		// No worker of the workspace's host took the iteration in time:
		// wait for it, then run the same iteration again, from where a
		// dead attempt of it left off. It is not a failed iteration.
		if last != nil {
			in.Resume = last
		}
		err = nil
		if s.stopReason != "" {
			return res, false, errStoppedOffline // stopped before the host went away
		}
		expired, stopped, werr := s.host.awaitBack(ctx, func() workflow.Future { return s.deadlineTimer })
		if werr != nil {
			return res, false, werr
		}
		if stopped {
			return res, false, errStoppedOffline
		}
		if expired {
			cancel()
			return res, true, nil
		}
	}
	if timedOut {
		cancel()
		// Wait for the cancellation to reach the agent, so the session
		// never ends while its agent still writes to the workspace.
		if cerr := fut.Get(ctx, &res); cerr == nil {
			s.account(res)
		}
		return res, true, nil
	}
	cancel()
	if s.status.State == contract.StateWaitingForAgentSlot {
		s.setState(ctx, contract.StateRunning) // the slot's own signal was lost
	}
	if err == nil {
		s.guidance = s.guidance[consumed:]
		s.status.Guidance = s.guidance
		s.notices = res.Notices
	}
	return res, false, err
}

func (s *session) iterationTask() contract.TaskSettings {
	t := s.in.Task
	if s.prepared.Mode != "" {
		t.Mode = s.prepared.Mode
	}
	if s.prepared.CompletionPromise != "" {
		t.CompletionPromise = s.prepared.CompletionPromise
	}
	return t
}

func (s *session) iterationSummary(role string) string {
	sum := fmt.Sprintf("iteration %d", s.status.Iteration)
	if s.in.Roles != nil || s.in.Plan != nil {
		// Sessions without roles keep the summaries they always had.
		sum += " (" + role + ")"
	}
	switch role {
	case contract.RoleReviewer:
		return sum + ": review " + taskFileName(s.status.Task)
	case contract.RolePlanner:
		return sum + ": plan " + contract.PRDFile
	}
	if t := s.status.Task; t.CurrentID != "" || t.CurrentTitle != "" {
		sum += ": " + strings.TrimSpace(t.CurrentID+" "+t.CurrentTitle)
	}
	return sum
}

// account adds an iteration's cost and tokens to the totals. It is called
// exactly once per iteration result.
func (s *session) account(res contract.IterationResult) {
	t := &s.status.Totals
	t.CostUSD += res.CostUSD
	if res.CostNote != "" {
		t.CostUnknown++
	}
	t.Usage = t.Usage.Add(res.Usage)
	t.Turns += res.NumTurns
	if res.Commit != "" {
		t.Commits++
	}
	t.Commits += res.AgentCommits
}

// decision is what an iteration's result means for the session.
type decision struct {
	done   bool // the session ends with reason
	reason contract.Reason
	msg    string
	// complete is a completion claim the task file confirms; the session
	// ends complete unless a human must confirm first.
	complete bool
}

// record folds an iteration's result into the session and decides whether
// the session ends.
func (s *session) record(ctx workflow.Context, res contract.IterationResult) decision {
	s.account(res)
	if res.Repair && res.TaskFileError == "" && res.Task.Total < s.status.Task.Total {
		// The repair made the file readable by dropping some of it.
		s.notices = append(s.notices, fmt.Sprintf(
			"The last iteration repaired %s, but it now has %d stories or tasks where it had %d before it broke. Restore the missing ones, with their state, from the git history of the file.",
			taskFileName(s.status.Task), res.Task.Total, s.status.Task.Total))
	}
	if res.Task.Mode != "" {
		s.status.Task = res.Task
	}
	sum := contract.IterationSummary{
		Iteration:    s.status.Iteration,
		Outcome:      res.Outcome,
		Reason:       res.Reason,
		CostUSD:      res.CostUSD,
		CostNote:     res.CostNote,
		Tokens:       res.Usage.Total(),
		FilesChanged: len(res.FilesChanged),
		Commit:       res.Commit,
		Story:        strings.TrimSpace(res.StoryID + " " + res.StoryTitle),
		Claimed:      res.CompletionClaimed,
		Duration:     res.Duration,
		FinishedAt:   workflow.Now(ctx),
		Warnings:     res.Warnings,
		Notices:      res.Notices,
	}
	sum.Live, sum.LiveStartedAt = res.Live, res.LiveStartedAt
	defer func() {
		full := sum
		sum.Live, sum.LiveStartedAt = nil, time.Time{} // status and carry-over stay small
		s.status.Recent = append(s.status.Recent, sum)
		s.log = append(s.log, full)
		if n := len(s.log); n > logLimit {
			s.log = append([]contract.IterationSummary(nil), s.log[n-logLimit:]...)
		}
		if n := len(s.status.Recent); n > recentLimit {
			s.status.Recent = append([]contract.IterationSummary(nil), s.status.Recent[n-recentLimit:]...)
		}
		// The search attributes follow when the loop next blocks
		// (the next iteration, a wait or the end), so an iteration
		// costs one upsert, not two.
		workflow.SetCurrentDetails(ctx, s.details())
		s.notifyParent(ctx, sum)
	}()

	if res.Halt != "" {
		return decision{done: true, reason: contract.ReasonGitRewritten, msg: res.Halt}
	}
	sum.Role = res.Role
	if sum.Role == "" && s.status.Roles != "" {
		sum.Role = contract.RoleExecutor
	}
	switch res.Role {
	case contract.RoleReviewer:
		return s.recordReview(res, &sum)
	case contract.RolePlanner:
		return s.recordPlan(res, &sum)
	}
	if res.TaskFileError != "" {
		s.status.TaskFileBroken++
		if repairs := s.status.TaskFileBroken - 1; repairs >= s.maxRepairs() {
			return decision{done: true, reason: contract.ReasonTaskFileInvalid, msg: fmt.Sprintf(
				"the task file is still unreadable after %d repair attempts: %s", repairs, res.TaskFileError)}
		}
	} else if res.Outcome != contract.OutcomeRateLimited {
		s.status.TaskFileBroken = 0
	}

	if d, ok := s.countOutcome(res, ""); !ok {
		return d
	}
	s.sinceReview++

	if res.CompletionClaimed {
		s.status.Totals.CompletionClaims++
		check := res.Check
		switch {
		case check != nil && !check.Passed:
			// The claim does not hold; the next prompt has the check's
			// output (res.Notices).
			sum.Reason = fmt.Sprintf("completion claimed but the check `%s` failed (exit status %d)", check.Command, check.ExitCode)
			s.logger.Warn("completion claim refused by the check command", "iteration", s.status.Iteration, "exit", check.ExitCode)
		case (res.Task.Complete || !res.Task.Verifiable) && s.reviews():
			// The task file agrees; the reviewer has the last word.
			s.status.ReviewPending = true
			sum.Reason = "completion claimed; the reviewer checks the work next"
			return decision{}
		case res.Task.Complete || !res.Task.Verifiable:
			sum.Verified = true
			by := taskFileName(res.Task)
			if check != nil {
				by = fmt.Sprintf("the check `%s`", check.Command)
				if res.Task.Verifiable {
					by = taskFileName(res.Task) + " and " + by
				}
			}
			return decision{complete: true, reason: contract.ReasonComplete, msg: fmt.Sprintf("completion claimed in iteration %d and confirmed by %s", s.status.Iteration, by)}
		default:
			sum.Reason = fmt.Sprintf("completion claimed but %s has %d of %d done", taskFileName(res.Task), res.Task.Done, res.Task.Total)
			s.logger.Warn("completion claim contradicted by task file", "iteration", s.status.Iteration, "done", res.Task.Done, "total", res.Task.Total)
		}
	}

	// Asking a human is progress of a kind: the answer changes what the
	// next iteration does.
	if res.Progressed() || res.Checkpoint != nil {
		s.status.NoProgress = 0
	} else {
		s.status.NoProgress++
		if m := s.limits.MaxNoProgress; m > 0 && s.status.NoProgress >= m {
			return decision{done: true, reason: contract.ReasonNoProgress, msg: fmt.Sprintf("%s in a row changed no file and made no commit", words.Count(s.status.NoProgress, "iteration"))}
		}
	}
	return decision{}
}

// countOutcome counts how an iteration ended. A rate limit is not the
// agent's fault and not progress: the same iteration number runs again
// after the wait. A failure adds to the failure streak, which may end the
// session; who names the role in that message. ok says the iteration
// succeeded, and what it did is for the caller to read.
func (s *session) countOutcome(res contract.IterationResult, who string) (d decision, ok bool) {
	switch res.Outcome {
	case contract.OutcomeRateLimited:
		s.status.Iteration--
		s.ranThisRun--
		s.status.Totals.RateLimitWaits++
		return decision{}, false
	case contract.OutcomeSuccess:
		s.status.ConsecutiveFailures = 0
		return decision{}, true
	}
	s.status.Totals.Failures++
	s.status.ConsecutiveFailures++
	if m := s.limits.MaxConsecutiveFailures; m > 0 && s.status.ConsecutiveFailures >= m {
		return decision{done: true, reason: contract.ReasonConsecutiveFailures, msg: fmt.Sprintf("%d consecutive failed iterations; last%s: %s", s.status.ConsecutiveFailures, who, res.Reason)}, false
	}
	return decision{}, false
}

// notifyParent tells the queue that started this session about an
// iteration. The signal is not waited for: a queue that is gone must not
// hold up the session.
func (s *session) notifyParent(ctx workflow.Context, sum contract.IterationSummary) {
	parent := workflow.GetInfo(ctx).ParentWorkflowExecution
	if !s.in.NotifyParent || parent == nil {
		return
	}
	workflow.SignalExternalWorkflow(ctx, parent.ID, "", contract.SignalSessionProgress, contract.SessionProgress{SessionID: s.status.SessionID, Iteration: sum})
}

// maxRepairs is how many iterations may try to repair a broken task file.
func (s *session) maxRepairs() int {
	if s.limits.MaxTaskFileRepairs > 0 {
		return s.limits.MaxTaskFileRepairs
	}
	return contract.DefaultMaxTaskFileRepairs
}

func taskFileName(t contract.TaskState) string {
	if t.File != "" {
		return t.File
	}
	return "the task file"
}

// limitReached checks the limits that end a session before an iteration.
func (s *session) limitReached(ctx workflow.Context) (contract.Reason, string, bool) {
	l := s.limits
	switch {
	case s.stopReason != "":
		return contract.ReasonStopped, s.stopReason, true
	case l.MaxRuntime > 0 && !workflow.Now(ctx).Before(s.deadline()):
		return contract.ReasonMaxRuntime, fmt.Sprintf("max runtime %s reached", l.MaxRuntime), true
	case l.MaxCostUSD > 0 && s.status.Totals.CostUSD >= l.MaxCostUSD:
		return contract.ReasonMaxCost, fmt.Sprintf("cost $%.4f reached the limit of $%.2f", s.status.Totals.CostUSD, l.MaxCostUSD), true
	case s.status.Iteration >= l.MaxIterations:
		return contract.ReasonMaxIterations, fmt.Sprintf("%s ran, the limit", words.Count(s.status.Iteration, "iteration")), true
	}
	return "", "", false
}

// deadline is when the runtime limit ends the session: the start plus the
// limit plus the time spent waiting on humans. Meaningful only with a
// runtime limit.
func (s *session) deadline() time.Time {
	return s.status.StartedAt.Add(s.limits.MaxRuntime + s.humanWait)
}

// workingTime is how much of the runtime limit the session has used.
func (s *session) workingTime(ctx workflow.Context) time.Duration {
	return workflow.Now(ctx).Sub(s.status.StartedAt) - s.humanWait
}

// armDeadline (re)starts the timer of the runtime limit, after the limit
// or the time spent on humans changed.
func (s *session) armDeadline(ctx workflow.Context) {
	if s.cancelDeadline != nil {
		s.cancelDeadline()
		s.cancelDeadline, s.deadlineTimer = nil, nil
	}
	if s.limits.MaxRuntime <= 0 {
		return
	}
	tctx, cancel := workflow.WithCancel(ctx)
	s.deadlineTimer = workflow.NewTimerWithOptions(tctx, max(s.deadline().Sub(workflow.Now(ctx)), time.Millisecond),
		workflow.TimerOptions{Summary: "max runtime"})
	s.cancelDeadline = cancel
}

// untilDeadline is the runtime left, or forever without a runtime limit.
func (s *session) untilDeadline(ctx workflow.Context) time.Duration {
	if s.limits.MaxRuntime <= 0 {
		return time.Duration(1<<63 - 1)
	}
	return max(s.deadline().Sub(workflow.Now(ctx)), 0)
}

// humanWaitSince adds the time since start to the time spent on humans
// and moves the runtime deadline accordingly.
func (s *session) humanWaitSince(ctx workflow.Context, start time.Time) {
	s.humanWait += workflow.Now(ctx).Sub(start)
	s.status.HumanWait = s.humanWait
	s.armDeadline(ctx)
}

// pause waits while the session is paused. The pause does not count
// against the runtime limit.
func (s *session) pause(ctx workflow.Context) error {
	s.status.Paused = true
	s.setState(ctx, contract.StatePaused)
	start := workflow.Now(ctx)
	err := workflow.Await(ctx, func() bool { return !s.paused || s.stopReason != "" })
	s.status.Paused = false
	if err != nil {
		return err
	}
	s.humanWaitSince(ctx, start)
	s.setState(ctx, contract.StateRunning)
	return nil
}

// sleepRateLimit waits on a timer until the agent's rate limit resets.
func (s *session) sleepRateLimit(ctx workflow.Context, res contract.IterationResult) error {
	wait := defaultRateLimitWait
	if !res.RateLimitResetsAt.IsZero() {
		wait = res.RateLimitResetsAt.Sub(workflow.Now(ctx)) + rateLimitMargin
		if wait < rateLimitMargin {
			wait = rateLimitMargin
		}
	}
	s.logger.Info("rate limited; sleeping", "wait", wait, "resets_at", res.RateLimitResetsAt)
	s.setState(ctx, contract.StateRateLimited)
	_, err := workflow.AwaitWithTimeout(ctx, min(wait, s.untilDeadline(ctx)), func() bool { return s.stopReason != "" })
	if err != nil {
		return err
	}
	s.setState(ctx, contract.StateRunning)
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
	next.CarryOver = &contract.CarryOver{
		SessionID:           s.status.SessionID,
		StartedAt:           s.status.StartedAt,
		Iteration:           s.status.Iteration,
		Totals:              s.status.Totals,
		ConsecutiveFailures: s.status.ConsecutiveFailures,
		NoProgress:          s.status.NoProgress,
		Prepared:            s.prepared,
		Recent:              s.status.Recent,
		Guidance:            s.guidance,
		Runs:                s.status.Runs,
		Limits:              s.limits,
		HumanWait:           s.humanWait,
		Answered:            s.status.Answered,
		Paused:              s.paused,
		ExecutionKey:        s.key,
		Notices:             s.notices,
		TaskFileBroken:      s.status.TaskFileBroken,
		IgnoredAnswers:      s.status.IgnoredAnswers,
		ReviewPending:       s.status.ReviewPending,
		SinceReview:         s.sinceReview,
	}
	next.CarryOver.Prepared.Task = s.status.Task
	s.logger.Info("continuing as new", "iteration", s.status.Iteration, "runs", s.status.Runs)
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
	switch reason {
	case contract.ReasonComplete:
		s.setState(ctx, contract.StateCompleted)
	case contract.ReasonStopped:
		s.setState(ctx, contract.StateStopped)
	case contract.ReasonMaxIterations, contract.ReasonMaxRuntime, contract.ReasonMaxCost:
		if workflow.GetVersion(ctx, versionLimitedState, workflow.DefaultVersion, 1) >= 1 {
			s.setState(ctx, contract.StateLimited)
		} else {
			s.setState(ctx, contract.StateFailed)
		}
	default:
		s.setState(ctx, contract.StateFailed)
	}
	s.logger.Info("session ended", "reason", reason, "message", msg)
	var last *contract.IterationSummary
	if n := len(s.status.Recent); n > 0 {
		last = &s.status.Recent[n-1]
	}
	return contract.SessionResult{
		Last:       last,
		SessionID:  s.status.SessionID,
		Reason:     reason,
		Message:    msg,
		Iterations: s.status.Iteration,
		Totals:     s.status.Totals,
		Task:       s.status.Task,
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
	msg := rootMessage(err)
	if s.status.Iteration > 0 {
		msg = fmt.Sprintf("iteration %d: %s", s.status.Iteration, msg)
	}
	return contract.SessionResult{}, temporal.NewNonRetryableApplicationError(msg, contract.ErrTypeIterationFailed, err)
}

func (s *session) setState(ctx workflow.Context, st contract.State) {
	s.status.State = st
	s.publish(ctx)
}

// publish pushes the status to search attributes (those that changed
// since the last push) and to the details the Temporal UI shows.
func (s *session) publish(ctx workflow.Context) {
	var updates []temporal.SearchAttributeUpdate
	st := s.status
	if p := s.published; p == nil || p.State != st.State {
		updates = append(updates, contract.SearchRalphStatus.ValueSet(string(st.State)))
	}
	if p := s.published; p == nil || p.Iteration != st.Iteration {
		updates = append(updates, contract.SearchRalphIteration.ValueSet(int64(st.Iteration)))
	}
	if p := s.published; p == nil || p.Totals.CostUSD != st.Totals.CostUSD {
		updates = append(updates, contract.SearchRalphCostUSD.ValueSet(st.Totals.CostUSD))
	}
	if len(updates) > 0 {
		if err := workflow.UpsertTypedSearchAttributes(ctx, updates...); err != nil {
			s.logger.Warn("upsert search attributes", "error", err)
		}
		s.published = &st
	}
	workflow.SetCurrentDetails(ctx, s.details())
}

func (s *session) details() string {
	st := s.status
	var b strings.Builder
	b.WriteString(fmt.Sprintf("**Ralph session** `%s`: **%s**", st.SessionID, st.State))
	if st.Reason != "" {
		b.WriteString(fmt.Sprintf(" (%s)", st.Reason))
	}
	// The UI renders text between dollar signs as math: write USD.
	b.WriteString(fmt.Sprintf("\n\nIteration %d of %d, cost %.4f USD", st.Iteration, st.Limits.MaxIterations, st.Totals.CostUSD))
	if st.Limits.MaxCostUSD > 0 {
		b.WriteString(fmt.Sprintf(" of %.2f", st.Limits.MaxCostUSD))
	}
	b.WriteString(fmt.Sprintf(", %d tokens, %d commits", st.Totals.Usage.Total(), st.Totals.Commits))
	if st.Task.Total > 0 {
		b.WriteString(fmt.Sprintf("\n\nTasks (%s): %d of %d done", taskFileName(st.Task), st.Task.Done, st.Task.Total))
		if st.Task.CurrentID != "" || st.Task.CurrentTitle != "" {
			b.WriteString(fmt.Sprintf("; next: %s", strings.TrimSpace(st.Task.CurrentID+" "+st.Task.CurrentTitle)))
		}
	}
	if cp := st.Pending; cp != nil {
		b.WriteString(fmt.Sprintf("\n\n**Waiting for a human** (checkpoint `%s`, %s): %s", cp.ID, cp.Type, cp.Question))
		if len(cp.Options) > 0 {
			b.WriteString("\n\nOptions: " + strings.Join(cp.Options, " / "))
		}
		if cp.Context != "" {
			// On a paragraph of its own: a plan's lines are a list.
			b.WriteString("\n\nContext:\n\n" + cp.Context)
		}
		b.WriteString(fmt.Sprintf("\n\nAnswer with the `%s` signal, input `{\"id\": \"%s\", \"approve\": true}`, `{\"id\": \"%s\", \"reject\": true, \"reason\": \"…\"}` or `{\"id\": \"%s\", \"answer\": \"…\"}`; or run `starter respond %s --checkpoint %s --approve` (or `--reject --reason …`, `--answer …`).", contract.SignalCheckpoint, cp.ID, cp.ID, cp.ID, st.SessionID, cp.ID))
		if !cp.Deadline.IsZero() {
			b.WriteString(fmt.Sprintf(" Times out at %s.", cp.Deadline.UTC().Format(time.RFC3339)))
		}
	}
	switch st.State {
	case contract.StateHostOffline:
		b.WriteString(fmt.Sprintf("\n\n**Host offline**: no worker of host `%s` has taken this session's work for %s. The session waits for it and loses nothing: start the worker on %s again (`worker --host-id %s`).",
			st.Host, s.hostTimeout(), st.Host, st.Host))
	case contract.StateWaitingForAgentSlot:
		b.WriteString(fmt.Sprintf("\n\nWaiting for an agent slot: the worker on `%s` already runs as many agents as its `worker.max-agents` allows.", st.Host))
	}
	if st.State == contract.StatePaused {
		b.WriteString(fmt.Sprintf("\n\nPaused: send the `%s` signal to continue.", contract.SignalResume))
	}
	return b.String()
}

// hostTimeout is the session's host timeout.
func (s *session) hostTimeout() time.Duration {
	if s.in.HostTimeout > 0 {
		return s.in.HostTimeout
	}
	return contract.DefaultHostTimeout
}

// hostOffline shows the session waiting for its host's worker (off) or
// back to what it did before.
func (s *session) hostOffline(ctx workflow.Context, off bool) {
	if off {
		s.beforeOffline = s.status.State
		s.logger.Warn("host offline: waiting for its worker", "host", s.in.Host)
		s.setState(ctx, contract.StateHostOffline)
		return
	}
	s.logger.Info("host back", "host", s.in.Host)
	s.setState(ctx, s.beforeOffline)
}

// listenAgentSlots shows when the running iteration waits for an agent
// slot of its worker (worker.max-agents) and when it got one.
func (s *session) listenAgentSlots(ctx workflow.Context) {
	ch := workflow.GetSignalChannelWithOptions(ctx, contract.SignalAgentSlot, workflow.SignalChannelOptions{
		Description: "Sent by the worker: the running iteration waits for an agent slot, or got one",
	})
	for {
		var slot contract.AgentSlot
		if !ch.Receive(ctx, &slot) {
			return
		}
		if !s.status.Running || slot.Iteration != s.status.Iteration {
			continue // about an iteration that has ended
		}
		switch {
		case slot.Waiting && s.status.State == contract.StateRunning:
			s.setState(ctx, contract.StateWaitingForAgentSlot)
		case !slot.Waiting && s.status.State == contract.StateWaitingForAgentSlot:
			s.setState(ctx, contract.StateRunning)
		}
	}
}

// isPermanent reports whether err is a failure that no retry can fix.
func isPermanent(err error) bool {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		if appErr.NonRetryable() {
			return true
		}
		switch appErr.Type() {
		case contract.ErrTypeAgentNotFound, contract.ErrTypeAgentPermanent,
			contract.ErrTypeInvalidWorkspace, contract.ErrTypeInvalidTaskFile,
			contract.ErrTypeInvalidAgentConfig, contract.ErrTypeDirtyWorkspace:
			return true
		}
	}
	return false
}

// rootMessage is the message of the innermost application error in err, so
// a user reads "agent binary \"claude\" not found" instead of the chain of
// activity wrappers around it.
func rootMessage(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Error()
	}
	return err.Error()
}
