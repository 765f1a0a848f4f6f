package testsuite_test

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/notify"
	"github.com/durable-ralph/ralph/testsuite/fakechat"
)

const (
	tgToken      = "123456:AAE-fakeBotToken0123456789abcdefghij"
	tgChat       = int64(111)
	tgOtherChat  = int64(222)
	notifySecret = "whsec-e2e-0123456789"
)

// chatRig is a fake Telegram, Slack and webhook receiver, and the
// environment that points the worker at them.
type chatRig struct {
	tg    *fakechat.Telegram
	slack *fakechat.Slack
	recv  *fakechat.Receiver
	env   []string
}

func newChatRig(t *testing.T) *chatRig {
	t.Helper()
	cr := &chatRig{tg: fakechat.NewTelegram(tgToken), slack: fakechat.NewSlack("xoxb-e2e-slack-token", "#ralph"), recv: fakechat.NewReceiver(notifySecret)}
	t.Cleanup(cr.tg.Close)
	t.Cleanup(cr.slack.Close)
	t.Cleanup(cr.recv.Close)
	cr.env = []string{
		"RALPH_TELEGRAM_TOKEN=" + tgToken,
		"RALPH_NOTIFY_TELEGRAM_CHAT_IDS=" + strconv.FormatInt(tgChat, 10),
		"RALPH_NOTIFY_TELEGRAM_API_URL=" + cr.tg.URL(),
		"RALPH_SLACK_BOT_TOKEN=xoxb-e2e-slack-token",
		"RALPH_NOTIFY_SLACK_CHANNEL=#ralph",
		"RALPH_NOTIFY_SLACK_API_URL=" + cr.slack.APIURL(),
		"RALPH_NOTIFY_WEBHOOK_URL=" + cr.recv.URL(),
		"RALPH_NOTIFY_SECRET=" + notifySecret,
	}
	return cr
}

// slackPosts are the bot's top-level Slack messages that contain text.
func (cr *chatRig) slackPosts(text string) []fakechat.SlackMessage {
	var out []fakechat.SlackMessage
	for _, m := range cr.slack.Posted() {
		if m.Via == "api" && m.ThreadTS == "" && strings.Contains(m.Text, text) {
			out = append(out, m)
		}
	}
	return out
}

// botMessages are the bot's messages in chat that contain text.
func (cr *chatRig) botMessages(chat int64, text string) []fakechat.Message {
	var out []fakechat.Message
	for _, m := range cr.tg.Sent(chat) {
		if strings.Contains(m.Plain, text) {
			out = append(out, m)
		}
	}
	return out
}

