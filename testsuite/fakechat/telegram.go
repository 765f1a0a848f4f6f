package fakechat

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// BotUsername is the username of every fake Telegram bot.
const BotUsername = "fake_ralph_bot"

// Telegram is a running fake of the Telegram Bot API for one bot.
//
// It answers POST and GET /bot<token>/<method> with parameters in the query,
// a JSON body, a URL-encoded or a multipart form, for the methods getMe,
// sendMessage, editMessageText, getUpdates, answerCallbackQuery,
// deleteWebhook, getWebhookInfo and setMyCommands (names are
// case-insensitive, as on the real API); any other method is 404
// {"ok":false,"error_code":404,"description":"Not Found"}, any other token
// 401 {"ok":false,"error_code":401,"description":"Unauthorized"}.
//
// Messages of the bot and of the people a test plays (UserMessage,
// UserReply) share one sequence of message IDs per chat, from 1; updates
// get increasing update IDs and stay queued until a getUpdates offset
// confirms them. A positive chat ID is a private chat, a negative one a
// group (a supergroup from -1000000000000 down).
type Telegram struct {
	core
	token string
	bot   User

	chats      map[int64]*tgChat
	sent       []*message // the bot's messages, in the order it sent them
	edits      []Edit
	updates    []update // not yet confirmed, oldest first
	nextUpdate int64
	allowed    []string // the allowed_updates in force; empty for every kind
	polls      int64    // getUpdates calls so far: a newer one ends the wait of an older one
	queries    map[string]*query
	nextQuery  int64
	answers    []CallbackAnswer
	commands   []BotCommand
}

// User is a Telegram user: a person a test plays, or the bot.
type User struct {
	ID        int64  `json:"id"`
	IsBot     bool   `json:"is_bot"`
	FirstName string `json:"first_name"`
	Username  string `json:"username,omitempty"`
}

// Button is a button of an inline keyboard.
type Button struct {
	Text         string `json:"text"`
	CallbackData string `json:"callback_data,omitempty"`
	URL          string `json:"url,omitempty"`
}

// BotCommand is a command the bot registered with setMyCommands.
type BotCommand struct {
	Command     string `json:"command"`
	Description string `json:"description"`
}

// Message is a snapshot of a message in a chat.
type Message struct {
	ChatID    int64
	MessageID int
	From      User
	// Text is the text as it was sent (or last edited), markup included;
	// ParseMode is its parse_mode ("" for none).
	Text      string
	ParseMode string
	// Plain is the text as a person sees it, once the markup is parsed and
	// the white space around it stripped; Entities are its formatting.
	Plain    string
	Entities []Entity
	// Keyboard is the inline keyboard under the message; nil for none.
	Keyboard [][]Button
	// ReplyTo is the ID of the message it replies to; 0 for none.
	ReplyTo int
	Date    time.Time
	// Edits counts the editMessageText calls that changed it.
	Edits int
}

// Edit is an editMessageText call that changed a message.
type Edit struct {
	ChatID          int64
	MessageID       int
	Text, ParseMode string
	Plain           string
	Keyboard        [][]Button
	Time            time.Time
}

// CallbackAnswer is an answerCallbackQuery call.
type CallbackAnswer struct {
	QueryID   string
	Text      string
	ShowAlert bool
	URL       string
	Time      time.Time
}

// tgChat is a chat and its messages; messages[i] has message ID i+1.
type tgChat struct {
	id       int64
	person   *User // the first person who wrote in it
	messages []*message
}

type message struct {
	content
	chat     *tgChat
	id       int
	from     User
	replyTo  *message
	date     time.Time
	editDate time.Time
	edits    int
}

// content is what an edit changes in a message.
type content struct {
	text, parseMode string
	plain           string
	entities        []Entity
	keyboard        [][]Button
	markup          json.RawMessage // the inline keyboard as the API gives it back
}

