package queue

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/words"
)

// pullEnded takes the end of a followed pull request into the totals.
func (q *queue) pullEnded(ctx workflow.Context, end contract.PullEnd) {
	i := slices.Index(q.st.Following, end.Issue)
	if i < 0 {
		return // told twice
	}
	q.st.Following = slices.Delete(slices.Clone(q.st.Following), i, i+1)
	r := end.Result
	switch r.Reason {
	case contract.ReasonMerged:
		q.st.Totals.Merged++
	case contract.ReasonClosed:
		q.st.Totals.Closed++
	}
	q.spend(ctx, r.CostUSD)
	q.st.Totals.Iterations += r.Iterations
	q.event(ctx, end.Issue, fmt.Sprintf("#%d: pull request %s (%s); rounds: %d fix, %d review, %d update; %s", end.Issue, r.Reason, r.Message, r.FixRounds, r.ReviewRounds, r.UpdateRounds, words.Dollars(r.CostUSD)))
}

// followingText says which pull requests are followed, "" when none.
func (q *queue) followingText() string {
	if len(q.st.Following) == 0 {
		return ""
	}
	var issues []string
	for _, n := range q.st.Following {
		issues = append(issues, "#"+strconv.Itoa(n))
	}
	return "; following the pull requests of " + strings.Join(issues, ", ")
}

// spend adds cost to the totals and to the UTC day's.
func (q *queue) spend(ctx workflow.Context, cost float64) {
	q.st.Totals.CostUSD += cost
	q.spentToday(ctx)
	q.st.DayCostUSD += cost
}

// spentToday is what the current UTC day's issues cost so far; a new day
// starts from nothing.
func (q *queue) spentToday(ctx workflow.Context) float64 {
	if day := workflow.Now(ctx).UTC().Format(time.DateOnly); q.st.Day != day {
		q.st.Day, q.st.DayCostUSD = day, 0
	}
	return q.st.DayCostUSD
}

// awaitTomorrow waits, taking no issue, until the next UTC day (or a stop
// or a pause).
func (q *queue) awaitTomorrow(ctx workflow.Context) error {
	now := workflow.Now(ctx).UTC()
	next := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
	budget := fmt.Sprintf("today's issues cost %s, queue.max-cost-per-day is $%.2f: no new issue before %s",
		words.Dollars(q.st.DayCostUSD), q.in.Settings.MaxCostPerDay, next.Format(time.RFC3339))
	q.event(ctx, 0, budget)
	q.status.NextPollAt = next
	q.setState(ctx, contract.StateIdle)
	q.notes.Send(ctx, contract.NotifyBudget, budget, nil, nil)
	_, err := workflow.AwaitWithTimeout(ctx, next.Sub(now), func() bool { return q.st.Stop != "" || q.st.Paused })
	q.status.NextPollAt = time.Time{}
	return err
}
