package queue_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/workflows/queue"
)

// budgetDay is the UTC day of the budget tests, and budgetID the ID of
// its first budget question.
const (
	budgetDay = "2026-11-24"
	budgetID  = "budget-" + budgetDay
)

// parkedQueue is a queue run whose day's issues already cost $0.50 of a
// $0.40 daily budget at noon UTC: it parks in budget_wait at once.
func parkedQueue(t *testing.T) (*queueEnv, contract.QueueInput, time.Time) {
	env := newQueueEnv(t, completed, ready(6))
	in := queueInput()
	in.Settings.MaxCostPerDay = 0.4
	start := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	in.CarryOver = &contract.QueueCarryOver{StartedAt: start, Day: budgetDay, DayCostUSD: 0.5,
		Totals: contract.QueueTotals{CostUSD: 0.5}, Preflight: contract.PreflightResult{FullName: "acme/app", DefaultBranch: "main"}}
	env.SetStartTime(start)
	return env, in, start
}

// respond sends the respond update with ans and returns what became of
// it: the refusal or the handler's error, and the result.
func (env *queueEnv) respond(ans contract.Answer) (*error, *contract.RespondResult) {
	var err error
	var res contract.RespondResult
	env.UpdateWorkflow(contract.UpdateRespond, "", &testsuite.TestUpdateCallback{
		OnAccept: func() {},
		OnReject: func(e error) { err = e },
		OnComplete: func(v any, e error) {
			if e != nil {
				err = e
				return
			}
			res = v.(contract.RespondResult)
		},
	}, ans)
	return &err, &res
}

// queueStatus is the queue's status query's answer.
func (env *queueEnv) queueStatus(t *testing.T) contract.QueueStatus {
	v, err := env.QueryWorkflow(contract.QueryStatus)
	require.NoError(t, err)
	var st contract.QueueStatus
	require.NoError(t, v.Get(&st))
	return st
}

// storySays reports whether a line of the queue's story holds text.
func storySays(events []contract.QueueEvent, text string) bool {
	for _, e := range events {
		if strings.Contains(e.Text, text) {
			return true
		}
	}
	return false
}

// TestQueueBudgetQuestionRaises: the budget_wait notification asks a
// question whose answer, through the respond update, sets the daily
// budget (an amount, or approve for the suggested raise: twice the
// budget, or today's cost and the budget when more) and wakes the
// queue at once; the status shows the question while it is pending, and
// the story says who answered through what.
func TestQueueBudgetQuestionRaises(t *testing.T) {
	tests := []struct {
		name       string
		ans        contract.Answer
		wantBudget float64
		wantStory  string
	}{
		{"raise_to_an_amount", contract.Answer{ID: budgetID, Answer: "raise to $1", By: "alice", Via: "Telegram"}, 1,
			`budget question ` + budgetID + ` answered "raise to $1" by @alice through Telegram: daily budget raised from $0.40 to $1.00`},
		{"bare_number", contract.Answer{ID: budgetID, Answer: "2", By: "carol", Via: "Slack"}, 2,
			`answered "2" by @carol through Slack: daily budget raised from $0.40 to $2.00`},
		// Today cost $0.50: twice the budget ($0.80) would leave $0.30 for
		// the day; approve allows today's cost and the budget again.
		{"approve_allows_the_suggested_raise", contract.Answer{ID: budgetID, Approve: true, By: "bob", Via: "starter respond"}, 0.9,
			`budget question ` + budgetID + ` approved by @bob through starter respond: daily budget raised from $0.40 to $0.90`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, in, start := parkedQueue(t)
			var st contract.QueueStatus
			var err, again *error
			var res *contract.RespondResult
			env.RegisterDelayedCallback(func() {
				st = env.queueStatus(t)
				err, res = env.respond(tt.ans)
				// The question is answered: a second answer is refused.
				again, _ = env.respond(tt.ans)
			}, time.Hour)
			env.ExecuteWorkflow(queue.IssueQueue, in)

			require.Equal(t, contract.StateBudgetWait, st.State)
			require.NotNil(t, st.Pending, "the status shows the question")
			require.Equal(t, budgetID, st.Pending.ID)
			require.Equal(t, contract.KindBudget, st.Pending.Kind)
			require.Contains(t, st.Budget, "or answer its question "+budgetID)
			require.NoError(t, *err)
			require.Equal(t, budgetID, res.ID)
			require.ErrorContains(t, *again, "it asks no question")

			require.Len(t, env.pickedAt, 1)
			require.Equal(t, start.Add(time.Hour), env.pickedAt[0].UTC(), "the answer wakes the queue, not midnight")
			next := carried(t, env)
			require.InDelta(t, tt.wantBudget, next.Settings.MaxCostPerDay, 1e-9, "the new budget is carried")
			require.True(t, storySays(next.CarryOver.Events, tt.wantStory), "the story says who answered: %+v", next.CarryOver.Events)
		})
	}
}

