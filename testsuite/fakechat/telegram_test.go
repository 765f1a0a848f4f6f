package fakechat_test

import (
	"bytes"
	"context"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/testsuite/fakechat"
)

const (
	tgToken = "123456789:AAFakeTokenForTests"
	chat    = int64(42)
	group   = int64(-1001234567890)
)

var ada = fakechat.User{ID: 42, FirstName: "Ada", Username: "ada"}

func newTelegram(t *testing.T) *fakechat.Telegram {
	t.Helper()
	tg := fakechat.NewTelegram(tgToken)
	t.Cleanup(tg.Close)
	return tg
}

// answer is the envelope of a Bot API answer.
type answer struct {
	OK          bool            `json:"ok"`
	Result      json.RawMessage `json:"result"`
	ErrorCode   int             `json:"error_code"`
	Description string          `json:"description"`
	Parameters  struct {
		RetryAfter int `json:"retry_after"`
	} `json:"parameters"`
}

// tgMessage is the part of a Message object the tests read.
type tgMessage struct {
	MessageID int               `json:"message_id"`
	From      fakechat.User     `json:"from"`
	Chat      map[string]any    `json:"chat"`
	Text      string            `json:"text"`
	Entities  []fakechat.Entity `json:"entities"`
	ReplyTo   *tgMessage        `json:"reply_to_message"`
	Markup    *tgKeyboardMarkup `json:"reply_markup"`
	EditDate  int64             `json:"edit_date"`
	Date      int64             `json:"date"`
}

type tgKeyboardMarkup struct {
	InlineKeyboard [][]fakechat.Button `json:"inline_keyboard"`
}

type tgUpdate struct {
	UpdateID      int64      `json:"update_id"`
	Message       *tgMessage `json:"message"`
	CallbackQuery *struct {
		ID      string        `json:"id"`
		From    fakechat.User `json:"from"`
		Message tgMessage     `json:"message"`
		Data    string        `json:"data"`
	} `json:"callback_query"`
}

// post sends a request to a path of tg with a content type, as a plain
// net/http client of the Bot API does, and decodes the answer.
func post(t *testing.T, tg *fakechat.Telegram, method, path, contentType, body string) (int, answer, string) {
	t.Helper()
	status, gotType, raw := request(t, method, tg.URL()+path, body, map[string]string{"Content-Type": contentType})
	var a answer
	if strings.HasPrefix(gotType, "application/json") {
		require.NoError(t, json.Unmarshal([]byte(raw), &a), raw)
	}
	return status, a, raw
}

// call posts params as JSON to a method of tg.
func call(t *testing.T, tg *fakechat.Telegram, method string, params any) (int, answer) {
	t.Helper()
	body, err := json.Marshal(params)
	require.NoError(t, err)
	status, a, _ := post(t, tg, http.MethodPost, "/bot"+tgToken+"/"+method, "application/json", string(body))
	return status, a
}

// send calls sendMessage and requires it to succeed.
func send(t *testing.T, tg *fakechat.Telegram, params map[string]any) tgMessage {
	t.Helper()
	status, a := call(t, tg, "sendMessage", params)
	require.Equal(t, http.StatusOK, status, a.Description)
	var m tgMessage
	require.NoError(t, json.Unmarshal(a.Result, &m))
	return m
}

// updates calls getUpdates and requires it to succeed.
func updates(t *testing.T, tg *fakechat.Telegram, params map[string]any) []tgUpdate {
	t.Helper()
	status, a := call(t, tg, "getUpdates", params)
	require.Equal(t, http.StatusOK, status, a.Description)
	var ups []tgUpdate
	require.NoError(t, json.Unmarshal(a.Result, &ups))
	require.NotNil(t, ups, "an empty result is [], not null")
	return ups
}

