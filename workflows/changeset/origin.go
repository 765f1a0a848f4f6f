package changeset

import (
	"fmt"
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/workflows/flow"
)

// takeOrigin claims the issue a queue started the set from (the queue's
// labels: working, no longer ready) and takes its text, as people with
// write access wrote it, for the set's task.
func (s *set) takeOrigin(ctx workflow.Context) error {
	o := s.in.Origin
	n := o.Issue.Number
	if err := workflow.ExecuteActivity(flow.GitHubOptions(ctx, fmt.Sprintf("labels of #%d: +%s", n, contract.LabelWorking)), contract.ActivitySetLabels,
		contract.LabelsInput{Repo: o.Repo, Number: n, Add: []string{contract.LabelWorking}, Remove: []string{o.Label, contract.LabelFailed, contract.LabelPROpen}}).Get(ctx, nil); err != nil {
		return fmt.Errorf("claim %s#%d: %s", o.Repo.FullName(), n, flow.RootMessage(err))
	}
	var text contract.IssueText
	if err := workflow.ExecuteActivity(flow.GitHubOptions(ctx, fmt.Sprintf("read #%d", n)), contract.ActivityReadIssue,
		contract.ReadInput{Repo: o.Repo, Number: n}).Get(ctx, &text); err != nil {
		return fmt.Errorf("read %s#%d: %s", o.Repo.FullName(), n, flow.RootMessage(err))
	}
	s.in.Spec.Task = fmt.Sprintf("From %s#%d (%s):\n\n%s", o.Repo.FullName(), n, o.Issue.URL, strings.TrimSpace(text.Markdown))
	s.event(ctx, fmt.Sprintf("took %s#%d (%s): one change across %s", o.Repo.FullName(), n, o.Issue.By(), strings.Join(s.st.Order, ", ")))
	return nil
}

// writeOrigin writes the set's comment on the issue it came from (one,
// edited in place when its text changed): its pull requests in merge
// order with their states, and why it ended, once it did.
func (s *set) writeOrigin(ctx workflow.Context, why string) {
	o := s.in.Origin
	if o == nil {
		return
	}
	var b strings.Builder
	b.WriteString(fmt.Sprintf("**Durable Ralph** works on this issue as change set `%s` (%s): one issue and pull request per repository, merged in this order, all or none.\n\n", s.in.Spec.Name, s.st.State))
	for k, repo := range s.st.Order {
		m := s.st.Members[s.in.Spec.Index(repo)]
		line := fmt.Sprintf("%d. %s: %s", k+1, m.Repo, m.State)
		switch {
		case m.PullURL != "":
			line += " " + m.PullURL
		case m.IssueURL != "":
			line += " " + m.IssueURL
		}
		b.WriteString(line + "\n")
	}
	if why != "" {
		b.WriteString("\n" + why + "\n")
	}
	b.WriteString(fmt.Sprintf("\n`starter change-set status %s` shows it; `starter change-set abandon %s` stops it.", s.in.Spec.Name, s.in.Spec.Name))
	text := b.String()
	if text == s.originText {
		return
	}
	err := workflow.ExecuteActivity(flow.GitHubOptions(ctx, fmt.Sprintf("change set comment on #%d", o.Issue.Number)), contract.ActivityComment, contract.CommentInput{
		Repo: o.Repo, Number: o.Issue.Number, Marker: fmt.Sprintf("<!-- ralph:changeset-%s-origin -->", s.in.Spec.Name), Body: text, Self: o.Self,
	}).Get(ctx, nil)
	if err != nil {
		s.event(ctx, fmt.Sprintf("could not write on %s#%d: %s", o.Repo.FullName(), o.Issue.Number, flow.RootMessage(err)))
		return
	}
	s.originText = text
}

