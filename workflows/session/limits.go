package session

import (
	"fmt"
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
	l := s.st.Limits
	switch {
	case s.stopReason != "":
		return contract.ReasonStopped, s.stopReason, true
	case l.MaxRuntime > 0 && !workflow.Now(ctx).Before(s.deadline()):
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

// workingTime is how much of the runtime limit the session has used.
func (s *session) workingTime(ctx workflow.Context) time.Duration {
	return workflow.Now(ctx).Sub(s.st.StartedAt) - s.st.HumanWait
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
