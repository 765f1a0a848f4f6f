package notify

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/contract"
)

const webhookSecret = "whsec-0123456789"

// world is a set of fake channels and the settings that reach them.
type world struct {
	tg       *fakeTelegram
	slack    *fakeSlack
	recv     *fakeReceiver
	settings Settings
}

// newWorld starts the fakes: Telegram with two chats, Slack as a bot (or
// by its incoming webhook), and the webhook.
func newWorld(t *testing.T, slackBot bool) *world {
	w := &world{tg: newFakeTelegram(t), slack: newFakeSlack(t), recv: newFakeReceiver(t, webhookSecret)}
	w.settings = Settings{
		MaxAge:    24 * time.Hour,
		UIURL:     "http://127.0.0.1:8233/",
		Namespace: "default",
		StateDir:  t.TempDir(),
		Telegram:  TelegramSettings{Token: botToken, TokenEnv: "RALPH_TELEGRAM_TOKEN", ChatIDs: []int64{11, -22}, APIURL: w.tg.srv.URL},
		Slack:     SlackSettings{WebhookURL: w.slack.hookURL(), WebhookURLEnv: "RALPH_SLACK_WEBHOOK", APIURL: w.slack.apiURL()},
		Webhook:   WebhookSettings{URL: w.recv.srv.URL + "/hooks/ralph", Secret: webhookSecret, SecretEnv: "RALPH_NOTIFY_SECRET"},
	}
	if slackBot {
		w.settings.Slack.BotToken, w.settings.Slack.BotTokenEnv, w.settings.Slack.Channel = slackBotToken, "RALPH_SLACK_BOT_TOKEN", "#ralph"
	}
	return w
}

// notifier returns a Notifier of s, closed when the test ends.
func notifier(t *testing.T, s Settings, redact func(string) string) *Notifier {
	t.Helper()
	n, err := New(s, redact)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, n.Close()) })
	return n
}

// question is a notification of a checkpoint question that happened at.
func question(at time.Time) contract.Notification {
	return contract.Notification{
		Key:        contract.NotifyKey("ralph/ws 1@host", "run-1", contract.NotifyQuestion, 1),
		Event:      contract.NotifyQuestion,
		Session:    "owner/repo#7",
		WorkflowID: "ralph/ws 1@host",
		RunID:      "run-1",
		Text:       "Which database should the service use?",
		Details:    []string{"The plan needs persistence.", "Both are fine for tests."},
		Choices:    []string{"Postgres", "SQLite"},
		Question:   3,
		URL:        "https://github.com/owner/repo/pull/8",
		At:         at,
	}
}

