package fakechat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// tgReply is a Bot API answer before it is written.
type tgReply struct {
	status int
	result any
	desc   string
}

func tgOK(result any) tgReply { return tgReply{status: http.StatusOK, result: result} }

func tgError(status int, desc string) tgReply { return tgReply{status: status, desc: desc} }

func badRequest(desc string) tgReply { return tgError(http.StatusBadRequest, "Bad Request: "+desc) }

// tgAnswer is the envelope of every Bot API answer, in the real API's
// order of keys.
type tgAnswer struct {
	OK          bool           `json:"ok"`
	Result      any            `json:"result,omitempty"`
	ErrorCode   int            `json:"error_code,omitempty"`
	Description string         `json:"description,omitempty"`
	Parameters  *tgRetryParams `json:"parameters,omitempty"`
}

type tgRetryParams struct {
	RetryAfter int `json:"retry_after"`
}

// write writes r as the Bot API does: {"ok":true,"result":...} or
// {"ok":false,"error_code":...,"description":...} with that status.
func (r tgReply) write(w http.ResponseWriter) {
	a := tgAnswer{OK: r.status == http.StatusOK, Description: r.desc}
	if a.OK {
		a.Result = r.result
	} else {
		a.ErrorCode = r.status
	}
	if r.status == http.StatusTooManyRequests {
		a.Parameters = &tgRetryParams{RetryAfter: 1}
	}
	writeBody(w, r.status, "application/json", marshal(a))
}

// tgFault writes the answer of a scripted failure: the Bot API's JSON for
// most statuses, its proxy's HTML page for 502, 503 and 504.
func tgFault(w http.ResponseWriter, status int) {
	switch status {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		writeBody(w, status, "text/html", gatewayPage(status))
	case http.StatusTooManyRequests:
		tgError(status, "Too Many Requests: retry after 1").write(w)
	case http.StatusForbidden:
		tgError(status, "Forbidden: bot was blocked by the user").write(w)
	default:
		tgError(status, http.StatusText(status)).write(w)
	}
}

// tgMethods are the methods the fake answers, by lower-case name; each
// runs with mu held. getUpdates, which waits, is apart.
var tgMethods = map[string]struct {
	name string
	fn   func(*Telegram, params) tgReply
}{
	"getme":               {"getMe", (*Telegram).getMe},
	"sendmessage":         {"sendMessage", (*Telegram).sendMessage},
	"editmessagetext":     {"editMessageText", (*Telegram).editMessageText},
	"getupdates":          {"getUpdates", nil},
	"answercallbackquery": {"answerCallbackQuery", (*Telegram).answerCallbackQuery},
	"deletewebhook":       {"deleteWebhook", (*Telegram).deleteWebhook},
	"getwebhookinfo":      {"getWebhookInfo", (*Telegram).getWebhookInfo},
	"setmycommands":       {"setMyCommands", (*Telegram).setMyCommands},
}

// ServeHTTP answers one Bot API request.
func (t *Telegram) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, isBot := strings.CutPrefix(r.URL.Path, "/bot")
	token, method, _ := strings.Cut(rest, "/")
	if !isBot || method == "" || strings.Contains(method, "/") {
		tgError(http.StatusNotFound, "Not Found").write(w)
		return
	}
	if token != t.token {
		tgError(http.StatusUnauthorized, "Unauthorized").write(w)
		return
	}
	m, known := tgMethods[strings.ToLower(method)]
	if !known {
		tgError(http.StatusNotFound, "Not Found").write(w)
		return
	}
	body, err := readBody(w, r)
	if errors.Is(err, errTooLarge) {
		tgError(http.StatusRequestEntityTooLarge, "Request Entity Too Large").write(w)
		return
	}
	p, perr := parseParams(r, body)
	if err != nil || perr != nil {
		badRequest("can't parse request body").write(w)
		return
	}
	status, hold := t.begin(m.name)
	if status != 0 {
		tgFault(w, status)
		return
	}
	var rep tgReply
	if m.fn == nil {
		rep = t.getUpdates(r.Context(), p)
	} else {
		t.mu.Lock()
		rep = m.fn(t, p)
		t.mu.Unlock()
	}
	t.await(r.Context(), hold)
	rep.write(w)
}

