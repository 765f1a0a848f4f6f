package inbox_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/workflows/inbox"
)

// TestChatInboxActsOnEachUpdate plays updates to the inbox and checks
// what it answers and replies: a reply to a question answers it, a tap
// answers with its choice, a reply to a plan that does not approve asks
// for changes, a 1 MB answer is clipped, and a reply to a message that
// asks nothing, an unknown command and /status are answered in the chat.
func TestChatInboxActsOnEachUpdate(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(inbox.ChatInbox)
	question := contract.ChatSent{Key: "s1/r1/question/1", WorkflowID: "s1", Session: "/work/a", Event: contract.NotifyQuestion,
		Checkpoint: "cp-2", Choices: []string{"postgres", "sqlite"}, Messages: []contract.SentMessage{{Channel: "telegram", Chat: "111", MessageID: "10"}, {Channel: "slack", Chat: "C1", MessageID: "1700.1"}}}
	plan := contract.ChatSent{Key: "s2/r1/plan/1", WorkflowID: "s2", Session: "/work/b", Event: contract.NotifyPlan,
		Checkpoint: "cp-1-plan", Choices: []string{"approve", "reject"}, Messages: []contract.SentMessage{{Channel: "telegram", Chat: "111", MessageID: "11"}}}
	huge := strings.Repeat("x", 1<<20)
	batches := [][]contract.ChatUpdate{{
		{ID: 1, Chat: 111, User: "@alice", MessageID: 20, ReplyTo: 10, Text: "sqlite, in a file"},
		{ID: 2, Chat: 111, User: "@alice", MessageID: 21, CallbackID: "cb1", KeyHash: contract.KeyHash(question.Key), Choice: 0},
		{ID: 3, Chat: 111, User: "@bob", MessageID: 22, ReplyTo: 11, Text: "also delete old widgets"},
		{ID: 4, Chat: 111, User: "@bob", MessageID: 23, ReplyTo: 11, Text: huge},
		{ID: 5, Chat: 111, User: "@bob", MessageID: 24, ReplyTo: 99, Text: "approve"},
		{ID: 6, Chat: 111, User: "@bob", MessageID: 25, Text: "/frobnicate"},
		{ID: 7, Chat: 111, User: "@bob", MessageID: 26, Text: "/status"},
		{ID: 8, Chat: 111, User: "@bob", MessageID: 27, ReplyTo: 10, Text: "/guide keep the schema small"},
		{ID: 9, Chat: 111, User: "@bob", MessageID: 28, Text: "/pause"},
	}}
	var polls []int64
	env.RegisterActivityWithOptions(func(_ context.Context, p contract.ChatPoll) (contract.ChatUpdates, error) {
		polls = append(polls, p.Offset)
		if len(polls) > len(batches) {
			return contract.ChatUpdates{Off: true}, nil
		}
		b := batches[len(polls)-1]
		return contract.ChatUpdates{Updates: b, Next: b[len(b)-1].ID + 1}, nil
	}, activity.RegisterOptions{Name: contract.ActivityChatUpdates})
	var answers []contract.ChatAnswer
	env.RegisterActivityWithOptions(func(_ context.Context, in contract.ChatAnswer) (contract.ChatAnswered, error) {
		answers = append(answers, in)
		return contract.ChatAnswered{Taken: true, Message: "Answered"}, nil
	}, activity.RegisterOptions{Name: contract.ActivityChatAnswer})
	var replies []contract.ChatReply
	env.RegisterActivityWithOptions(func(_ context.Context, in contract.ChatReply) error {
		replies = append(replies, in)
		return nil
	}, activity.RegisterOptions{Name: contract.ActivityChatReply})
	env.RegisterActivityWithOptions(func(context.Context) ([]contract.ChatSession, error) {
		return []contract.ChatSession{{WorkflowID: "s1", Line: "s1: awaiting_human, iteration 2"}}, nil
	}, activity.RegisterOptions{Name: contract.ActivityChatSessions})
	var slackPolls []contract.SlackPoll
	env.RegisterActivityWithOptions(func(_ context.Context, p contract.SlackPoll) (contract.SlackReplies, error) {
		slackPolls = append(slackPolls, p)
		if len(slackPolls) > 1 {
			return contract.SlackReplies{Off: true}, nil
		}
		return contract.SlackReplies{
			Updates: []contract.ChatUpdate{{User: "@carol", Text: "sqlite", Slack: &contract.SlackPost{Channel: "C1", Thread: "1700.1", TS: "1700.2"}}},
			Read:    []contract.SlackPost{{Channel: "C1", Thread: "1700.1", TS: "1700.2"}},
		}, nil
	}, activity.RegisterOptions{Name: contract.ActivityChatSlackReplies})
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(contract.SignalChatSent, question)
		env.SignalWorkflow(contract.SignalChatSent, plan)
	}, 0)
	var signalled []string
	env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, mock.Anything, mock.Anything, mock.Anything).Return(
		func(_, id, _, name string, arg any) error {
			signalled = append(signalled, fmt.Sprintf("%s %s %v", id, name, arg))
			return nil
		})
	env.ExecuteWorkflow(inbox.ChatInbox, contract.InboxState{Offset: 1})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []int64{1, 10}, polls, "the offset moves past what was read")
	require.Equal(t, []string{"s1 guide keep the schema small", "s1 pause <nil>"}, signalled,
		"a command goes to the session replied to, or to the only one running")

	require.Len(t, answers, 5)
	require.Equal(t, contract.ChatAnswer{WorkflowID: "s1", UpdateID: "slack-C1-1700.2",
		Answer: contract.Answer{ID: "cp-2", Answer: "sqlite", By: "@carol", Via: "Slack"}}, answers[4], "a member's reply in the Slack thread")
	require.Equal(t, []contract.SlackPoll{
		{Threads: []contract.SlackPost{{Channel: "C1", Thread: "1700.1"}}},
		{Threads: []contract.SlackPost{{Channel: "C1", Thread: "1700.1", TS: "1700.2"}}},
	}, slackPolls, "a thread is read after its last reply")
	require.Equal(t, contract.ChatAnswer{WorkflowID: "s1", UpdateID: "telegram-1",
		Answer: contract.Answer{ID: "cp-2", Answer: "sqlite, in a file", By: "@alice", Via: "Telegram"}}, answers[0])
	require.Equal(t, "postgres", answers[1].Answer.Answer, "the tapped button's choice")
	require.Equal(t, "telegram-2", answers[1].UpdateID)
	require.Equal(t, contract.Answer{ID: "cp-1-plan", Reject: true, Reason: "also delete old widgets", By: "@bob", Via: "Telegram"}, answers[2].Answer)
	require.LessOrEqual(t, len(answers[3].Answer.Reason), contract.MessageLimit, "a 1 MB answer is clipped to what a session takes")

	var said []string
	for _, r := range replies {
		said = append(said, r.Text)
	}
	all := strings.Join(said, "\n")
	require.Contains(t, all, "That message is not a question of a Ralph session")
	require.Contains(t, all, "Unknown command /frobnicate")
	require.Contains(t, all, "1 session running:\n• s1: awaiting_human, iteration 2")
	require.Equal(t, "cb1", replies[1].CallbackID, "a tap is answered as a tap")
	last := replies[len(replies)-1]
	require.Equal(t, &contract.SlackPost{Channel: "C1", Thread: "1700.1", TS: "1700.2"}, last.Slack, "the Slack answer is confirmed in its thread")
}

