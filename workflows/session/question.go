package session

import (
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/words"
	"github.com/durable-ralph/ralph/workflows/flow"
)

// ignoredLimit bounds the ignored comments a session's status lists.
const ignoredLimit = 20

// awaitOnIssue asks cp on the session's issue (a comment with its
// marker, the question label) and waits for answered, reading the issue
// for an answer every poll interval or when poked (a webhook): the first
// comment after the question by a person with write access answers it.
// An answer through the CLI or the UI ends the wait too. Afterwards the
// question comment says who answered and the label goes. ok is false
// when timeout (if any) passed first.
func (s *session) awaitOnIssue(ctx workflow.Context, cp contract.Checkpoint, timeout time.Duration, answered func() bool) (ok bool, err error) {
	link := s.in.Issue
	marker := contract.QuestionMarker(workflow.GetInfo(ctx).WorkflowExecution.ID, cp.ID)
	question := s.questionBody(workflow.GetInfo(ctx).WorkflowExecution.ID, cp)
	s.issueComment(ctx, marker, question)
	s.issueLabels(ctx, []string{contract.LabelQuestion}, nil)
	poke := workflow.GetSignalChannel(ctx, contract.SignalGitHubPoke)
	var ignored []int64
	for !answered() {
		wait := max(link.PollInterval, time.Second)
		if timeout > 0 {
			left := cp.Deadline.Sub(workflow.Now(ctx))
			if left <= 0 {
				break
			}
			wait = min(wait, left)
		}
		if _, err := workflow.AwaitWithTimeout(ctx, wait, func() bool { return answered() || poke.Len() > 0 }); err != nil {
			return false, err
		}
		for poke.ReceiveAsync(nil) {
		}
		if answered() {
			break
		}
		var got contract.IssueAnswer
		if err := workflow.ExecuteActivity(flow.GitHubOptions(ctx, fmt.Sprintf("read the answer on #%d", link.Number)), contract.ActivityReadAnswer,
			contract.AnswerInput{Repo: link.Repo, Number: link.Number, Marker: marker, Self: link.Self, Ignored: ignored}).Get(ctx, &got); err != nil {
			s.logger.Warn("read the answer on the issue", "error", err)
			continue
		}
		for _, ig := range got.Ignored {
			ignored = append(ignored, ig.ID)
			s.status.Ignored = flow.AppendBounded(s.status.Ignored, ig, ignoredLimit)
		}
		if got.Found && !answered() {
			// An answer the CLI or the UI gave while the issue was read
			// came first: it stands.
			ans := cp.AnswerFrom(got.Body)
			ans.By, ans.Via = got.Author, fmt.Sprintf("a comment on #%d", link.Number)
			s.answer = &ans
		}
	}
	ok = answered()
	s.issueComment(ctx, marker, question+"\n\n---\n"+s.answeredText(ok))
	s.issueLabels(ctx, nil, []string{contract.LabelQuestion})
	return ok, nil
}

// questionBody is the comment that asks cp on the issue.
func (s *session) questionBody(id string, cp contract.Checkpoint) string {
	link := s.in.Issue
	var b strings.Builder
	if link.LabeledBy != "" {
		b.WriteString("@" + link.LabeledBy + " ")
	}
	b.WriteString(fmt.Sprintf("**Durable Ralph has a question** (checkpoint `%s`, iteration %d of session `%s`):\n\n", cp.ID, cp.Iteration, id))
	b.WriteString(flow.Quote(cp.Question) + "\n")
	if len(cp.Options) > 0 {
		b.WriteString(fmt.Sprintf("\nOptions: %s\n", strings.Join(cp.Options, " / ")))
	}
	if c := strings.TrimSpace(cp.Context); c != "" {
		b.WriteString("\nContext:\n\n" + flow.Quote(words.Cut(c, 2000)) + "\n")
	}
	t := s.st.Totals
	b.WriteString(fmt.Sprintf("\nSo far: %d iterations, %d commits, %.4f USD.", s.st.Iteration, t.Commits, t.CostUSD))
	if n := len(s.st.Recent); n > 0 {
		b.WriteString(" Last: " + s.st.Recent[n-1].Line() + ".")
	}
	b.WriteString("\n\n**How to answer:** a comment on this issue by someone with write access answers it: `approve`, `reject: <why>`, or your answer in words. ")
	b.WriteString(fmt.Sprintf("Or `starter respond %s --checkpoint %s --approve | --reject --reason \"…\" | --answer \"…\"`, or the Temporal UI. The first answer wins.", id, cp.ID))
	if !cp.Deadline.IsZero() {
		b.WriteString(fmt.Sprintf(" Without an answer by %s UTC the session goes on as configured (checkpoint.on-timeout).", cp.Deadline.UTC().Format("2006-01-02 15:04")))
	}
	return b.String()
}

// answeredText says how the question ended: answered by whom, or not.
func (s *session) answeredText(ok bool) string {
	switch {
	case s.answer != nil:
		a := *s.answer
		by := "someone"
		if a.By != "" {
			by = "@" + strings.TrimPrefix(a.By, "@")
		}
		via := ""
		if a.Via != "" {
			via = " via " + a.Via
		}
		what := "answered"
		switch {
		case a.Approve:
			what = "approved"
		case a.Reject:
			what = "rejected"
		}
		text := strings.TrimSpace(a.Answer + " " + a.Reason)
		if text != "" {
			text = ": " + words.Clip(text, 200)
		}
		return fmt.Sprintf("**%s** by %s%s%s. Later answers are not taken.", strings.ToUpper(what[:1])+what[1:], by, via, text)
	case !ok:
		return "**Not answered in time**; the session went on as configured."
	}
	return "**The session stopped** before an answer came."
}

// issueComment writes the issue's comment that carries marker (once,
// edited after).
func (s *session) issueComment(ctx workflow.Context, marker, body string) {
	link := s.in.Issue
	err := workflow.ExecuteActivity(flow.GitHubOptions(ctx, fmt.Sprintf("question on #%d", link.Number)), contract.ActivityComment,
		contract.CommentInput{Repo: link.Repo, Number: link.Number, Body: body, Marker: marker}).Get(ctx, nil)
	if err != nil {
		s.logger.Warn("comment on the issue", "error", err)
	}
}

// issueLabels adds and removes labels of the session's issue.
func (s *session) issueLabels(ctx workflow.Context, add, remove []string) {
	link := s.in.Issue
	err := workflow.ExecuteActivity(flow.GitHubOptions(ctx, fmt.Sprintf("labels of #%d", link.Number)), contract.ActivitySetLabels,
		contract.LabelsInput{Repo: link.Repo, Number: link.Number, Add: add, Remove: remove}).Get(ctx, nil)
	if err != nil {
		s.logger.Warn("label the issue", "error", err)
	}
}