func (t *Telegram) getMe(params) tgReply {
	return tgOK(map[string]any{
		"id": t.bot.ID, "is_bot": true, "first_name": t.bot.FirstName, "username": t.bot.Username,
		"can_join_groups": true, "can_read_all_group_messages": false, "supports_inline_queries": false,
	})
}

func (t *Telegram) sendMessage(p params) tgReply {
	c, err := t.chatParam(p)
	if err != nil {
		return badRequest(err.Error())
	}
	ct, err := readContent(p)
	if err != nil {
		return badRequest(err.Error())
	}
	replyTo, err := replyParam(c, p)
	if err != nil {
		return badRequest(err.Error())
	}
	m := c.add(&message{content: ct, from: t.bot, replyTo: replyTo, date: time.Now()})
	t.sent = append(t.sent, m)
	t.notify()
	return tgOK(t.wire(m, true))
}

func (t *Telegram) editMessageText(p params) tgReply {
	if !p.has("chat_id") && p.has("inline_message_id") {
		return badRequest("MESSAGE_ID_INVALID")
	}
	c, err := t.chatParam(p)
	if err != nil {
		return badRequest(err.Error())
	}
	id, err := p.int("message_id", 0)
	if err != nil || id == 0 {
		return badRequest("message identifier is not specified")
	}
	m := c.get(int(id))
	switch {
	case m == nil:
		return badRequest("message to edit not found")
	case m.from.ID != t.bot.ID:
		return badRequest("message can't be edited")
	}
	ct, err := readContent(p)
	if err != nil {
		return badRequest(err.Error())
	}
	if ct.plain == m.plain && slices.Equal(ct.entities, m.entities) && bytes.Equal(ct.markup, m.markup) {
		return badRequest("message is not modified: specified new message content and reply markup " +
			"are exactly the same as a current content and reply markup of the message")
	}
	now := time.Now()
	m.content, m.editDate = ct, now
	m.edits++
	t.edits = append(t.edits, Edit{
		ChatID: c.id, MessageID: m.id, Text: ct.text, ParseMode: ct.parseMode, Plain: ct.plain,
		Keyboard: cloneKeyboard(ct.keyboard), Time: now,
	})
	t.notify()
	return tgOK(t.wire(m, true))
}

func (t *Telegram) answerCallbackQuery(p params) tgReply {
	id := p["callback_query_id"]
	q := t.queries[id]
	if q == nil || q.answered {
		return badRequest("query is too old and response timeout expired or query ID is invalid")
	}
	q.answered = true
	t.answers = append(t.answers, CallbackAnswer{
		QueryID: id, Text: p["text"], ShowAlert: p.bool("show_alert"), URL: p["url"], Time: time.Now(),
	})
	t.notify()
	return tgOK(true)
}

func (t *Telegram) deleteWebhook(p params) tgReply {
	if p.bool("drop_pending_updates") {
		t.updates = nil
	}
	return tgReply{status: http.StatusOK, result: true, desc: "Webhook is already deleted"}
}

func (t *Telegram) getWebhookInfo(params) tgReply {
	return tgOK(map[string]any{"url": "", "has_custom_certificate": false, "pending_update_count": len(t.updates)})
}

func (t *Telegram) setMyCommands(p params) tgReply {
	var cmds []BotCommand
	if _, err := p.json("commands", &cmds); err != nil {
		return badRequest("can't parse commands JSON object")
	}
	t.commands = cmds
	return tgOK(true)
}

// readContent reads what sendMessage and editMessageText set: the text
// with its parse_mode, and the reply_markup.
func readContent(p params) (content, error) {
	ct := content{text: p["text"], parseMode: p["parse_mode"]}
	var err error
	if ct.plain, ct.entities, err = formatText(ct.text, ct.parseMode); err != nil {
		return ct, err
	}
	ct.keyboard, ct.markup, err = parseMarkup(p)
	return ct, err
}

// chatParam returns the chat of the chat_id parameter: an integer; a
// "@username" names no chat the fake knows.
func (t *Telegram) chatParam(p params) (*tgChat, error) {
	s := strings.TrimSpace(p["chat_id"])
	if s == "" {
		return nil, errors.New("chat_id is empty")
	}
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id == 0 {
		return nil, errNoChat
	}
	return t.chat(id), nil
}

