package session

import (
	"fmt"
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/words"
)

// notifyAsk tells people that the session waits for an answer to cp.
func (s *session) notifyAsk(ctx workflow.Context, cp contract.Checkpoint) {
	event := contract.NotifyQuestion
	if cp.Kind == contract.KindPlan {
		event = contract.NotifyPlan
	}
	var details []string
	for _, line := range strings.Split(strings.TrimSpace(cp.Context), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			details = append(details, line)
		}
	}
	s.notes.Send(ctx, event, cp.Question, details, &cp)
}

// notifyEnd tells people that the session ended in state st. An issue's
// session, or a pull request's round, leaves that to the workflow that
// started it.
func (s *session) notifyEnd(ctx workflow.Context, st contract.State, text string) {
	if workflow.GetInfo(ctx).ParentWorkflowExecution != nil && s.in.Scheduled == "" {
		return
	}
	event := contract.NotifyEnded
	switch st {
	case contract.StateFailed:
		event = contract.NotifyFailed
	case contract.StateLimited:
		event = contract.NotifyLimit
	}
	t := s.st.Totals
	s.notes.Send(ctx, event, text, []string{fmt.Sprintf("%s, %d commits, %.4f USD", words.Count(s.st.Iteration, "iteration"), t.Commits, t.CostUSD)}, nil)
}