// TestNotificationsAndTelegramAnswers: a session's checkpoint question
// goes to Telegram (with a button per choice), Slack and the signed
// webhook, once each, although Slack answers 500 for a minute and the
// worker is killed with SIGKILL after Telegram and the webhook took the
// question and before the notification's activity completed. A chat that
// is not allowed changes nothing; a reply in the allowed chat answers the
// checkpoint and reaches the next prompt; /status lists the session; an
// unknown command and a reply to a message that asks nothing are told
// what the bot understands. A second question is answered in its Slack
// thread by a member of the workspace, after a guest's reply that changes
// nothing. The end is one more message on each channel, with iterations,
// commits and cost. A worker with a wrong bot token says so when it
// starts.
func TestNotificationsAndTelegramAnswers(t *testing.T) {
	cr := newChatRig(t)
	r := newRepo(t, map[string]string{"prd.json": threeStoryPRD, "progress.txt": ""})
	se := newStarterEnv(t, rawScenario(t, map[string]any{
		"steps": []any{
			map[string]any{"auto": true},
			map[string]any{"checkpoint": map[string]any{
				"type": "decision", "question": "Which database should <b>widgets</b> live in?",
				"options": []string{"postgres", "sqlite"}, "context": "Both drivers are vendored.",
			}, "text": "I need a decision before US-002."},
			map[string]any{"checkpoint": map[string]any{
				"type": "decision", "question": "Which port should widgets listen on?", "options": []string{"8080", "9090"},
			}, "text": "One more decision."},
		},
		"repeat": "auto",
	}))
	se.env = append(se.env, cr.env...)
	id := sessionIDOf(r.Dir)
	cr.slack.FailFor("chat.postMessage", 500, time.Minute)
	failedUntil := time.Now().Add(time.Minute)

	w := startDevWorker(t, se)
	code, out := starter(t, se, "run", "--dev", r.Dir)
	require.Equal(t, 0, code, out)

	// The question reaches Telegram and the webhook; Slack fails.
	c := se.dial(t)
	defer c.Close()
	var asked time.Time
	var question fakechat.Message
	waitFor(t, 2*time.Minute, "the question on Telegram", func() bool {
		qs := cr.botMessages(tgChat, "Which database")
		if len(qs) == 0 {
			return false
		}
		question = qs[0]
		return true
	})
	seen := time.Now()
	var st contract.Status
	v, err := c.QueryWorkflow(context.Background(), id, "", contract.QueryStatus)
	require.NoError(t, err)
	require.NoError(t, v.Get(&st))
	require.NotNil(t, st.Pending)
	asked = st.Pending.AskedAt
	t.Logf("figure: checkpoint to Telegram message: at most %s", seen.Sub(asked).Round(10*time.Millisecond))
	require.Contains(t, question.Plain, "Which database should <b>widgets</b> live in?", "agent text is escaped, not markup")
	require.Contains(t, question.Plain, "Both drivers are vendored.")
	require.Len(t, question.Keyboard, 2, "a button per choice")
	require.Equal(t, "postgres", question.Keyboard[0][0].Text)
	waitFor(t, time.Minute, "the question on the webhook", func() bool { return len(cr.recv.Accepted()) >= 1 })

	// Kill the worker while the notification's activity retries Slack.
	require.NoError(t, w.cmd.Process.Signal(syscall.SIGKILL))
	w.wait(t, time.Minute)
	w = startDevWorker(t, se)

	// Another chat changes nothing, and hears nothing.
	cr.tg.UserMessage(tgOtherChat, fakechat.User{ID: 9, FirstName: "Mallory", Username: "mallory"}, "/stop")
	// The allowed chat: an unknown command, a reply to a message that asks
	// nothing, then the answer.
	alice := fakechat.User{ID: 7, FirstName: "Alice", Username: "alice"}
	cr.tg.UserMessage(tgChat, alice, "/frobnicate")
	waitFor(t, time.Minute, "the bot to answer the unknown command", func() bool { return len(cr.botMessages(tgChat, "Unknown command /frobnicate")) == 1 })
	hello := cr.tg.UserMessage(tgChat, alice, "hello")
	waitFor(t, time.Minute, "the bot to explain itself", func() bool { return len(cr.botMessages(tgChat, "Reply to a question")) >= 2 })
	_, err = cr.tg.UserReply(tgChat, alice, hello, "approve")
	require.NoError(t, err)
	waitFor(t, time.Minute, "the bot to say it asked nothing there", func() bool {
		return len(cr.botMessages(tgChat, "That message is not a question of a Ralph session")) == 1
	})
	_, err = cr.tg.UserReply(tgChat, alice, question.MessageID, "sqlite, in a file next to the binary")
	require.NoError(t, err)
	replied := time.Now()
	t.Cleanup(func() {
		if t.Failed() {
			for _, m := range cr.tg.Messages(tgChat) {
				t.Logf("chat: %d %s reply-to %d: %s", m.MessageID, m.From.Username, m.ReplyTo, m.Plain)
			}
			t.Logf("worker after the kill:\n%s\ndev server log:\n%s", w.Output(), devServerLog(se))
		}
	})
	waitFor(t, time.Minute, "the session to go on", func() bool {
		var now contract.Status
		v, err := c.QueryWorkflow(context.Background(), id, "", contract.QueryStatus)
		return err == nil && v.Get(&now) == nil && (now.Pending == nil || now.Pending.ID != st.Pending.ID)
	})
	t.Logf("figure: Telegram reply to the session going on: %s", time.Since(replied).Round(10*time.Millisecond))
	waitFor(t, time.Minute, "the bot to confirm", func() bool { return len(cr.botMessages(tgChat, "Answered (answered: sqlite")) == 1 })

	cr.tg.UserMessage(tgChat, alice, "/status")
	waitFor(t, time.Minute, "the status", func() bool { return len(cr.botMessages(tgChat, "running:")) == 1 })
	require.Contains(t, cr.botMessages(tgChat, "running:")[0].Plain, id)

	// The second question is answered in its Slack thread, by a member of
	// the workspace; a guest's reply before it changes nothing.
	var q2 fakechat.SlackMessage
	waitFor(t, 3*time.Minute, "the second question on Slack", func() bool {
		qs := cr.slackPosts("Which port")
		if len(qs) == 0 {
			return false
		}
		q2 = qs[0]
		return true
	})
	cr.slack.AddUser(fakechat.SlackUser{ID: "UGUEST", Name: "guest", TeamID: "TOTHER"})
	cr.slack.AddUser(fakechat.SlackUser{ID: "UCAROL", Name: "carol"})
	_, err = cr.slack.Reply(q2.Channel, q2.TS, "UGUEST", "8080")
	require.NoError(t, err)
	time.Sleep(30 * time.Second) // the inbox reads the thread at least every 25 s (a Telegram long poll)
	v, err = c.QueryWorkflow(context.Background(), id, "", contract.QueryStatus)
	require.NoError(t, err)
	var waiting contract.Status
	require.NoError(t, v.Get(&waiting))
	require.NotNil(t, waiting.Pending, "a guest's reply answers nothing")
	_, err = cr.slack.Reply(q2.Channel, q2.TS, "UCAROL", "9090 &amp; nothing else")
	require.NoError(t, err)
	waitFor(t, time.Minute, "the Slack answer to be confirmed in its thread", func() bool {
		for _, m := range cr.slack.Thread(q2.Channel, q2.TS) {
			if m.Via == "api" && strings.Contains(m.Text, "Answered (answered: 9090 &amp; nothing else)") {
				return true
			}
		}
		return false
	})

	waitFor(t, 3*time.Minute, "the end on Telegram", func() bool { return len(cr.botMessages(tgChat, "ended complete")) == 1 })
	end := cr.botMessages(tgChat, "ended complete")[0]
	require.Contains(t, end.Plain, "commits")
	require.Contains(t, end.Plain, "USD")

	// Slack took each event once it answered again, each once.
	waitFor(t, 3*time.Minute, "the end on Slack", func() bool { return len(cr.slackPosts("ended complete")) == 1 })
	require.True(t, time.Now().After(failedUntil))
	require.Len(t, cr.slackPosts("Which database should &lt;b&gt;widgets&lt;/b&gt; live in?"), 1)
	require.Len(t, cr.slackPosts("Which port"), 1)

	// Telegram: one question, one end, whatever the kill did.
	require.Len(t, cr.botMessages(tgChat, "Which database"), 1)
	require.Empty(t, cr.tg.Sent(tgOtherChat), "the other chat heard nothing")
	st = contract.Status{}
	v, err = c.QueryWorkflow(context.Background(), id, "", contract.QueryStatus)
	require.NoError(t, err)
	require.NoError(t, v.Get(&st))
	require.Equal(t, contract.StateCompleted, st.State, "the other chat's /stop changed nothing")

	// The webhook: the three events, signed, each delivered once.
	acc := cr.recv.Accepted()
	require.Len(t, acc, 3)
	require.Equal(t, string(contract.NotifyQuestion), acc[0].Event)
	require.Equal(t, string(contract.NotifyQuestion), acc[1].Event)
	require.Equal(t, string(contract.NotifyEnded), acc[2].Event)
	for _, d := range acc {
		require.Equal(t, 1, cr.recv.Count(d.ID), "delivery %s", d.ID)
		require.True(t, notify.Verify([]byte(notifySecret), d.Raw, d.Header.Get("X-Ralph-Signature-256")), "signed")
		require.Equal(t, id, d.Body["workflow_id"])
	}

	// The answer reached the next prompt.
	prompt := sessionPrompt(t, r.Dir, id, 3)
	require.Contains(t, string(prompt), "sqlite, in a file next to the binary")
	prompt = sessionPrompt(t, r.Dir, id, 4)
	require.Contains(t, string(prompt), "9090 & nothing else", "the Slack answer, as its author wrote it")
	replayFrom(t, se, id)
	replayAs(t, c, contract.ChatInboxID, "inbox")
	first := workflowRuns(t, c, id)
	replayAs(t, c, contract.NotificationID(first[len(first)-1], contract.NotifyQuestion, 1), "question")

	// A worker whose bot token is wrong says so when it starts.
	require.NoError(t, w.cmd.Process.Signal(syscall.SIGTERM))
	w.wait(t, time.Minute)
	bad := append(append([]string(nil), se.env...), "RALPH_TELEGRAM_TOKEN=123456:wrong")
	wb := startProc(t, bad, bins.worker, "--dev")
	waitFor(t, time.Minute, "the wrong token to be said", func() bool {
		return strings.Contains(wb.Output(), "the bot token in RALPH_TELEGRAM_TOKEN is wrong")
	})
	require.NotContains(t, wb.Output(), "123456:wrong", "the token itself is not printed")
}
