package notify_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/workflows/notify"
)

// TestNotificationAsksThroughEveryChannel: a question goes to each
// channel once; the messages Telegram and Slack took are told to the
// chat inbox, so that a reply there answers the checkpoint (the
// webhook's are not: nobody replies to a POST); a channel that gave up is
// told to the workflow that asked, and is in the result.
func TestNotificationAsksThroughEveryChannel(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(notify.Notification)
	var mu sync.Mutex
	var channels []string
	env.RegisterActivityWithOptions(func(_ context.Context, note contract.Notification) (contract.NotifyResult, error) {
		mu.Lock()
		defer mu.Unlock()
		channels = append(channels, note.Channel)
		switch note.Channel {
		case contract.ChannelTelegram:
			return contract.NotifyResult{Sent: []contract.SentMessage{{Channel: note.Channel, Chat: "42", MessageID: "7"}}}, nil
		case contract.ChannelSlack:
			return contract.NotifyResult{GaveUp: []string{"slack: 500 Internal Server Error"}}, nil
		}
		return contract.NotifyResult{Sent: []contract.SentMessage{{Channel: note.Channel, MessageID: "post-1"}}}, nil
	}, activity.RegisterOptions{Name: contract.ActivityNotify})
	var toInbox []contract.ChatSent
	env.OnSignalExternalWorkflow(mock.Anything, contract.ChatInboxID, "", contract.SignalChatSent, mock.Anything).Return(
		func(_, _, _, _ string, arg any) error {
			toInbox = append(toInbox, arg.(contract.ChatSent))
			return nil
		})
	var gaveUp []contract.NotifyGaveUp
	env.OnSignalExternalWorkflow(mock.Anything, "ralph-session-1", "", contract.SignalNotifyGaveUp, mock.Anything).Return(
		func(_, _, _, _ string, arg any) error {
			gaveUp = append(gaveUp, arg.(contract.NotifyGaveUp))
			return nil
		})

	env.ExecuteWorkflow(notify.Notification, contract.Notification{
		Event: contract.NotifyQuestion, Text: "Which database?", Key: "k-1", WorkflowID: "ralph-session-1",
		Session: "/work/repo", Checkpoint: "cp-3", Choices: []string{"postgres", "sqlite"},
	})
	require.NoError(t, env.GetWorkflowError())
	var res contract.NotifyResult
	require.NoError(t, env.GetWorkflowResult(&res))

	require.ElementsMatch(t, []string{contract.ChannelTelegram, contract.ChannelSlack, contract.ChannelWebhook}, channels, "each channel once")
	require.Len(t, toInbox, 1, "Telegram's message is told to the inbox; Slack took none, the webhook is no chat")
	require.Equal(t, contract.ChatSent{Key: "k-1", WorkflowID: "ralph-session-1", Session: "/work/repo", Event: contract.NotifyQuestion,
		Checkpoint: "cp-3", Choices: []string{"postgres", "sqlite"}, Messages: []contract.SentMessage{{Channel: contract.ChannelTelegram, Chat: "42", MessageID: "7"}}}, toInbox[0])
	require.Equal(t, []string{"slack: 500 Internal Server Error"}, res.GaveUp)
	require.Len(t, gaveUp, 1)
	require.Equal(t, res.GaveUp, gaveUp[0].GaveUp)
	require.Len(t, res.Sent, 2)
}
