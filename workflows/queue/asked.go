package queue

import (
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/words"
	"github.com/durable-ralph/ralph/workflows/flow"
)

// handledLimit bounds the comments a queue remembers it took.
const handledLimit = 200

// mentionScan is what the next look reads of the comments that ask the
// bot for work: those created since the last look (since the queue
// started, at first). Without the bot's login (a preflight of before
// it was read) nothing is read.
func (q *queue) mentionScan() *contract.MentionScan {
	bot := q.st.Preflight.Login
	if bot == "" {
		return nil
	}
	since := q.st.MentionsSince
	if since.IsZero() {
		since = q.st.StartedAt
	}
	return &contract.MentionScan{Bot: bot, Since: since, Handled: q.st.Handled, Trusted: q.in.Settings.Pull.TrustedBots}
}

// takeAsked takes the comments a look found asking for work: the first
// on an open issue nobody works on starts its work, with the comment's
// instruction for its session; the others are said once in the story
// (ignored and why; a pull request's, which its follower takes as
// feedback). ok says an issue's work started.
func (q *queue) takeAsked(ctx workflow.Context, pick contract.PickResult) (ok bool) {
	scanned := pick.ScannedTo
	for _, m := range pick.Asked {
		who := fmt.Sprintf("#%d: @%s asked for work in a comment", m.Number, m.Author)
		switch {
		case m.Ignored != "":
			q.event(ctx, m.Number, fmt.Sprintf("%s: ignored (%s)", who, m.Ignored))
		case m.PullRequest:
			if !q.askedOnPull(ctx, m, who) {
				// A round asked earlier runs there: the next look reads it again.
				if at := m.CreatedAt.Add(-time.Nanosecond); at.Before(scanned) {
					scanned = at
				}
				continue
			}
		case slices.Contains(q.workingNumbers(), m.Number):
			q.event(ctx, m.Number, who+" while it is worked on: its session takes comments as answers only")
		case ok || len(q.st.Working) >= q.in.Settings.Slots():
			// No slot now: the next look reads it again.
			if at := m.CreatedAt.Add(-time.Nanosecond); at.Before(scanned) {
				scanned = at
			}
			continue
		default:
			q.event(ctx, m.Number, fmt.Sprintf("%s: %s", who, words.Clip(words.OneLine(m.Instruction), 80)))
			ok = q.startIssue(ctx, contract.Issue{Number: m.Number, Title: m.Title, LabeledBy: m.Author, Instruction: m.Instruction})
		}
		q.st.Handled = flow.AppendBounded(q.st.Handled, m.CommentID, handledLimit)
	}
	if scanned.After(q.st.MentionsSince) {
		q.st.MentionsSince = scanned
	}
	return ok
}
