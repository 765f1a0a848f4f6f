// Package modelserver is a scripted stand-in for the Anthropic Messages API,
// good enough for the real Claude Code CLI to run against it: point the
// CLI's ANTHROPIC_BASE_URL at Server.URL and it sends its requests here,
// runs the tools the script asks for (Write, Edit, Bash, ...) in its
// working directory, and prints its real stream-json.
//
// A Script picks the reply to each request from the request itself (the
// whole conversation so far), so a test plays the model's side of a
// conversation turn by turn. Replies are streamed in the Messages API's
// server-sent-events wire format (message_start, content_block_start,
// content_block_delta, content_block_stop, message_delta, message_stop,
// ping) with token usage, so the CLI reports a real cost and usage; or
// they are API errors with the JSON body and headers the real API sends.
package modelserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Request is one HTTP request the server received, with the fields of a
// Messages API request body decoded.
type Request struct {
	Time   time.Time
	Method string
	// Path is the URL path, e.g. "/v1/messages"; Query is the raw query
	// ("beta=true").
	Path   string
	Query  string
	Header http.Header
	Body   []byte

	// Fields of a /v1/messages (or count_tokens) body; zero for others.
	Model     string
	Stream    bool
	MaxTokens int
	// System is the text of the system prompt, its blocks joined by
	// newlines.
	System   string
	Messages []Message
	// Tools are the names of the tools the request offers the model.
	Tools []string

	// LastUserText is the text of the last user message (its text blocks
	// joined by newlines; tool results left out).
	LastUserText string
	// ToolResults are the tool_result blocks of the last user message.
	ToolResults []Block
}

// Message is one message of a conversation.
type Message struct {
	Role    string  `json:"role"`
	Content []Block `json:"content"`
}

// Block is one content block: text, tool_use or tool_result (others keep
// only their type).
type Block struct {
	Type string `json:"type"`
	// Text of a text block; for a tool_result, its content as text.
	Text string `json:"text,omitempty"`
	// ID and Name of a tool_use, and its input.
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// ToolUseID and IsError of a tool_result.
	ToolUseID string `json:"tool_use_id,omitempty"`
	IsError   bool   `json:"is_error,omitempty"`
}

