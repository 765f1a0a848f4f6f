package notify

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/contract"
)

func TestSlackEscapes(t *testing.T) {
	for _, bot := range []bool{true, false} {
		t.Run(map[bool]string{true: "bot", false: "incoming_webhook"}[bot], func(t *testing.T) {
			w := newWorld(t, bot)
			n := notifier(t, w.settings, nil)
			note := question(time.Now())
			note.Text = injection
			note.URL = "https://github.com/o/r/pull/8?a=1&b=<2>|x"
			_, err := n.Send(context.Background(), note)
			require.NoError(t, err)

			text := w.slack.messages()[0].Text
			for _, markup := range []string{"<!channel>", "<@U123>", "<https://evil.example|click>", "<b>", "<a href"} {
				require.NotContains(t, text, markup)
			}
			require.Contains(t, text, `&lt;b&gt;bold&lt;/b&gt; &lt;a href="https://evil.example"&gt;click&lt;/a&gt; &amp;amp; &amp;lt;`)
			require.Contains(t, text, "&lt;!channel&gt; &lt;@U123&gt; &lt;https://evil.example|click&gt;")
			require.Contains(t, text, "<https://github.com/o/r/pull/8?a=1&amp;b=%3C2%3E%7Cx|https://github.com/o/r/pull/8?a=1&amp;b=&lt;2&gt;|x>",
				"the link's target cannot end early")
			require.Equal(t, bot, strings.Contains(text, "thread to answer"), "only a bot reads threads")
		})
	}
}

func TestSlackIncomingWebhook(t *testing.T) {
	w := newWorld(t, false)
	n := notifier(t, w.settings, nil)
	res, err := n.Send(context.Background(), question(time.Now()))
	require.NoError(t, err)
	require.Contains(t, res.Sent, contract.SentMessage{Channel: contract.ChannelSlack}, "an incoming webhook answers no message ID")
	require.True(t, w.slack.messages()[0].Webhook)
	require.NoError(t, n.Slack().Check(context.Background()), "an incoming webhook has no token to check")
	_, err = n.Slack().Replies(context.Background(), "C0RALPH", "1.2", "")
	require.EqualError(t, err, "slack: replies need a bot token (notify.slack.bot-token-env)")
}

func TestSlackReplies(t *testing.T) {
	w := newWorld(t, true)
	n := notifier(t, w.settings, nil)
	res, err := n.Send(context.Background(), question(time.Now()))
	require.NoError(t, err)
	var ts string
	for _, s := range res.Sent {
		if s.Channel == contract.ChannelSlack {
			ts = s.MessageID
		}
	}
	require.NotEmpty(t, ts)
	w.slack.replies[ts] = []map[string]any{
		{"type": "message", "user": "U0BOT", "bot_id": "B1", "text": "the question", "ts": ts, "thread_ts": ts},
		{"type": "message", "user": "U0ADA", "text": "SQLite, please", "ts": "1700000100.000001", "thread_ts": ts},
	}
	replies, err := n.Slack().Replies(context.Background(), "C0RALPH", ts, "")
	require.NoError(t, err)
	require.Equal(t, []Reply{{User: "U0ADA", Text: "SQLite, please", TS: "1700000100.000001"}}, replies)
}

func TestSlackCheck(t *testing.T) {
	w := newWorld(t, true)
	require.NoError(t, notifier(t, w.settings, nil).Check(context.Background()))

	w.settings.Slack.BotToken = "xoxb-wrong"
	w.settings.Telegram = TelegramSettings{}
	err := notifier(t, w.settings, nil).Check(context.Background())
	require.ErrorIs(t, err, ErrBadToken)
	require.EqualError(t, err, "notify: Slack: the bot token in RALPH_SLACK_BOT_TOKEN is wrong "+
		"(token refused: slack auth.test: invalid_auth): copy the Bot User OAuth Token of the Slack app")
}

func TestSlackChannelNotFound(t *testing.T) {
	w := newWorld(t, true)
	w.settings.Slack.Channel = "#nowhere"
	n := notifier(t, w.settings, nil)
	_, err := n.Send(context.Background(), question(time.Now()))
	require.ErrorContains(t, err, "notify over slack: slack chat.postMessage: channel_not_found")
	require.Empty(t, w.slack.messages())
}