// query is a callback query: a button pressed, answered at most once.
type query struct {
	answered bool
}

// update is a queued update: its kind ("message", "callback_query") and the
// object under that key.
type update struct {
	id   int64
	kind string
	body json.RawMessage
}

// NewTelegram starts a fake Bot API whose only valid token is token, which
// must look like a real one ("<bot id>:<secret>"): the bot's user ID is the
// number before the colon, its username BotUsername. It panics on a token
// of another shape.
func NewTelegram(token string) *Telegram {
	idText, secret, ok := strings.Cut(token, ":")
	id, err := strconv.ParseInt(idText, 10, 64)
	if !ok || err != nil || id <= 0 || secret == "" {
		panic(fmt.Sprintf("fakechat: %q is not a bot token (<bot id>:<secret>)", token))
	}
	t := &Telegram{
		token:      token,
		bot:        User{ID: id, IsBot: true, FirstName: "Ralph", Username: BotUsername},
		chats:      map[int64]*tgChat{},
		queries:    map[string]*query{},
		nextUpdate: 100_000_000,
		nextQuery:  4_382_000_000_000_000_000,
	}
	t.start(t)
	return t
}

// URL is the base URL of the API, without a trailing slash, in place of
// "https://api.telegram.org".
func (t *Telegram) URL() string { return t.srv.URL }

// Bot is the bot's user.
func (t *Telegram) Bot() User { return t.bot }

// Sent returns the bot's messages in chat chatID, oldest first, as they are
// now (after edits).
func (t *Telegram) Sent(chatID int64) []Message {
	return t.sentIn(func(c *tgChat) bool { return c.id == chatID })
}

// AllSent returns the bot's messages in every chat, in the order it sent
// them.
func (t *Telegram) AllSent() []Message {
	return t.sentIn(func(*tgChat) bool { return true })
}

// sentIn returns the bot's messages in the chats keep selects, in order.
func (t *Telegram) sentIn(keep func(*tgChat) bool) []Message {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Message
	for _, m := range t.sent {
		if keep(m.chat) {
			out = append(out, m.snapshot())
		}
	}
	return out
}

// Messages returns every message of chat chatID, the bot's and the
// people's, by message ID.
func (t *Telegram) Messages(chatID int64) []Message {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Message
	if c := t.chats[chatID]; c != nil {
		for _, m := range c.messages {
			out = append(out, m.snapshot())
		}
	}
	return out
}

// Edits returns the editMessageText calls that changed a message of chat
// chatID, oldest first.
func (t *Telegram) Edits(chatID int64) []Edit {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Edit
	for _, e := range t.edits {
		if e.ChatID == chatID {
			out = append(out, e)
		}
	}
	return out
}

// Answers returns the answerCallbackQuery calls, oldest first.
func (t *Telegram) Answers() []CallbackAnswer {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.answers)
}

// Commands returns the commands of the last setMyCommands call.
func (t *Telegram) Commands() []BotCommand {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.commands)
}

// Pending counts the updates no getUpdates offset has confirmed yet.
func (t *Telegram) Pending() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.updates)
}

// UserMessage makes from write text in chat chatID and queues its update
// (kind "message") for getUpdates. A text starting with "/" is a command:
// its first word gets a bot_command entity. Texts are not limited, so a
// test can send what no real client could. It returns the message's ID.
func (t *Telegram) UserMessage(chatID int64, from User, text string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.userMessage(t.chat(chatID), from, nil, text).id
}

// UserReply is UserMessage answering message replyTo of the chat (the
// bot's or anyone's). It fails if the chat has no such message.
func (t *Telegram) UserReply(chatID int64, from User, replyTo int, text string) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.chat(chatID)
	to := c.get(replyTo)
	if to == nil {
		return 0, fmt.Errorf("chat %d has no message %d", chatID, replyTo)
	}
	return t.userMessage(c, from, to, text).id, nil
}

