package chat_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"github.com/durable-ralph/ralph/activities/chat"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/notify"
	"github.com/durable-ralph/ralph/testsuite/fakechat"
)

func run[R any](t *testing.T, fn any, in any) R {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: "act"})
	val, err := env.ExecuteActivity("act", in)
	require.NoError(t, err)
	var res R
	require.NoError(t, val.Get(&res))
	return res
}

// TestChatUpdatesKeepsTheAllowedChats: an update from a chat that is not
// allowed is passed over, and the offset moves past it all the same.
func TestChatUpdatesKeepsTheAllowedChats(t *testing.T) {
	tg := fakechat.NewTelegram("42:fake-token")
	defer tg.Close()
	n, err := notify.New(notify.Settings{StateDir: t.TempDir(), MaxAge: time.Hour,
		Telegram: notify.TelegramSettings{Token: "42:fake-token", ChatIDs: []int64{1}, APIURL: tg.URL()}}, nil)
	require.NoError(t, err)
	a := &chat.Activities{Notifier: n, ChatIDs: []int64{1}}
	tg.UserMessage(2, fakechat.User{ID: 9, FirstName: "M"}, "/stop")
	tg.UserMessage(1, fakechat.User{ID: 7, FirstName: "A", Username: "alice"}, "/status")
	res := run[contract.ChatUpdates](t, a.ChatUpdates, contract.ChatPoll{})
	require.Len(t, res.Updates, 1)
	require.Equal(t, int64(1), res.Updates[0].Chat)
	require.Equal(t, "/status", res.Updates[0].Text)
	require.Equal(t, "@alice", res.Updates[0].User)
	require.Greater(t, res.Next, res.Updates[0].ID, "past both updates")

	// A reply to a question carries the key hash its buttons name.
	key := "s1/r1/plan/1"
	sent, err := n.Send(t.Context(), contract.Notification{Key: key, Event: contract.NotifyPlan, Text: "Plan", Choices: []string{"approve", "reject"}, At: time.Now()})
	require.NoError(t, err)
	require.Len(t, sent.Sent, 1)
	var id int
	_, err = fmt.Sscan(sent.Sent[0].MessageID, &id)
	require.NoError(t, err)
	_, err = tg.UserReply(1, fakechat.User{ID: 7, FirstName: "A", Username: "alice"}, id, "approve")
	require.NoError(t, err)
	res = run[contract.ChatUpdates](t, a.ChatUpdates, contract.ChatPoll{Offset: res.Next})
	require.Len(t, res.Updates, 1)
	require.Equal(t, contract.ChatUpdate{ID: res.Updates[0].ID, Chat: 1, User: "@alice", MessageID: res.Updates[0].MessageID, Text: "approve",
		ReplyTo: int64(id), ReplyToBot: true, KeyHash: contract.KeyHash(key)}, res.Updates[0])
}

// TestChatSlackRepliesTakesMembersOnly: in a question's thread, a guest's
// and a bot's replies are passed over, a member's is taken (unescaped),
// and a thread read once is read after its last reply.
func TestChatSlackRepliesTakesMembersOnly(t *testing.T) {
	sl := fakechat.NewSlack("xoxb-test", "#ralph")
	defer sl.Close()
	n, err := notify.New(notify.Settings{StateDir: t.TempDir(), MaxAge: time.Hour,
		Slack: notify.SlackSettings{BotToken: "xoxb-test", Channel: "#ralph", APIURL: sl.APIURL()}}, nil)
	require.NoError(t, err)
	res, err := n.Send(t.Context(), contract.Notification{Key: "k/1", Event: contract.NotifyQuestion, Text: "Which?", Question: 1, At: time.Now()})
	require.NoError(t, err)
	q := res.Sent[0]
	sl.AddUser(fakechat.SlackUser{ID: "UGUEST", Name: "guest", TeamID: "TOTHER"})
	sl.AddUser(fakechat.SlackUser{ID: "UCAROL", Name: "carol"})
	for _, r := range [][2]string{{"UGUEST", "postgres"}, {"UCAROL", "sqlite &amp; fast"}} {
		_, err := sl.Reply(q.Chat, q.MessageID, r[0], r[1])
		require.NoError(t, err)
	}
	a := &chat.Activities{Notifier: n}
	got := run[contract.SlackReplies](t, a.ChatSlackReplies, contract.SlackPoll{Threads: []contract.SlackPost{{Channel: q.Chat, Thread: q.MessageID}}})
	require.Len(t, got.Updates, 1)
	require.Equal(t, "@carol", got.Updates[0].User)
	require.Equal(t, "sqlite & fast", got.Updates[0].Text)
	require.Len(t, got.Read, 1)
	require.Equal(t, got.Updates[0].Slack.TS, got.Read[0].TS)

	again := run[contract.SlackReplies](t, a.ChatSlackReplies, contract.SlackPoll{Threads: got.Read})
	require.Empty(t, again.Updates, "nothing new after the last reply read")
}
