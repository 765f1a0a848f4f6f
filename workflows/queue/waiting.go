package queue

import (
	"fmt"
	"slices"
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/words"
	"github.com/durable-ralph/ralph/workflows/flow"
)

// Bounds of what a queue remembers of dependencies.
const (
	saidLimit   = 50
	mergedLimit = 200
)

// noteWaiting takes the ready issues a look found waiting: each is said
// once in the queue's story and once on the issue (a comment edited when
// what it waits for changes); every issue of a dependency cycle is told.
func (q *queue) noteWaiting(ctx workflow.Context, waiting []contract.Waiting) {
	q.st.Waiting = waiting
	for _, w := range waiting {
		text := w.Text()
		tell := []int{w.Number}
		if n := len(w.Cycle); n > 1 {
			tell = w.Cycle[:n-1]
		}
		for _, n := range tell {
			if q.said(n) == text {
				continue
			}
			q.event(ctx, n, fmt.Sprintf("#%d %s", n, text))
			q.comment(ctx, n, fmt.Sprintf("**Durable Ralph** does not take this issue yet: it %s.\n\n%s", text, waitHow(w)))
			q.st.Said = slices.DeleteFunc(slices.Clone(q.st.Said), func(s contract.WaitSaid) bool { return s.Number == n })
			q.st.Said = flow.AppendBounded(q.st.Said, contract.WaitSaid{Number: n, Text: text}, saidLimit)
		}
	}
}

// waitHow says how the wait of w ends.
func waitHow(w contract.Waiting) string {
	switch {
	case len(w.Cycle) > 0:
		return "Remove one of the `Depends on` / `Blocked by` references (or GitHub issue dependencies) to break the cycle."
	case w.Person != "":
		return "The queue looks again when the issue changes (a webhook) or at its next poll."
	}
	return "It starts within seconds of its blockers' pull requests being merged (or their issues closed as completed); nothing polls for it meanwhile but the queue's usual look for ready issues."
}

// said is what the queue last said issue n waits for, "" when nothing.
func (q *queue) said(n int) string {
	for _, s := range q.st.Said {
		if s.Number == n {
			return s.Text
		}
	}
	return ""
}

// taken edits the waiting comment of issue n, if it had one, to say that
// it waits no more.
func (q *queue) taken(ctx workflow.Context, n int) {
	text := q.said(n)
	if text == "" {
		return
	}
	q.comment(ctx, n, fmt.Sprintf("**Durable Ralph** waited: this issue ~~%s~~.\n\nIt waits no more: the queue took it on %s.",
		text, workflow.Now(ctx).UTC().Format("2006-01-02 15:04 UTC")))
	q.st.Said = slices.DeleteFunc(slices.Clone(q.st.Said), func(s contract.WaitSaid) bool { return s.Number == n })
}

// comment writes the queue's waiting comment on issue n (once, edited
// after).
func (q *queue) comment(ctx workflow.Context, n int, body string) {
	s := q.in.Settings
	err := workflow.ExecuteActivity(flow.GitHubOptions(ctx, fmt.Sprintf("what #%d waits for", n)), contract.ActivityComment,
		contract.CommentInput{Repo: s.Repo, Number: n, Body: body, Marker: contract.WaitMarker(q.status.QueueID, n), Self: q.st.Preflight.Login}).Get(ctx, nil)
	if err != nil {
		q.logger.Warn("comment on the waiting issue", "issue", n, "error", err)
	}
}

// blockerEnded notes the end of issue n's pull request (merged or not)
// and wakes the queue when an issue waits for it.
func (q *queue) blockerEnded(ctx workflow.Context, n int, merged bool) {
	q.st.Unmerged = slices.DeleteFunc(slices.Clone(q.st.Unmerged), func(u contract.Unmerged) bool { return u.Number == n })
	switch {
	case merged && !slices.Contains(q.st.Merged, n):
		q.st.Merged = flow.AppendBounded(q.st.Merged, n, mergedLimit)
	case !merged:
		q.st.Unmerged = flow.AppendBounded(q.st.Unmerged, contract.Unmerged{Number: n, At: workflow.Now(ctx)}, mergedLimit)
	}
	for _, w := range q.st.Waiting {
		if slices.Contains(w.On, contract.IssueRef{Number: n}) {
			q.st.Poke = true
		}
	}
}

// waitingText says which issues wait, for the UI's details.
func waitingText(waiting []contract.Waiting) string {
	var b strings.Builder
	for _, w := range waiting {
		b.WriteString(fmt.Sprintf("\n- #%d %s: %s", w.Number, words.Clip(w.Title, 60), w.Text()))
	}
	return b.String()
}