func TestSendEveryChannel(t *testing.T) {
	w := newWorld(t, true)
	n := notifier(t, w.settings, nil)
	note := question(time.Now())

	res, err := n.Send(context.Background(), note)
	require.NoError(t, err)
	require.Empty(t, res.GaveUp)

	msgs := w.tg.messages()
	require.Len(t, msgs, 2, "one message a chat")
	require.ElementsMatch(t, []int64{11, -22}, []int64{msgs[0].ChatID, msgs[1].ChatID})
	m := msgs[0]
	require.True(t, m.HTML)
	uiURL := "http://127.0.0.1:8233/namespaces/default/workflows/ralph%2Fws%201@host/run-1"
	require.Equal(t, "owner/repo#7 · Question\n"+
		"Which database should the service use?\n\n"+
		"• The plan needs persistence.\n• Both are fine for tests.\n\n"+
		"1. Postgres\n2. SQLite\n"+
		"Reply to this message to answer.\n\n"+
		"https://github.com/owner/repo/pull/8\n"+
		"Open in the Temporal UI", m.Visible)
	require.Contains(t, m.Raw, "<b>owner/repo#7</b>")
	require.Contains(t, m.Raw, `<a href="`+uiURL+`">Open in the Temporal UI</a>`)
	require.Len(t, m.Buttons, 2)
	for i, b := range m.Buttons {
		require.Equal(t, note.Choices[i], b.Text)
		c, ok := ParseCallbackData(b.Data)
		require.True(t, ok, b.Data)
		require.Equal(t, Callback{KeyHash: KeyHash(note.Key), Question: 3, Choice: i}, c)
	}

	posts := w.slack.messages()
	require.Len(t, posts, 1)
	require.Equal(t, "C0RALPH", posts[0].Channel)
	require.Contains(t, posts[0].Text, "*owner/repo#7* · Question\nWhich database should the service use?")
	require.Contains(t, posts[0].Text, "Reply in this message's thread to answer.")
	require.Contains(t, posts[0].Text, "<"+uiURL+"|Open in the Temporal UI>")

	got := w.recv.received()
	require.Len(t, got, 1)
	require.Equal(t, Payload{
		Event: contract.NotifyQuestion, Session: "owner/repo#7", WorkflowID: note.WorkflowID, RunID: "run-1",
		Text: note.Text, Details: note.Details, Choices: note.Choices, Question: 3,
		URL: note.URL, UIURL: uiURL, At: got[0].Payload.At, Key: note.Key,
	}, got[0].Payload)
	require.True(t, got[0].Payload.At.Equal(note.At))

	want := []contract.SentMessage{
		{Channel: contract.ChannelSlack, Chat: "C0RALPH", MessageID: posts[0].TS},
		{Channel: contract.ChannelWebhook},
	}
	for _, m := range msgs {
		want = append(want, contract.SentMessage{Channel: contract.ChannelTelegram, Chat: chatID(m.ChatID), MessageID: chatID(m.ID)})
	}
	require.ElementsMatch(t, want, res.Sent)

	// The record ties a reply to the message back to its question.
	sent, ok := n.FindSent(contract.ChannelSlack, "C0RALPH", posts[0].TS)
	require.True(t, ok)
	require.Equal(t, note.Key, sent.Key)
	require.Equal(t, note.WorkflowID, sent.WorkflowID)
	require.Equal(t, 3, sent.Question)
	_, ok = n.FindSent(contract.ChannelSlack, "C0RALPH", "1.2")
	require.False(t, ok)
}

func TestSendOnce(t *testing.T) {
	w := newWorld(t, false)
	n := notifier(t, w.settings, nil)
	note := question(time.Now())
	first, err := n.Send(context.Background(), note)
	require.NoError(t, err)
	require.Len(t, first.Sent, 4)

	// A retry, and a worker that restarted, find every message recorded
	// and send nothing.
	again, err := n.Send(context.Background(), note)
	require.NoError(t, err)
	require.ElementsMatch(t, first.Sent, again.Sent)
	restarted := notifier(t, w.settings, nil)
	again, err = restarted.Send(context.Background(), note)
	require.NoError(t, err)
	require.ElementsMatch(t, first.Sent, again.Sent)

	require.Len(t, w.tg.messages(), 2)
	require.Len(t, w.slack.messages(), 1)
	require.True(t, w.slack.messages()[0].Webhook)
	require.Len(t, w.recv.received(), 1)

	info, err := os.Stat(filepath.Join(w.settings.StateDir, SentFileName))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	// Another notification is sent.
	next := question(time.Now())
	next.Key = contract.NotifyKey(note.WorkflowID, note.RunID, contract.NotifyQuestion, 2)
	_, err = n.Send(context.Background(), next)
	require.NoError(t, err)
	require.Len(t, w.tg.messages(), 4)
	require.Len(t, w.recv.received(), 2)
	require.Equal(t, next.Key, w.recv.received()[1].Header.Get(HeaderDelivery))
}

func TestSendRetriesOnlyTheMissing(t *testing.T) {
	w := newWorld(t, true)
	n := notifier(t, w.settings, nil)
	note := question(time.Now())

	w.slack.failNext(1)
	w.tg.failNext(1) // one of the two chats
	res, err := n.Send(context.Background(), note)
	require.Error(t, err)
	require.ErrorContains(t, err, "notify over slack: slack chat.postMessage: slack server error: 500 Internal Server Error")
	require.ErrorContains(t, err, "notify over telegram:")
	require.ErrorContains(t, err, "telegram sendMessage: 500 Internal Server Error")
	require.Len(t, res.Sent, 2, "the other chat and the webhook took theirs")
	require.Len(t, w.tg.messages(), 1)
	require.Empty(t, w.slack.messages())
	require.Len(t, w.recv.received(), 1)

	res, err = n.Send(context.Background(), note)
	require.NoError(t, err)
	require.Len(t, res.Sent, 4)
	require.Len(t, w.tg.messages(), 2, "only the chat that failed")
	require.NotEqual(t, w.tg.messages()[0].ChatID, w.tg.messages()[1].ChatID)
	require.Len(t, w.slack.messages(), 1)
	require.Len(t, w.recv.received(), 1, "the webhook is not sent again")
}

