package queue

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/words"
	"github.com/durable-ralph/ralph/workflows/flow"
)

// ending is why the queue takes no more issues, "" while it does.
func (q *queue) ending() (contract.Reason, string) {
	s := q.in.Settings
	switch {
	case q.st.Stop != "":
		return contract.ReasonStopped, q.st.Stop
	case s.MaxIssues > 0 && q.st.Totals.Taken()+len(q.st.Working) >= s.MaxIssues:
		return contract.ReasonMaxIterations, words.Count(q.st.Totals.Taken()+len(q.st.Working), "issue") + " taken, the limit"
	case s.MaxCostUSD > 0 && q.st.Totals.CostUSD >= s.MaxCostUSD:
		return contract.ReasonMaxCost, fmt.Sprintf("the issues cost %s, the limit is $%.2f", words.Dollars(q.st.Totals.CostUSD), s.MaxCostUSD)
	}
	return "", ""
}

// takeIssue looks for a ready issue and works on it, or waits for the
// next poll. done says the run ended with res and err.
func (q *queue) takeIssue(ctx workflow.Context) (res contract.QueueResult, done bool, err error) {
	s := q.in.Settings
	q.polls++
	q.st.Poke = false
	var pick contract.PickResult
	err = workflow.ExecuteActivity(flow.GitHubOptions(ctx, "look for ready issues"), contract.ActivityPickIssue,
		contract.PickInput{Repo: s.Repo, Label: s.Label, Skip: q.workingNumbers(), Done: q.st.Merged, Unmerged: q.st.Unmerged,
			Mentions: q.mentionScan()}).Get(ctx, &pick)
	if err != nil {
		if flow.IsPermanent(err) || flow.IsGitHubPermanent(err) {
			res, err = q.fail(ctx, "list issues", err)
			return res, true, err
		}
		// GitHub is down for longer than the retries: try again at
		// the next poll.
		q.event(ctx, 0, "could not list issues: "+flow.RootMessage(err))
		pick = contract.PickResult{Waiting: q.st.Waiting}
	}
	q.noteSkipped(ctx, pick.Skipped)
	q.noteWaiting(ctx, pick.Waiting)
	if pick.Issue == nil && (len(pick.Asked) > 0 || !pick.ScannedTo.IsZero()) && q.takeAsked(ctx, pick) {
		return res, false, nil
	}
	if pick.Issue != nil {
		if workflow.GetVersion(ctx, versionIssueWorkflow, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
			q.work(ctx, *pick.Issue)
			if ctx.Err() != nil {
				res, err = q.cancelled(ctx, ctx.Err())
				return res, true, err
			}
			res, err = q.continueAsNew(ctx)
			return res, true, err
		}
		// An issue that names several repositories is a change set
		// (only a pick result of code that reads Repos: lines has them).
		if len(pick.Issue.Repos) > 0 && q.startChangeSet(ctx, *pick.Issue) || len(pick.Issue.Repos) == 0 && q.startIssue(ctx, *pick.Issue) {
			return res, false, nil
		}
	}
	if s.UntilIdle && len(q.st.Following) == 0 && len(q.st.Working) == 0 {
		res, err = q.finish(ctx, contract.ReasonComplete, "no ready issue left")
		return res, true, err
	}
	if err := q.idle(ctx); err != nil {
		res, err = q.cancelled(ctx, err)
		return res, true, err
	}
	return res, false, nil
}

// idle waits for the next poll, a poke, or an issue's end.
func (q *queue) idle(ctx workflow.Context) error {
	s := q.in.Settings
	next := workflow.Now(ctx).Add(s.PollInterval)
	if q.status.State != contract.StateIdle && len(q.st.Working) == 0 {
		q.event(ctx, 0, fmt.Sprintf("idle: no ready issue; looking again every %s (or on poke)%s", s.PollInterval, q.followingText()))
	}
	q.status.NextPollAt = next
	if len(q.st.Working) == 0 {
		q.setState(ctx, contract.StateIdle)
	}
	following := len(q.st.Following)
	_, err := workflow.AwaitWithTimeout(ctx, s.PollInterval, func() bool {
		return q.st.Poke || q.st.Stop != "" || q.st.Paused || q.ended > 0 || (s.UntilIdle && len(q.st.Following) < following)
	})
	q.status.NextPollAt = time.Time{}
	if err == nil && len(q.st.Working) > 0 {
		q.checkWorking(ctx)
	}
	return err
}

// noteSkipped records the labelled issues the queue will not take. Each
// is told once in the events, and listed in the status.
func (q *queue) noteSkipped(ctx workflow.Context, skipped []contract.Skipped) {
	known := map[int]string{}
	for _, s := range q.st.Skipped {
		known[s.Number] = s.Reason
	}
	for _, s := range skipped {
		if known[s.Number] != s.Reason {
			q.event(ctx, s.Number, fmt.Sprintf("skipped #%d %q: %s", s.Number, words.Clip(s.Title, 60), s.Reason))
			q.st.Totals.Skipped++
		}
	}
	// Issues skipped before that are not in this listing keep their
	// entry until the list is full.
	merged := append([]contract.Skipped(nil), skipped...)
	for _, s := range q.st.Skipped {
		found := false
		for _, n := range skipped {
			found = found || n.Number == s.Number
		}
		if !found {
			merged = append(merged, s)
		}
	}
	if len(merged) > queueSkipLimit {
		merged = merged[:queueSkipLimit]
	}
	q.st.Skipped = merged
}
