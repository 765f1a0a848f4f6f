package contract

import (
	"fmt"
	"strings"
	"time"
)

// Details is the session's status as the Temporal UI shows it
// (markdown); hostTimeout is how long its host may be away before it
// shows offline.
func (st Status) Details(hostTimeout time.Duration) string {
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
		b.WriteString(fmt.Sprintf("\n\nTasks (%s): %d of %d done", st.Task.FileName(), st.Task.Done, st.Task.Total))
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
		b.WriteString(fmt.Sprintf("\n\nAnswer with the `%s` signal, input `{\"id\": \"%s\", \"approve\": true}`, `{\"id\": \"%s\", \"reject\": true, \"reason\": \"…\"}` or `{\"id\": \"%s\", \"answer\": \"…\"}`; or run `starter respond %s --checkpoint %s --approve` (or `--reject --reason …`, `--answer …`) on a machine that reaches this server: the starter finds the dev server of its state directory itself, else set `TEMPORAL_ADDRESS`.", SignalCheckpoint, cp.ID, cp.ID, cp.ID, st.SessionID, cp.ID))
		if !cp.Deadline.IsZero() {
			b.WriteString(fmt.Sprintf(" Times out at %s.", cp.Deadline.UTC().Format(time.RFC3339)))
		}
	}
	switch st.State {
	case StateHostOffline:
		b.WriteString(fmt.Sprintf("\n\n**Host offline**: no worker of host `%s` has taken this session's work for %s. The session waits for it and loses nothing: start the worker on %s again (`worker --host-id %s`).",
			st.Host, hostTimeout, st.Host, st.Host))
	case StateWaitingForAgentSlot:
		b.WriteString(fmt.Sprintf("\n\nWaiting for an agent slot: the worker on `%s` already runs as many agents as its `worker.max-agents` allows.", st.Host))
	}
	if st.State == StatePaused {
		b.WriteString(fmt.Sprintf("\n\nPaused: send the `%s` signal, or run `starter resume %s`, to continue.", SignalResume, st.SessionID))
	}
	return b.String()
}
