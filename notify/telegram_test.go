package notify

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/contract"
)

// injection is agent text that would be markup if it were not escaped.
const injection = `<b>bold</b> <a href="https://evil.example">click</a> &amp; &lt; </code> *star* _under_ [link](https://evil.example) <!channel> <@U123> <https://evil.example|click>`

func TestTelegramEscapes(t *testing.T) {
	w := newWorld(t, false)
	n := notifier(t, w.settings, nil)
	note := question(time.Now())
	note.Session = "<i>ws</i>"
	note.Text = injection
	note.Details = []string{injection}
	const choice = `<b>yes</b> & <!here>`
	note.Choices = []string{choice}
	_, err := n.Send(context.Background(), note)
	require.NoError(t, err, "the fake refuses HTML it cannot parse")

	m := w.tg.messages()[0]
	require.Contains(t, m.Visible, "<i>ws</i> · Question\n"+injection+"\n\n• "+injection+"\n\n1. "+choice+"\n",
		"a person sees the agent's text as it is")
	require.NotContains(t, m.Raw, "<a href=\"https://evil.example\">")
	require.Equal(t, 2, strings.Count(m.Raw, "<a href="), "the pull request's and the UI's links only")
	require.Equal(t, choice, m.Buttons[0].Text, "button texts are plain")
}

func TestTelegramClips(t *testing.T) {
	w := newWorld(t, false)
	n := notifier(t, w.settings, nil)
	huge := strings.Repeat("é<😀>&", 1<<20/12) // 1 MB: two-byte, escaped and four-byte (two UTF-16 units) characters
	note := question(time.Now())
	note.Session, note.Text = huge, huge
	note.Details = []string{huge, huge, huge, huge, huge}
	note.Choices = make([]string, 20)
	for i := range note.Choices {
		note.Choices[i] = huge
	}
	note.URL = "https://github.com/owner/repo/pull/8?" + strings.Repeat("x", 1<<20)
	res, err := n.Send(context.Background(), note)
	require.NoError(t, err, "the fake refuses a message over 4096 characters")
	require.Len(t, res.Sent, 4)

	m := w.tg.messages()[0]
	require.LessOrEqual(t, len(utf16.Encode([]rune(m.Visible))), 4096)
	require.Len(t, m.Buttons, maxChoices)
	require.Contains(t, m.Visible, "… 2 more lines", "the details beyond the budget are counted")
	require.NotContains(t, m.Visible, "repo/pull/8?", "a link too long to show is left out, not cut")
	require.LessOrEqual(t, len(w.slack.messages()[0].Text), 12_000)
	p := w.recv.received()[0].Payload
	require.LessOrEqual(t, len(p.Text), maxText)
	require.LessOrEqual(t, len(p.Session), maxSession)
	require.True(t, strings.HasSuffix(p.Text, "…"))
}

func TestTelegramCheck(t *testing.T) {
	fake := newFakeTelegram(t)
	name, err := NewTelegram(botToken, fake.srv.URL+"/", nil).Check(context.Background())
	require.NoError(t, err)
	require.Equal(t, "ralph_bot", name)

	_, err = NewTelegram("123456:wrong", fake.srv.URL, nil).Check(context.Background())
	require.ErrorIs(t, err, ErrBadToken)
	require.EqualError(t, err, "token refused: telegram getMe: 401 Unauthorized")

	// The Notifier says which variable holds the wrong token, once for
	// the worker to print.
	s := Settings{StateDir: t.TempDir(), Telegram: TelegramSettings{
		Token: "123456:wrong", TokenEnv: "RALPH_TELEGRAM_TOKEN", ChatIDs: []int64{1}, APIURL: fake.srv.URL,
	}}
	err = notifier(t, s, nil).Check(context.Background())
	require.ErrorIs(t, err, ErrBadToken)
	require.EqualError(t, err, "notify: Telegram: the bot token in RALPH_TELEGRAM_TOKEN is wrong "+
		"(token refused: telegram getMe: 401 Unauthorized): copy the token @BotFather gave the bot")
	require.NotContains(t, err.Error(), "123456:wrong")

	s.Telegram.Token = botToken
	require.NoError(t, notifier(t, s, nil).Check(context.Background()))
}

