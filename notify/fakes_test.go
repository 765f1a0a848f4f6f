package notify

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/stretchr/testify/require"
)

// The fakes below speak the wire formats of the services: the Telegram
// Bot API (JSON bodies, the ok/result/error_code envelope), Slack's Web
// API (form bodies, ok/error answers) and incoming webhooks, and a
// receiver of the webhook that checks its signature. Each refuses what
// the real service refuses and the tests rely on being refused.

const botToken = "123456:ABC-real-token"

// tgSent is a message the fake Telegram took.
type tgSent struct {
	ChatID  int64
	ID      int64
	Raw     string // as sent, in HTML when HTML
	Visible string // as a person sees it
	HTML    bool
	Buttons []Button
	ReplyTo int64
}

// fakeTelegram is the Bot API of one bot.
type fakeTelegram struct {
	t   *testing.T
	srv *httptest.Server

	mu      sync.Mutex
	fail    int // answer the next fail sendMessage calls 500
	nextID  int64
	sent    []tgSent
	calls   map[string]int
	params  map[string]map[string]any // the last params of each method
	updates []json.RawMessage
}

func newFakeTelegram(t *testing.T) *fakeTelegram {
	f := &fakeTelegram{t: t, nextID: 100, calls: map[string]int{}, params: map[string]map[string]any{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// tgAnswer writes a Bot API answer.
func tgAnswer(w http.ResponseWriter, status int, result any, description string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if status == http.StatusOK {
		_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": result})
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": false, "error_code": status, "description": description})
}

func (f *fakeTelegram) serve(w http.ResponseWriter, r *http.Request) {
	token, method, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/bot"), "/")
	if r.Method != http.MethodPost || !ok {
		tgAnswer(w, http.StatusNotFound, nil, "Not Found")
		return
	}
	if token != botToken {
		tgAnswer(w, http.StatusUnauthorized, nil, "Unauthorized")
		return
	}
	var params map[string]any
	if err := json.NewDecoder(r.Body).Decode(&params); err != nil {
		tgAnswer(w, http.StatusBadRequest, nil, "Bad Request: can't parse JSON")
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[method]++
	f.params[method] = params
	switch method {
	case "getMe":
		tgAnswer(w, http.StatusOK, map[string]any{"id": 123456, "is_bot": true, "first_name": "Ralph", "username": "ralph_bot"}, "")
	case "sendMessage":
		f.sendMessage(w, params)
	case "editMessageText", "answerCallbackQuery":
		tgAnswer(w, http.StatusOK, true, "")
	case "getUpdates":
		tgAnswer(w, http.StatusOK, f.updates, "")
	default:
		tgAnswer(w, http.StatusNotFound, nil, "Not Found: method not found")
	}
}

// sendMessage checks and takes a message. f.mu is held.
func (f *fakeTelegram) sendMessage(w http.ResponseWriter, params map[string]any) {
	if f.fail > 0 {
		f.fail--
		tgAnswer(w, http.StatusInternalServerError, nil, "Internal Server Error")
		return
	}
	data, _ := json.Marshal(params)
	var p struct {
		ChatID      int64  `json:"chat_id"`
		Text        string `json:"text"`
		ParseMode   string `json:"parse_mode"`
		ReplyMarkup *struct {
			InlineKeyboard [][]Button `json:"inline_keyboard"`
		} `json:"reply_markup"`
		ReplyParameters *struct {
			MessageID int64 `json:"message_id"`
		} `json:"reply_parameters"`
	}
	require.NoError(f.t, json.Unmarshal(data, &p))
	m := tgSent{ChatID: p.ChatID, Raw: p.Text, Visible: p.Text, HTML: p.ParseMode == "HTML"}
	if m.HTML {
		visible, err := telegramVisible(p.Text)
		if err != nil {
			tgAnswer(w, http.StatusBadRequest, nil, "Bad Request: can't parse entities: "+err.Error())
			return
		}
		m.Visible = visible
	}
	if n := len(utf16.Encode([]rune(m.Visible))); n == 0 || n > 4096 {
		tgAnswer(w, http.StatusBadRequest, nil, "Bad Request: message is too long")
		return
	}
	if p.ReplyMarkup != nil {
		for _, row := range p.ReplyMarkup.InlineKeyboard {
			for _, b := range row {
				if b.Text == "" || b.Data == "" || len(b.Data) > 64 {
					tgAnswer(w, http.StatusBadRequest, nil, "Bad Request: BUTTON_DATA_INVALID")
					return
				}
				m.Buttons = append(m.Buttons, b)
			}
		}
	}
	if p.ReplyParameters != nil {
		m.ReplyTo = p.ReplyParameters.MessageID
	}
	f.nextID++
	m.ID = f.nextID
	f.sent = append(f.sent, m)
	tgAnswer(w, http.StatusOK, map[string]any{
		"message_id": m.ID, "date": time.Now().Unix(), "chat": map[string]any{"id": m.ChatID, "type": "private"}, "text": m.Visible,
	}, "")
}

var (
	tgTagRE    = regexp.MustCompile(`^(<b>|</b>|<a href="[^"<>]*">|</a>)`)
	tgEntityRE = regexp.MustCompile(`^&(lt|gt|amp|quot|#[0-9]+|#x[0-9a-fA-F]+);`)
)

// telegramVisible parses text as the Bot API's HTML, as far as the
// messages use it (<b> and <a href>), and returns what a person sees. As
// the real parser, it refuses an unknown tag, a bare < or an & that
// starts no entity.
func telegramVisible(text string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(text); {
		switch text[i] {
		case '<':
			tag := tgTagRE.FindString(text[i:])
			if tag == "" {
				return "", fmt.Errorf("unsupported start tag at byte offset %d", i)
			}
			i += len(tag)
		case '&':
			ent := tgEntityRE.FindString(text[i:])
			if ent == "" {
				return "", fmt.Errorf("bare & at byte offset %d", i)
			}
			b.WriteString(html.UnescapeString(ent))
			i += len(ent)
		case '>':
			return "", fmt.Errorf("bare > at byte offset %d", i)
		default:
			b.WriteByte(text[i])
			i++
		}
	}
	return b.String(), nil
}

func (f *fakeTelegram) messages() []tgSent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]tgSent(nil), f.sent...)
}

func (f *fakeTelegram) failNext(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = n
}

func (f *fakeTelegram) lastParams(method string) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.params[method]
}

// slackPost is a message the fake Slack took.
type slackPost struct {
	Channel string
	Text    string
	TS      string
	Webhook bool
}

// fakeSlack is a Slack workspace: an incoming webhook at /hooks/T1/B1/
// secret and the Web API at /api/.
type fakeSlack struct {
	t   *testing.T
	srv *httptest.Server

	mu      sync.Mutex
	fail    int // answer the next fail posts 500
	posts   []slackPost
	replies map[string][]map[string]any // by thread ts
}

const (
	slackHookPath = "/hooks/T1/B1/hook-secret-xyz"
	slackBotToken = "xoxb-real-bot-token"
)

func newFakeSlack(t *testing.T) *fakeSlack {
	f := &fakeSlack{t: t, replies: map[string][]map[string]any{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeSlack) hookURL() string { return f.srv.URL + slackHookPath }
func (f *fakeSlack) apiURL() string  { return f.srv.URL + "/api/" }

func slackAnswer(w http.ResponseWriter, body map[string]any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body)
}

func (f *fakeSlack) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.URL.Path == slackHookPath {
		f.hook(w, r)
		return
	}
	method, ok := strings.CutPrefix(r.URL.Path, "/api/")
	require.NoError(f.t, r.ParseForm())
	token := r.Form.Get("token")
	if t, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		token = t
	}
	switch {
	case !ok:
		http.NotFound(w, r)
	case token != slackBotToken:
		slackAnswer(w, map[string]any{"ok": false, "error": "invalid_auth"})
	case method == "auth.test":
		slackAnswer(w, map[string]any{"ok": true, "user_id": "U0BOT", "team_id": "T1"})
	case method == "chat.postMessage":
		f.postMessage(w, r)
	case method == "conversations.replies":
		msgs := f.replies[r.Form.Get("ts")]
		slackAnswer(w, map[string]any{"ok": true, "messages": msgs, "has_more": false})
	default:
		slackAnswer(w, map[string]any{"ok": false, "error": "unknown_method"})
	}
}

