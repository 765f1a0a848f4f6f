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

// endOrigin says how the set ended on the issue it came from (merged:
// closed as completed; otherwise labelled failed) and tells the queue,
// whose slot the set held.
func (s *set) endOrigin(ctx workflow.Context, why string) {
	o := s.in.Origin
	if o == nil {
		return
	}
	s.writeOrigin(ctx, why)
	n := o.Issue.Number
	merged := s.st.State == contract.SetMerged
	var err error
	if merged {
		err = workflow.ExecuteActivity(flow.GitHubOptions(ctx, fmt.Sprintf("close #%d", n)), contract.ActivityCloseIssue,
			contract.ReadInput{Repo: o.Repo, Number: n}).Get(ctx, nil)
	}
	if err == nil {
		labels := contract.LabelsInput{Repo: o.Repo, Number: n, Remove: []string{contract.LabelWorking}}
		if !merged {
			labels.Add = []string{contract.LabelFailed}
		}
		err = workflow.ExecuteActivity(flow.GitHubOptions(ctx, fmt.Sprintf("final labels of #%d", n)), contract.ActivitySetLabels, labels).Get(ctx, nil)
	}
	if err != nil {
		s.event(ctx, fmt.Sprintf("could not mark %s#%d: %s", o.Repo.FullName(), n, flow.RootMessage(err)))
	}
	out := contract.IssueOutcome{Number: n, Title: o.Issue.Title, ChangeSet: s.in.Spec.Name, Reason: contract.ReasonComplete, CostUSD: s.st.CostUSD,
		StartedAt: s.st.Started, FinishedAt: workflow.Now(ctx)}
	if !merged {
		out.Reason, out.Message = contract.ReasonFailed, fmt.Sprintf("change set %s %s: %s", s.in.Spec.Name, s.st.State, why)
	}
	// Cancelled or not, the queue hears the end: its slot is free.
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	if err := workflow.SignalExternalWorkflow(dctx, o.QueueID, "", contract.SignalIssueEnded, contract.IssueEnded{Outcome: out}).Get(dctx, nil); err != nil {
		s.logger.Warn("could not tell the queue the set's end", "queue", o.QueueID, "error", err)
	}
}