func TestTelegramPathsTokensAndMethods(t *testing.T) {
	tg := newTelegram(t)
	tests := []struct {
		name, path string
		status     int
		body       string
	}{
		{"wrong token", "/bot1:nope/getMe", 401, `{"ok":false,"error_code":401,"description":"Unauthorized"}`},
		{"unknown method", "/bot" + tgToken + "/sendPigeon", 404, `{"ok":false,"error_code":404,"description":"Not Found"}`},
		{"no method", "/bot" + tgToken + "/", 404, `{"ok":false,"error_code":404,"description":"Not Found"}`},
		{"not a bot path", "/getMe", 404, `{"ok":false,"error_code":404,"description":"Not Found"}`},
		{"deleteWebhook", "/bot" + tgToken + "/deleteWebhook", 200, `{"ok":true,"result":true,"description":"Webhook is already deleted"}`},
		{"method names are case-insensitive", "/bot" + tgToken + "/DELETEWEBHOOK", 200, `{"ok":true,"result":true,"description":"Webhook is already deleted"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, _, raw := post(t, tg, http.MethodGet, tc.path, "", "")
			assert.Equal(t, tc.status, status)
			assert.Equal(t, tc.body, raw)
		})
	}

	status, a := call(t, tg, "getMe", nil)
	require.Equal(t, http.StatusOK, status)
	var me map[string]any
	require.NoError(t, json.Unmarshal(a.Result, &me))
	assert.Equal(t, map[string]any{
		"id": float64(123456789), "is_bot": true, "first_name": "Ralph", "username": fakechat.BotUsername,
		"can_join_groups": true, "can_read_all_group_messages": false, "supports_inline_queries": false,
	}, me)
	assert.Equal(t, int64(123456789), tg.Bot().ID)
	assert.Equal(t, 1, tg.Calls("getme"))
	assert.Equal(t, 2, tg.Calls("deleteWebhook"))
	assert.Panics(t, func() { fakechat.NewTelegram("not-a-token") })
}

func TestTelegramSendMessage(t *testing.T) {
	tg := newTelegram(t)
	keyboard := map[string]any{"inline_keyboard": [][]map[string]string{
		{{"text": "Yes", "callback_data": "answer:yes"}, {"text": "No", "callback_data": "answer:no"}},
		{{"text": "Open", "url": "https://example.com/s/1"}},
	}}
	first := send(t, tg, map[string]any{"chat_id": chat, "text": "<b>Question</b>: go on?", "parse_mode": "HTML", "reply_markup": keyboard})
	assert.Equal(t, 1, first.MessageID)
	assert.Equal(t, "Question: go on?", first.Text)
	assert.Equal(t, []fakechat.Entity{{Type: "bold", Length: 8}}, first.Entities)
	assert.Equal(t, tg.Bot(), first.From)
	assert.Equal(t, "private", first.Chat["type"])
	require.NotNil(t, first.Markup)
	assert.Equal(t, "answer:no", first.Markup.InlineKeyboard[0][1].CallbackData)

	second := send(t, tg, map[string]any{"chat_id": chat, "text": "plain", "reply_parameters": map[string]any{"message_id": 1}})
	assert.Equal(t, 2, second.MessageID)
	require.NotNil(t, second.ReplyTo)
	assert.Equal(t, 1, second.ReplyTo.MessageID)
	inGroup := send(t, tg, map[string]any{"chat_id": group, "text": "to the group"})
	assert.Equal(t, 1, inGroup.MessageID, "message IDs are per chat")
	assert.Equal(t, "supergroup", inGroup.Chat["type"])

	status, a := call(t, tg, "sendMessage", map[string]any{"chat_id": chat, "text": "x", "reply_to_message_id": 99})
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Equal(t, "Bad Request: message to be replied not found", a.Description)
	third := send(t, tg, map[string]any{"chat_id": chat, "text": "x",
		"reply_parameters": map[string]any{"message_id": 99, "allow_sending_without_reply": true}})
	assert.Nil(t, third.ReplyTo)
	assert.Equal(t, 3, third.MessageID)

	sent := tg.Sent(chat)
	require.Len(t, sent, 3)
	assert.Equal(t, "<b>Question</b>: go on?", sent[0].Text)
	assert.Equal(t, "HTML", sent[0].ParseMode)
	assert.Equal(t, "Question: go on?", sent[0].Plain)
	assert.Equal(t, [][]fakechat.Button{
		{{Text: "Yes", CallbackData: "answer:yes"}, {Text: "No", CallbackData: "answer:no"}},
		{{Text: "Open", URL: "https://example.com/s/1"}},
	}, sent[0].Keyboard)
	assert.Equal(t, 1, sent[1].ReplyTo)
	assert.Len(t, tg.Sent(group), 1)
	assert.Len(t, tg.AllSent(), 4)
	assert.Equal(t, 5, tg.Calls("sendMessage"))
}

func TestTelegramSendMessageValidation(t *testing.T) {
	button := func(data string) map[string]any {
		return map[string]any{"inline_keyboard": [][]map[string]string{{{"text": "b", "callback_data": data}}}}
	}
	tests := []struct {
		name   string
		params map[string]any
		desc   string // "" for accepted
	}{
		{"no chat", map[string]any{"text": "x"}, "Bad Request: chat_id is empty"},
		{"a chat by username", map[string]any{"chat_id": "@somebody", "text": "x"}, "Bad Request: chat not found"},
		{"empty text", map[string]any{"chat_id": chat, "text": ""}, "Bad Request: message text is empty"},
		{"only white space", map[string]any{"chat_id": chat, "text": " \n\t"}, "Bad Request: message text is empty"},
		{"empty once parsed", map[string]any{"chat_id": chat, "text": "<b> </b>", "parse_mode": "HTML"}, "Bad Request: message text is empty"},
		{"4096 characters", map[string]any{"chat_id": chat, "text": strings.Repeat("é", 4096)}, ""},
		{"4097 characters", map[string]any{"chat_id": chat, "text": strings.Repeat("a", 4097)}, "Bad Request: message is too long"},
		{"4096 once parsed", map[string]any{"chat_id": chat, "text": "<b>" + strings.Repeat("a", 4096) + "</b>", "parse_mode": "HTML"}, ""},
		{"unknown parse mode", map[string]any{"chat_id": chat, "text": "x", "parse_mode": "BBCode"}, "Bad Request: unsupported parse_mode"},
		{"parse mode in lower case", map[string]any{"chat_id": chat, "text": "<i>x</i>", "parse_mode": "html"}, ""},
		{"callback data of 64 bytes", map[string]any{"chat_id": chat, "text": "x", "reply_markup": button(strings.Repeat("d", 64))}, ""},
		{"callback data of 65 bytes", map[string]any{"chat_id": chat, "text": "x", "reply_markup": button(strings.Repeat("d", 65))}, "Bad Request: BUTTON_DATA_INVALID"},
		{"a button that does nothing", map[string]any{"chat_id": chat, "text": "x",
			"reply_markup": map[string]any{"inline_keyboard": [][]map[string]string{{{"text": "b"}}}}},
			"Bad Request: can't parse inline keyboard button: Text buttons are unallowed in the inline keyboard"},
		{"a bad button URL", map[string]any{"chat_id": chat, "text": "x",
			"reply_markup": map[string]any{"inline_keyboard": [][]map[string]string{{{"text": "b", "url": "javascript:alert(1)"}}}}},
			"Bad Request: BUTTON_URL_INVALID"},
		{"markup that is no keyboard", map[string]any{"chat_id": chat, "text": "x", "reply_markup": map[string]any{"buttons": 1}},
			"Bad Request: can't parse reply keyboard markup JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tg := newTelegram(t)
			status, a := call(t, tg, "sendMessage", tc.params)
			if tc.desc == "" {
				require.Equal(t, http.StatusOK, status, a.Description)
				assert.Len(t, tg.AllSent(), 1)
				return
			}
			assert.Equal(t, http.StatusBadRequest, status)
			assert.Equal(t, answer{ErrorCode: 400, Description: tc.desc}, a)
			assert.Empty(t, tg.AllSent())
		})
	}
}

func TestTelegramRefusesInvalidUTF8(t *testing.T) {
	tg := newTelegram(t)
	clipped := "clipped \xe2\x82" // a text cut inside a character
	bodies := map[string]string{
		"application/x-www-form-urlencoded": url.Values{"chat_id": {"42"}, "text": {clipped}}.Encode(),
		"application/json":                  `{"chat_id":42,"text":"` + clipped + `"}`,
	}
	for contentType, body := range bodies {
		status, a, _ := post(t, tg, http.MethodPost, "/bot"+tgToken+"/sendMessage", contentType, body)
		assert.Equal(t, http.StatusBadRequest, status, contentType)
		assert.Equal(t, "Bad Request: strings must be encoded in UTF-8", a.Description, contentType)
	}
	assert.Empty(t, tg.AllSent())
}

func TestTelegramEditMessageText(t *testing.T) {
	tg := newTelegram(t)
	send(t, tg, map[string]any{"chat_id": chat, "text": "Question?", "reply_markup": map[string]any{
		"inline_keyboard": [][]map[string]string{{{"text": "Yes", "callback_data": "yes"}}},
	}})
	userMsg := tg.UserMessage(chat, ada, "hello")

	status, a := call(t, tg, "editMessageText", map[string]any{"chat_id": chat, "message_id": 1, "text": "Question? <i>answered</i>", "parse_mode": "HTML"})
	require.Equal(t, http.StatusOK, status, a.Description)
	var edited tgMessage
	require.NoError(t, json.Unmarshal(a.Result, &edited))
	assert.Equal(t, "Question? answered", edited.Text)
	assert.NotZero(t, edited.EditDate)
	assert.Nil(t, edited.Markup, "an edit without reply_markup removes the keyboard")

	sent := tg.Sent(chat)
	require.Len(t, sent, 1)
	assert.Equal(t, "Question? answered", sent[0].Plain)
	assert.Equal(t, 1, sent[0].Edits)
	assert.Nil(t, sent[0].Keyboard)
	edits := tg.Edits(chat)
	require.Len(t, edits, 1)
	assert.Equal(t, "Question? <i>answered</i>", edits[0].Text)

	tests := []struct {
		name   string
		params map[string]any
		desc   string
	}{
		{"unchanged", map[string]any{"chat_id": chat, "message_id": 1, "text": "Question? <i>answered</i>", "parse_mode": "HTML"},
			"Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message"},
		{"no such message", map[string]any{"chat_id": chat, "message_id": 77, "text": "x"}, "Bad Request: message to edit not found"},
		{"no message ID", map[string]any{"chat_id": chat, "text": "x"}, "Bad Request: message identifier is not specified"},
		{"a person's message", map[string]any{"chat_id": chat, "message_id": userMsg, "text": "x"}, "Bad Request: message can't be edited"},
		{"bad HTML", map[string]any{"chat_id": chat, "message_id": 1, "text": "a <b>b", "parse_mode": "HTML"},
			`Bad Request: can't parse entities: Can't find end tag corresponding to start tag "b"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, a := call(t, tg, "editMessageText", tc.params)
			assert.Equal(t, http.StatusBadRequest, status)
			assert.Equal(t, tc.desc, a.Description)
		})
	}
	assert.Len(t, tg.Edits(chat), 1)
}

