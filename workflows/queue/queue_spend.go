package queue

import (
	"errors"
	"fmt"
	"maps"
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
	if _, ok := q.st.Sets[end.Issue]; ok {
		q.st.Sets = maps.Clone(q.st.Sets)
		delete(q.st.Sets, end.Issue)
	}
	r := end.Result
	q.blockerEnded(ctx, end.Issue, r.Reason == contract.ReasonMerged)
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
		q.st.Day, q.st.DayCostUSD, q.st.DayAsks = day, 0, 0
	}
	return q.st.DayCostUSD
}

// versionBudgetWait is the change ID of the queue's budget_wait state
// and its set-limits raise.
const versionBudgetWait = "budget-wait"

// awaitTomorrow waits, taking no issue, until the next UTC day (or a stop,
// a pause, or a daily budget raised above what today cost).
func (q *queue) awaitTomorrow(ctx workflow.Context) error {
	now := workflow.Now(ctx).UTC()
	next := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
	parks := workflow.GetVersion(ctx, versionBudgetWait, workflow.DefaultVersion, 1) >= 1
	budget := fmt.Sprintf("today's issues cost %s, queue.max-cost-per-day is $%.2f: no new issue before %s",
		words.Dollars(q.st.DayCostUSD), q.in.Settings.MaxCostPerDay, next.Format(time.RFC3339))
	var cp *contract.Checkpoint
	if parks {
		asks := workflow.GetVersion(ctx, versionBudgetAnswer, workflow.DefaultVersion, 1) >= 1
		raise := 2 * q.in.Settings.MaxCostPerDay
		if asks {
			raise = q.raiseHint()
		}
		budget += fmt.Sprintf(", or until the budget is raised (starter set-limits --queue DIR --max-cost-per-day %.2f)", raise)
		if asks {
			cp = q.budgetQuestion(ctx, next)
			budget += fmt.Sprintf("; or answer its question %s (%s) in the chat or with starter respond %s --answer ...",
				cp.ID, budgetAnswers(raise), q.status.QueueID)
		}
	}
	q.event(ctx, 0, budget)
	q.status.NextPollAt = next
	if parks {
		q.setState(ctx, contract.StateBudgetWait)
	} else {
		q.setState(ctx, contract.StateIdle)
	}
	if cp != nil {
		q.status.Pending = cp
		q.notes.Send(ctx, contract.NotifyBudget, cp.Question, nil, cp)
	} else {
		q.notes.Send(ctx, contract.NotifyBudget, budget, nil, nil)
	}
	if parks {
		q.status.Budget = budget
		defer func() { q.status.Budget, q.status.Pending = "", nil }()
	}
	_, err := workflow.AwaitWithTimeout(ctx, next.Sub(now), func() bool {
		return q.st.Stop != "" || q.st.Paused || parks && q.spentToday(ctx) < q.in.Settings.MaxCostPerDay
	})
	q.status.NextPollAt = time.Time{}
	return err
}

// setLimits takes a change of the queue's cost limits: its total and its
// daily budget. A queue parked by its budget goes on once the budget is
// above what today cost.
func (q *queue) setLimits(ctx workflow.Context, req contract.SetLimitsRequest) (contract.SetLimitsRequest, error) {
	s := &q.in.Settings
	if req.MaxCostUSD > 0 {
		s.MaxCostUSD = req.MaxCostUSD
	}
	if req.MaxCostPerDay > 0 {
		s.MaxCostPerDay = req.MaxCostPerDay
	}
	q.event(ctx, 0, fmt.Sprintf("limits set: at most $%.2f in all, $%.2f a day (0 = none)", s.MaxCostUSD, s.MaxCostPerDay))
	return contract.SetLimitsRequest{MaxCostUSD: s.MaxCostUSD, MaxCostPerDay: s.MaxCostPerDay}, nil
}

// validateLimits refuses a change of limits a queue does not have, or
// below what it spent.
func (q *queue) validateLimits(ctx workflow.Context, req contract.SetLimitsRequest) error {
	switch {
	case req.MaxIterations != 0 || req.MaxRuntime != 0:
		return errors.New("a queue's limits are --max-cost and --max-cost-per-day; set a session's with set-limits on the session")
	case req.MaxCostUSD < 0 || req.MaxCostPerDay < 0:
		return errors.New("limits must not be negative")
	case req.MaxCostUSD == 0 && req.MaxCostPerDay == 0:
		return errors.New("no limit given")
	case req.MaxCostUSD > 0 && req.MaxCostUSD < q.st.Totals.CostUSD:
		return fmt.Errorf("max cost $%.2f is below the $%.4f the queue's issues already cost", req.MaxCostUSD, q.st.Totals.CostUSD)
	}
	return nil
}
