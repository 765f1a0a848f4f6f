package session

import (
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/words"
	"github.com/durable-ralph/ralph/workflows/flow"
)

// runIteration runs the next iteration, raced against the session's runtime
// limit. When the limit wins, the iteration is cancelled (which kills the
// agent's process group) and timedOut is true.
func (s *session) runIteration(ctx workflow.Context, role string, plan *contract.PlanRequest) (res contract.IterationResult, timedOut bool, err error) {
	s.st.Iteration++
	s.status.Running = true
	s.status.Role = roleField(role)
	if s.status.Roles != "" {
		s.status.Role = role
	}
	s.ranThisRun++
	s.publish(ctx)
	defer func() { s.status.Running = false }()

	in := s.iterationInput(role, plan)
	s.useFallback(ctx, &in)
	consumed := len(s.st.Guidance)
	if role == contract.RoleReviewer {
		// A reviewer reads the guidance; it stays for the executor
		// who is to act on it.
		consumed = 0
	}
	actCtx, cancel := workflow.WithCancel(ctx)
	opts := s.iterationOptions(ctx, role)
	var fut workflow.Future
	for {
		fut = workflow.ExecuteActivity(workflow.WithActivityOptions(actCtx, opts), contract.ActivityRunIteration, in)
		var cancelled bool
		if timedOut, cancelled, err = s.awaitIteration(ctx, fut, &res); cancelled {
			return res, false, temporal.NewCanceledError()
		}
		next, rerr := s.afterAttempt(ctx, &in, err, timedOut)
		if next == attemptAgain {
			err = nil
			continue
		}
		if next == attemptReturn {
			return res, false, rerr
		}
		if next == attemptExpired {
			cancel()
			return res, true, nil
		}
		break
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
		s.st.Guidance = s.st.Guidance[consumed:]
		s.st.Notices = res.Notices
		// The result counted what the iterations waiting for it cost.
		s.st.Uncounted = nil
	}
	return res, false, err
}

// iterationInput is the input of the next iteration of role.
func (s *session) iterationInput(role string, plan *contract.PlanRequest) contract.IterationInput {
	in := contract.IterationInput{
		SessionID:     s.st.SessionID,
		ExecutionKey:  s.st.ExecutionKey,
		Iteration:     s.st.Iteration,
		MaxIterations: s.st.Limits.MaxIterations,
		Workspace:     s.in.Workspace,
		Agent:         s.in.Agent,
		Task:          s.iterationTask(),
		Git:           s.in.Git,
		Guidance:      s.st.Guidance,
		Branch:        s.st.Prepared.Branch,
		Notices:       s.st.Notices,
		Uncounted:     s.st.Uncounted,
	}
	if role != contract.RoleExecutor {
		in.Role, in.Plan = role, plan
		ra := s.in.AgentOf(role)
		in.Agent, in.RoleInstructions = ra.Agent, ra.Instructions
	}
	in.Agent.Timeout = s.st.Limits.IterationTimeout
	return in
}