// hook takes a message of the incoming webhook. f.mu is held.
func (f *fakeSlack) hook(w http.ResponseWriter, r *http.Request) {
	if f.fail > 0 {
		f.fail--
		http.Error(w, "server_error", http.StatusInternalServerError)
		return
	}
	var msg struct {
		Text string `json:"text"`
	}
	if err := json.NewDecoder(r.Body).Decode(&msg); err != nil || msg.Text == "" {
		http.Error(w, "no_text", http.StatusBadRequest)
		return
	}
	f.posts = append(f.posts, slackPost{Text: msg.Text, Webhook: true})
	_, _ = io.WriteString(w, "ok")
}

// postMessage takes a message of the bot. f.mu is held.
func (f *fakeSlack) postMessage(w http.ResponseWriter, r *http.Request) {
	if f.fail > 0 {
		f.fail--
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	channel, text := r.Form.Get("channel"), r.Form.Get("text")
	if channel != "#ralph" && channel != "C0RALPH" {
		slackAnswer(w, map[string]any{"ok": false, "error": "channel_not_found"})
		return
	}
	ts := fmt.Sprintf("1700000000.%06d", len(f.posts)+1)
	f.posts = append(f.posts, slackPost{Channel: "C0RALPH", Text: text, TS: ts})
	slackAnswer(w, map[string]any{"ok": true, "channel": "C0RALPH", "ts": ts, "message": map[string]any{"text": text, "ts": ts}})
}

func (f *fakeSlack) messages() []slackPost {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]slackPost(nil), f.posts...)
}

func (f *fakeSlack) failNext(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = n
}

// delivery is a POST the fake receiver took.
type delivery struct {
	Header  http.Header
	Body    []byte
	Payload Payload
}

// fakeReceiver receives the webhook, checking its signature with secret
// when secret is set.
type fakeReceiver struct {
	t      *testing.T
	srv    *httptest.Server
	secret []byte

	mu         sync.Mutex
	fail       int
	deliveries []delivery
}

func newFakeReceiver(t *testing.T, secret string) *fakeReceiver {
	f := &fakeReceiver{t: t, secret: []byte(secret)}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		body, err := io.ReadAll(r.Body)
		require.NoError(t, err)
		if f.fail > 0 {
			f.fail--
			http.Error(w, "down", http.StatusBadGateway)
			return
		}
		if len(f.secret) > 0 && !Verify(f.secret, body, r.Header.Get(HeaderSignature)) {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		d := delivery{Header: r.Header.Clone(), Body: body}
		require.NoError(t, json.Unmarshal(body, &d.Payload))
		f.deliveries = append(f.deliveries, d)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeReceiver) received() []delivery {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]delivery(nil), f.deliveries...)
}

func (f *fakeReceiver) failNext(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = n
}

// chatID formats a Telegram chat ID as SentMessage.Chat does.
func chatID(id int64) string { return strconv.FormatInt(id, 10) }
