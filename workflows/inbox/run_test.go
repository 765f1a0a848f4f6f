package inbox_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/workflows/inbox"
)

// TestChatInboxRuns: /run ALIAS IDEA from Telegram asks the worker to plan
// the idea in that workspace (the alias lower-cased, the idea whole, who
// and from where, an update ID that is the same on a retry) and says what
// became of it; /run without an idea is told how; a Slack slash command
// signalled while the Telegram poll waits is acted on at once, not after
// the poll, and replied to in its channel.
func TestChatInboxRuns(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(inbox.ChatInbox)
	polls := 0
	var waiting atomic.Bool
	env.RegisterActivityWithOptions(func(ctx context.Context, p contract.ChatPoll) (contract.ChatUpdates, error) {
		polls++
		switch polls {
		case 1:
			return contract.ChatUpdates{Next: 3, Updates: []contract.ChatUpdate{
				{ID: 1, Chat: 111, User: "@alice", MessageID: 20, Text: "/run API Add a /health endpoint\nthat returns ok"},
				{ID: 2, Chat: 111, User: "@alice", MessageID: 21, Text: "/run api"},
			}}, nil
		case 2:
			// A long poll that waits: the slash command comes meanwhile.
			waiting.Store(true)
			time.Sleep(300 * time.Millisecond)
			waiting.Store(false)
			return contract.ChatUpdates{Next: 3}, nil
		}
		return contract.ChatUpdates{Off: true}, nil
	}, activity.RegisterOptions{Name: contract.ActivityChatUpdates})
	env.RegisterActivityWithOptions(func(context.Context, contract.SlackPoll) (contract.SlackReplies, error) {
		return contract.SlackReplies{Off: true}, nil
	}, activity.RegisterOptions{Name: contract.ActivityChatSlackReplies})
	var runs []contract.ChatRun
	var duringPoll bool
	env.RegisterActivityWithOptions(func(_ context.Context, in contract.ChatRun) (contract.ChatRunResult, error) {
		runs = append(runs, in)
		if in.Via == "Slack" {
			duringPoll = waiting.Load()
			return contract.ChatRunResult{Message: "A session already runs in web."}, nil
		}
		return contract.ChatRunResult{Started: true, WorkflowID: "ralph-h-api", Message: "Planning in api."}, nil
	}, activity.RegisterOptions{Name: contract.ActivityChatRun})
	var replies []contract.ChatReply
	env.RegisterActivityWithOptions(func(_ context.Context, in contract.ChatReply) error {
		replies = append(replies, in)
		return nil
	}, activity.RegisterOptions{Name: contract.ActivityChatReply})
	slash := contract.ChatUpdate{User: "@carol", Text: "/run web Show the greeting", Slack: &contract.SlackPost{Channel: "C1", TS: "trigger-9"}}
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(contract.SignalChatCommand, slash) }, 100*time.Millisecond)
	env.ExecuteWorkflow(inbox.ChatInbox, contract.InboxState{Offset: 1})
	require.NoError(t, env.GetWorkflowError())

	require.Equal(t, []contract.ChatRun{
		{Alias: "api", Idea: "Add a /health endpoint\nthat returns ok", By: "@alice", Via: "Telegram", UpdateID: "telegram-1"},
		{Alias: "web", Idea: "Show the greeting", By: "@carol", Via: "Slack", UpdateID: "slack-C1-trigger-9"},
	}, runs, "a /run without an idea starts nothing")
	require.True(t, duringPoll, "the slash command is acted on while the Telegram poll waits")
	require.Len(t, replies, 3)
	require.Equal(t, contract.ChatReply{Chat: 111, ReplyTo: 20, Text: "Planning in api."}, replies[0])
	require.True(t, strings.HasPrefix(replies[1].Text, "Say where and what: /run <workspace> <idea>"), replies[1].Text)
	require.Equal(t, contract.ChatReply{Text: "A session already runs in web.", Slack: &contract.SlackPost{Channel: "C1", TS: "trigger-9"}}, replies[2],
		"the slash command is answered in its channel")
}
