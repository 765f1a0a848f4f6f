package queue

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/words"
)

// versionBudgetAnswer is the change ID of the queue's budget question:
// the budget_wait notification asks it, and the respond update answers
// it.
const versionBudgetAnswer = "budget-answer"

// registerRespond installs the respond update, which answers the budget
// question of a queue in budget_wait. Its validator refuses, before
// anything is written to history, an answer while no question is
// pending, to another question, or that the queue cannot apply.
func (q *queue) registerRespond(ctx workflow.Context) error {
	err := workflow.SetUpdateHandlerWithOptions(ctx, contract.UpdateRespond, q.respond, workflow.UpdateHandlerOptions{
		Validator: q.validateRespond,
		Description: "Answer the budget question of a queue in budget_wait: an amount (\"raise to $20\") is the new daily budget, " +
			"approve doubles it, stop (or reject) stops the queue; rejected unless the ID is the pending question's",
	})
	if err != nil {
		return fmt.Errorf("register %s update: %w", contract.UpdateRespond, err)
	}
	return nil
}

// budgetQuestion is the question asked when the queue parks on its daily
// budget until next: raise the budget, double it, or stop. Its ID names
// the UTC day, with the count of the day's questions after the first.
func (q *queue) budgetQuestion(ctx workflow.Context, next time.Time) *contract.Checkpoint {
	q.spentToday(ctx)
	q.st.DayAsks++
	id := "budget-" + q.st.Day
	if q.st.DayAsks > 1 {
		id = fmt.Sprintf("%s-%d", id, q.st.DayAsks)
	}
	b, raise := q.in.Settings.MaxCostPerDay, q.raiseHint()
	question := fmt.Sprintf("Today's (%s UTC) issues cost %s; the queue's daily budget (queue.max-cost-per-day) is $%.2f, "+
		"so it takes no new issue before %s. Answer \"approve\" to allow $%.2f for today, another amount (\"raise to $%.2f\"), "+
		"or \"stop\" to stop the queue (the issues being worked on finish); or let it wait for the next UTC day.",
		q.st.Day, words.Dollars(q.st.DayCostUSD), b, next.Format(time.RFC3339), raise, 2*raise)
	return &contract.Checkpoint{
		ID: id, Kind: contract.KindBudget, Type: contract.CheckpointHumanVerify,
		Question: question, Options: []string{"approve", "stop"}, AskedAt: workflow.Now(ctx),
	}
}

// raiseHint is the raise the budget question suggests, and what approve
// allows: twice the budget, or today's cost and the budget again when
// today's issues cost more than that already (a raise not above what
// today cost is refused).
func (q *queue) raiseHint() float64 {
	b := q.in.Settings.MaxCostPerDay
	return max(2*b, math.Ceil((q.st.DayCostUSD+b)*100-1e-6)/100)
}

// budgetAnswers says, for the queue's story and status, what answers the
// budget question takes.
func budgetAnswers(raise float64) string {
	return fmt.Sprintf("\"approve\" for $%.2f, another amount such as \"raise to $%.2f\", \"stop\"", raise, 2*raise)
}

// validateRespond accepts ans only as the answer to the pending budget
// question, and only if the queue can apply it.
func (q *queue) validateRespond(ans contract.Answer) error {
	cp := q.status.Pending
	if cp == nil {
		return fmt.Errorf("the queue is %s: it asks no question (only a queue in %s asks, about its daily budget)",
			q.status.State, contract.StateBudgetWait)
	}
	if err := ans.Validate(cp, false); err != nil {
		return err
	}
	_, err := q.readBudgetAnswer(ans)
	return err
}

// respond takes ans, the answer to the pending budget question that
// validateRespond accepted: a new daily budget wakes the queue at once
// (awaitTomorrow's wait ends), a stop ends it as the stop signal does.
func (q *queue) respond(ctx workflow.Context, ans contract.Answer) (contract.RespondResult, error) {
	cp := *q.status.Pending
	got, err := q.readBudgetAnswer(ans)
	if err != nil {
		return contract.RespondResult{}, err
	}
	q.status.Pending = nil
	answered := fmt.Sprintf("budget question %s %s %s", cp.ID, answerSaid(ans), answeredBy(ans))
	if got.Stop {
		q.st.Stop = "stop requested: " + answered
		q.event(ctx, 0, q.st.Stop+"; the queue ends after the current issue")
		return contract.RespondResult{ID: cp.ID, Message: fmt.Sprintf("answer to %s recorded; the queue stops", cp.ID)}, nil
	}
	s := &q.in.Settings
	was := s.MaxCostPerDay
	s.MaxCostPerDay = got.Raise.MaxCostUSD
	q.event(ctx, 0, fmt.Sprintf("%s: daily budget raised from $%.2f to $%.2f; the queue takes issues again", answered, was, s.MaxCostPerDay))
	return contract.RespondResult{ID: cp.ID, Message: fmt.Sprintf("answer to %s recorded; the daily budget is $%.2f, the queue goes on", cp.ID, s.MaxCostPerDay)}, nil
}

// readBudgetAnswer reads ans, an answer to the budget question, with the
// grammar of an answer to a session's cost limit (contract.ReadLimitAnswer):
// stop (or a rejection) stops the queue, an amount ("raise to $20", "20")
// is the new daily budget, approve alone allows raiseHint (twice the
// budget, or more when today cost more). An answer that names
// no amount, or one not above what today's issues cost, is refused with
// why.
func (q *queue) readBudgetAnswer(ans contract.Answer) (contract.LimitAnswer, error) {
	raise := q.raiseHint()
	// ReadLimitAnswer's approve allows twice the limit it is given.
	got, err := contract.ReadLimitAnswer(contract.ReasonMaxCost, contract.Limits{MaxCostUSD: raise / 2}, ans)
	switch {
	case errors.Is(err, contract.ErrLimitAnswer) || err == nil && !got.Stop && got.Raise.MaxCostUSD <= 0:
		return got, fmt.Errorf("say how far to raise the daily budget (\"raise to $%.2f\"), \"approve\" to allow $%.2f, or \"stop\"", 2*raise, raise)
	case err != nil, got.Stop:
		return got, err
	case got.Raise.MaxCostUSD <= q.st.DayCostUSD:
		return got, fmt.Errorf("a daily budget of $%.2f is not above the %s today's issues cost: the queue would still wait",
			got.Raise.MaxCostUSD, words.Dollars(q.st.DayCostUSD))
	}
	return got, nil
}

// answerSaid is what ans said, for the queue's story: approved,
// rejected (with the reason) or the answer's text, quoted.
func answerSaid(ans contract.Answer) string {
	if ans.Approve || ans.Reject {
		return ans.Said()
	}
	return fmt.Sprintf("answered %q", ans.Answer)
}

// answeredBy says who gave ans and through what, as far as it says.
func answeredBy(ans contract.Answer) string {
	by := "by a person"
	if ans.By != "" {
		by = "by @" + strings.TrimPrefix(ans.By, "@")
	}
	if ans.Via != "" {
		by += " through " + ans.Via
	}
	return by
}
