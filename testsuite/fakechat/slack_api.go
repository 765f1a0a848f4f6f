package fakechat

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"
)

// slackMethods are the Web API methods the fake answers; each runs with mu
// held and returns the members of its answer besides "ok", or the error.
var slackMethods = map[string]func(*Slack, params) (map[string]any, string){
	"chat.postMessage":      (*Slack).postMessage,
	"conversations.replies": (*Slack).conversationReplies,
	"auth.test":             (*Slack).authTest,
	"users.info":            (*Slack).usersInfo,
}

// ServeHTTP answers a request to the Web API or the incoming webhook.
func (s *Slack) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == s.hookPath:
		s.serveHook(w, r)
	case strings.HasPrefix(r.URL.Path, "/api/"):
		s.serveAPI(w, r, strings.TrimPrefix(r.URL.Path, "/api/"))
	default:
		writeBody(w, http.StatusNotFound, "text/html", []byte("no_service"))
	}
}

func (s *Slack) serveAPI(w http.ResponseWriter, r *http.Request, method string) {
	fn, known := slackMethods[method]
	if !known {
		writeBody(w, http.StatusNotFound, "application/json",
			marshal(map[string]any{"ok": false, "error": "unknown_method", "req_method": method}))
		return
	}
	body, err := readBody(w, r)
	if errors.Is(err, errTooLarge) {
		writeBody(w, http.StatusRequestEntityTooLarge, "text/plain", []byte("request_too_large"))
		return
	}
	p, perr := parseParams(r, body)
	if err != nil || perr != nil {
		slackAnswer(w, nil, "invalid_form_data")
		return
	}
	if code := s.authError(r, p); code != "" {
		slackAnswer(w, nil, code)
		return
	}
	status, hold := s.begin(method)
	if status != 0 {
		slackFault(w, status)
		return
	}
	s.mu.Lock()
	out, code := fn(s, p)
	s.mu.Unlock()
	s.await(r.Context(), hold)
	slackAnswer(w, out, code)
}

// authError is the error code of the call's token, "" for the right one:
// from "Authorization: Bearer", or a form's token field.
func (s *Slack) authError(r *http.Request, p params) string {
	token, bearer := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	mediaType, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if !bearer && mediaType != "application/json" {
		token = p["token"]
	}
	switch strings.TrimSpace(token) {
	case "":
		return "not_authed"
	case s.token:
		return ""
	}
	return "invalid_auth"
}

// slackAnswer writes a Web API answer: {"ok":true,...} or
// {"ok":false,"error":code}, both with status 200 as Slack does.
func slackAnswer(w http.ResponseWriter, out map[string]any, code string) {
	switch {
	case code != "":
		out = map[string]any{"ok": false, "error": code}
	case out == nil:
		out = map[string]any{"ok": true}
	default:
		out["ok"] = true
	}
	writeBody(w, http.StatusOK, "application/json; charset=utf-8", marshal(out))
}

// slackFault writes the answer of a scripted failure: 429 with Retry-After,
// or the HTML page of Slack's proxies.
func slackFault(w http.ResponseWriter, status int) {
	if status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1")
		writeBody(w, status, "application/json", marshal(map[string]any{"ok": false, "error": "ratelimited"}))
		return
	}
	writeBody(w, status, "text/html", gatewayPage(status))
}

// serveHook answers the incoming webhook: "ok", or a 400 with Slack's
// error ("invalid_payload", "no_text", "invalid_blocks").
func (s *Slack) serveHook(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeBody(w, http.StatusMethodNotAllowed, "text/html", []byte("invalid_method"))
		return
	}
	body, err := readBody(w, r)
	if errors.Is(err, errTooLarge) {
		writeBody(w, http.StatusRequestEntityTooLarge, "text/html", []byte("request_too_large"))
		return
	}
	status, hold := s.begin("webhook")
	if status != 0 {
		slackFault(w, status)
		return
	}
	code := "invalid_payload"
	if mediaType, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mediaType == "application/x-www-form-urlencoded" {
		form, _ := url.ParseQuery(string(body))
		body = []byte(form.Get("payload"))
	}
	p := params{}
	if err == nil && p.addJSON(body) == nil {
		s.mu.Lock()
		code = s.postFrom("webhook", s.channels[0], p)
		s.mu.Unlock()
	}
	s.await(r.Context(), hold)
	if code != "" {
		writeBody(w, http.StatusBadRequest, "text/html", []byte(code))
		return
	}
	writeBody(w, http.StatusOK, "text/html", []byte("ok"))
}