func TestTelegramUpdatesAndOffsets(t *testing.T) {
	tg := newTelegram(t)
	sent := send(t, tg, map[string]any{"chat_id": chat, "text": "Which one?"})
	tg.UserMessage(chat, ada, "/status")
	reply, err := tg.UserReply(chat, ada, sent.MessageID, "the second")
	require.NoError(t, err)
	_, err = tg.UserReply(chat, ada, 99, "to nothing")
	require.Error(t, err)
	tg.UserMessage(group, ada, "/guide@"+fakechat.BotUsername+" use the cache")
	require.Equal(t, 3, tg.Pending())

	ups := updates(t, tg, map[string]any{})
	require.Len(t, ups, 3)
	assert.Less(t, ups[0].UpdateID, ups[1].UpdateID)
	assert.Equal(t, "/status", ups[0].Message.Text)
	assert.Equal(t, []fakechat.Entity{{Type: "bot_command", Length: 7}}, ups[0].Message.Entities)
	assert.Equal(t, ada, ups[0].Message.From)
	assert.Equal(t, reply, ups[1].Message.MessageID)
	require.NotNil(t, ups[1].Message.ReplyTo)
	assert.Equal(t, sent.MessageID, ups[1].Message.ReplyTo.MessageID)
	assert.Equal(t, "Which one?", ups[1].Message.ReplyTo.Text)
	assert.Equal(t, 1, ups[2].Message.MessageID)
	assert.Equal(t, len("/guide@"+fakechat.BotUsername), ups[2].Message.Entities[0].Length)

	again := updates(t, tg, map[string]any{"limit": 2})
	require.Len(t, again, 2, "unconfirmed updates come again")
	assert.Equal(t, ups[0].UpdateID, again[0].UpdateID)

	rest := updates(t, tg, map[string]any{"offset": ups[1].UpdateID + 1})
	require.Len(t, rest, 1)
	assert.Equal(t, ups[2].UpdateID, rest[0].UpdateID)
	assert.Equal(t, 1, tg.Pending(), "the offset confirmed the first two")
	assert.Empty(t, updates(t, tg, map[string]any{"offset": ups[2].UpdateID + 1}))
	assert.Zero(t, tg.Pending())

	for _, text := range []string{"a", "b", "c"} {
		tg.UserMessage(chat, ada, text)
	}
	last := updates(t, tg, map[string]any{"offset": -1})
	require.Len(t, last, 1)
	assert.Equal(t, "c", last[0].Message.Text)
	assert.Equal(t, 1, tg.Pending(), "a negative offset forgets the earlier updates")

	assert.Empty(t, updates(t, tg, map[string]any{"allowed_updates": []string{"callback_query"}}))
	assert.Empty(t, updates(t, tg, map[string]any{}), "allowed_updates stays in force when not given")
	assert.Len(t, updates(t, tg, map[string]any{"allowed_updates": []string{}}), 1, "an empty list allows every kind")

	call(t, tg, "deleteWebhook", map[string]any{"drop_pending_updates": true})
	assert.Zero(t, tg.Pending())
}