// Press makes from press a button of the inline keyboard under the bot's
// message messageID in chat chatID: the button whose callback_data, or else
// whose text, is button. It queues the update (kind "callback_query", with
// the message and the button's data) and returns the query's ID, for
// answerCallbackQuery. It fails if there is no such message or button.
func (t *Telegram) Press(chatID int64, from User, messageID int, button string) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.chat(chatID).get(messageID)
	if m == nil || m.from.ID != t.bot.ID {
		return "", fmt.Errorf("chat %d has no message %d from the bot", chatID, messageID)
	}
	b, ok := findButton(m.keyboard, button)
	if !ok {
		return "", fmt.Errorf("message %d of chat %d has no button %q with callback data", messageID, chatID, button)
	}
	t.nextQuery++
	id := strconv.FormatInt(t.nextQuery, 10)
	t.queries[id] = &query{}
	t.push("callback_query", map[string]any{
		"id":            id,
		"from":          from,
		"message":       t.wire(m, true),
		"chat_instance": strconv.FormatInt(-7*chatID-1, 10),
		"data":          b.CallbackData,
	})
	return id, nil
}

// findButton finds the button with callback data whose data, or else whose
// text, is name.
func findButton(keyboard [][]Button, name string) (Button, bool) {
	for _, byData := range []bool{true, false} {
		for _, row := range keyboard {
			for _, b := range row {
				if b.CallbackData != "" && (byData && b.CallbackData == name || !byData && b.Text == name) {
					return b, true
				}
			}
		}
	}
	return Button{}, false
}

// chat returns chat id, made on first use. The caller holds mu.
func (t *Telegram) chat(id int64) *tgChat {
	c := t.chats[id]
	if c == nil {
		c = &tgChat{id: id}
		t.chats[id] = c
	}
	return c
}

// get returns message id of the chat, or nil.
func (c *tgChat) get(id int) *message {
	if id < 1 || id > len(c.messages) {
		return nil
	}
	return c.messages[id-1]
}

// add gives m the chat's next message ID and keeps it.
func (c *tgChat) add(m *message) *message {
	m.chat, m.id = c, len(c.messages)+1
	c.messages = append(c.messages, m)
	return m
}

// userMessage adds a person's message and queues its update. The caller
// holds mu.
func (t *Telegram) userMessage(c *tgChat, from User, replyTo *message, text string) *message {
	if c.person == nil {
		c.person = &from
	}
	m := c.add(&message{content: content{text: text, plain: text}, from: from, replyTo: replyTo, date: time.Now()})
	if strings.HasPrefix(text, "/") {
		word, _, _ := strings.Cut(text, " ")
		word, _, _ = strings.Cut(word, "\n")
		m.entities = []Entity{{Type: "bot_command", Length: utf16Len(word)}}
	}
	t.push("message", t.wire(m, true))
	return m
}

// push queues an update and wakes the long polls. The caller holds mu.
func (t *Telegram) push(kind string, body any) {
	t.nextUpdate++
	t.updates = append(t.updates, update{id: t.nextUpdate, kind: kind, body: marshal(body)})
	t.notify()
}

func (m *message) snapshot() Message {
	out := Message{
		ChatID: m.chat.id, MessageID: m.id, From: m.from,
		Text: m.text, ParseMode: m.parseMode, Plain: m.plain,
		Entities: slices.Clone(m.entities), Keyboard: cloneKeyboard(m.keyboard),
		Date: m.date, Edits: m.edits,
	}
	if m.replyTo != nil {
		out.ReplyTo = m.replyTo.id
	}
	return out
}

func cloneKeyboard(k [][]Button) [][]Button {
	if k == nil {
		return nil
	}
	out := make([][]Button, len(k))
	for i, row := range k {
		out[i] = slices.Clone(row)
	}
	return out
}

// errNoChat is the Bot API's answer for a chat_id it cannot use.
var errNoChat = errors.New("chat not found")
