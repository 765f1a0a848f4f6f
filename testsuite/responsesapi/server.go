// Package responsesapi is a scripted stand-in for OpenAI's Responses API,
// good enough for the real Codex CLI to run against it: give Codex a model
// provider whose base_url is Server.BaseURL (Server.CodexConfig writes
// the config.toml) and it sends its requests here, runs the tools the
// script asks for (its shell, apply_patch) in its working directory, and
// prints its real `codex exec --json` events.
//
// A Script picks the reply to each request from the request itself (Codex
// sends the whole conversation every time), so a test plays the model's
// side of a conversation turn by turn. Replies are streamed in the
// Responses API's server-sent-events wire format (response.created,
// response.output_item.added, response.output_text.delta,
// response.output_item.done, response.completed, ...) with token usage,
// so Codex reports real usage; or they are API errors with the JSON body
// and headers the real API sends, or responses that fail in the stream.
package responsesapi

import (
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

// DefaultModel is the model a response names when the request names none.
const DefaultModel = "gpt-5"

// DefaultCodexModel is the model Codex 0.169 asks for when neither
// --model nor its config.toml names one. It only runs code (its one tool
// is exec, which runs JavaScript that calls Codex's other tools), which
// Shell and ApplyPatch handle.
const DefaultCodexModel = "gpt-6.1-sol"

// EnvKey is the environment variable holding the API key that the
// provider of CodexConfig reads; the server accepts any key.
const EnvKey = "RESPONSESAPI_KEY"

// Server is the scripted API on a loopback port.
type Server struct {
	srv    *httptest.Server
	script Script

	scriptMu sync.Mutex // serialises calls of script

	mu       sync.Mutex
	requests []Request
	logf     func(format string, args ...any)
	// cached is, by prompt cache key, the input tokens of the latest
	// request, which the next request of the conversation reads from
	// cache.
	cached map[string]int

	ids atomic.Int64
}

// New starts a server on 127.0.0.1 that answers with script; a nil script
// answers every request with the text "OK".
func New(script Script) *Server {
	if script == nil {
		script = func(*Request) Reply { return Text("OK") }
	}
	s := &Server{script: script, cached: map[string]int{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	return s
}

// URL is the server's root URL.
func (s *Server) URL() string { return s.srv.URL }

// BaseURL is the API's base URL, URL + "/v1": the base_url of a Codex
// model provider.
func (s *Server) BaseURL() string { return s.srv.URL + "/v1" }

// Close stops the server, cutting off held streams.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// CodexConfig is a Codex config.toml ($CODEX_HOME/config.toml) that makes
// the server Codex's model provider: provider "responsesapi", its key read
// from EnvKey, and retries bounded by retries (Codex's request_max_retries
// and stream_max_retries; 0 for none, which keeps failing tests fast; a
// negative number keeps Codex's defaults).
func (s *Server) CodexConfig(retries int) string {
	conf := fmt.Sprintf(`model_provider = "responsesapi"

[model_providers.responsesapi]
name = "Scripted Responses API"
base_url = %q
env_key = %q
wire_api = "responses"
`, s.BaseURL(), EnvKey)
	if retries >= 0 {
		conf += fmt.Sprintf("request_max_retries = %d\nstream_max_retries = %d\n", retries, retries)
	}
	return conf
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

// Responses lists the POST /v1/responses requests received so far.
func (s *Server) Responses() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.IsResponses() {
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
	if req.IsResponses() {
		decodeBody(&req)
	}
	s.mu.Lock()
	index := len(s.requests)
	s.requests = append(s.requests, req)
	s.mu.Unlock()

	path := strings.TrimSuffix(req.Path, "/")
	switch {
	case req.IsResponses():
	case hr.Method == http.MethodGet && path == "/v1/models":
		s.log("responsesapi: %s %s", req.Method, req.Path)
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{
			map[string]any{"id": DefaultModel, "object": "model", "created": 1754425777, "owned_by": "system"},
		}})
		return
	default:
		s.log("responsesapi: unknown path: %s %s?%s", req.Method, req.Path, req.Query)
		s.writeError(w, &httpError{status: http.StatusNotFound,
			body: errorBody("invalid_request_error", "", fmt.Sprintf("Invalid URL (%s %s)", req.Method, req.Path))})
		return
	}
	s.log("responsesapi: %s %s model=%q stream=%v input=%d turn=%d tools=%d last user: %q",
		req.Method, req.Path, req.Model, req.Stream, len(req.Input), req.Turn(), len(req.Tools), clip(req.LastUserText(), 120))

	s.scriptMu.Lock()
	reply := s.script(&req)
	s.scriptMu.Unlock()
	s.log("responsesapi: reply %s", reply.describe())

	if reply.err != nil {
		s.writeError(w, reply.err)
		return
	}
	resp := s.response(&req, reply)
	if resp.failure == nil && !reply.held {
		s.mu.Lock()
		s.requests[index].Replied = resp.usage
		s.mu.Unlock()
	}
	if !req.Stream {
		if !wait(hr, reply.hold) {
			return
		}
		if reply.held {
			panic(http.ErrAbortHandler)
		}
		writeJSON(w, http.StatusOK, resp.json("completed"))
		return
	}
	s.stream(w, hr, resp, reply)
}

// wait waits for d, or until the client goes away (false).
func wait(hr *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-hr.Context().Done():
		return false
	}
}

// response is one model response about to be sent.
type response struct {
	id      string
	created int64
	model   string
	items   []outItem
	usage   Usage
	failure *failure
}

// outItem is one output item: "reasoning", "message", "function_call" or
// "custom_tool_call".
type outItem struct {
	typ    string
	id     string
	text   string // of a reasoning summary or a message
	name   string
	callID string
	input  string
}

func (it outItem) json(status string) map[string]any {
	switch it.typ {
	case "reasoning":
		summary := []any{}
		if status == "completed" {
			summary = append(summary, map[string]any{"type": "summary_text", "text": it.text})
		}
		return map[string]any{"id": it.id, "type": "reasoning", "summary": summary}
	case "message":
		content := []any{}
		if status == "completed" {
			content = append(content, map[string]any{"type": "output_text", "annotations": []any{}, "logprobs": []any{}, "text": it.text})
		}
		return map[string]any{"id": it.id, "type": "message", "status": status, "content": content, "role": "assistant"}
	case "function_call":
		args := ""
		if status == "completed" {
			args = it.input
		}
		return map[string]any{"id": it.id, "type": "function_call", "status": status, "arguments": args, "call_id": it.callID, "name": it.name}
	default:
		input := ""
		if status == "completed" {
			input = it.input
		}
		return map[string]any{"id": it.id, "type": "custom_tool_call", "status": status, "call_id": it.callID, "input": input, "name": it.name}
	}
}

func (r response) json(status string) map[string]any {
	out := map[string]any{
		"id": r.id, "object": "response", "created_at": r.created, "status": status,
		"background": false, "error": nil, "incomplete_details": nil, "instructions": nil,
		"max_output_tokens": nil, "model": r.model, "output": []any{}, "parallel_tool_calls": false,
		"previous_response_id": nil, "reasoning": map[string]any{"effort": "medium", "summary": nil},
		"store": false, "temperature": 1.0, "text": map[string]any{"format": map[string]any{"type": "text"}, "verbosity": "medium"},
		"tool_choice": "auto", "tools": []any{}, "top_p": 1.0, "truncation": "disabled", "usage": nil,
		"user": nil, "metadata": map[string]any{},
	}
	switch status {
	case "completed":
		output := make([]any, 0, len(r.items))
		for _, it := range r.items {
			output = append(output, it.json("completed"))
		}
		out["output"] = output
		details := map[string]any{"cached_tokens": r.usage.CachedTokens}
		if r.usage.CacheWriteTokens != 0 {
			details["cache_write_tokens"] = r.usage.CacheWriteTokens
		}
		out["usage"] = map[string]any{
			"input_tokens":          r.usage.InputTokens,
			"input_tokens_details":  details,
			"output_tokens":         r.usage.OutputTokens,
			"output_tokens_details": map[string]any{"reasoning_tokens": r.usage.ReasoningTokens},
			"total_tokens":          r.usage.InputTokens + r.usage.OutputTokens,
		}
	case "failed":
		out["error"] = map[string]any{"code": r.failure.code, "message": r.failure.message}
	}
	return out
}

func (s *Server) response(req *Request, r Reply) response {
	resp := response{
		id:      fmt.Sprintf("resp_%040x", s.ids.Add(1)),
		created: time.Now().Unix(),
		model:   req.Model,
		failure: r.failure,
	}
	if resp.model == "" {
		resp.model = DefaultModel
	}
	if r.reasoning != "" {
		resp.items = append(resp.items, outItem{typ: "reasoning", id: s.id("rs"), text: r.reasoning})
	}
	calls := r.resolve(req)
	if r.text != "" || (len(calls) == 0 && !r.held && r.failure == nil) {
		resp.items = append(resp.items, outItem{typ: "message", id: s.id("msg"), text: r.text})
	}
	for _, c := range calls {
		prefix := "fc"
		if c.typ == "custom_tool_call" {
			prefix = "ctc"
		}
		resp.items = append(resp.items, outItem{typ: c.typ, id: s.id(prefix), name: c.name, callID: s.id("call"), input: c.input})
	}
	resp.usage = r.usage
	if resp.usage == (Usage{}) {
		resp.usage = s.estimate(req, resp.items)
	}
	return resp
}

// estimate is the usage of a reply from the sizes of the request and the
// reply. Like the API's prompt cache, a request reads from cache what the
// previous request with the same prompt_cache_key sent, in steps of 128
// tokens once there are at least 1024.
func (s *Server) estimate(req *Request, items []outItem) Usage {
	u := Usage{InputTokens: estimateTokens(len(req.Body))}
	for _, it := range items {
		n := estimateTokens(len(it.text) + len(it.input) + len(it.name))
		u.OutputTokens += n
		if it.typ == "reasoning" {
			u.ReasoningTokens += n
		}
	}
	if req.PromptCacheKey != "" {
		s.mu.Lock()
		prev := s.cached[req.PromptCacheKey]
		s.cached[req.PromptCacheKey] = u.InputTokens
		s.mu.Unlock()
		if c := min(prev, u.InputTokens); c >= 1024 {
			u.CachedTokens = c / 128 * 128
		}
	}
	return u
}

func (s *Server) id(prefix string) string {
	return fmt.Sprintf("%s_%040x", prefix, s.ids.Add(1))
}

// stream writes resp as the Responses API's server-sent events.
func (s *Server) stream(w http.ResponseWriter, hr *http.Request, resp response, r Reply) {
	fl, _ := w.(http.Flusher)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("x-request-id", s.id("req"))
	h.Set("openai-processing-ms", "42")
	w.WriteHeader(http.StatusOK)
	seq := 0
	send := func(event string, data map[string]any) {
		data["type"] = event
		data["sequence_number"] = seq
		seq++
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
		if fl != nil {
			fl.Flush()
		}
	}

	send("response.created", map[string]any{"response": resp.json("in_progress")})
	send("response.in_progress", map[string]any{"response": resp.json("in_progress")})
	if !wait(hr, r.hold) {
		return
	}
	if r.held {
		// Cut the stream off without finishing the response.
		panic(http.ErrAbortHandler)
	}
	if resp.failure != nil {
		send("response.failed", map[string]any{"response": resp.json("failed")})
		return
	}

	for i, it := range resp.items {
		send("response.output_item.added", map[string]any{"output_index": i, "item": it.json("in_progress")})
		switch it.typ {
		case "reasoning":
			part := map[string]any{"type": "summary_text", "text": ""}
			send("response.reasoning_summary_part.added", map[string]any{"item_id": it.id, "output_index": i, "summary_index": 0, "part": part})
			for _, c := range chunks(it.text, 40) {
				send("response.reasoning_summary_text.delta", map[string]any{"item_id": it.id, "output_index": i, "summary_index": 0, "delta": c})
			}
			send("response.reasoning_summary_text.done", map[string]any{"item_id": it.id, "output_index": i, "summary_index": 0, "text": it.text})
			send("response.reasoning_summary_part.done", map[string]any{"item_id": it.id, "output_index": i, "summary_index": 0,
				"part": map[string]any{"type": "summary_text", "text": it.text}})
		case "message":
			part := map[string]any{"type": "output_text", "annotations": []any{}, "logprobs": []any{}, "text": ""}
			send("response.content_part.added", map[string]any{"item_id": it.id, "output_index": i, "content_index": 0, "part": part})
			for _, c := range chunks(it.text, 40) {
				send("response.output_text.delta", map[string]any{"item_id": it.id, "output_index": i, "content_index": 0, "delta": c, "logprobs": []any{}})
			}
			send("response.output_text.done", map[string]any{"item_id": it.id, "output_index": i, "content_index": 0, "text": it.text, "logprobs": []any{}})
			send("response.content_part.done", map[string]any{"item_id": it.id, "output_index": i, "content_index": 0,
				"part": map[string]any{"type": "output_text", "annotations": []any{}, "logprobs": []any{}, "text": it.text}})
		case "function_call":
			for _, c := range chunks(it.input, 40) {
				send("response.function_call_arguments.delta", map[string]any{"item_id": it.id, "output_index": i, "delta": c})
			}
			send("response.function_call_arguments.done", map[string]any{"item_id": it.id, "output_index": i, "arguments": it.input})
		case "custom_tool_call":
			for _, c := range chunks(it.input, 40) {
				send("response.custom_tool_call_input.delta", map[string]any{"item_id": it.id, "output_index": i, "delta": c})
			}
			send("response.custom_tool_call_input.done", map[string]any{"item_id": it.id, "output_index": i, "input": it.input})
		}
		send("response.output_item.done", map[string]any{"output_index": i, "item": it.json("completed")})
	}
	send("response.completed", map[string]any{"response": resp.json("completed")})
}

// writeError writes an API error the way the real API does.
func (s *Server) writeError(w http.ResponseWriter, e *httpError) {
	w.Header().Set("x-request-id", s.id("req"))
	for _, h := range e.headers {
		k, v, _ := strings.Cut(h, ":")
		w.Header().Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(len(e.body)))
	w.WriteHeader(e.status)
	_, _ = io.WriteString(w, e.body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// estimateTokens is a rough token count for n bytes of text.
func estimateTokens(n int) int { return n/4 + 1 }

// chunks splits s into pieces of about n bytes, between runes, as the
// API streams text in deltas.
func chunks(s string, n int) []string {
	if s == "" {
		return []string{""}
	}
	var out []string
	start := 0
	for i := range s {
		if i-start >= n {
			out = append(out, s[start:i])
			start = i
		}
	}
	return append(out, s[start:])
}