func TestTelegramLongPoll(t *testing.T) {
	t.Run("an update ends the wait", func(t *testing.T) {
		tg := newTelegram(t)
		go func() {
			time.Sleep(200 * time.Millisecond)
			tg.UserMessage(chat, ada, "now")
		}()
		start := time.Now()
		ups := updates(t, tg, map[string]any{"timeout": 10})
		assert.Less(t, time.Since(start), 3*time.Second)
		require.Len(t, ups, 1)
		assert.Equal(t, "now", ups[0].Message.Text)
	})
	t.Run("the timeout returns an empty list on time", func(t *testing.T) {
		tg := newTelegram(t)
		start := time.Now()
		assert.Empty(t, updates(t, tg, map[string]any{"timeout": 1}))
		assert.InDelta(t, time.Second.Seconds(), time.Since(start).Seconds(), 0.5)
	})
	t.Run("a second poller ends the first with 409", func(t *testing.T) {
		tg := newTelegram(t)
		first := make(chan answer, 1)
		go func() {
			_, a := call(t, tg, "getUpdates", map[string]any{"timeout": 10})
			first <- a
		}()
		require.Eventually(t, func() bool { return tg.Calls("getUpdates") == 1 }, 5*time.Second, 10*time.Millisecond)
		time.Sleep(50 * time.Millisecond)
		assert.Empty(t, updates(t, tg, map[string]any{}))
		select {
		case a := <-first:
			assert.Equal(t, 409, a.ErrorCode)
			assert.Equal(t, "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running", a.Description)
		case <-time.After(3 * time.Second):
			t.Fatal("the first getUpdates still waits")
		}
	})
	t.Run("Close ends a poll at once", func(t *testing.T) {
		tg := fakechat.NewTelegram(tgToken)
		done := make(chan struct{})
		go func() {
			defer close(done)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			body := strings.NewReader(`{"timeout":30}`)
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, tg.URL()+"/bot"+tgToken+"/getUpdates", body)
			req.Header.Set("Content-Type", "application/json")
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
		require.Eventually(t, func() bool { return tg.Calls("getUpdates") == 1 }, 5*time.Second, 10*time.Millisecond)
		start := time.Now()
		tg.Close()
		<-done
		assert.Less(t, time.Since(start), 3*time.Second)
	})
}