func TestSendGivesUpWhenOld(t *testing.T) {
	for _, tc := range []struct {
		name string
		at   time.Time
	}{
		{"older than max age", time.Now().Add(-25 * time.Hour)},
		{"no time", time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, false)
			n := notifier(t, w.settings, nil)
			w.slack.failNext(1)
			w.recv.failNext(1)
			res, err := n.Send(context.Background(), question(tc.at))
			require.NoError(t, err)
			require.Len(t, res.Sent, 2, "the Telegram chats")
			require.Len(t, res.GaveUp, 2)
			require.Contains(t, res.GaveUp[0], "slack: slack incoming webhook: slack server error: 500 Internal Server Error")
			require.Contains(t, res.GaveUp[1], "webhook: webhook: the receiver answered 502 Bad Gateway")
			require.NotContains(t, res.GaveUp[0], slackHookPath, "the webhook's URL is a secret")
		})
	}

	// A young notification is retried instead.
	w := newWorld(t, false)
	n := notifier(t, w.settings, nil)
	w.recv.failNext(1)
	res, err := n.Send(context.Background(), question(time.Now().Add(-23*time.Hour)))
	require.ErrorContains(t, err, "notify over webhook")
	require.Empty(t, res.GaveUp)
}

func TestSendEventFilter(t *testing.T) {
	w := newWorld(t, false)
	w.settings.Events = []contract.NotifyEvent{contract.NotifyEnded, contract.NotifyFailed}
	n := notifier(t, w.settings, nil)
	res, err := n.Send(context.Background(), question(time.Now()))
	require.NoError(t, err)
	require.Equal(t, contract.NotifyResult{}, res)
	require.Empty(t, w.tg.messages())
	require.Empty(t, w.slack.messages())
	require.Empty(t, w.recv.received())

	ended := question(time.Now())
	ended.Event, ended.Choices, ended.Question = contract.NotifyEnded, nil, 0
	ended.Text = "complete after 12 iterations, $3.20, 5 commits"
	res, err = n.Send(context.Background(), ended)
	require.NoError(t, err)
	require.Len(t, res.Sent, 4)
	require.Empty(t, w.tg.messages()[0].Buttons)
	require.NotContains(t, w.tg.messages()[0].Visible, "to answer")
	require.Contains(t, w.tg.messages()[0].Visible, "owner/repo#7 · Ended\ncomplete after 12 iterations, $3.20, 5 commits")
}

func TestNothingConfigured(t *testing.T) {
	var nilNotifier *Notifier
	res, err := nilNotifier.Send(context.Background(), question(time.Now()))
	require.NoError(t, err)
	require.Equal(t, contract.NotifyResult{}, res)
	require.NoError(t, nilNotifier.Check(context.Background()))
	require.NoError(t, nilNotifier.Close())

	dir := t.TempDir()
	n := notifier(t, Settings{StateDir: dir, Telegram: TelegramSettings{Token: botToken}}, nil)
	res, err = n.Send(context.Background(), question(time.Now()))
	require.NoError(t, err)
	require.Equal(t, contract.NotifyResult{}, res)
	require.Nil(t, n.Telegram(), "a token without chats is off")
	require.NoFileExists(t, filepath.Join(dir, SentFileName))

	_, err = New(Settings{Webhook: WebhookSettings{URL: "http://127.0.0.1:1/"}}, nil)
	require.EqualError(t, err, "notify: no state directory for the record of sent messages")
}

func TestSendRedacts(t *testing.T) {
	w := newWorld(t, true)
	const secret = "sk-live-0123456789abcdef"
	redact := func(s string) string { return strings.ReplaceAll(s, secret, "[redacted:OPENAI_API_KEY]") }
	n := notifier(t, w.settings, redact)
	note := question(time.Now())
	note.Session += " " + secret
	note.Text = "the key is " + secret
	note.Details = []string{"export KEY=" + secret}
	note.Choices = []string{"rotate " + secret, "keep"}
	note.URL = "https://example.com/?token=" + secret
	_, err := n.Send(context.Background(), note)
	require.NoError(t, err)

	var seen []string
	for _, m := range w.tg.messages() {
		seen = append(seen, m.Raw)
		for _, b := range m.Buttons {
			seen = append(seen, b.Text, b.Data)
		}
	}
	for _, p := range w.slack.messages() {
		seen = append(seen, p.Text)
	}
	for _, d := range w.recv.received() {
		seen = append(seen, string(d.Body))
	}
	require.Len(t, seen, 12)
	for _, s := range seen {
		require.NotContains(t, s, secret)
	}
	require.Contains(t, w.tg.messages()[0].Visible, "the key is [redacted:OPENAI_API_KEY]")
	require.Equal(t, "the key is [redacted:OPENAI_API_KEY]", w.recv.received()[0].Payload.Text)
}

