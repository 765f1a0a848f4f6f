// Package geminiapi is a scripted stand-in for the Gemini API
// (generativelanguage v1beta), good enough for the real Gemini CLI to run
// against it: point the CLI's GOOGLE_GEMINI_BASE_URL at Server.URL, give
// it any GEMINI_API_KEY, and it sends its requests here, runs the tools
// the script asks for (run_shell_command, write_file, ...) in its working
// directory, and prints its real stream-json.
//
// A Script picks the reply to each request of the conversation from the
// request itself (the whole conversation so far), so a test plays the
// model's side of a conversation turn by turn. Replies are streamed as
// the API's server-sent events (one GenerateContentResponse per "data:"
// line, the last with finishReason and usageMetadata), or returned as one
// JSON body by generateContent; or they are API errors with the JSON body
// Google sends. The CLI's side requests that ask for JSON (its model
// router, its loop detection) are answered by the server itself.
package geminiapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Request is one HTTP request the server received, with the fields of a
// GenerateContentRequest decoded.
type Request struct {
	Time   time.Time
	Method string
	// Path is the URL path, such as
	// "/v1beta/models/gemini-2.5-flash:streamGenerateContent"; Query is
	// the raw query ("alt=sse").
	Path   string
	Query  string
	Header http.Header
	Body   []byte

	// Model and Action are from the path "models/{Model}:{Action}";
	// Action is "generateContent", "streamGenerateContent" or
	// "countTokens". Both are empty for other paths.
	Model  string
	Action string

	// Fields of a generateContent body; zero for others.
	//
	// System is the text of the system instruction.
	System   string
	Contents []Content
	// Tools are the names of the functions the request offers the model.
	Tools []string
	// JSON is set when the request asks for a JSON reply
	// (responseMimeType application/json), as the CLI's side requests
	// do; Schema is the schema the reply must follow, if any.
	JSON   bool
	Schema json.RawMessage
}

// Content is one turn of a conversation: role "user" or "model".
type Content struct {
	Role  string `json:"role"`
	Parts []Part `json:"parts"`
}

// Part is one part of a turn: text, a function call of the model, or the
// response to one.
type Part struct {
	Text             string            `json:"text,omitempty"`
	Thought          bool              `json:"thought,omitempty"`
	FunctionCall     *FunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse *FunctionResponse `json:"functionResponse,omitempty"`
}

// FunctionCall is a call of a tool by the model.
type FunctionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// Arg is the string argument key of the call; "" if it has none.
func (c FunctionCall) Arg(key string) string {
	var args map[string]any
	if json.Unmarshal(c.Args, &args) != nil {
		return ""
	}
	s, _ := args[key].(string)
	return s
}

// FunctionResponse is what a tool call returned, as the CLI sends it back.
type FunctionResponse struct {
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response,omitempty"`
}