func TestTelegramCallbackQuery(t *testing.T) {
	tg := newTelegram(t)
	q := send(t, tg, map[string]any{"chat_id": chat, "text": "Deploy?", "reply_markup": map[string]any{
		"inline_keyboard": [][]map[string]string{{{"text": "Yes", "callback_data": "cp:7:yes"}, {"text": "No", "callback_data": "cp:7:no"}}},
	}})
	id, err := tg.Press(chat, ada, q.MessageID, "No")
	require.NoError(t, err)
	ups := updates(t, tg, map[string]any{"allowed_updates": []string{"message", "callback_query"}})
	require.Len(t, ups, 1)
	cq := ups[0].CallbackQuery
	require.NotNil(t, cq)
	assert.Equal(t, id, cq.ID)
	assert.Equal(t, "cp:7:no", cq.Data)
	assert.Equal(t, ada, cq.From)
	assert.Equal(t, q.MessageID, cq.Message.MessageID)
	assert.Equal(t, "Deploy?", cq.Message.Text)

	_, err = tg.Press(chat, ada, q.MessageID, "cp:7:yes")
	require.NoError(t, err, "a button is found by its data too")
	_, err = tg.Press(chat, ada, q.MessageID, "Maybe")
	require.Error(t, err)
	_, err = tg.Press(chat, ada, tg.UserMessage(chat, ada, "hi"), "Yes")
	require.Error(t, err, "only the bot's messages have the bot's buttons")

	status, a := call(t, tg, "answerCallbackQuery", map[string]any{"callback_query_id": id, "text": "Noted"})
	require.Equal(t, http.StatusOK, status, a.Description)
	assert.Equal(t, "true", string(a.Result))
	answers := tg.Answers()
	require.Len(t, answers, 1)
	assert.Equal(t, id, answers[0].QueryID)
	assert.Equal(t, "Noted", answers[0].Text)

	status, a = call(t, tg, "answerCallbackQuery", map[string]any{"callback_query_id": id})
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Equal(t, "Bad Request: query is too old and response timeout expired or query ID is invalid", a.Description)
}

