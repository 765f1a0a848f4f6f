package session

import (
	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/words"
)

// fallBack moves the executor's following iterations to the next
// agent.fallback backend when its usage limit resets later than
// agent.fallback-after from now, and reports true; the rate-limited
// iteration then runs again at once on that backend. It reports false,
// leaving the durable wait to sleepRateLimit, without agent.fallback,
// for a limit that resets soon, and when every fallback is limited too.
// The iterations go back to the executor's own backend when its limit
// resets (useFallback).
func (s *session) fallBack(ctx workflow.Context, res contract.IterationResult) bool {
	fb := s.in.Fallback
	if fb == nil || len(fb.Agents) == 0 || res.Role != "" && res.Role != contract.RoleExecutor {
		return false
	}
	now := workflow.Now(ctx)
	resets := res.RateLimitResetsAt
	if resets.IsZero() {
		resets = now.Add(defaultRateLimitWait)
	}
	if resets.Sub(now) <= fb.After {
		return false
	}
	next := &contract.FallbackState{Index: 1, Instead: words.Or(s.in.Agent.Backend, "claude"), Until: resets}
	if cur := s.st.Fallback; cur != nil {
		// A fallback hit its own limit: the next one, still until the
		// executor's own resets.
		next.Index, next.Until = cur.Index+1, cur.Until
	}
	if next.Index > len(fb.Agents) {
		return false
	}
	next.Backend = words.Or(fb.Agents[next.Index-1].Backend, "claude")
	s.logger.Info("usage limit; the following iterations run on a fallback backend",
		"backend", next.Backend, "instead_of", next.Instead, "until", next.Until)
	s.st.Fallback = next
	s.setState(ctx, contract.StateRunning)
	return true
}

// useFallback gives an executor's iteration the fallback agent while
// the executor's own limit has not reset, and ends the fallback once it
// has.
func (s *session) useFallback(ctx workflow.Context, in *contract.IterationInput) {
	f := s.st.Fallback
	if f == nil || in.RoleOf() != contract.RoleExecutor || s.in.Fallback == nil {
		return
	}
	if !workflow.Now(ctx).Before(f.Until) || f.Index > len(s.in.Fallback.Agents) {
		s.logger.Info("usage limit reset; back to the session's own backend", "backend", f.Instead)
		s.st.Fallback = nil
		return
	}
	timeout := in.Agent.Timeout
	in.Agent = s.in.Fallback.Agents[f.Index-1]
	in.Agent.Timeout = timeout
}

// ranOn is the fallback backend that ran an iteration of res, "" for
// the session's own.
func (s *session) ranOn(res contract.IterationResult) string {
	if f := s.st.Fallback; f != nil && (res.Role == "" || res.Role == contract.RoleExecutor) {
		return f.Backend
	}
	return ""
}