// Text is the text of the content's parts, thoughts left out, joined by
// newlines.
func (c Content) Text() string {
	var texts []string
	for _, p := range c.Parts {
		if p.Text != "" && !p.Thought {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// IsGenerate reports whether r asks the model for a reply
// (generateContent or streamGenerateContent).
func (r *Request) IsGenerate() bool {
	return r.Method == http.MethodPost && (r.Action == "generateContent" || r.Action == "streamGenerateContent")
}

// Stream reports whether r asks for a streamed reply.
func (r *Request) Stream() bool { return r.Action == "streamGenerateContent" }

// Prompt is the text of the conversation's first user turn: for the CLI's
// main conversation, the prompt it was given. The <session_context> the
// CLI sends in front of it is left out.
func (r *Request) Prompt() string {
	texts := r.UserTexts()
	if len(texts) == 0 {
		return ""
	}
	return texts[0]
}

// UserTexts are the texts of the conversation's user turns that have
// text (function responses and the CLI's <session_context> left out),
// oldest first.
func (r *Request) UserTexts() []string {
	var out []string
	for _, c := range r.Contents {
		if c.Role != "user" {
			continue
		}
		var texts []string
		for _, p := range c.Parts {
			if p.Text != "" && !p.Thought && !IsSessionContext(p.Text) {
				texts = append(texts, p.Text)
			}
		}
		if len(texts) > 0 {
			out = append(out, strings.Join(texts, "\n"))
		}
	}
	return out
}

// SessionContext is the text the CLI sends with the prompt (a part of
// the first user turn): the date, the operating system, its workspace
// directories and their listing.
func (r *Request) SessionContext() string {
	for _, c := range r.Contents {
		for _, p := range c.Parts {
			if c.Role == "user" && IsSessionContext(p.Text) {
				return p.Text
			}
		}
	}
	return ""
}

// IsSessionContext reports whether text is the <session_context> part
// the Gemini CLI puts before the prompt.
func IsSessionContext(text string) bool {
	return strings.HasPrefix(strings.TrimSpace(text), "<session_context>")
}

// LastUserText is the text of the last user turn that has text.
func (r *Request) LastUserText() string {
	texts := r.UserTexts()
	if len(texts) == 0 {
		return ""
	}
	return texts[len(texts)-1]
}

// Turn is how many replies the model has given in this conversation so
// far: 0 for the first request of a conversation.
func (r *Request) Turn() int {
	n := 0
	for _, c := range r.Contents {
		if c.Role == "model" {
			n++
		}
	}
	return n
}

// FunctionCalls lists every function call of the model in the
// conversation, oldest first.
func (r *Request) FunctionCalls() []FunctionCall {
	var out []FunctionCall
	for _, c := range r.Contents {
		if c.Role != "model" {
			continue
		}
		for _, p := range c.Parts {
			if p.FunctionCall != nil {
				out = append(out, *p.FunctionCall)
			}
		}
	}
	return out
}

// FunctionResponses are the function responses of the last turn, if it
// is one of the CLI's.
func (r *Request) FunctionResponses() []FunctionResponse {
	if len(r.Contents) == 0 {
		return nil
	}
	last := r.Contents[len(r.Contents)-1]
	if last.Role != "user" {
		return nil
	}
	var out []FunctionResponse
	for _, p := range last.Parts {
		if p.FunctionResponse != nil {
			out = append(out, *p.FunctionResponse)
		}
	}
	return out
}

// HasText reports whether any text part (thoughts left out) or function
// response of the conversation contains s.
func (r *Request) HasText(s string) bool {
	for _, c := range r.Contents {
		for _, p := range c.Parts {
			if !p.Thought && strings.Contains(p.Text, s) || p.FunctionResponse != nil && strings.Contains(string(p.FunctionResponse.Response), s) {
				return true
			}
		}
	}
	return false
}

// Script chooses the reply to a request of a conversation. The server
// calls it for every generateContent and streamGenerateContent request
// that does not ask for JSON, one request at a time, so a script may keep
// state without locking.
type Script func(req *Request) Reply

// Usage is the token accounting of one reply, as the API's usageMetadata
// reports it. A zero Usage is filled in from the sizes of the request and
// the reply.
type Usage struct {
	PromptTokens     int
	CandidatesTokens int
	CachedTokens     int
	ThoughtsTokens   int
}

// Reply is the server's answer to one request: a model turn or an API
// error. Build it with Text, Call, Shell, WriteFile, Error, RawError or
// RateLimit.
type Reply struct {
	thought string
	text    string
	calls   []call
	err     *apiError
	delay   time.Duration
	usage   Usage
}

type call struct {
	name string
	args any
}

type apiError struct {
	status int
	body   []byte
}

// Text is a reply of text that ends the turn (finishReason STOP).
func Text(s string) Reply { return Reply{text: s} }

// Call is a reply that calls the function name with args (marshalled to
// JSON); add more calls to the same reply with the Call method.
func Call(name string, args any) Reply {
	return Reply{calls: []call{{name, args}}}
}

// Call adds one more function call to the reply.
func (r Reply) Call(name string, args any) Reply {
	r.calls = append(append([]call(nil), r.calls...), call{name, args})
	return r
}

// Names of the Gemini CLI's tools that the constructors call.
const (
	ShellTool     = "run_shell_command"
	WriteFileTool = "write_file"
)

// Shell is a reply that calls the CLI's shell tool with command.
func Shell(command string) Reply {
	return Call(ShellTool, map[string]any{"command": command, "description": "Run " + clip(command, 60)})
}

// WriteFile is a reply that calls the CLI's write_file tool. The CLI
// wants an absolute path or one relative to its workspace.
func WriteFile(path, content string) Reply {
	return Call(WriteFileTool, map[string]any{"file_path": path, "content": content})
}

// WithText puts text before the reply's function calls.
func (r Reply) WithText(s string) Reply {
	r.text = s
	return r
}

// WithThought puts a thought (a part with "thought": true, as thinking
// models stream them) before the reply's text.
func (r Reply) WithThought(s string) Reply {
	r.thought = s
	return r
}

// WithUsage sets the reply's token usage instead of the estimate.
func (r Reply) WithUsage(u Usage) Reply {
	r.usage = u
	return r
}

// After delays the reply by d (a slow model); a client that goes away
// ends the wait.
func (r Reply) After(d time.Duration) Reply {
	r.delay = d
	return r
}

// Error is an API error: HTTP status with the API's JSON error body,
// {"error":{"code":status,"message":message,"status":"INVALID_ARGUMENT"}}
// with the canonical status name of the HTTP status. Examples of the real
// API's: 400 INVALID_ARGUMENT, 403 PERMISSION_DENIED, 404 NOT_FOUND, 429
// RESOURCE_EXHAUSTED, 500 INTERNAL, 503 UNAVAILABLE.
func Error(status int, message string) Reply {
	body, _ := json.Marshal(map[string]any{"error": map[string]any{
		"code": status, "message": message, "status": statusName(status),
	}})
	return RawError(status, string(body))
}

// RawError is an API error with the given HTTP status and body.
func RawError(status int, body string) Reply {
	return Reply{err: &apiError{status: status, body: []byte(body)}}
}

// RateLimit is the 429 the API sends when a per-minute quota is used up:
// RESOURCE_EXHAUSTED with the quota that failed and a RetryInfo whose
// retryDelay is retryDelay ("30s"), as the real API words it.
func RateLimit(retryDelay time.Duration) Reply {
	secs := retryDelay.Seconds()
	delay := fmt.Sprintf("%gs", secs)
	body, _ := json.Marshal(map[string]any{"error": map[string]any{
		"code": http.StatusTooManyRequests,
		"message": "You exceeded your current quota, please check your plan and billing details. " +
			"For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.\n" +
			"* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_paid_tier_requests, limit: 1000, model: gemini-2.5-flash\n" +
			fmt.Sprintf("Please retry in %s.", delay),
		"status": "RESOURCE_EXHAUSTED",
		"details": []any{
			map[string]any{
				"@type": "type.googleapis.com/google.rpc.QuotaFailure",
				"violations": []any{map[string]any{
					"quotaMetric":     "generativelanguage.googleapis.com/generate_content_paid_tier_requests",
					"quotaId":         "GenerateRequestsPerMinutePerProjectPerModel",
					"quotaDimensions": map[string]any{"location": "global", "model": "gemini-2.5-flash"},
					"quotaValue":      "1000",
				}},
			},
			map[string]any{
				"@type": "type.googleapis.com/google.rpc.Help",
				"links": []any{map[string]any{"description": "Learn more about Gemini API quotas", "url": "https://ai.google.dev/gemini-api/docs/rate-limits"}},
			},
			map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay},
		},
	}})
	return RawError(http.StatusTooManyRequests, string(body))
}

// statusName is the canonical google.rpc code name the API reports with
// an HTTP status.
func statusName(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusConflict:
		return "ABORTED"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case 499:
		return "CANCELLED"
	case http.StatusNotImplemented:
		return "UNIMPLEMENTED"
	case http.StatusServiceUnavailable:
		return "UNAVAILABLE"
	case http.StatusGatewayTimeout:
		return "DEADLINE_EXCEEDED"
	}
	return "INTERNAL"
}

// DefaultModelVersion is the modelVersion of replies to a request whose
// path names no model.
const DefaultModelVersion = "gemini-2.5-flash"

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

// URL is the server's base URL, for GOOGLE_GEMINI_BASE_URL.
func (s *Server) URL() string { return s.srv.URL }

// Close stops the server, cutting off replies under way.
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

// Conversation lists the requests received so far that the script
// answered: those of the CLI's conversation, not its side requests.
func (s *Server) Conversation() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.IsGenerate() && !r.JSON {
			out = append(out, r)
		}
	}
	return out
}