// TestQueueBudgetQuestionStops: stop, or a rejection, ends the queue as
// its stop signal does, naming who answered.
func TestQueueBudgetQuestionStops(t *testing.T) {
	tests := []struct {
		name string
		ans  contract.Answer
		want string
	}{
		{"stop", contract.Answer{ID: budgetID, Answer: "stop", By: "bob", Via: "Slack"},
			`stop requested: budget question ` + budgetID + ` answered "stop" by @bob through Slack`},
		{"reject", contract.Answer{ID: budgetID, Reject: true, Reason: "too dear", Via: "Telegram"},
			`stop requested: budget question ` + budgetID + ` rejected: too dear by a person through Telegram`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, in, _ := parkedQueue(t)
			var err *error
			env.RegisterDelayedCallback(func() { err, _ = env.respond(tt.ans) }, time.Hour)
			env.ExecuteWorkflow(queue.IssueQueue, in)

			require.NoError(t, *err)
			require.True(t, env.IsWorkflowCompleted())
			var res contract.QueueResult
			require.NoError(t, env.GetWorkflowResult(&res))
			require.Equal(t, contract.ReasonStopped, res.Reason)
			require.Equal(t, tt.want, res.Message)
			require.Empty(t, env.pickedAt, "no issue is taken")
		})
	}
}

// TestQueueBudgetQuestionRefuses: an answer to another question, one that
// names no amount or one not above what today cost is refused with why,
// and the queue waits on for the next UTC day.
func TestQueueBudgetQuestionRefuses(t *testing.T) {
	tests := []struct {
		name string
		ans  contract.Answer
		want string
	}{
		{"wrong_id", contract.Answer{ID: "budget-2026-11-23", Approve: true}, `checkpoint "budget-2026-11-23" is not pending; the pending checkpoint is ` + budgetID},
		{"no_id", contract.Answer{Approve: true}, `checkpoint "" is not pending`},
		{"names_nothing", contract.Answer{ID: budgetID, Answer: "more please"}, `say how far to raise the daily budget ("raise to $1.80"), "approve" to allow $0.90, or "stop"`},
		{"names_no_amount", contract.Answer{ID: budgetID, Answer: "8h"}, "say how far to raise the daily budget"},
		{"not_above_today", contract.Answer{ID: budgetID, Answer: "raise to $0.45"}, "a daily budget of $0.45 is not above the $0.5000 today's issues cost"},
		{"empty", contract.Answer{ID: budgetID}, "an answer must approve, reject or give an answer text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, in, _ := parkedQueue(t)
			var err *error
			var after contract.QueueStatus
			env.RegisterDelayedCallback(func() { err, _ = env.respond(tt.ans) }, time.Hour)
			env.RegisterDelayedCallback(func() { after = env.queueStatus(t) }, 2*time.Hour)
			env.ExecuteWorkflow(queue.IssueQueue, in)

			require.ErrorContains(t, *err, tt.want)
			require.Equal(t, contract.StateBudgetWait, after.State, "the queue waits on")
			require.NotNil(t, after.Pending, "the question is still pending")
			require.Len(t, env.pickedAt, 1)
			require.Equal(t, time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC), env.pickedAt[0].UTC(), "no pick before the next UTC day")
			next := carried(t, env)
			require.InDelta(t, 0.4, next.Settings.MaxCostPerDay, 1e-9, "the budget is unchanged")
		})
	}
}

// TestQueueRespondWithoutABudgetQuestion: a queue that is not in
// budget_wait asks nothing, and says so.
func TestQueueRespondWithoutABudgetQuestion(t *testing.T) {
	env := newQueueEnv(t, completed, contract.PickResult{}, ready(5))
	var err *error
	env.RegisterDelayedCallback(func() { err, _ = env.respond(contract.Answer{ID: budgetID, Approve: true}) }, 30*time.Minute)
	env.ExecuteWorkflow(queue.IssueQueue, queueInput())
	require.ErrorContains(t, *err, "the queue is idle: it asks no question (only a queue in budget_wait asks, about its daily budget)")
	carried(t, env)
}

// TestQueueBudgetNotificationAsks: the budget_wait notification carries
// the question to the chat: its checkpoint, choices, and the queue's
// workflow ID, where the chat inbox sends the answer.
func TestQueueBudgetNotificationAsks(t *testing.T) {
	env, in, _ := parkedQueue(t)
	var st contract.QueueStatus
	env.RegisterDelayedCallback(func() {
		st = env.queueStatus(t)
		env.respond(contract.Answer{ID: budgetID, Approve: true})
	}, time.Hour)
	env.ExecuteWorkflow(queue.IssueQueue, in)
	carried(t, env)

	var budget []contract.Notification
	for _, n := range env.notes.List() {
		if n.Event == contract.NotifyBudget {
			budget = append(budget, n)
		}
	}
	require.Len(t, budget, 1)
	n := budget[0]
	require.Equal(t, budgetID, n.Checkpoint)
	require.Equal(t, 1, n.Question)
	require.Equal(t, []string{"approve", "stop"}, n.Choices)
	require.Equal(t, st.QueueID, n.WorkflowID, "answers in the chat go to the queue")
	require.Equal(t, st.Pending.Question, n.Text)
	require.Contains(t, n.Text, "Today's (2026-11-24 UTC) issues cost $0.5000; the queue's daily budget (queue.max-cost-per-day) is $0.40")
	require.Contains(t, n.Text, `("raise to $1.80")`)
	require.Contains(t, n.Text, `Answer "approve" to allow $0.90 for today`)
	require.Contains(t, n.Text, `"stop" to stop the queue`)
}