func TestTelegramFailures(t *testing.T) {
	tg := newTelegram(t)
	tg.Fail("sendMessage", http.StatusInternalServerError, 2)
	for range 2 {
		status, a := call(t, tg, "sendMessage", map[string]any{"chat_id": chat, "text": "x"})
		assert.Equal(t, http.StatusInternalServerError, status)
		assert.Equal(t, answer{ErrorCode: 500, Description: "Internal Server Error"}, a)
	}
	status, _ := call(t, tg, "getMe", nil)
	assert.Equal(t, http.StatusOK, status, "other methods are not failed")
	assert.Equal(t, 1, send(t, tg, map[string]any{"chat_id": chat, "text": "x"}).MessageID, "failed calls send nothing")
	assert.Equal(t, 3, tg.Calls("sendMessage"))

	tg.FailFor("sendmessage", http.StatusBadGateway, 300*time.Millisecond)
	status, _, raw := post(t, tg, http.MethodPost, "/bot"+tgToken+"/sendMessage?chat_id=42&text=x", "", "")
	assert.Equal(t, http.StatusBadGateway, status)
	assert.Contains(t, raw, "<title>502 Bad Gateway</title>")
	time.Sleep(400 * time.Millisecond)
	send(t, tg, map[string]any{"chat_id": chat, "text": "after"})

	tg.Fail("", http.StatusTooManyRequests, 1)
	status, a := call(t, tg, "getMe", nil)
	assert.Equal(t, http.StatusTooManyRequests, status)
	assert.Equal(t, 1, a.Parameters.RetryAfter)
	assert.Len(t, tg.Sent(chat), 2)
}

