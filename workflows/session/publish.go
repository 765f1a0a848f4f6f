package session

import (
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/workflows/flow"
)

// setState is the one place that sets the session's state label; it
// publishes the status.
func (s *session) setState(ctx workflow.Context, st contract.State) {
	s.status.State = st
	s.publish(ctx)
}

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
	workflow.SetCurrentDetails(ctx, s.details())
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

func (s *session) details() string {
	st := s.statusNow()
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
		b.WriteString(fmt.Sprintf("\n\nAnswer with the `%s` signal, input `{\"id\": \"%s\", \"approve\": true}`, `{\"id\": \"%s\", \"reject\": true, \"reason\": \"…\"}` or `{\"id\": \"%s\", \"answer\": \"…\"}`; or run `starter respond %s --checkpoint %s --approve` (or `--reject --reason …`, `--answer …`) on a machine that reaches this server: the starter finds the dev server of its state directory itself, else set `TEMPORAL_ADDRESS`.", contract.SignalCheckpoint, cp.ID, cp.ID, cp.ID, st.SessionID, cp.ID))
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
		b.WriteString(fmt.Sprintf("\n\nPaused: send the `%s` signal, or run `starter resume %s`, to continue.", contract.SignalResume, st.SessionID))
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
		s.notes.Send(ctx, contract.NotifyHostOffline, fmt.Sprintf("host %s is offline: the session waits for its worker", s.in.Host), nil, nil)
		return
	}
	s.logger.Info("host back", "host", s.in.Host)
	s.setState(ctx, s.beforeOffline)
}
