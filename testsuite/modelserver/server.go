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
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/durable-ralph/ralph/internal/words"
	"github.com/durable-ralph/ralph/testsuite/scripted"
)

// Server is the scripted API on a loopback port; its URL is the CLI's
// ANTHROPIC_BASE_URL.
type Server struct {
	*scripted.Server[Request, Reply]
}

// New starts a server on 127.0.0.1 that answers with script.
func New(script Script) *Server {
	s := &Server{}
	s.Server = scripted.Start("modelserver", script, s.handle)
	return s
}

// Messages lists the POST /v1/messages requests received so far.
func (s *Server) Messages() []Request { return s.Filter((*Request).IsMessages) }

func (s *Server) handle(w http.ResponseWriter, hr *http.Request) {
	req := Request{Record: scripted.Read(hr)}
	decodeBody(&req)
	s.Keep(req)
	s.Logf("%s %s?%s model=%q stream=%v max_tokens=%d messages=%d turn=%d last user: %q",
		req.Method, req.Path, req.Query, req.Model, req.Stream, req.MaxTokens, len(req.Messages), req.Turn(), words.Clip(req.LastUserText, 120))

	switch {
	case hr.Method == http.MethodPost && strings.TrimSuffix(req.Path, "/") == "/v1/messages/count_tokens":
		scripted.WriteJSON(w, http.StatusOK, map[string]any{"input_tokens": scripted.EstimateTokens(len(req.Body))})
		return
	case !req.IsMessages():
		s.writeError(w, &apiError{status: http.StatusNotFound, typ: "not_found_error", message: "Not found: " + hr.Method + " " + req.Path})
		return
	}

	reply := s.Ask(&req)
	s.Logf("reply %s", reply.describe())
	switch {
	case reply.err != nil:
		s.writeError(w, reply.err)
	case req.Stream:
		s.stream(w, hr, s.message(&req, reply), reply)
	case !scripted.Wait(hr.Context(), reply.hold):
	case reply.held:
		scripted.CutOff()
	default:
		scripted.WriteJSON(w, http.StatusOK, s.message(&req, reply).json())
	}
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
	m := message{id: fmt.Sprintf("msg_%024d", s.NextID()), model: req.Model}
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
		m.blocks = append(m.blocks, outBlock{typ: "tool_use", id: fmt.Sprintf("toolu_%024d", s.NextID()), name: tc.name, input: input})
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
		m.usage = Usage{InputTokens: scripted.EstimateTokens(len(req.Body)), OutputTokens: scripted.EstimateTokens(out) + 5}
	}
	return m
}

// stream writes m as the Messages API's server-sent events.
func (s *Server) stream(w http.ResponseWriter, hr *http.Request, m message, r Reply) {
	h := w.Header()
	h.Set("Content-Type", scripted.EventStream)
	h.Set("Cache-Control", "no-cache")
	h.Set("request-id", fmt.Sprintf("req_%024d", s.NextID()))
	ev := scripted.StartEvents(w)

	startUsage := m.usage
	startUsage.OutputTokens = 1
	ev.Send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": m.id, "type": "message", "role": "assistant", "model": m.model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": startUsage,
	}})
	ev.Send("ping", ping)
	start := time.Now()
	if !hold(hr, ev, r.hold) {
		s.Logf("the client went away %s into a hold of %s", time.Since(start).Round(time.Millisecond), r.hold)
		return
	}
	if r.held {
		// Cut the stream off without finishing the message.
		scripted.CutOff()
	}
	for i, b := range m.blocks {
		sendBlock(ev, i, b)
	}
	ev.Send("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": m.stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": m.usage.OutputTokens}})
	ev.Send("message_stop", map[string]any{"type": "message_stop"})
}

// ping is the data of a ping event.
var ping = map[string]any{"type": "ping"}

// hold keeps the stream open for d with a ping every PingInterval; false
// if the client went away first.
func hold(hr *http.Request, ev *scripted.Events, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(PingInterval)
	defer tick.Stop()
	for {
		select {
		case <-deadline.C:
			return true
		case <-tick.C:
			ev.Send("ping", ping)
		case <-hr.Context().Done():
			return false
		}
	}
}

// sendBlock streams content block i: its start, its deltas, its stop.
func sendBlock(ev *scripted.Events, i int, b outBlock) {
	delta := func(d map[string]any) {
		ev.Send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": d})
	}
	switch b.typ {
	case "text":
		ev.Send("content_block_start", map[string]any{"type": "content_block_start", "index": i,
			"content_block": map[string]any{"type": "text", "text": ""}})
		for _, chunk := range deltas(b.text) {
			delta(map[string]any{"type": "text_delta", "text": chunk})
		}
	case "tool_use":
		ev.Send("content_block_start", map[string]any{"type": "content_block_start", "index": i,
			"content_block": map[string]any{"type": "tool_use", "id": b.id, "name": b.name, "input": map[string]any{}}})
		delta(map[string]any{"type": "input_json_delta", "partial_json": ""})
		for _, chunk := range deltas(string(b.input)) {
			delta(map[string]any{"type": "input_json_delta", "partial_json": chunk})
		}
	}
	ev.Send("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
}

// deltas are the pieces of s the stream sends, at least one.
func deltas(s string) []string {
	if s == "" {
		return []string{""}
	}
	return scripted.Split(s, 40)
}

// writeError writes an API error the way the real API does.
func (s *Server) writeError(w http.ResponseWriter, e *apiError) {
	reqID := fmt.Sprintf("req_%024d", s.NextID())
	w.Header().Set("request-id", reqID)
	for k, v := range e.headers {
		w.Header().Set(k, v)
	}
	scripted.WriteJSON(w, e.status, map[string]any{
		"type":       "error",
		"error":      map[string]any{"type": e.typ, "message": e.message},
		"request_id": reqID,
	})
}