// postFrom posts the message p describes to channel c, via "api" or
// "webhook", and returns Slack's error code for content it refuses. The
// caller holds mu.
func (s *Slack) postFrom(via string, c *slackChannel, p params) string {
	text := p["text"]
	var blocks []map[string]json.RawMessage
	if _, err := p.json("blocks", &blocks); err != nil || len(blocks) > 50 {
		return "invalid_blocks"
	}
	for _, b := range blocks {
		if _, ok := b["type"]; !ok {
			return "invalid_blocks"
		}
	}
	switch {
	case strings.TrimSpace(text) == "" && len(blocks) == 0 && p["attachments"] == "":
		return "no_text"
	case utf8.RuneCountInString(text) > MaxSlackText:
		return "msg_too_long"
	}
	m := &slackMessage{channel: c, via: via, text: text, params: p}
	if via == "api" {
		m.user = SlackBotUserID
	}
	if len(blocks) > 0 {
		m.blocks = json.RawMessage(p["blocks"])
	}
	if ts := p["thread_ts"]; ts != "" {
		parent := s.find(c, ts)
		if parent == nil {
			return "invalid_thread_ts"
		}
		m.threadTS = parent.ts
		if parent.threadTS != "" {
			m.threadTS = parent.threadTS
		}
	}
	s.post(m)
	return ""
}

func (s *Slack) postMessage(p params) (map[string]any, string) {
	c := s.channel(p["channel"])
	if c == nil {
		return nil, "channel_not_found"
	}
	if code := s.postFrom("api", c, p); code != "" {
		return nil, code
	}
	m := s.messages[len(s.messages)-1]
	return map[string]any{"channel": c.id, "ts": m.ts, "message": s.wire(m)}, ""
}

// conversationReplies answers conversations.replies: the parent first,
// then its replies in the window of oldest, latest and inclusive (the
// parent is in every answer's first page whatever the window), limit
// (default and most 1000) at a time with a cursor.
func (s *Slack) conversationReplies(p params) (map[string]any, string) {
	c := s.channel(p["channel"])
	if c == nil {
		return nil, "channel_not_found"
	}
	if p["ts"] == "" {
		return nil, "invalid_arguments"
	}
	parent := s.find(c, p["ts"])
	if parent == nil {
		return nil, "thread_not_found"
	}
	if parent.threadTS != "" {
		parent = s.find(c, parent.threadTS)
	}
	thread, code := s.window(parent, p)
	if code != "" {
		return nil, code
	}
	limit, err := p.int("limit", 1000)
	if err != nil || limit < 1 || limit > 1000 {
		limit = 1000
	}
	start := 0
	if cursor := p["cursor"]; cursor != "" {
		start = -1
		if raw, err := base64.StdEncoding.DecodeString(cursor); err == nil {
			ts, _ := strings.CutPrefix(string(raw), "next_ts:")
			for i, m := range thread {
				if m.ts == ts && i > 0 {
					start = i
				}
			}
		}
		if start < 0 {
			return nil, "invalid_cursor"
		}
	}
	end := min(start+int(limit), len(thread))
	msgs := make([]map[string]any, 0, end-start)
	for _, m := range thread[start:end] {
		msgs = append(msgs, s.wire(m))
	}
	next := ""
	if end < len(thread) {
		next = base64.StdEncoding.EncodeToString([]byte("next_ts:" + thread[end].ts))
	}
	return map[string]any{
		"messages": msgs, "has_more": next != "",
		"response_metadata": map[string]any{"next_cursor": next},
	}, ""
}

// window returns parent and the replies in the window of the oldest,
// latest and inclusive parameters.
func (s *Slack) window(parent *slackMessage, p params) ([]*slackMessage, string) {
	oldest, latest := int64(0), int64(1<<62)
	var ok bool
	if v := p["oldest"]; v != "" {
		if oldest, ok = tsMicros(v); !ok {
			return nil, "invalid_ts_oldest"
		}
	}
	if v := p["latest"]; v != "" {
		if latest, ok = tsMicros(v); !ok {
			return nil, "invalid_ts_latest"
		}
	}
	inclusive := p.bool("inclusive")
	out := []*slackMessage{parent}
	for _, m := range s.replies(parent) {
		t, _ := tsMicros(m.ts)
		if (t > oldest || inclusive && t == oldest) && (t < latest || inclusive && t == latest) {
			out = append(out, m)
		}
	}
	return out, ""
}

func (s *Slack) authTest(params) (map[string]any, string) {
	return map[string]any{
		"url": "https://fake-workspace.slack.com/", "team": SlackTeamName, "user": "ralph",
		"team_id": SlackTeamID, "user_id": SlackBotUserID, "bot_id": SlackBotID,
		"is_enterprise_install": false,
	}, ""
}

func (s *Slack) usersInfo(p params) (map[string]any, string) {
	u, ok := s.users[p["user"]]
	if !ok {
		return nil, "user_not_found"
	}
	realName := u.RealName
	if realName == "" {
		realName = u.Name
	}
	return map[string]any{"user": map[string]any{
		"id": u.ID, "team_id": u.TeamID, "name": u.Name, "real_name": realName,
		"deleted": u.Deleted, "is_bot": u.IsBot, "is_app_user": false,
		"is_restricted": false, "is_ultra_restricted": false,
		"is_stranger": u.TeamID != SlackTeamID,
		"updated":     1_700_000_000,
		"profile":     map[string]any{"real_name": realName, "display_name": u.Name, "team": u.TeamID},
	}}, ""
}