// modelPathRE matches "/v1beta/models/{model}:{action}".
var modelPathRE = regexp.MustCompile(`^/v1[a-z0-9]*/models/([^/:]+):([A-Za-z]+)$`)

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
	if m := modelPathRE.FindStringSubmatch(req.Path); m != nil {
		req.Model, req.Action = m[1], m[2]
	}
	decodeBody(&req)
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.mu.Unlock()
	s.log("geminiapi: %s %s?%s json=%v contents=%d turn=%d last user: %q",
		req.Method, req.Path, req.Query, req.JSON, len(req.Contents), req.Turn(), clip(req.LastUserText(), 120))

	switch {
	case req.Method == http.MethodPost && req.Action == "countTokens":
		writeJSON(w, http.StatusOK, map[string]any{"totalTokens": estimateTokens(len(body))})
		return
	case req.IsGenerate() && req.JSON:
		v := SchemaValue(req.Schema)
		s.log("geminiapi: side request answered with %s", mustJSON(v))
		s.reply(w, hr, &req, Text(string(mustJSON(v))))
		return
	case req.IsGenerate():
	default:
		s.log("geminiapi: unknown request %s %s", req.Method, req.Path)
		writeJSON(w, http.StatusNotFound, map[string]any{"error": map[string]any{
			"code": http.StatusNotFound, "message": "Method not found: " + req.Method + " " + req.Path, "status": "NOT_FOUND",
		}})
		return
	}

	s.scriptMu.Lock()
	reply := s.script(&req)
	s.scriptMu.Unlock()
	s.log("geminiapi: reply %s", reply.describe())
	s.reply(w, hr, &req, reply)
}

