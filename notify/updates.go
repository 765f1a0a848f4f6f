package notify

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/durable-ralph/ralph/contract"
)

// Update is what Ralph reads of one Telegram update: a message, or a tap
// on a button of an inline keyboard (a callback query). An update of
// another kind has only its ID, which still moves the offset on.
type Update struct {
	// ID is the update_id; the next getUpdates offset is the last ID + 1.
	ID int64
	// ChatID is the chat the message is in, or the chat of the message
	// whose button was tapped.
	ChatID int64
	// UserID and User are who sent the message or tapped the button:
	// User is @username, else the first name.
	UserID int64
	User   string
	// MessageID is the message, or the message whose button was tapped.
	MessageID int64
	// Text is the message's text; "" for a tap.
	Text string
	// ReplyTo is the message the message replies to; 0 for none.
	ReplyTo int64
	// ReplyToBot says the message replied to is a bot's.
	ReplyToBot bool
	// ReplyToData is the data of the first button of the message replied
	// to that is a button of Ralph's question (ParseCallbackData); "" for
	// none. It ties a reply to its question when the record of the
	// message was lost (a worker killed between the send and the record).
	ReplyToData string
	// CallbackID and CallbackData are the tap's query ID, for
	// AnswerCallback, and its button's data (ParseCallbackData); "" for a
	// message.
	CallbackID   string
	CallbackData string
}

// The Bot API's types, as far as Update reads them.
type (
	tgUpdate struct {
		UpdateID      int64            `json:"update_id"`
		Message       *tgMessage       `json:"message"`
		CallbackQuery *tgCallbackQuery `json:"callback_query"`
	}
	tgMessage struct {
		MessageID      int64      `json:"message_id"`
		From           *tgUser    `json:"from"`
		Chat           tgChat     `json:"chat"`
		Text           string     `json:"text"`
		ReplyToMessage *tgMessage `json:"reply_to_message"`
		ReplyMarkup    *struct {
			InlineKeyboard [][]struct {
				CallbackData string `json:"callback_data"`
			} `json:"inline_keyboard"`
		} `json:"reply_markup"`
	}
	tgChat struct {
		ID int64 `json:"id"`
	}
	tgUser struct {
		ID        int64  `json:"id"`
		IsBot     bool   `json:"is_bot"`
		Username  string `json:"username"`
		FirstName string `json:"first_name"`
	}
	tgCallbackQuery struct {
		ID      string     `json:"id"`
		From    tgUser     `json:"from"`
		Message *tgMessage `json:"message"`
		Data    string     `json:"data"`
	}
)

// ParseUpdates reads the result of a getUpdates, a JSON array of
// updates, into Updates.
func ParseUpdates(result []byte) ([]Update, error) {
	var raw []tgUpdate
	if err := json.Unmarshal(result, &raw); err != nil {
		return nil, fmt.Errorf("read telegram updates: %w", err)
	}
	updates := make([]Update, len(raw))
	for i, r := range raw {
		u := Update{ID: r.UpdateID}
		switch {
		case r.Message != nil:
			m := r.Message
			u.ChatID, u.MessageID, u.Text = m.Chat.ID, m.MessageID, m.Text
			if m.From != nil {
				u.UserID, u.User = m.From.ID, m.From.name()
			}
			if m.ReplyToMessage != nil {
				u.ReplyTo = m.ReplyToMessage.MessageID
				u.ReplyToBot = m.ReplyToMessage.From != nil && m.ReplyToMessage.From.IsBot
				if u.ReplyToBot {
					u.ReplyToData = m.ReplyToMessage.questionData()
				}
			}
		case r.CallbackQuery != nil:
			q := r.CallbackQuery
			u.UserID, u.User = q.From.ID, q.From.name()
			u.CallbackID, u.CallbackData = q.ID, q.Data
			if q.Message != nil {
				u.ChatID, u.MessageID = q.Message.Chat.ID, q.Message.MessageID
			}
		}
		updates[i] = u
	}
	return updates, nil
}

// questionData is the data of m's first button that is a button of
// Ralph's question, or "".
func (m *tgMessage) questionData() string {
	if m.ReplyMarkup == nil {
		return ""
	}
	for _, row := range m.ReplyMarkup.InlineKeyboard {
		for _, b := range row {
			if _, ok := ParseCallbackData(b.CallbackData); ok {
				return b.CallbackData
			}
		}
	}
	return ""
}

// name is @username, else the first name.
func (u *tgUser) name() string {
	if u.Username != "" {
		return "@" + u.Username
	}
	return u.FirstName
}

// callbackPrefix starts the data of the buttons of Ralph's questions.
const callbackPrefix = "q"

// Callback is what a button of a question's message says: the
// notification's key's hash (KeyHash), the question and the choice, 0
// for the first.
type Callback struct {
	KeyHash  string
	Question int
	Choice   int
}

// CallbackData is the data of the button of the choice-th choice of the
// question asked by the notification key: "q:<KeyHash>:<question>:<choice>",
// well under Telegram's 64 bytes.
func CallbackData(key string, question, choice int) string {
	return fmt.Sprintf("%s:%s:%d:%d", callbackPrefix, KeyHash(key), question, choice)
}

// ParseCallbackData reads data that CallbackData wrote; ok is false for
// other data.
func ParseCallbackData(data string) (c Callback, ok bool) {
	parts := strings.Split(data, ":")
	if len(parts) != 4 || parts[0] != callbackPrefix || parts[1] == "" {
		return Callback{}, false
	}
	q, qerr := strconv.Atoi(parts[2])
	ch, cerr := strconv.Atoi(parts[3])
	if qerr != nil || cerr != nil || q < 0 || ch < 0 {
		return Callback{}, false
	}
	return Callback{KeyHash: parts[1], Question: q, Choice: ch}, true
}

// KeyHash is contract.KeyHash: the short hash of a notification's key a
// button carries.
func KeyHash(key string) string { return contract.KeyHash(key) }
