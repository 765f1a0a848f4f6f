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
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/durable-ralph/ralph/internal/words"
	"github.com/durable-ralph/ralph/testsuite/scripted"
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
	*scripted.Server[Request, Reply]

	mu sync.Mutex
	// cached is, by prompt cache key, the input tokens of the latest
	// request, which the next request of the conversation reads from
	// cache.
	cached map[string]int
}

// New starts a server on 127.0.0.1 that answers with script; a nil script
// answers every request with the text "OK".
func New(script Script) *Server {
	if script == nil {
		script = func(*Request) Reply { return Text("OK") }
	}
	s := &Server{cached: map[string]int{}}
	s.Server = scripted.Start("responsesapi", script, s.handle)
	return s
}

// BaseURL is the API's base URL, URL + "/v1": the base_url of a Codex
// model provider.
func (s *Server) BaseURL() string { return s.URL() + "/v1" }

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

// Responses lists the POST /v1/responses requests received so far.
func (s *Server) Responses() []Request { return s.Filter((*Request).IsResponses) }

func (s *Server) handle(w http.ResponseWriter, hr *http.Request) {
	req := Request{Record: scripted.Read(hr)}
	if req.IsResponses() {
		decodeBody(&req)
	}
	index := s.Keep(req)

	switch {
	case req.IsResponses():
	case hr.Method == http.MethodGet && strings.TrimSuffix(req.Path, "/") == "/v1/models":
		s.Logf("%s %s", req.Method, req.Path)
		scripted.WriteJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{
			map[string]any{"id": DefaultModel, "object": "model", "created": 1754425777, "owned_by": "system"},
		}})
		return
	default:
		s.Logf("unknown path: %s %s?%s", req.Method, req.Path, req.Query)
		s.writeError(w, &httpError{status: http.StatusNotFound,
			body: errorBody("invalid_request_error", "", fmt.Sprintf("Invalid URL (%s %s)", req.Method, req.Path))})
		return
	}
	s.Logf("%s %s model=%q stream=%v input=%d turn=%d tools=%d last user: %q",
		req.Method, req.Path, req.Model, req.Stream, len(req.Input), req.Turn(), len(req.Tools), words.Clip(req.LastUserText(), 120))

	reply := s.Ask(&req)
	s.Logf("reply %s", reply.describe())
	if reply.err != nil {
		s.writeError(w, reply.err)
		return
	}
	resp := s.response(&req, reply)
	if resp.failure == nil && !reply.held {
		s.Update(index, func(r *Request) { r.Replied = resp.usage })
	}
	switch {
	case req.Stream:
		s.stream(w, hr, resp, reply)
	case !scripted.Wait(hr.Context(), reply.hold):
	case reply.held:
		scripted.CutOff()
	default:
		scripted.WriteJSON(w, http.StatusOK, resp.json("completed"))
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
			content = append(content, outputText(it.text))
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
		id:      fmt.Sprintf("resp_%040x", s.NextID()),
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
	u := Usage{InputTokens: scripted.EstimateTokens(len(req.Body))}
	for _, it := range items {
		n := scripted.EstimateTokens(len(it.text) + len(it.input) + len(it.name))
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
	return fmt.Sprintf("%s_%040x", prefix, s.NextID())
}

// stream writes resp as the Responses API's server-sent events.
func (s *Server) stream(w http.ResponseWriter, hr *http.Request, resp response, r Reply) {
	h := w.Header()
	h.Set("Content-Type", scripted.EventStream)
	h.Set("Cache-Control", "no-cache")
	h.Set("x-request-id", s.id("req"))
	h.Set("openai-processing-ms", "42")
	ev := &events{Events: scripted.StartEvents(w)}

	ev.send("response.created", map[string]any{"response": resp.json("in_progress")})
	ev.send("response.in_progress", map[string]any{"response": resp.json("in_progress")})
	if !scripted.Wait(hr.Context(), r.hold) {
		return
	}
	if r.held {
		// Cut the stream off without finishing the response.
		scripted.CutOff()
	}
	if resp.failure != nil {
		ev.send("response.failed", map[string]any{"response": resp.json("failed")})
		return
	}
	for i, it := range resp.items {
		ev.send("response.output_item.added", map[string]any{"output_index": i, "item": it.json("in_progress")})
		ev.item(i, it)
		ev.send("response.output_item.done", map[string]any{"output_index": i, "item": it.json("completed")})
	}
	ev.send("response.completed", map[string]any{"response": resp.json("completed")})
}

// events is a stream of the Responses API's events, numbered in order.
type events struct {
	*scripted.Events
	seq int
}

// send writes the event with its type and sequence number in data.
func (ev *events) send(event string, data map[string]any) {
	data["type"] = event
	data["sequence_number"] = ev.seq
	ev.seq++
	ev.Send(event, data)
}

// item streams the content of output item i: its text or input in
// deltas, then all of it.
func (ev *events) item(i int, it outItem) {
	at := func(m map[string]any) map[string]any {
		m["item_id"], m["output_index"] = it.id, i
		return m
	}
	switch it.typ {
	case "reasoning":
		ev.send("response.reasoning_summary_part.added", at(map[string]any{"summary_index": 0, "part": map[string]any{"type": "summary_text", "text": ""}}))
		for _, c := range chunks(it.text, 40) {
			ev.send("response.reasoning_summary_text.delta", at(map[string]any{"summary_index": 0, "delta": c}))
		}
		ev.send("response.reasoning_summary_text.done", at(map[string]any{"summary_index": 0, "text": it.text}))
		ev.send("response.reasoning_summary_part.done", at(map[string]any{"summary_index": 0, "part": map[string]any{"type": "summary_text", "text": it.text}}))
	case "message":
		ev.send("response.content_part.added", at(map[string]any{"content_index": 0, "part": outputText("")}))
		for _, c := range chunks(it.text, 40) {
			ev.send("response.output_text.delta", at(map[string]any{"content_index": 0, "delta": c, "logprobs": []any{}}))
		}
		ev.send("response.output_text.done", at(map[string]any{"content_index": 0, "text": it.text, "logprobs": []any{}}))
		ev.send("response.content_part.done", at(map[string]any{"content_index": 0, "part": outputText(it.text)}))
	case "function_call":
		for _, c := range chunks(it.input, 40) {
			ev.send("response.function_call_arguments.delta", at(map[string]any{"delta": c}))
		}
		ev.send("response.function_call_arguments.done", at(map[string]any{"arguments": it.input}))
	case "custom_tool_call":
		for _, c := range chunks(it.input, 40) {
			ev.send("response.custom_tool_call_input.delta", at(map[string]any{"delta": c}))
		}
		ev.send("response.custom_tool_call_input.done", at(map[string]any{"input": it.input}))
	}
}

// outputText is an output_text content part.
func outputText(text string) map[string]any {
	return map[string]any{"type": "output_text", "annotations": []any{}, "logprobs": []any{}, "text": text}
}

// writeError writes an API error the way the real API does.
func (s *Server) writeError(w http.ResponseWriter, e *httpError) {
	w.Header().Set("x-request-id", s.id("req"))
	for _, h := range e.headers {
		k, v, _ := strings.Cut(h, ":")
		w.Header().Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	scripted.WriteBody(w, e.status, "application/json", []byte(e.body))
}

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
