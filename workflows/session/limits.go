package session

import (
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/words"
)

// defaultRateLimitWait is how long a session sleeps when the agent was rate
// limited without saying when the limit resets.
const defaultRateLimitWait = 15 * time.Minute

// rateLimitMargin is added to a reset time: limits reset on the provider's
// clock, not ours.
const rateLimitMargin = time.Minute

// limitReached checks the limits that end a session before an iteration.
func (s *session) limitReached(ctx workflow.Context) (contract.Reason, string, bool) {
	return s.limitReachedAt(workflow.Now(ctx))
}

// limitReachedAt checks the limits as they stand at now.
func (s *session) limitReachedAt(now time.Time) (contract.Reason, string, bool) {
	l := s.st.Limits
	switch {
	case s.stopReason != "":
		return contract.ReasonStopped, s.stopReason, true
	case l.MaxRuntime > 0 && !now.Before(s.deadline()):
		return contract.ReasonMaxRuntime, fmt.Sprintf("max runtime %s reached", l.MaxRuntime), true
	case l.MaxCostUSD > 0 && s.st.Totals.CostUSD >= l.MaxCostUSD:
		return contract.ReasonMaxCost, fmt.Sprintf("cost $%.4f reached the limit of $%.2f", s.st.Totals.CostUSD, l.MaxCostUSD), true
	case s.st.Iteration >= l.MaxIterations:
		return contract.ReasonMaxIterations, fmt.Sprintf("%s ran, the limit", words.Count(s.st.Iteration, "iteration")), true
	}
	return "", "", false
}

// deadline is when the runtime limit ends the session: the start plus the
// limit plus the time spent waiting on humans. Meaningful only with a
// runtime limit.
func (s *session) deadline() time.Time {
	return s.st.StartedAt.Add(s.st.Limits.MaxRuntime + s.st.HumanWait)
}

// workingTime is how much of the runtime limit the session has used
// (the wait for a pending question does not count).
func (s *session) workingTime(ctx workflow.Context) time.Duration {
	now := workflow.Now(ctx)
	if p := s.status.Pending; p != nil && !p.AskedAt.IsZero() {
		now = p.AskedAt
	}
	return now.Sub(s.st.StartedAt) - s.st.HumanWait
}

// atLimit handles a limit the session reached, if it reached one: it
// ends the session (e), or with limits.on-limit ask asks a person to
// raise the limit or stop and takes the answer (e nil). reached says a
// limit was reached: the caller goes back to the top of its loop, where
// the limits are checked again.
func (s *session) atLimit(ctx workflow.Context) (e *end, reached bool) {
	reason, msg, done := s.limitReached(ctx)
	switch {
	case !done:
		return nil, false
	case !s.st.Limits.Asks(reason):
		return endWith(reason, msg), true
	}
	return s.askLimit(ctx, reason, msg), true
}

// askLimit asks a person what to do now that the limit that gave reason
// (msg) is reached, and waits durably for the answer: a raise (the
// answer, or set-limits from any channel) lets the session go on, stop
// ends it limited. An answer that names no limit is asked again with
// why.
func (s *session) askLimit(ctx workflow.Context, reason contract.Reason, msg string) *end {
	s.limitAsks++
	it := s.st.Iteration
	id := fmt.Sprintf("cp-%d-limit", it)
	if s.limitAsks > 1 {
		id = fmt.Sprintf("%s-%d", id, s.limitAsks)
	}
	q := s.limitQuestion(ctx, reason, msg)
	if s.limitNote != "" {
		q = s.limitNote + "\n\n" + q
		s.limitNote = ""
	}
	cp := contract.Checkpoint{
		ID: id, Iteration: it, Kind: contract.KindLimit, Type: contract.CheckpointHumanVerify,
		Question: q, Options: []string{"approve", "stop"},
	}
	ans, timedOut, err := s.ask(ctx, cp)
	switch {
	case err != nil:
		return endCancelled(err)
	case timedOut:
		return endWith(reason, fmt.Sprintf("%s; nobody raised the limit within %s", msg, s.in.Checkpoints.Timeout))
	case ans == (contract.Answer{}):
		return nil // a stop: the loop ends at its top
	}
	if _, _, still := s.limitReached(ctx); !still {
		return nil // raised by set-limits
	}
	got, err := contract.ReadLimitAnswer(reason, s.st.Limits, ans)
	if err == nil && !got.Stop {
		r := got.Raise
		err = r.Validate(s.st.Iteration, s.st.Totals.CostUSD, s.workingTime(ctx))
		if err == nil {
			s.applyLimits(ctx, r)
		}
	}
	switch {
	case err != nil:
		s.limitNote = fmt.Sprintf("The answer %q did not raise the limit: %s.", ans.Said(), err)
	case got.Stop:
		return endWith(reason, fmt.Sprintf("%s; %s chose to stop", msg, answerer(ans)))
	}
	if _, _, still := s.limitReached(ctx); still && err == nil {
		s.limitNote = fmt.Sprintf("The answer %q did not raise the limit that was reached.", ans.Said())
	}
	return nil
}