// freeOrigin, once every member's pull request is open, tells the queue
// the set came from that the issue's work is done, as an issue work does
// once its pull request is open: the queue's slot is free, and the set
// follows its pull requests to their end (which it tells the queue as a
// follower does: endOrigin). The issue is labelled so.
func (s *set) freeOrigin(ctx workflow.Context) {
	o := s.in.Origin
	if o == nil || s.freed {
		return
	}
	s.freed, s.freedCost = true, s.st.CostUSD
	s.label(ctx, []string{contract.LabelPROpen}, contract.LabelWorking)
	out := contract.IssueOutcome{Number: o.Issue.Number, Title: o.Issue.Title, ChangeSet: s.in.Spec.Name, Reason: contract.ReasonComplete,
		CostUSD: s.st.CostUSD, StartedAt: s.st.Started, FinishedAt: workflow.Now(ctx)}
	s.tellQueue(ctx, contract.SignalIssueEnded, contract.IssueEnded{Outcome: out, Following: true})
}

// endOrigin says how the set ended on the issue it came from (merged:
// closed as completed; otherwise labelled failed) and tells the queue:
// as a follower does once it had been freed, or as an issue work that
// failed before its pull requests opened.
func (s *set) endOrigin(ctx workflow.Context, why string) {
	o := s.in.Origin
	if o == nil {
		return
	}
	s.writeOrigin(ctx, why)
	n := o.Issue.Number
	merged := s.st.State == contract.SetMerged
	if merged {
		if err := workflow.ExecuteActivity(flow.GitHubOptions(ctx, fmt.Sprintf("close #%d", n)), contract.ActivityCloseIssue,
			contract.ReadInput{Repo: o.Repo, Number: n}).Get(ctx, nil); err != nil {
			s.event(ctx, fmt.Sprintf("could not close %s#%d: %s", o.Repo.FullName(), n, flow.RootMessage(err)))
		}
		s.label(ctx, nil, contract.LabelWorking, contract.LabelPROpen)
	} else {
		s.label(ctx, []string{contract.LabelFailed}, contract.LabelWorking, contract.LabelPROpen)
	}
	text := fmt.Sprintf("change set %s %s: %s", s.in.Spec.Name, s.st.State, why)
	if s.freed {
		res := contract.FollowResult{Reason: contract.ReasonMerged, Message: text, CostUSD: s.st.CostUSD - s.freedCost}
		if !merged {
			res.Reason = contract.ReasonClosed
		}
		s.tellQueue(ctx, contract.SignalPullEnded, contract.PullEnd{Repo: o.Repo, Issue: n, Result: res})
		return
	}
	out := contract.IssueOutcome{Number: n, Title: o.Issue.Title, ChangeSet: s.in.Spec.Name, Reason: contract.ReasonFailed, Message: text,
		CostUSD: s.st.CostUSD, StartedAt: s.st.Started, FinishedAt: workflow.Now(ctx)}
	s.tellQueue(ctx, contract.SignalIssueEnded, contract.IssueEnded{Outcome: out})
}

// label adds add to the origin issue's labels and removes remove.
func (s *set) label(ctx workflow.Context, add []string, remove ...string) {
	o := s.in.Origin
	if err := workflow.ExecuteActivity(flow.GitHubOptions(ctx, fmt.Sprintf("labels of #%d", o.Issue.Number)), contract.ActivitySetLabels,
		contract.LabelsInput{Repo: o.Repo, Number: o.Issue.Number, Add: add, Remove: remove}).Get(ctx, nil); err != nil {
		s.event(ctx, fmt.Sprintf("could not label %s#%d: %s", o.Repo.FullName(), o.Issue.Number, flow.RootMessage(err)))
	}
}

// tellQueue signals the queue the set came from, even while the set is
// cancelled (the queue counts on hearing it).
func (s *set) tellQueue(ctx workflow.Context, signal string, arg any) {
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	if err := workflow.SignalExternalWorkflow(dctx, s.in.Origin.QueueID, "", signal, arg).Get(dctx, nil); err != nil {
		s.logger.Warn("could not tell the queue", "queue", s.in.Origin.QueueID, "signal", signal, "error", err)
	}
}