// reply writes r, streamed when req asks for a stream.
func (s *Server) reply(w http.ResponseWriter, hr *http.Request, req *Request, r Reply) {
	if r.delay > 0 {
		select {
		case <-time.After(r.delay):
		case <-hr.Context().Done():
			return
		}
	}
	if r.err != nil {
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		w.WriteHeader(r.err.status)
		_, _ = w.Write(r.err.body)
		return
	}
	chunks := s.chunks(req, r)
	if !req.Stream() {
		writeJSON(w, http.StatusOK, merge(chunks))
		return
	}
	fl, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for _, c := range chunks {
		fmt.Fprintf(w, "data: %s\r\n\r\n", mustJSON(c))
		if fl != nil {
			fl.Flush()
		}
	}
}

// response is one GenerateContentResponse.
type response struct {
	Candidates    []candidate    `json:"candidates"`
	UsageMetadata *usageMetadata `json:"usageMetadata,omitempty"`
	ModelVersion  string         `json:"modelVersion"`
	ResponseID    string         `json:"responseId"`
}

type candidate struct {
	Content      outContent `json:"content"`
	FinishReason string     `json:"finishReason,omitempty"`
	Index        int        `json:"index"`
}

type outContent struct {
	Role  string `json:"role"`
	Parts []any  `json:"parts"`
}

type usageMetadata struct {
	PromptTokenCount        int `json:"promptTokenCount"`
	CandidatesTokenCount    int `json:"candidatesTokenCount,omitempty"`
	TotalTokenCount         int `json:"totalTokenCount"`
	CachedContentTokenCount int `json:"cachedContentTokenCount,omitempty"`
	ThoughtsTokenCount      int `json:"thoughtsTokenCount,omitempty"`
}

// chunks are the streamed responses of r: its text in pieces, then its
// function calls, the last chunk with finishReason STOP and the usage.
func (s *Server) chunks(req *Request, r Reply) []response {
	model := req.Model
	if model == "" {
		model = DefaultModelVersion
	}
	id := fmt.Sprintf("resp-%06d", s.ids.Add(1))
	var parts [][]any
	if r.thought != "" {
		parts = append(parts, []any{map[string]any{"text": r.thought, "thought": true}})
	}
	for _, t := range split(r.text, 40) {
		parts = append(parts, []any{map[string]any{"text": t}})
	}
	var calls []any
	out := len(r.thought) + len(r.text)
	for _, c := range r.calls {
		args := mustJSON(c.args)
		out += len(c.name) + len(args)
		calls = append(calls, map[string]any{"functionCall": map[string]any{"name": c.name, "args": json.RawMessage(args)}})
	}
	if len(calls) > 0 {
		parts = append(parts, calls)
	}
	if len(parts) == 0 {
		parts = [][]any{{map[string]any{"text": ""}}}
	}
	u := r.usage
	if u == (Usage{}) {
		u = Usage{PromptTokens: estimateTokens(len(req.Body)), CandidatesTokens: estimateTokens(out)}
	}
	var resps []response
	for i, p := range parts {
		resp := response{
			Candidates:   []candidate{{Content: outContent{Role: "model", Parts: p}}},
			ModelVersion: model,
			ResponseID:   id,
		}
		if i == len(parts)-1 {
			resp.Candidates[0].FinishReason = "STOP"
			resp.UsageMetadata = &usageMetadata{
				PromptTokenCount:        u.PromptTokens,
				CandidatesTokenCount:    u.CandidatesTokens,
				TotalTokenCount:         u.PromptTokens + u.CandidatesTokens + u.ThoughtsTokens,
				CachedContentTokenCount: u.CachedTokens,
				ThoughtsTokenCount:      u.ThoughtsTokens,
			}
		}
		resps = append(resps, resp)
	}
	return resps
}