func TestTelegramUpdates(t *testing.T) {
	fake := newFakeTelegram(t)
	for _, u := range []string{
		`{"update_id":7,"message":{"message_id":50,"date":1,"from":{"id":9,"is_bot":false,"first_name":"Ada","username":"ada"},"chat":{"id":11,"type":"private"},"text":"use SQLite","reply_to_message":{"message_id":101,"date":1,"from":{"id":1,"is_bot":true,"first_name":"Ralph","username":"ralph_bot"},"chat":{"id":11,"type":"private"},"text":"Question"}}}`,
		`{"update_id":8,"callback_query":{"id":"cb-1","from":{"id":9,"is_bot":false,"first_name":"Ada"},"chat_instance":"x","data":"q:abc:3:1","message":{"message_id":101,"date":1,"chat":{"id":11,"type":"private"}}}}`,
		`{"update_id":9,"edited_message":{"message_id":50,"date":1,"chat":{"id":11,"type":"private"},"text":"edited"}}`,
		`{"update_id":10,"message":{"message_id":51,"date":1,"from":{"id":9,"is_bot":false,"first_name":"Ada"},"chat":{"id":-22,"type":"group"},"text":"/status"}}`,
		`{"update_id":12,"message":{"message_id":53,"date":1,"from":{"id":9,"is_bot":false,"first_name":"Ada"},"chat":{"id":11,"type":"private"},"text":"approve","reply_to_message":{"message_id":102,"date":1,"from":{"id":1,"is_bot":true,"first_name":"Ralph"},"chat":{"id":11,"type":"private"},"text":"Plan","reply_markup":{"inline_keyboard":[[{"text":"docs","url":"https://example.com"}],[{"text":"approve","callback_data":"q:abc:1:0"},{"text":"reject","callback_data":"q:abc:1:1"}]]}}}}`,
		`{"update_id":13,"message":{"message_id":54,"date":1,"from":{"id":9,"is_bot":false,"first_name":"Ada"},"chat":{"id":11,"type":"private"},"text":"approve","reply_to_message":{"message_id":53,"date":1,"from":{"id":9,"is_bot":false,"first_name":"Ada"},"chat":{"id":11,"type":"private"},"text":"x","reply_markup":{"inline_keyboard":[[{"text":"approve","callback_data":"q:abc:1:0"}]]}}}}`,
		`{"update_id":11,"message":{"message_id":52,"date":1,"from":{"id":9,"is_bot":false,"first_name":"Ada"},"chat":{"id":11,"type":"private"},"text":"approve","reply_to_message":{"message_id":50,"date":1,"from":{"id":9,"is_bot":false,"first_name":"Ada"},"chat":{"id":11,"type":"private"},"text":"use SQLite"}}}`,
	} {
		fake.updates = append(fake.updates, json.RawMessage(u))
	}
	bot := NewTelegram(botToken, fake.srv.URL, nil)
	updates, err := bot.Updates(context.Background(), 7, 2*time.Second)
	require.NoError(t, err)
	require.Equal(t, []Update{
		{ID: 7, ChatID: 11, UserID: 9, User: "@ada", MessageID: 50, Text: "use SQLite", ReplyTo: 101, ReplyToBot: true},
		{ID: 8, ChatID: 11, UserID: 9, User: "Ada", MessageID: 101, CallbackID: "cb-1", CallbackData: "q:abc:3:1"},
		{ID: 9},
		{ID: 10, ChatID: -22, UserID: 9, User: "Ada", MessageID: 51, Text: "/status"},
		{ID: 12, ChatID: 11, UserID: 9, User: "Ada", MessageID: 53, Text: "approve", ReplyTo: 102, ReplyToBot: true, ReplyToData: "q:abc:1:0"},
		{ID: 13, ChatID: 11, UserID: 9, User: "Ada", MessageID: 54, Text: "approve", ReplyTo: 53},
		{ID: 11, ChatID: 11, UserID: 9, User: "Ada", MessageID: 52, Text: "approve", ReplyTo: 50},
	}, updates, "a reply to the bot's question carries its buttons' data; a person's message's buttons are not read")
	require.Equal(t, map[string]any{
		"offset": float64(7), "timeout": float64(2), "allowed_updates": []any{"message", "callback_query"},
	}, fake.lastParams("getUpdates"))

	_, err = ParseUpdates([]byte(`{"not":"an array"}`))
	require.ErrorContains(t, err, "read telegram updates")
}

func TestTelegramEditAndAnswer(t *testing.T) {
	fake := newFakeTelegram(t)
	bot := NewTelegram(botToken, fake.srv.URL, nil)
	require.NoError(t, bot.EditText(context.Background(), 11, 101, "Answered: <SQLite>"))
	require.Equal(t, map[string]any{
		"chat_id": float64(11), "message_id": float64(101), "text": "Answered: <SQLite>",
		"link_preview_options": map[string]any{"is_disabled": true},
	}, fake.lastParams("editMessageText"), "plain text: no parse_mode")
	require.NoError(t, bot.AnswerCallback(context.Background(), "cb-1", "Answered"))
	require.Equal(t, map[string]any{"callback_query_id": "cb-1", "text": "Answered"}, fake.lastParams("answerCallbackQuery"))

	id, err := bot.SendMessage(context.Background(), TelegramMessage{ChatID: 11, Text: "1 session running", ReplyTo: 50})
	require.NoError(t, err)
	m := fake.messages()[0]
	require.Equal(t, id, m.ID)
	require.Equal(t, int64(50), m.ReplyTo)
	require.False(t, m.HTML)

	err = NewTelegram(botToken, fake.srv.URL, nil).call(context.Background(), "noSuchMethod", struct{}{}, nil)
	var te *TelegramError
	require.True(t, errors.As(err, &te))
	require.Equal(t, 404, te.Code)
}

func TestCallbackData(t *testing.T) {
	key := contract.NotifyKey(strings.Repeat("w", 1000), "0195f6a2-7c1e-7000-8000-000000000000", contract.NotifyQuestion, 99)
	data := CallbackData(key, 123456, 7)
	require.LessOrEqual(t, len(data), 64)
	c, ok := ParseCallbackData(data)
	require.True(t, ok)
	require.Equal(t, Callback{KeyHash: KeyHash(key), Question: 123456, Choice: 7}, c)
	require.NotEqual(t, KeyHash(key), KeyHash(key+"0"))

	for _, bad := range []string{"", "q", "q::1:2", "x:abc:1:2", "q:abc:1", "q:abc:one:2", "q:abc:1:-2", "q:abc:1:2:3"} {
		_, ok := ParseCallbackData(bad)
		require.False(t, ok, bad)
	}
}
