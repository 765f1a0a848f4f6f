package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/durable-ralph/ralph/contract"
)

// DefaultTelegramAPIURL is the Bot API server of Telegram.
const DefaultTelegramAPIURL = "https://api.telegram.org"

// maxTelegramResponse bounds an answer of the Bot API: a getUpdates of
// 100 updates of long messages fits many times over.
const maxTelegramResponse = 16 << 20

// Telegram is a client of the Telegram Bot API
// (https://core.telegram.org/bots/api) for one bot.
//
// It speaks the Bot API directly over net/http rather than through
// github.com/go-telegram/bot. Ralph uses five methods, getMe,
// sendMessage, editMessageText, getUpdates and answerCallbackQuery, each
// one JSON POST: a hundred lines here. And Ralph must own getUpdates'
// offset: an update is to be acted on once, by one of several workers,
// across restarts, so its reader stores the offset and confirms an update
// only once it acted on it. go-telegram/bot keeps the offset inside its
// own polling loop (getUpdates is not exported) and moves past an update
// before its handler has run, and it brings a framework of handlers,
// middlewares and a webhook server around the calls Ralph would use.
type Telegram struct {
	token  string
	apiURL string
	client *http.Client
}

// NewTelegram returns a client of the bot with token, at the Bot API
// server apiURL ("" is DefaultTelegramAPIURL), making its requests with
// client (nil is a client of its own).
func NewTelegram(token, apiURL string, client *http.Client) *Telegram {
	if apiURL == "" {
		apiURL = DefaultTelegramAPIURL
	}
	if client == nil {
		client = &http.Client{}
	}
	return &Telegram{token: token, apiURL: strings.TrimSuffix(apiURL, "/"), client: client}
}

// TelegramError is an error answer of the Bot API.
type TelegramError struct {
	Method string
	// Code is the answer's error_code, else its HTTP status.
	Code        int
	Description string
	// RetryAfter is how long Telegram asks to wait before the next
	// request (429 Too Many Requests); 0 if it does not say.
	RetryAfter time.Duration
}

func (e *TelegramError) Error() string {
	s := fmt.Sprintf("telegram %s: %d %s", e.Method, e.Code, e.Description)
	if e.RetryAfter > 0 {
		s += fmt.Sprintf(" (retry after %s)", e.RetryAfter)
	}
	return s
}

// telegramResponse is the envelope of every answer of the Bot API.
type telegramResponse struct {
	OK          bool            `json:"ok"`
	Result      json.RawMessage `json:"result"`
	ErrorCode   int             `json:"error_code"`
	Description string          `json:"description"`
	Parameters  *struct {
		RetryAfter int `json:"retry_after"`
	} `json:"parameters"`
}