// Text is the text of the message's text blocks, joined by newlines.
func (m Message) Text() string {
	var parts []string
	for _, b := range m.Content {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// ToolUses are the message's tool_use blocks.
func (m Message) ToolUses() []Block {
	var out []Block
	for _, b := range m.Content {
		if b.Type == "tool_use" {
			out = append(out, b)
		}
	}
	return out
}

// IsMessages reports whether r asks the model for a reply (POST
// /v1/messages, not count_tokens).
func (r *Request) IsMessages() bool {
	return r.Method == http.MethodPost && strings.TrimSuffix(r.Path, "/") == "/v1/messages"
}

// Prompt is the text of the conversation's first user message: for the
// CLI's main conversation, the prompt it was given (with whatever context
// the CLI put in front of it).
func (r *Request) Prompt() string {
	for _, m := range r.Messages {
		if m.Role == "user" {
			return m.Text()
		}
	}
	return ""
}

// Turn is how many replies the model has given in this conversation so
// far: 0 for the first request of a conversation.
func (r *Request) Turn() int {
	n := 0
	for _, m := range r.Messages {
		if m.Role == "assistant" {
			n++
		}
	}
	return n
}

// ToolUses lists every tool_use block the model sent in the conversation,
// oldest first.
func (r *Request) ToolUses() []Block {
	var out []Block
	for _, m := range r.Messages {
		if m.Role == "assistant" {
			out = append(out, m.ToolUses()...)
		}
	}
	return out
}

// HasText reports whether any text block or tool result of any message
// contains s.
func (r *Request) HasText(s string) bool {
	for _, m := range r.Messages {
		for _, b := range m.Content {
			if strings.Contains(b.Text, s) {
				return true
			}
		}
	}
	return false
}

// Script chooses the reply to a request. The server calls it for every
// POST /v1/messages, one request at a time, so a script may keep state
// without locking.
type Script func(req *Request) Reply

// Usage is the token accounting of one reply. A zero Usage is filled in
// from the sizes of the request and the reply.
type Usage struct {
	InputTokens              int `json:"input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	OutputTokens             int `json:"output_tokens"`
}

// Reply is the server's answer to one request: a model message, an API
// error, or a stream held open. Build it with Text, ToolUse, Error or Hold.
type Reply struct {
	text  string
	tools []toolCall
	err   *apiError
	hold  time.Duration
	// held is set by Hold: without content, the held stream is cut off
	// rather than finished.
	held  bool
	usage Usage
}

type toolCall struct {
	name  string
	input any
}

type apiError struct {
	status  int
	typ     string
	message string
	headers map[string]string
}

// Text is a reply of one text block that ends the turn (stop_reason
// end_turn).
func Text(s string) Reply { return Reply{text: s} }

// ToolUse is a reply that calls a tool (stop_reason tool_use); add more
// calls to the same reply with the ToolUse method. input is marshalled to
// JSON.
func ToolUse(name string, input any) Reply {
	return Reply{tools: []toolCall{{name, input}}}
}

// ToolUse adds one more tool call to the reply.
func (r Reply) ToolUse(name string, input any) Reply {
	r.tools = append(append([]toolCall(nil), r.tools...), toolCall{name, input})
	return r
}

// WithText puts a text block before the reply's tool calls.
func (r Reply) WithText(s string) Reply {
	r.text = s
	return r
}

// WithUsage sets the reply's token usage instead of the estimate.
func (r Reply) WithUsage(u Usage) Reply {
	r.usage = u
	return r
}

// Error is an API error: HTTP status with the API's JSON error body
// ({"type":"error","error":{"type":typ,"message":message},"request_id":...})
// and extra response headers. Examples of the real API's: 400
// invalid_request_error, 401 authentication_error, 429 rate_limit_error,
// 500 api_error, 529 overloaded_error.
func Error(status int, typ, message string, headers map[string]string) Reply {
	return Reply{err: &apiError{status: status, typ: typ, message: message, headers: headers}}
}

// Hold is a slow model: the stream starts (message_start) and is kept
// open for d with a ping event every PingInterval. Alone, the stream is
// then cut off unfinished, like a dropped connection; Hold(d).Then(r)
// streams r's content after the wait. A client that goes away ends the
// hold at once.
func Hold(d time.Duration) Reply { return Reply{hold: d, held: true} }

// Then is r's hold followed by next's content.
func (r Reply) Then(next Reply) Reply {
	next.hold, next.held = r.hold, false
	return next
}

// PingInterval is how often a held stream sends a ping event.
const PingInterval = 500 * time.Millisecond

// Server is the scripted API on a loopback port.
type Server struct {
	srv    *httptest.Server
	script Script

	scriptMu sync.Mutex // serialises calls of script

	mu       sync.Mutex
	requests []Request
	logf     func(format string, args ...any)

	ids atomic.Int64
}

// New starts a server on 127.0.0.1 that answers with script.
func New(script Script) *Server {
	s := &Server{script: script}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	return s
}

// URL is the server's base URL, for ANTHROPIC_BASE_URL.
func (s *Server) URL() string { return s.srv.URL }

// Close stops the server, cutting off held streams.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// SetLog has every request and reply described to logf (t.Logf, say);
// nil stops it.
func (s *Server) SetLog(logf func(format string, args ...any)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logf = logf
}

func (s *Server) log(format string, args ...any) {
	s.mu.Lock()
	logf := s.logf
	s.mu.Unlock()
	if logf != nil {
		logf(format, args...)
	}
}

// Requests lists what the server received so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Messages lists the POST /v1/messages requests received so far.
func (s *Server) Messages() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.IsMessages() {
			out = append(out, r)
		}
	}
	return out
}

func (s *Server) handle(w http.ResponseWriter, hr *http.Request) {
	body, _ := io.ReadAll(hr.Body)
	req := Request{
		Time:   time.Now(),
		Method: hr.Method,
		Path:   hr.URL.Path,
		Query:  hr.URL.RawQuery,
		Header: hr.Header.Clone(),
		Body:   body,
	}
	decodeBody(&req)
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.mu.Unlock()
	s.log("modelserver: %s %s?%s model=%q stream=%v max_tokens=%d messages=%d turn=%d last user: %q",
		req.Method, req.Path, req.Query, req.Model, req.Stream, req.MaxTokens, len(req.Messages), req.Turn(), clip(req.LastUserText, 120))

	path := strings.TrimSuffix(req.Path, "/")
	switch {
	case hr.Method == http.MethodPost && path == "/v1/messages/count_tokens":
		writeJSON(w, http.StatusOK, map[string]any{"input_tokens": estimateTokens(len(body))})
		return
	case req.IsMessages():
	default:
		s.writeError(w, &apiError{status: http.StatusNotFound, typ: "not_found_error", message: "Not found: " + hr.Method + " " + req.Path})
		return
	}

	s.scriptMu.Lock()
	reply := s.script(&req)
	s.scriptMu.Unlock()
	s.log("modelserver: reply %s", reply.describe())

	if reply.err != nil {
		s.writeError(w, reply.err)
		return
	}
	m := s.message(&req, reply)
	if !req.Stream {
		if reply.hold > 0 {
			select {
			case <-time.After(reply.hold):
			case <-hr.Context().Done():
				return
			}
		}
		if reply.held {
			panic(http.ErrAbortHandler)
		}
		writeJSON(w, http.StatusOK, m.json())
		return
	}
	s.stream(w, hr, m, reply)
}

// message is one assistant message about to be sent.
type message struct {
	id     string
	model  string
	blocks []outBlock
	stop   string
	usage  Usage
}

type outBlock struct {
	typ   string // "text" or "tool_use"
	text  string
	id    string
	name  string
	input []byte
}

func (m message) json() map[string]any {
	content := []any{}
	for _, b := range m.blocks {
		if b.typ == "text" {
			content = append(content, map[string]any{"type": "text", "text": b.text})
		} else {
			content = append(content, map[string]any{"type": "tool_use", "id": b.id, "name": b.name, "input": json.RawMessage(b.input)})
		}
	}
	return map[string]any{
		"id": m.id, "type": "message", "role": "assistant", "model": m.model,
		"content": content, "stop_reason": m.stop, "stop_sequence": nil,
		"usage": m.usage,
	}
}

func (s *Server) message(req *Request, r Reply) message {
	m := message{id: fmt.Sprintf("msg_%024d", s.ids.Add(1)), model: req.Model}
	if m.model == "" {
		m.model = "claude-sonnet-4-5"
	}
	if r.text != "" || (len(r.tools) == 0 && !r.held) {
		m.blocks = append(m.blocks, outBlock{typ: "text", text: r.text})
	}
	for _, tc := range r.tools {
		input, err := json.Marshal(tc.input)
		if err != nil || tc.input == nil {
			input = []byte("{}")
		}
		m.blocks = append(m.blocks, outBlock{typ: "tool_use", id: fmt.Sprintf("toolu_%024d", s.ids.Add(1)), name: tc.name, input: input})
	}
	m.stop = "end_turn"
	if len(r.tools) > 0 {
		m.stop = "tool_use"
	}
	m.usage = r.usage
	if m.usage == (Usage{}) {
		out := 0
		for _, b := range m.blocks {
			out += len(b.text) + len(b.input) + len(b.name)
		}
		m.usage = Usage{InputTokens: estimateTokens(len(req.Body)), OutputTokens: estimateTokens(out) + 5}
	}
	return m
}

// stream writes m as the Messages API's server-sent events.
func (s *Server) stream(w http.ResponseWriter, hr *http.Request, m message, r Reply) {
	fl, _ := w.(http.Flusher)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("request-id", fmt.Sprintf("req_%024d", s.ids.Add(1)))
	w.WriteHeader(http.StatusOK)
	send := func(event string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
		if fl != nil {
			fl.Flush()
		}
	}

	startUsage := m.usage
	startUsage.OutputTokens = 1
	send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": m.id, "type": "message", "role": "assistant", "model": m.model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": startUsage,
	}})
	send("ping", map[string]any{"type": "ping"})
	if r.hold > 0 {
		deadline := time.NewTimer(r.hold)
		defer deadline.Stop()
		tick := time.NewTicker(PingInterval)
		defer tick.Stop()
	wait:
		for {
			select {
			case <-deadline.C:
				break wait
			case <-tick.C:
				send("ping", map[string]any{"type": "ping"})
			case <-hr.Context().Done():
				return
			}
		}
	}
	if r.held {
		// Cut the stream off without finishing the message.
		panic(http.ErrAbortHandler)
	}

	for i, b := range m.blocks {
		switch b.typ {
		case "text":
			send("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "text", "text": ""}})
			for _, chunk := range chunks(b.text, 40) {
				send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
					"delta": map[string]any{"type": "text_delta", "text": chunk}})
			}
		case "tool_use":
			send("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": b.id, "name": b.name, "input": map[string]any{}}})
			send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": ""}})
			for _, chunk := range chunks(string(b.input), 40) {
				send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
					"delta": map[string]any{"type": "input_json_delta", "partial_json": chunk}})
			}
		}
		send("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	send("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": m.stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": m.usage.OutputTokens}})
	send("message_stop", map[string]any{"type": "message_stop"})
}

// writeError writes an API error the way the real API does.
func (s *Server) writeError(w http.ResponseWriter, e *apiError) {
	reqID := fmt.Sprintf("req_%024d", s.ids.Add(1))
	w.Header().Set("request-id", reqID)
	for k, v := range e.headers {
		w.Header().Set(k, v)
	}
	writeJSON(w, e.status, map[string]any{
		"type":       "error",
		"error":      map[string]any{"type": e.typ, "message": e.message},
		"request_id": reqID,
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func (r Reply) describe() string {
	var parts []string
	if r.hold > 0 {
		parts = append(parts, fmt.Sprintf("hold %s", r.hold))
	}
	if r.err != nil {
		parts = append(parts, fmt.Sprintf("error %d %s: %s", r.err.status, r.err.typ, r.err.message))
	}
	if r.text != "" {
		parts = append(parts, fmt.Sprintf("text %q", clip(r.text, 80)))
	}
	for _, tc := range r.tools {
		in, _ := json.Marshal(tc.input)
		parts = append(parts, fmt.Sprintf("tool_use %s %s", tc.name, clip(string(in), 120)))
	}
	if r.held {
		parts = append(parts, "then cut off")
	}
	if len(parts) == 0 {
		return "empty text"
	}
	return strings.Join(parts, ", ")
}

// decodeBody fills in the Messages API fields of req from its body.
func decodeBody(req *Request) {
	var body struct {
		Model     string          `json:"model"`
		Stream    bool            `json:"stream"`
		MaxTokens int             `json:"max_tokens"`
		System    json.RawMessage `json:"system"`
		Messages  []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if len(req.Body) == 0 || json.Unmarshal(req.Body, &body) != nil {
		return
	}
	req.Model, req.Stream, req.MaxTokens = body.Model, body.Stream, body.MaxTokens
	req.System = strings.Join(texts(body.System), "\n")
	for _, t := range body.Tools {
		req.Tools = append(req.Tools, t.Name)
	}
	for _, m := range body.Messages {
		req.Messages = append(req.Messages, Message{Role: m.Role, Content: blocks(m.Content)})
	}
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if m := req.Messages[i]; m.Role == "user" {
			req.LastUserText = m.Text()
			for _, b := range m.Content {
				if b.Type == "tool_result" {
					req.ToolResults = append(req.ToolResults, b)
				}
			}
			break
		}
	}
}

// blocks decodes message content: a string or a list of blocks.
func blocks(raw json.RawMessage) []Block {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []Block{{Type: "text", Text: s}}
	}
	var list []struct {
		Type      string          `json:"type"`
		Text      string          `json:"text"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
		ToolUseID string          `json:"tool_use_id"`
		Content   json.RawMessage `json:"content"`
		IsError   bool            `json:"is_error"`
	}
	if json.Unmarshal(raw, &list) != nil {
		return nil
	}
	out := make([]Block, 0, len(list))
	for _, b := range list {
		blk := Block{Type: b.Type, Text: b.Text, ID: b.ID, Name: b.Name, Input: b.Input, ToolUseID: b.ToolUseID, IsError: b.IsError}
		if b.Type == "tool_result" {
			blk.Text = strings.Join(texts(b.Content), "\n")
		}
		out = append(out, blk)
	}
	return out
}

// texts returns the text of a string or of the text blocks of a list.
func texts(raw json.RawMessage) []string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}
	}
	var list []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &list) != nil {
		return nil
	}
	var out []string
	for _, b := range list {
		if b.Type == "text" {
			out = append(out, b.Text)
		}
	}
	return out
}

// estimateTokens is a rough token count for n bytes of text.
func estimateTokens(n int) int { return n/4 + 1 }

// chunks splits s into pieces of at most n bytes, not splitting a UTF-8
// character.
func chunks(s string, n int) []string {
	var out []string
	for len(s) > n {
		i := n
		for i > 0 && s[i]&0xC0 == 0x80 {
			i--
		}
		if i == 0 {
			i = n
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	if s != "" || len(out) == 0 {
		out = append(out, s)
	}
	return out
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