// merge is the one response of generateContent: the parts of all chunks
// in order, the pieces of text joined, with the last chunk's finish and
// usage.
func merge(chunks []response) response {
	out := chunks[len(chunks)-1]
	var parts []any
	text := -1 // index in parts of the text being joined
	for _, c := range chunks {
		for _, p := range c.Candidates[0].Content.Parts {
			m, _ := p.(map[string]any)
			t, isText := m["text"].(string)
			if !isText || m["thought"] != nil {
				parts, text = append(parts, p), -1
				continue
			}
			if text < 0 {
				parts, text = append(parts, map[string]any{"text": t}), len(parts)
				continue
			}
			joined := parts[text].(map[string]any)
			joined["text"] = joined["text"].(string) + t
		}
	}
	out.Candidates = []candidate{{Content: outContent{Role: "model", Parts: parts}, FinishReason: "STOP"}}
	return out
}

func (r Reply) describe() string {
	var parts []string
	if r.delay > 0 {
		parts = append(parts, fmt.Sprintf("after %s", r.delay))
	}
	if r.err != nil {
		parts = append(parts, fmt.Sprintf("error %d %s", r.err.status, clip(string(r.err.body), 200)))
	}
	if r.thought != "" {
		parts = append(parts, fmt.Sprintf("thought %q", clip(r.thought, 80)))
	}
	if r.text != "" {
		parts = append(parts, fmt.Sprintf("text %q", clip(r.text, 80)))
	}
	for _, c := range r.calls {
		parts = append(parts, fmt.Sprintf("call %s %s", c.name, clip(string(mustJSON(c.args)), 120)))
	}
	if len(parts) == 0 {
		return "empty text"
	}
	return strings.Join(parts, ", ")
}

// decodeBody fills in the GenerateContentRequest fields of req from its
// body.
func decodeBody(req *Request) {
	var body struct {
		Contents          []Content `json:"contents"`
		SystemInstruction *Content  `json:"systemInstruction"`
		Tools             []struct {
			FunctionDeclarations []struct {
				Name string `json:"name"`
			} `json:"functionDeclarations"`
		} `json:"tools"`
		GenerationConfig struct {
			ResponseMimeType   string          `json:"responseMimeType"`
			ResponseSchema     json.RawMessage `json:"responseSchema"`
			ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
		} `json:"generationConfig"`
	}
	if len(req.Body) == 0 || json.Unmarshal(req.Body, &body) != nil {
		return
	}
	req.Contents = body.Contents
	if body.SystemInstruction != nil {
		req.System = body.SystemInstruction.Text()
	}
	for _, t := range body.Tools {
		for _, f := range t.FunctionDeclarations {
			req.Tools = append(req.Tools, f.Name)
		}
	}
	gc := body.GenerationConfig
	req.Schema = gc.ResponseJSONSchema
	if len(req.Schema) == 0 {
		req.Schema = gc.ResponseSchema
	}
	req.JSON = strings.HasPrefix(gc.ResponseMimeType, "application/json") || len(req.Schema) > 0
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b := mustJSON(v)
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.Header().Set("Content-Length", fmt.Sprint(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func mustJSON(v any) []byte {
	if v == nil {
		return []byte("{}")
	}
	b, err := json.Marshal(v)
	if err != nil {
		return []byte("{}")
	}
	return b
}

// estimateTokens is a rough token count for n bytes of text.
func estimateTokens(n int) int { return n/4 + 1 }

// split cuts s into pieces of at most n bytes, not splitting a UTF-8
// character; nil for "".
func split(s string, n int) []string {
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
	if s != "" {
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
