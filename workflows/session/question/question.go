// Package question asks a session's checkpoint on its GitHub issue and
// takes the first reply there of a person with write access as the
// answer: the way a person answers an issue's session where they already
// are, beside the CLI, the UI and the chats.
package question

import (
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/words"
	"github.com/durable-ralph/ralph/workflows/flow"
)

// Waiter is the session that waits for the answer to a question.
type Waiter interface {
	// Answered reports whether the wait is over: the checkpoint has its
	// answer (from the issue or elsewhere: the CLI, the UI, a chat), or
	// a stop was requested.
	Answered() bool
	// Answer is the checkpoint's answer, nil until it has one.
	Answer() *contract.Answer
	// Take takes a reply on the issue as the answer.
	Take(contract.Answer)
	// Ignore notes a comment on the issue that could not answer.
	Ignore(contract.Ignored)
}

// Question is a checkpoint asked on a session's GitHub issue.
type Question struct {
	Link       contract.IssueLink
	Checkpoint contract.Checkpoint
	// SoFar says what the session did so far, for the question.
	SoFar  string
	Logger log.Logger
}

// Await asks q on the issue (a comment with its marker, the question
// label) and waits until w has its answer, reading the issue for an
// answer every poll interval or when poked (a webhook): the first
// comment after the question by a person with write access answers it.
// Afterwards the question comment says who answered and the label goes.
// ok is false when timeout (if any) passed first.
func (q Question) Await(ctx workflow.Context, w Waiter, timeout time.Duration) (ok bool, err error) {
	link, cp := q.Link, q.Checkpoint
	id := workflow.GetInfo(ctx).WorkflowExecution.ID
	marker := contract.QuestionMarker(id, cp.ID)
	question := q.body(id)
	q.comment(ctx, marker, question)
	q.labels(ctx, []string{contract.LabelQuestion}, nil)
	answered := w.Answered
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
			q.Logger.Warn("read the answer on the issue", "error", err)
			continue
		}
		for _, ig := range got.Ignored {
			ignored = append(ignored, ig.ID)
			w.Ignore(ig)
		}
		if got.Found && !answered() {
			// An answer the CLI or the UI gave while the issue was read
			// came first: it stands.
			ans := cp.AnswerFrom(got.Body)
			ans.By, ans.Via = got.Author, fmt.Sprintf("a comment on #%d", link.Number)
			w.Take(ans)
		}
	}
	ok = answered()
	q.comment(ctx, marker, question+"\n\n---\n"+answeredText(w.Answer(), ok))
	q.labels(ctx, nil, []string{contract.LabelQuestion})
	return ok, nil
}

// body is the comment that asks q on the issue of session id.
func (q Question) body(id string) string {
	link, cp := q.Link, q.Checkpoint
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
	b.WriteString("\n" + q.SoFar)
	b.WriteString("\n\n**How to answer:** a comment on this issue by someone with write access answers it: `approve`, `reject: <why>`, or your answer in words. ")
	b.WriteString(fmt.Sprintf("Or `starter respond %s --checkpoint %s --approve | --reject --reason \"…\" | --answer \"…\"`, or the Temporal UI. The first answer wins.", id, cp.ID))
	if !cp.Deadline.IsZero() {
		b.WriteString(fmt.Sprintf(" Without an answer by %s UTC the session goes on as configured (checkpoint.on-timeout).", cp.Deadline.UTC().Format("2006-01-02 15:04")))
	}
	return b.String()
}

// answeredText says how the question ended: answered (ans) by whom, or
// not in time (ok false), or stopped.
func answeredText(ans *contract.Answer, ok bool) string {
	switch {
	case ans != nil:
		a := *ans
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

// comment writes the issue's comment that carries marker (once, edited
// after).
func (q Question) comment(ctx workflow.Context, marker, body string) {
	link := q.Link
	err := workflow.ExecuteActivity(flow.GitHubOptions(ctx, fmt.Sprintf("question on #%d", link.Number)), contract.ActivityComment,
		contract.CommentInput{Repo: link.Repo, Number: link.Number, Body: body, Marker: marker, Self: link.Self}).Get(ctx, nil)
	if err != nil {
		q.Logger.Warn("comment on the issue", "error", err)
	}
}

// labels adds and removes labels of the session's issue.
func (q Question) labels(ctx workflow.Context, add, remove []string) {
	link := q.Link
	err := workflow.ExecuteActivity(flow.GitHubOptions(ctx, fmt.Sprintf("labels of #%d", link.Number)), contract.ActivitySetLabels,
		contract.LabelsInput{Repo: link.Repo, Number: link.Number, Add: add, Remove: remove}).Get(ctx, nil)
	if err != nil {
		q.Logger.Warn("label the issue", "error", err)
	}
}