// TestSendPlainText: a question the agent wrote with escape sequences,
// a bell and a right-to-left override reaches every channel as the
// text a person would read, without them.
func TestSendPlainText(t *testing.T) {
	w := newWorld(t, true)
	n := notifier(t, w.settings, func(s string) string { return s })
	note := question(time.Now())
	note.Text = "Delete \x1b[31mthe\x1b[0m \x07branch \u202etxt.exe?"
	note.Details = []string{"\x1b]0;owned\x07window title"}
	note.Choices = []string{"yes\u202e", "no"}
	_, err := n.Send(context.Background(), note)
	require.NoError(t, err)

	var seen []string
	for _, m := range w.tg.messages() {
		seen = append(seen, m.Raw)
		for _, b := range m.Buttons {
			seen = append(seen, b.Text)
		}
	}
	for _, p := range w.slack.messages() {
		seen = append(seen, p.Text)
	}
	for _, d := range w.recv.received() {
		seen = append(seen, string(d.Body))
	}
	require.NotEmpty(t, seen)
	for _, s := range seen {
		for _, bad := range []string{"\x1b", "\x07", "\u202e", `\u001b`, `\u0007`, `\u202e`} {
			require.NotContains(t, s, bad)
		}
	}
	require.Equal(t, "Delete the branch txt.exe?", w.recv.received()[0].Payload.Text)
}

func TestSendErrorsHideTheChannelsSecrets(t *testing.T) {
	w := newWorld(t, false)
	// Nothing listens there: the transport errors name the URLs.
	w.tg.srv.Close()
	w.slack.srv.Close()
	w.recv.srv.Close()
	n := notifier(t, w.settings, nil)
	_, err := n.Send(context.Background(), question(time.Now()))
	require.Error(t, err)
	require.ErrorContains(t, err, "notify over telegram:11: telegram sendMessage: Post: dial tcp")
	require.NotContains(t, err.Error(), botToken)
	require.NotContains(t, err.Error(), "hook-secret-xyz")
	require.ErrorContains(t, err, "notify over webhook: webhook: Post: dial tcp")
	require.NotContains(t, err.Error(), "/hooks/ralph", "a webhook's URL may hold a token")
}

func TestSendWithoutKey(t *testing.T) {
	w := newWorld(t, false)
	n := notifier(t, w.settings, nil)
	note := question(time.Now())
	note.Key = ""
	_, err := n.Send(context.Background(), note)
	require.EqualError(t, err, "notify: the notification has no key")
	require.Empty(t, w.tg.messages())
}

func TestSettingsNotices(t *testing.T) {
	s := Settings{
		Telegram: TelegramSettings{Token: "t", TokenEnv: "RALPH_TELEGRAM_TOKEN"},
		Slack:    SlackSettings{BotToken: "xoxb", BotTokenEnv: "RALPH_SLACK_BOT_TOKEN"},
		Webhook:  WebhookSettings{URL: "https://example.com/hook", SecretEnv: "RALPH_NOTIFY_SECRET"},
	}
	require.Equal(t, []string{
		"notify: RALPH_TELEGRAM_TOKEN is set but notify.telegram.chat-ids is empty: no Telegram messages",
		"notify: RALPH_SLACK_BOT_TOKEN is set but notify.slack.channel is empty: the Slack bot does not post",
		"warning: notify: RALPH_NOTIFY_SECRET is empty: the webhook's POSTs are not signed",
	}, s.Notices())
	require.Equal(t, []string{"RALPH_TELEGRAM_TOKEN=t", "RALPH_SLACK_BOT_TOKEN=xoxb"}, s.Secrets())
	require.False(t, s.Slack.On())
	require.True(t, s.On())
}