// iterationOptions are the activity options of an iteration of role.
func (s *session) iterationOptions(ctx workflow.Context, role string) workflow.ActivityOptions {
	return s.host.Options(ctx, workflow.ActivityOptions{
		// The activity enforces IterationTimeout itself and reports a
		// timeout as a result; StartToClose is the backstop for a worker
		// that cannot.
		StartToCloseTimeout: s.st.Limits.IterationTimeout + 2*time.Minute,
		HeartbeatTimeout:    s.st.Limits.HeartbeatTimeout,
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
}

// awaitIteration waits for the iteration's activity, or for the runtime
// deadline (timedOut). A session cancelled meanwhile waits until the
// activity, cancelled with it, is gone (cancelled).
func (s *session) awaitIteration(ctx workflow.Context, fut workflow.Future, res *contract.IterationResult) (timedOut, cancelled bool, err error) {
	done := false
	for !done && !timedOut {
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(fut, func(f workflow.Future) {
			err = f.Get(ctx, res)
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
			_ = fut.Get(ctx, nil)
			return false, true, nil
		}
	}
	return timedOut, false, err
}

// attemptNext is what follows an attempt of an iteration.
type attemptNext int

const (
	attemptDone    attemptNext = iota // the iteration ended: its result or error stands
	attemptAgain                      // the same iteration runs again
	attemptReturn                     // the session stops waiting: return the error
	attemptExpired                    // the runtime ran out while the host was away
)

// afterAttempt decides what follows an attempt that ended with err. An
// attempt whose worker's agent slots were all busy, or whose host took
// no work, is no failed iteration: the same iteration runs again, from
// where a dead attempt of it left off (in.Resume), once the host is back.
func (s *session) afterAttempt(ctx workflow.Context, in *contract.IterationInput, err error, timedOut bool) (attemptNext, error) {
	if busy, last := flow.IsSlotBusy(err); busy && !timedOut {
		if last != nil && last.StartHead != "" {
			in.Resume = last
		}
		return attemptAgain, nil
	}
	gone, last := flow.IsHostGone(err)
	if timedOut || !gone || !s.host.Routed() {
		return attemptDone, nil
	}
	if last != nil {
		in.Resume = last
	}
	if s.stopReason != "" {
		return attemptReturn, flow.ErrStoppedOffline // stopped before the host went away
	}
	expired, stopped, werr := s.host.AwaitBack(ctx, func() workflow.Future { return s.deadlineTimer })
	switch {
	case werr != nil:
		return attemptReturn, werr
	case stopped:
		return attemptReturn, flow.ErrStoppedOffline
	case expired:
		return attemptExpired, nil
	}
	return attemptAgain, nil
}

func (s *session) iterationTask() contract.TaskSettings {
	t := s.in.Task
	if s.st.Prepared.Mode != "" {
		t.Mode = s.st.Prepared.Mode
	}
	if s.st.Prepared.CompletionPromise != "" {
		t.CompletionPromise = s.st.Prepared.CompletionPromise
	}
	return t
}

func (s *session) iterationSummary(role string) string {
	sum := fmt.Sprintf("iteration %d", s.st.Iteration)
	if s.in.Roles != nil || s.in.Plan != nil {
		// Sessions without roles keep the summaries they always had.
		sum += " (" + role + ")"
	}
	switch role {
	case contract.RoleReviewer:
		return sum + ": review " + s.st.Prepared.Task.FileName()
	case contract.RolePlanner:
		return sum + ": plan " + contract.PRDFile
	}
	if t := s.st.Prepared.Task; t.CurrentID != "" || t.CurrentTitle != "" {
		sum += ": " + strings.TrimSpace(t.CurrentID+" "+t.CurrentTitle)
	}
	return sum
}

// account adds an iteration's cost and tokens to the totals. It is called
// exactly once per iteration result.
func (s *session) account(res contract.IterationResult) {
	t := &s.st.Totals
	t.CostUSD += res.CostUSD
	if s.in.Fallback != nil {
		if t.CostByBackend == nil {
			t.CostByBackend = map[string]float64{}
		}
		t.CostByBackend[words.Or(s.ranOn(res), words.Or(s.in.Agent.Backend, "claude"))] += res.CostUSD
	}
	if res.CostNote != "" {
		t.CostUnknown++
	}
	t.Usage = t.Usage.Add(res.Usage)
	t.Turns += res.NumTurns
	if res.Commit != "" {
		t.Commits++
	}
	if res.InterruptedCommit != "" {
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
	if res.Repair && res.TaskFileError == "" && res.Task.Total < s.st.Prepared.Task.Total {
		// The repair made the file readable by dropping some of it.
		s.st.Notices = append(s.st.Notices, fmt.Sprintf(
			"The last iteration repaired %s, but it now has %d stories or tasks where it had %d before it broke. Restore the missing ones, with their state, from the git history of the file.",
			s.st.Prepared.Task.FileName(), res.Task.Total, s.st.Prepared.Task.Total))
	}
	if res.Task.Mode != "" {
		s.st.Prepared.Task = res.Task
	}
	sum := s.summarize(ctx, res)
	defer func() { s.keep(ctx, sum) }()

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
	if d, done := s.countTaskFile(res); done {
		return d
	}
	if d, ok := s.countOutcome(res, ""); !ok {
		return d
	}
	s.st.SinceReview++
	if res.CompletionClaimed {
		if d, decided := s.judgeClaim(res, &sum); decided {
			return d
		}
	}
	// Asking a human is progress of a kind: the answer changes what the
	// next iteration does.
	if res.Progressed() || res.Checkpoint != nil {
		s.st.NoProgress = 0
		return decision{}
	}
	s.st.NoProgress++
	if m := s.st.Limits.MaxNoProgress; m > 0 && s.st.NoProgress >= m {
		return decision{done: true, reason: contract.ReasonNoProgress, msg: fmt.Sprintf("%s in a row changed no file and made no commit", words.Count(s.st.NoProgress, "iteration"))}
	}
	return decision{}
}

// summarize is the iteration's summary as its result tells it.
func (s *session) summarize(ctx workflow.Context, res contract.IterationResult) contract.IterationSummary {
	return contract.IterationSummary{
		Iteration:     s.st.Iteration,
		Outcome:       res.Outcome,
		Reason:        res.Reason,
		CostUSD:       res.CostUSD,
		CostNote:      res.CostNote,
		Tokens:        res.Usage.Total(),
		FilesChanged:  len(res.FilesChanged),
		Commit:        res.Commit,
		Story:         strings.TrimSpace(res.StoryID + " " + res.StoryTitle),
		Backend:       s.ranOn(res),
		Claimed:       res.CompletionClaimed,
		Duration:      res.Duration,
		FinishedAt:    workflow.Now(ctx),
		Warnings:      res.Warnings,
		Notices:       res.Notices,
		NotCommitted:  res.NotCommitted,
		Refused:       res.Refused,
		Live:          res.Live,
		LiveStartedAt: res.LiveStartedAt,
	}
}

// keep adds an iteration's summary to the run's log (whole) and to the
// recent iterations (without its live view: status and carry-over stay
// small), and tells the UI and the parent queue.
func (s *session) keep(ctx workflow.Context, sum contract.IterationSummary) {
	full := sum
	sum.Live, sum.LiveStartedAt = nil, time.Time{}
	s.st.Recent = append(s.st.Recent, sum)
	s.log = append(s.log, full)
	if n := len(s.log); n > logLimit {
		s.log = append([]contract.IterationSummary(nil), s.log[n-logLimit:]...)
	}
	if n := len(s.st.Recent); n > recentLimit {
		s.st.Recent = append([]contract.IterationSummary(nil), s.st.Recent[n-recentLimit:]...)
	}
	// The search attributes follow when the loop next blocks (the next
	// iteration, a wait or the end), so an iteration costs one upsert,
	// not two.
	workflow.SetCurrentDetails(ctx, s.statusNow().Details(s.hostTimeout()))
	s.notifyParent(ctx, sum)
}

// countTaskFile counts iterations in a row that left the task file
// unreadable; done says the repairs are used up.
func (s *session) countTaskFile(res contract.IterationResult) (decision, bool) {
	if res.TaskFileError == "" {
		if res.Outcome != contract.OutcomeRateLimited {
			s.st.TaskFileBroken = 0
		}
		return decision{}, false
	}
	s.st.TaskFileBroken++
	if repairs := s.st.TaskFileBroken - 1; repairs >= s.maxRepairs() {
		return decision{done: true, reason: contract.ReasonTaskFileInvalid, msg: fmt.Sprintf(
			"the task file is still unreadable after %d repair attempts: %s", repairs, res.TaskFileError)}, true
	}
	return decision{}, false
}

// judgeClaim weighs a completion claim: the check command and the task
// file must agree, and a reviewer, if any, has the last word. decided
// says the claim settles the iteration (d); otherwise sum.Reason says why
// it did not hold.
func (s *session) judgeClaim(res contract.IterationResult, sum *contract.IterationSummary) (d decision, decided bool) {
	s.st.Totals.CompletionClaims++
	check := res.Check
	switch {
	case check != nil && !check.Passed:
		// The claim does not hold; the next prompt has the check's
		// output (res.Notices).
		sum.Reason = fmt.Sprintf("completion claimed but the check `%s` failed (exit status %d)", check.Command, check.ExitCode)
		s.logger.Warn("completion claim refused by the check command", "iteration", s.st.Iteration, "exit", check.ExitCode)
	case (res.Task.Complete || !res.Task.Verifiable) && s.reviews():
		// The task file agrees; the reviewer has the last word.
		s.st.ReviewPending = true
		sum.Reason = "completion claimed; the reviewer checks the work next"
		return decision{}, true
	case res.Task.Complete || !res.Task.Verifiable:
		sum.Verified = true
		by := res.Task.FileName()
		if check != nil {
			by = fmt.Sprintf("the check `%s`", check.Command)
			if res.Task.Verifiable {
				by = res.Task.FileName() + " and " + by
			}
		}
		return decision{complete: true, reason: contract.ReasonComplete, msg: fmt.Sprintf("completion claimed in iteration %d and confirmed by %s", s.st.Iteration, by)}, true
	default:
		sum.Reason = fmt.Sprintf("completion claimed but %s has %d of %d done", res.Task.FileName(), res.Task.Done, res.Task.Total)
		s.logger.Warn("completion claim contradicted by task file", "iteration", s.st.Iteration, "done", res.Task.Done, "total", res.Task.Total)
	}
	return decision{}, false
}

// countOutcome counts how an iteration ended. A rate limit is not the
// agent's fault and not progress: the same iteration number runs again
// after the wait. A failure adds to the failure streak, which may end the
// session; who names the role in that message. ok says the iteration
// succeeded, and what it did is for the caller to read.
func (s *session) countOutcome(res contract.IterationResult, who string) (d decision, ok bool) {
	switch res.Outcome {
	case contract.OutcomeRateLimited:
		s.st.Iteration--
		s.ranThisRun--
		s.st.Totals.RateLimitWaits++
		return decision{}, false
	case contract.OutcomeSuccess:
		s.st.ConsecutiveFailures = 0
		return decision{}, true
	}
	s.st.Totals.Failures++
	s.st.ConsecutiveFailures++
	if m := s.st.Limits.MaxConsecutiveFailures; m > 0 && s.st.ConsecutiveFailures >= m {
		return decision{done: true, reason: contract.ReasonConsecutiveFailures, msg: fmt.Sprintf("%d consecutive failed iterations; last%s: %s", s.st.ConsecutiveFailures, who, res.Reason)}, false
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
	workflow.SignalExternalWorkflow(ctx, parent.ID, "", contract.SignalSessionProgress, contract.SessionProgress{SessionID: s.st.SessionID, Iteration: sum})
}

// maxRepairs is how many iterations may try to repair a broken task file.
func (s *session) maxRepairs() int {
	if s.st.Limits.MaxTaskFileRepairs > 0 {
		return s.st.Limits.MaxTaskFileRepairs
	}
	return contract.DefaultMaxTaskFileRepairs
}