// limitQuestion is the question asked at the limit that gave reason.
func (s *session) limitQuestion(ctx workflow.Context, reason contract.Reason, msg string) string {
	l, t := s.st.Limits, s.st.Totals
	// The examples raise the limit to twice what it was: a raise below
	// what was used is refused.
	flag, answer, again := "", "", ""
	switch reason {
	case contract.ReasonMaxCost:
		again = fmt.Sprintf("$%.2f", 2*l.MaxCostUSD)
		flag, answer = "--max-cost "+again[1:], "raise to "+again
	case contract.ReasonMaxIterations:
		again = words.Count(2*l.MaxIterations, "iteration")
		flag, answer = fmt.Sprintf("--max-iterations %d", 2*l.MaxIterations), again
	case contract.ReasonMaxRuntime:
		again = (2 * l.MaxRuntime).String()
		flag, answer = "--max-runtime "+again, again
	}
	return fmt.Sprintf("The session reached its %s limit: %s. Spent so far: %s, %s, %s of working time. "+
		"Raise the limit to go on (`starter set-limits %s %s`, or an answer such as \"%s\"), "+
		"approve to allow as much again (%s), or answer \"stop\" to end the session limited.",
		limitName(reason), msg, words.Count(s.st.Iteration, "iteration"), words.Dollars(t.CostUSD),
		s.workingTime(ctx).Round(time.Second), s.st.SessionID, flag, answer, again)
}

// limitName names the limit that gave reason.
func limitName(reason contract.Reason) string {
	switch reason {
	case contract.ReasonMaxCost:
		return "cost"
	case contract.ReasonMaxIterations:
		return "iterations"
	}
	return "runtime"
}

// answerer says who gave ans.
func answerer(ans contract.Answer) string {
	if ans.By != "" {
		return "@" + strings.TrimPrefix(ans.By, "@")
	}
	return "a person"
}

// applyLimits takes the limits req raises (zero fields stay).
func (s *session) applyLimits(ctx workflow.Context, req contract.SetLimitsRequest) {
	if req.MaxIterations > 0 {
		s.st.Limits.MaxIterations = req.MaxIterations
	}
	if req.MaxRuntime > 0 {
		s.st.Limits.MaxRuntime = req.MaxRuntime
	}
	if req.MaxCostUSD > 0 {
		s.st.Limits.MaxCostUSD = req.MaxCostUSD
	}
	s.armDeadline(ctx)
}

// armDeadline (re)starts the timer of the runtime limit, after the limit
// or the time spent on humans changed.
func (s *session) armDeadline(ctx workflow.Context) {
	if s.cancelDeadline != nil {
		s.cancelDeadline()
		s.cancelDeadline, s.deadlineTimer = nil, nil
	}
	if s.st.Limits.MaxRuntime <= 0 {
		return
	}
	tctx, cancel := workflow.WithCancel(ctx)
	s.deadlineTimer = workflow.NewTimerWithOptions(tctx, max(s.deadline().Sub(workflow.Now(ctx)), time.Millisecond),
		workflow.TimerOptions{Summary: "max runtime"})
	s.cancelDeadline = cancel
}

// untilDeadline is the runtime left, or forever without a runtime limit.
func (s *session) untilDeadline(ctx workflow.Context) time.Duration {
	if s.st.Limits.MaxRuntime <= 0 {
		return time.Duration(1<<63 - 1)
	}
	return max(s.deadline().Sub(workflow.Now(ctx)), 0)
}

// humanWaitSince adds the time since start to the time spent on humans
// and moves the runtime deadline accordingly.
func (s *session) humanWaitSince(ctx workflow.Context, start time.Time) {
	s.st.HumanWait += workflow.Now(ctx).Sub(start)
	s.armDeadline(ctx)
}

// pause waits while the session is paused. The pause does not count
// against the runtime limit.
func (s *session) pause(ctx workflow.Context) error {
	s.status.Paused = true
	s.setState(ctx, contract.StatePaused)
	start := workflow.Now(ctx)
	err := workflow.Await(ctx, func() bool { return !s.st.Paused || s.stopReason != "" })
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

// limitsText says limits l as set-limits sets them.
func limitsText(l contract.Limits) string {
	var parts []string
	parts = append(parts, words.Count(l.MaxIterations, "iteration"))
	if l.MaxRuntime > 0 {
		parts = append(parts, l.MaxRuntime.String()+" of runtime")
	}
	if l.MaxCostUSD > 0 {
		parts = append(parts, fmt.Sprintf("$%.2f", l.MaxCostUSD))
	}
	return strings.Join(parts, ", ")
}