// replyParam returns the message that reply_parameters (or the older
// reply_to_message_id) names, nil for none.
func replyParam(c *tgChat, p params) (*message, error) {
	var rp struct {
		MessageID                int  `json:"message_id"`
		AllowSendingWithoutReply bool `json:"allow_sending_without_reply"`
	}
	if _, err := p.json("reply_parameters", &rp); err != nil {
		return nil, errors.New("can't parse reply parameters JSON object")
	}
	if rp.MessageID == 0 {
		id, err := p.int("reply_to_message_id", 0)
		if err != nil {
			return nil, err
		}
		rp.MessageID, rp.AllowSendingWithoutReply = int(id), p.bool("allow_sending_without_reply")
	}
	if rp.MessageID == 0 {
		return nil, nil
	}
	m := c.get(rp.MessageID)
	if m == nil && !rp.AllowSendingWithoutReply {
		return nil, errors.New("message to be replied not found")
	}
	return m, nil
}

// buttonActions are the fields of an inline keyboard button of which it
// must have exactly one.
var buttonActions = []string{
	"callback_data", "url", "login_url", "web_app", "switch_inline_query",
	"switch_inline_query_current_chat", "switch_inline_query_chosen_chat",
	"copy_text", "callback_game", "pay",
}

// parseMarkup reads reply_markup: its inline keyboard (nil for none) and
// that keyboard as the API gives it back.
func parseMarkup(p params) ([][]Button, json.RawMessage, error) {
	var markup struct {
		InlineKeyboard [][]map[string]json.RawMessage `json:"inline_keyboard"`
		Keyboard       json.RawMessage                `json:"keyboard"`
		RemoveKeyboard json.RawMessage                `json:"remove_keyboard"`
		ForceReply     json.RawMessage                `json:"force_reply"`
	}
	given, err := p.json("reply_markup", &markup)
	if !given {
		return nil, nil, nil
	}
	if err != nil || markup.InlineKeyboard == nil && markup.Keyboard == nil && markup.RemoveKeyboard == nil && markup.ForceReply == nil {
		return nil, nil, errors.New("can't parse reply keyboard markup JSON object")
	}
	if markup.InlineKeyboard == nil {
		return nil, nil, nil
	}
	keyboard := make([][]Button, len(markup.InlineKeyboard))
	for i, row := range markup.InlineKeyboard {
		for _, fields := range row {
			b, err := parseButton(fields)
			if err != nil {
				return nil, nil, err
			}
			keyboard[i] = append(keyboard[i], b)
		}
	}
	return keyboard, marshal(map[string]any{"inline_keyboard": markup.InlineKeyboard}), nil
}

// parseButton validates an inline keyboard button as the Bot API does.
func parseButton(fields map[string]json.RawMessage) (Button, error) {
	var b Button
	if err := json.Unmarshal(fields["text"], &b.Text); err != nil {
		return b, errors.New(`can't parse inline keyboard button: Field "text" must be of type String`)
	}
	actions := 0
	for _, a := range buttonActions {
		if _, ok := fields[a]; ok {
			actions++
		}
	}
	if actions == 0 {
		return b, errors.New("can't parse inline keyboard button: Text buttons are unallowed in the inline keyboard")
	}
	if raw, ok := fields["callback_data"]; ok {
		if err := json.Unmarshal(raw, &b.CallbackData); err != nil || len(b.CallbackData) > 64 || b.CallbackData == "" {
			return b, errors.New("BUTTON_DATA_INVALID")
		}
	}
	if raw, ok := fields["url"]; ok {
		err := json.Unmarshal(raw, &b.URL)
		u, perr := url.Parse(b.URL)
		if err != nil || perr != nil || u.Host == "" && u.Scheme != "tg" || !slices.Contains([]string{"http", "https", "tg"}, u.Scheme) {
			return b, errors.New("BUTTON_URL_INVALID")
		}
	}
	return b, nil
}

