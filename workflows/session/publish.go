package session

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/workflows/flow"
)

// setState is the one place that moves the session's state: to st, if
// contract.SessionMoves allows the move (a move it lacks is refused and
// logged, or panics under test); it publishes the status.
func (s *session) setState(ctx workflow.Context, st contract.State) {
	if from := s.status.State; !contract.CanMove(from, st) {
		if strictMoves {
			panic(fmt.Sprintf("session state %s -> %s is not in contract.SessionMoves", from, st))
		}
		s.logger.Error("refused a move of the session's state that contract.SessionMoves lacks", "from", from, "to", st)
		st = from
	}
	s.status.State = st
	s.publish(ctx)
}

// strictMoves makes a refused move of the state panic: the tests set it,
// so that a move the table lacks fails them.
var strictMoves bool

// publishEvery is the least time between two pushes of search
// attributes that only move the iteration and the cost (from
// publish-throttle 1 on): quick iterations then cost one history event
// fewer each, while a change of state is pushed at once, bringing the
// iteration and cost along. The status query is always exact.
const publishEvery = 5 * time.Second

// publish pushes the status to search attributes (those that changed
// since the last push) and to the details the Temporal UI shows.
func (s *session) publish(ctx workflow.Context) {
	var updates []temporal.SearchAttributeUpdate
	st := s.statusNow()
	stateChanged := s.published == nil || s.published.State != st.State
	if stateChanged {
		updates = append(updates, flow.SearchStatus.ValueSet(string(st.State)))
	}
	if p := s.published; p == nil || p.Iteration != st.Iteration {
		updates = append(updates, flow.SearchIteration.ValueSet(int64(st.Iteration)))
	}
	if p := s.published; p == nil || p.Totals.CostUSD != st.Totals.CostUSD {
		updates = append(updates, flow.SearchCostUSD.ValueSet(st.Totals.CostUSD))
	}
	if len(updates) > 0 && (stateChanged || !s.throttled(ctx)) {
		if err := workflow.UpsertTypedSearchAttributes(ctx, updates...); err != nil {
			s.logger.Warn("upsert search attributes", "error", err)
		}
		s.published = &st
		s.publishedAt = workflow.Now(ctx)
	}
	workflow.SetCurrentDetails(ctx, s.statusNow().Details(s.hostTimeout()))
}

// throttled reports whether a push of the iteration and cost alone
// waits, publishEvery not having passed since the last push. Runs from
// before publish-throttle push every change.
func (s *session) throttled(ctx workflow.Context) bool {
	if s.publishThrottle == nil {
		on := workflow.GetVersion(ctx, "publish-throttle", workflow.DefaultVersion, 1) == 1
		s.publishThrottle = &on
	}
	return *s.publishThrottle && workflow.Now(ctx).Sub(s.publishedAt) < publishEvery
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
		s.notes.Send(ctx, contract.NotifyHostOffline, fmt.Sprintf("host %s is offline: the session waits for its worker", s.in.Host), nil, nil)
		return
	}
	s.logger.Info("host back", "host", s.in.Host)
	s.setState(ctx, s.beforeOffline)
}