// call posts params as JSON to the Bot API's method and decodes the
// answer's result into result, if not nil.
func (t *Telegram) call(ctx context.Context, method string, params, result any) error {
	body, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("telegram %s: %w", method, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.apiURL+"/bot"+t.token+"/"+method, bytes.NewReader(body))
	if err != nil {
		// The URL holds the token: say no more than that it is wrong.
		return fmt.Errorf("telegram %s: invalid notify.telegram.api-url or token", method)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := t.client.Do(req)
	if err != nil {
		return fmt.Errorf("telegram %s: %w", method, withoutURL(err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxTelegramResponse))
	if err != nil {
		return fmt.Errorf("telegram %s: read the answer: %w", method, withoutURL(err))
	}
	var r telegramResponse
	if err := json.Unmarshal(data, &r); err != nil || !r.OK {
		e := &TelegramError{Method: method, Code: r.ErrorCode, Description: r.Description}
		if e.Code == 0 {
			e.Code, e.Description = resp.StatusCode, http.StatusText(resp.StatusCode)
		}
		if r.Parameters != nil {
			e.RetryAfter = time.Duration(r.Parameters.RetryAfter) * time.Second
		}
		return e
	}
	if result != nil {
		if err := json.Unmarshal(r.Result, result); err != nil {
			return fmt.Errorf("telegram %s: read the result: %w", method, err)
		}
	}
	return nil
}

// withoutURL is err without the URL a *url.Error names: the Bot API's
// URLs hold the token.
func withoutURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}

// Check asks Telegram who the bot is (getMe) and returns its username. A
// token Telegram refuses is an error that errors.Is ErrBadToken.
func (t *Telegram) Check(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	var me struct {
		Username string `json:"username"`
	}
	err := t.call(ctx, "getMe", struct{}{}, &me)
	var te *TelegramError
	if errors.As(err, &te) && (te.Code == http.StatusUnauthorized || te.Code == http.StatusNotFound) {
		return "", fmt.Errorf("%w: %w", ErrBadToken, err)
	}
	return me.Username, err
}

// TelegramMessage is a message for SendMessage.
type TelegramMessage struct {
	ChatID int64
	// Text is the message; with HTML, in Telegram's HTML, else plain.
	Text string
	HTML bool
	// ReplyTo is the message this one answers; 0 for none.
	ReplyTo int64
	// Buttons are an inline keyboard, one button a row.
	Buttons []Button
}

// Button is a button of an inline keyboard: tapping it sends Data (at
// most 64 bytes) back as a callback query.
type Button struct {
	Text string `json:"text"`
	Data string `json:"callback_data"`
}

// SendMessage sends m (sendMessage) and returns its message ID.
func (t *Telegram) SendMessage(ctx context.Context, m TelegramMessage) (int64, error) {
	params := map[string]any{
		"chat_id":              m.ChatID,
		"text":                 m.Text,
		"link_preview_options": map[string]bool{"is_disabled": true},
	}
	if m.HTML {
		params["parse_mode"] = "HTML"
	}
	if m.ReplyTo != 0 {
		params["reply_parameters"] = map[string]any{"message_id": m.ReplyTo, "allow_sending_without_reply": true}
	}
	if len(m.Buttons) > 0 {
		rows := make([][]Button, len(m.Buttons))
		for i, b := range m.Buttons {
			rows[i] = []Button{b}
		}
		params["reply_markup"] = map[string]any{"inline_keyboard": rows}
	}
	var sent struct {
		MessageID int64 `json:"message_id"`
	}
	if err := t.call(ctx, "sendMessage", params, &sent); err != nil {
		return 0, err
	}
	return sent.MessageID, nil
}

// EditText replaces the text of a message the bot sent with plain text
// (editMessageText), removing its inline keyboard.
func (t *Telegram) EditText(ctx context.Context, chatID, messageID int64, text string) error {
	return t.call(ctx, "editMessageText", map[string]any{
		"chat_id":              chatID,
		"message_id":           messageID,
		"text":                 text,
		"link_preview_options": map[string]bool{"is_disabled": true},
	}, nil)
}

// Updates returns the updates from offset on (getUpdates), waiting up to
// timeout for one (long polling; 0 does not wait). Only messages and
// callback queries come. Asking from offset confirms every update before
// it: the next offset is the last update's ID + 1.
func (t *Telegram) Updates(ctx context.Context, offset int64, timeout time.Duration) ([]Update, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout+requestTimeout)
	defer cancel()
	var raw json.RawMessage
	err := t.call(ctx, "getUpdates", map[string]any{
		"offset":          offset,
		"timeout":         int(timeout / time.Second),
		"allowed_updates": []string{"message", "callback_query"},
	}, &raw)
	if err != nil {
		return nil, err
	}
	return ParseUpdates(raw)
}

// AnswerCallback answers the callback query id (answerCallbackQuery),
// showing text, if any, to the person who tapped the button.
func (t *Telegram) AnswerCallback(ctx context.Context, id, text string) error {
	params := map[string]any{"callback_query_id": id}
	if text != "" {
		params["text"] = text
	}
	return t.call(ctx, "answerCallbackQuery", params, nil)
}

// telegramTarget is one chat of the bot.
type telegramTarget struct {
	bot  *Telegram
	chat int64
}

func (t *telegramTarget) dest() string {
	return contract.ChannelTelegram + ":" + strconv.FormatInt(t.chat, 10)
}

// telegramHTML writes messages in Telegram's HTML, with every text
// escaped, so that tags and entities in the agent's text show as they
// are.
var telegramHTML = markup{
	escape: html.EscapeString,
	bold:   func(s string) string { return "<b>" + s + "</b>" },
	link: func(u, text string) string {
		return `<a href="` + html.EscapeString(u) + `">` + html.EscapeString(text) + "</a>"
	},
	answer: "Reply to this message to answer.",
}

// send sends m to the chat, with a button for each choice.
func (t *telegramTarget) send(ctx context.Context, m *message) (contract.SentMessage, error) {
	tm := TelegramMessage{ChatID: t.chat, Text: m.render(telegramHTML), HTML: true}
	for i, c := range m.choices {
		if c == "" {
			c = strconv.Itoa(i + 1)
		}
		tm.Buttons = append(tm.Buttons, Button{Text: c, Data: CallbackData(m.key, m.question, i)})
	}
	id, err := t.bot.SendMessage(ctx, tm)
	if err != nil {
		return contract.SentMessage{}, err
	}
	return contract.SentMessage{
		Channel:   contract.ChannelTelegram,
		Chat:      strconv.FormatInt(t.chat, 10),
		MessageID: strconv.FormatInt(id, 10),
	}, nil
}
