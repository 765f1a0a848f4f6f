package issue

import (
	"fmt"
	"strings"

	"github.com/durable-ralph/ralph/contract"
)

// commentBody is the issue's progress comment: its iterations so far,
// and result once the issue is done.
func commentBody(cur *contract.CurrentIssue, result string) string {
	var b strings.Builder
	b.WriteString(fmt.Sprintf("**Durable Ralph** is working on this issue on branch `%s` (session `%s`, %s).\n", cur.Branch, cur.SessionID, contract.ReadyBy(cur.LabeledBy, cur.Asked)))
	if len(cur.Iterations) > 0 {
		b.WriteString("\n")
		for _, it := range cur.Iterations {
			b.WriteString(fmt.Sprintf("- %s\n", it.Line()))
		}
	}
	if result != "" {
		b.WriteString(fmt.Sprintf("\n%s\n", result))
	}
	return b.String()
}

// failureText says how the issue's session ended.
func failureText(out contract.IssueOutcome) string {
	text := string(out.Reason)
	if out.Message != "" {
		text += ": " + out.Message
	}
	return text
}

// failureComment is the comment on an issue whose work ended without a
// pull request.
func (w *Work) failureComment(out contract.IssueOutcome, cur *contract.CurrentIssue, push contract.PushResult) string {
	var b strings.Builder
	b.WriteString(fmt.Sprintf("Not resolved: the session ended **%s**", out.Reason))
	if out.Message != "" {
		b.WriteString(fmt.Sprintf(" (%s)", out.Message))
	}
	b.WriteString(".")
	if n := len(cur.Iterations); n > 0 {
		b.WriteString(fmt.Sprintf(" Last iteration: %s.", cur.Iterations[n-1].Line()))
	}
	if push.Pushed {
		b.WriteString(fmt.Sprintf(" The branch `%s` is pushed with %d commits.", cur.Branch, push.Commits))
	}
	b.WriteString(fmt.Sprintf(" No pull request was opened. Add the `%s` label again to retry on the same branch.", w.Settings.Label))
	return b.String()
}

// pullBody is the description of the issue's pull request.
func pullBody(is contract.Issue, out contract.IssueOutcome, push contract.PushResult) string {
	var b strings.Builder
	b.WriteString(fmt.Sprintf("Closes #%d\n\n", is.Number))
	b.WriteString(fmt.Sprintf("Opened by Durable Ralph: session `%s`, %d iterations, %d commits, %.4f USD.\n", out.SessionID, out.Iterations, push.Commits, out.CostUSD))
	if out.Message != "" {
		b.WriteString(fmt.Sprintf("\n%s.\n", out.Message))
	}
	if len(push.Log) > 0 {
		b.WriteString("\nCommits:\n\n")
		for _, l := range push.Log {
			b.WriteString(fmt.Sprintf("- %s\n", l))
		}
	}
	return b.String()
}