func TestTelegramHold(t *testing.T) {
	tg := newTelegram(t)
	h := tg.Hold("sendMessage")
	done := make(chan int, 1)
	go func() {
		status, _ := call(t, tg, "sendMessage", map[string]any{"chat_id": chat, "text": "held"})
		done <- status
	}()
	select {
	case <-h.Reached():
	case <-time.After(5 * time.Second):
		t.Fatal("the held call never came")
	}
	assert.Len(t, tg.Sent(chat), 1, "the effect is done before the answer")
	select {
	case <-done:
		t.Fatal("a held call answered before its release")
	case <-time.After(100 * time.Millisecond):
	}
	h.Release()
	assert.Equal(t, http.StatusOK, <-done)
}

func TestTelegramEncodingsAndLimits(t *testing.T) {
	tg := newTelegram(t)
	form := url.Values{"chat_id": {"42"}, "text": {"via form"}, "reply_markup": {`{"inline_keyboard":[[{"text":"A","callback_data":"a"}]]}`}}
	status, a, _ := post(t, tg, http.MethodPost, "/bot"+tgToken+"/sendMessage", "application/x-www-form-urlencoded", form.Encode())
	require.Equal(t, http.StatusOK, status, a.Description)

	// A multipart form as github.com/go-telegram/bot sends every call.
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	require.NoError(t, mw.WriteField("chat_id", "42"))
	require.NoError(t, mw.WriteField("text", "*via multipart*"))
	require.NoError(t, mw.WriteField("parse_mode", "MarkdownV2"))
	require.NoError(t, mw.WriteField("reply_parameters", `{"message_id":1}`))
	require.NoError(t, mw.Close())
	status, a, _ = post(t, tg, http.MethodPost, "/bot"+tgToken+"/sendMessage", mw.FormDataContentType(), body.String())
	require.Equal(t, http.StatusOK, status, a.Description)

	sent := tg.Sent(chat)
	require.Len(t, sent, 2)
	assert.Equal(t, [][]fakechat.Button{{{Text: "A", CallbackData: "a"}}}, sent[0].Keyboard)
	assert.Equal(t, "via multipart", sent[1].Plain)
	assert.Equal(t, 1, sent[1].ReplyTo)

	big := `{"chat_id":42,"text":"` + strings.Repeat("a", fakechat.MaxBody) + `"}`
	status, a, _ = post(t, tg, http.MethodPost, "/bot"+tgToken+"/sendMessage", "application/json", big)
	assert.Equal(t, http.StatusRequestEntityTooLarge, status)
	assert.Equal(t, 413, a.ErrorCode)

	status, a = call(t, tg, "setMyCommands", map[string]any{"commands": []fakechat.BotCommand{{Command: "status", Description: "sessions"}}})
	require.Equal(t, http.StatusOK, status, a.Description)
	assert.Equal(t, []fakechat.BotCommand{{Command: "status", Description: "sessions"}}, tg.Commands())
}