// TestChatInboxHoldsARepliedQuestionItHasNotHeardOf: a reply to a message
// of the bot that the inbox does not know yet (its worker died between
// sending the question and telling the inbox) waits for the question to
// be told and then answers it, and so does a reply to a copy of the
// question whose sending the inbox never heard of (found by the key hash
// of its buttons); one whose question is never told is told
// after inboxHoldFor that it answers nothing; a reply to a person's
// message is told so at once.
func TestChatInboxHoldsARepliedQuestionItHasNotHeardOf(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(inbox.ChatInbox)
	question := contract.ChatSent{Key: "s1/r1/question/1", WorkflowID: "s1", Session: "/work/a", Event: contract.NotifyQuestion,
		Checkpoint: "cp-2", Choices: []string{"postgres", "sqlite"}, Messages: []contract.SentMessage{{Channel: "telegram", Chat: "111", MessageID: "10"}}}
	first := []contract.ChatUpdate{
		{ID: 1, Chat: 111, User: "@alice", MessageID: 20, ReplyTo: 10, ReplyToBot: true, Text: "sqlite"},
		// A copy of the question sent before the worker died: its buttons
		// name the question, which is answered once it is told.
		{ID: 4, Chat: 111, User: "@bob", MessageID: 23, ReplyTo: 9, ReplyToBot: true, KeyHash: contract.KeyHash(question.Key), Text: "postgres"},
		{ID: 2, Chat: 111, User: "@alice", MessageID: 21, ReplyTo: 55, ReplyToBot: true, Text: "approve"},
		{ID: 3, Chat: 111, User: "@alice", MessageID: 22, ReplyTo: 19, Text: "approve"},
	}
	polls := 0
	var answeredAt, expiredAt time.Time
	env.RegisterActivityWithOptions(func(_ context.Context, p contract.ChatPoll) (contract.ChatUpdates, error) {
		polls++
		switch n := polls; {
		case n == 1:
			return contract.ChatUpdates{Updates: first, Next: 5}, nil
		case n%2 == 0 && n < 20:
			// A failed poll: the inbox waits 30 s, the test's clock moves.
			return contract.ChatUpdates{}, temporal.NewNonRetryableApplicationError("telegram down", "test", nil)
		case n < 20:
			return contract.ChatUpdates{Next: p.Offset}, nil
		default:
			return contract.ChatUpdates{Off: true}, nil
		}
	}, activity.RegisterOptions{Name: contract.ActivityChatUpdates})
	var answers []contract.ChatAnswer
	env.RegisterActivityWithOptions(func(_ context.Context, in contract.ChatAnswer) (contract.ChatAnswered, error) {
		answers = append(answers, in)
		answeredAt = env.Now()
		return contract.ChatAnswered{Taken: true, Message: "Answered"}, nil
	}, activity.RegisterOptions{Name: contract.ActivityChatAnswer})
	var replies []contract.ChatReply
	env.RegisterActivityWithOptions(func(_ context.Context, in contract.ChatReply) error {
		replies = append(replies, in)
		if in.ReplyTo == 21 {
			expiredAt = env.Now()
		}
		return nil
	}, activity.RegisterOptions{Name: contract.ActivityChatReply})
	env.RegisterActivityWithOptions(func(_ context.Context, p contract.SlackPoll) (contract.SlackReplies, error) {
		return contract.SlackReplies{Off: true}, nil
	}, activity.RegisterOptions{Name: contract.ActivityChatSlackReplies})
	start := env.Now()
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(contract.SignalChatSent, question) }, 45*time.Second)
	env.ExecuteWorkflow(inbox.ChatInbox, contract.InboxState{Offset: 1})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())

	require.Len(t, answers, 2, "the held replies answer their question once it is told")
	require.Equal(t, contract.ChatAnswer{WorkflowID: "s1", UpdateID: "telegram-1",
		Answer: contract.Answer{ID: "cp-2", Answer: "sqlite", By: "@alice", Via: "Telegram"}}, answers[0])
	require.Equal(t, contract.ChatAnswer{WorkflowID: "s1", UpdateID: "telegram-4",
		Answer: contract.Answer{ID: "cp-2", Answer: "postgres", By: "@bob", Via: "Telegram"}}, answers[1], "a reply to a copy of the question, by its buttons")
	require.GreaterOrEqual(t, answeredAt.Sub(start), 45*time.Second, "not before the question was told")
	require.Less(t, answeredAt.Sub(start), 2*time.Minute, "at the first poll after it was told")

	require.Len(t, replies, 4)
	require.Equal(t, int64(22), replies[0].ReplyTo, "a reply to a person's message is told at once")
	require.Contains(t, replies[0].Text, "That message is not a question of a Ralph session")
	require.Equal(t, contract.ChatReply{Chat: 111, ReplyTo: 20, Text: "Answered (/work/a)"}, replies[1], "the held answer is confirmed")
	require.Equal(t, contract.ChatReply{Chat: 111, ReplyTo: 23, Text: "Answered (/work/a)"}, replies[2])
	require.Equal(t, int64(21), replies[3].ReplyTo, "the reply whose question never came")
	require.Contains(t, replies[3].Text, "That message is not a question of a Ralph session")
	require.GreaterOrEqual(t, expiredAt.Sub(start), 3*time.Minute, "held for inboxHoldFor")
}