// wireMessage is a Message object of the Bot API.
type wireMessage struct {
	MessageID      int             `json:"message_id"`
	From           User            `json:"from"`
	Chat           map[string]any  `json:"chat"`
	Date           int64           `json:"date"`
	EditDate       int64           `json:"edit_date,omitempty"`
	ReplyToMessage *wireMessage    `json:"reply_to_message,omitempty"`
	Text           string          `json:"text"`
	Entities       []Entity        `json:"entities,omitempty"`
	ReplyMarkup    json.RawMessage `json:"reply_markup,omitempty"`
}

// wire is m as the Bot API gives it, with the message it replies to (but
// not that one's) when withReply.
func (t *Telegram) wire(m *message, withReply bool) *wireMessage {
	w := &wireMessage{
		MessageID: m.id, From: m.from, Chat: chatObject(m.chat), Date: m.date.Unix(),
		Text: m.plain, Entities: m.entities, ReplyMarkup: m.markup,
	}
	if !m.editDate.IsZero() {
		w.EditDate = m.editDate.Unix()
	}
	if withReply && m.replyTo != nil {
		w.ReplyToMessage = t.wire(m.replyTo, false)
	}
	return w
}

// chatObject is the Chat object of c.
func chatObject(c *tgChat) map[string]any {
	switch {
	case c.id > 0:
		name, user := "User", ""
		if c.person != nil {
			name, user = c.person.FirstName, c.person.Username
		}
		out := map[string]any{"id": c.id, "type": "private", "first_name": name}
		if user != "" {
			out["username"] = user
		}
		return out
	case c.id <= -1_000_000_000_000:
		return map[string]any{"id": c.id, "type": "supergroup", "title": "Group " + strconv.FormatInt(-c.id, 10)}
	default:
		return map[string]any{"id": c.id, "type": "group", "title": "Group " + strconv.FormatInt(-c.id, 10)}
	}
}

// getUpdates answers getUpdates: the unconfirmed updates from offset, at
// most limit, waiting up to timeout seconds for the first one. A later
// getUpdates call ends the wait with 409, as on the real API.
func (t *Telegram) getUpdates(ctx context.Context, p params) tgReply {
	offset, err1 := p.int("offset", 0)
	limit, err2 := p.int("limit", 100)
	timeout, err3 := p.int("timeout", 0)
	var allowed []string
	hasAllowed, err4 := p.json("allowed_updates", &allowed)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return badRequest(err.Error())
	}
	limit = min(max(limit, 1), 100)
	t.mu.Lock()
	if hasAllowed {
		t.allowed = allowed
	}
	t.polls++
	poll := t.polls
	t.confirm(offset)
	t.notify() // an older call still waiting ends
	t.mu.Unlock()

	timer := time.NewTimer(time.Duration(max(timeout, 0)) * time.Second)
	defer timer.Stop()
	for {
		t.mu.Lock()
		if poll != t.polls {
			t.mu.Unlock()
			return tgError(http.StatusConflict, "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running")
		}
		batch := t.batch(offset, int(limit))
		changed := t.changed
		t.mu.Unlock()
		if len(batch) > 0 || timeout <= 0 {
			return tgOK(batch)
		}
		select {
		case <-changed:
		case <-timer.C:
			timeout = 0 // one last look
		case <-ctx.Done():
			return tgOK(batch)
		case <-t.closing:
			return tgOK(batch)
		}
	}
}

// confirm forgets the updates an offset confirms: those before it, or all
// but the last -offset for a negative one. The caller holds mu.
func (t *Telegram) confirm(offset int64) {
	switch {
	case offset > 0:
		t.updates = slices.DeleteFunc(t.updates, func(u update) bool { return u.id < offset })
	case offset < 0 && int64(len(t.updates)) > -offset:
		t.updates = slices.Clone(t.updates[int64(len(t.updates))+offset:])
	}
}

// batch returns up to limit updates from offset of the allowed kinds, as
// JSON. The caller holds mu.
func (t *Telegram) batch(offset int64, limit int) []json.RawMessage {
	out := []json.RawMessage{}
	for _, u := range t.updates {
		if len(out) == limit {
			break
		}
		if u.id < offset || len(t.allowed) > 0 && !slices.Contains(t.allowed, u.kind) {
			continue
		}
		out = append(out, marshal(map[string]any{"update_id": u.id, u.kind: u.body}))
	}
	return out
}
