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
	"net/http"

	"github.com/durable-ralph/ralph/internal/words"
	"github.com/durable-ralph/ralph/testsuite/scripted"
)

// DefaultModelVersion is the modelVersion of replies to a request whose
// path names no model.
const DefaultModelVersion = "gemini-2.5-flash"

// Server is the scripted API on a loopback port; its URL is the CLI's
// GOOGLE_GEMINI_BASE_URL.
type Server struct {
	*scripted.Server[Request, Reply]
}

// New starts a server on 127.0.0.1 that answers with script.
func New(script Script) *Server {
	s := &Server{}
	s.Server = scripted.Start("geminiapi", script, s.handle)
	return s
}

// Conversation lists the requests received so far that the script
// answered: those of the CLI's conversation, not its side requests.
func (s *Server) Conversation() []Request {
	return s.Filter(func(r *Request) bool { return r.IsGenerate() && !r.JSON })
}

func (s *Server) handle(w http.ResponseWriter, hr *http.Request) {
	req := Request{Record: scripted.Read(hr)}
	if m := modelPathRE.FindStringSubmatch(req.Path); m != nil {
		req.Model, req.Action = m[1], m[2]
	}
	decodeBody(&req)
	s.Keep(req)
	s.Logf("%s %s?%s json=%v contents=%d turn=%d last user: %q",
		req.Method, req.Path, req.Query, req.JSON, len(req.Contents), req.Turn(), words.Clip(req.LastUserText(), 120))

	switch {
	case req.Method == http.MethodPost && req.Action == "countTokens":
		writeJSON(w, http.StatusOK, map[string]any{"totalTokens": scripted.EstimateTokens(len(req.Body))})
	case req.IsGenerate() && req.JSON:
		v := scripted.JSON(SchemaValue(req.Schema))
		s.Logf("side request answered with %s", v)
		s.reply(w, hr, &req, Text(string(v)))
	case req.IsGenerate():
		reply := s.Ask(&req)
		s.Logf("reply %s", reply.describe())
		s.reply(w, hr, &req, reply)
	default:
		s.Logf("unknown request %s %s", req.Method, req.Path)
		writeJSON(w, http.StatusNotFound, map[string]any{"error": map[string]any{
			"code": http.StatusNotFound, "message": "Method not found: " + req.Method + " " + req.Path, "status": "NOT_FOUND",
		}})
	}
}

// reply writes r, streamed when req asks for a stream.
func (s *Server) reply(w http.ResponseWriter, hr *http.Request, req *Request, r Reply) {
	if !scripted.Wait(hr.Context(), r.delay) {
		return
	}
	if r.err != nil {
		w.Header().Set("Content-Type", jsonType)
		w.WriteHeader(r.err.status)
		_, _ = w.Write(r.err.body)
		return
	}
	chunks := s.chunks(req, r)
	if !req.Stream() {
		writeJSON(w, http.StatusOK, merge(chunks))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	ev := scripted.StartEvents(w)
	for _, c := range chunks {
		ev.Data(c)
	}
}

// jsonType is the Content-Type of the API's JSON bodies.
const jsonType = "application/json; charset=UTF-8"

func writeJSON(w http.ResponseWriter, status int, v any) {
	scripted.WriteBody(w, status, jsonType, scripted.JSON(v))
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
	id := fmt.Sprintf("resp-%06d", s.NextID())
	var parts [][]any
	if r.thought != "" {
		parts = append(parts, []any{map[string]any{"text": r.thought, "thought": true}})
	}
	for _, t := range scripted.Split(r.text, 40) {
		parts = append(parts, []any{map[string]any{"text": t}})
	}
	var calls []any
	out := len(r.thought) + len(r.text)
	for _, c := range r.calls {
		args := scripted.JSON(c.args)
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
		u = Usage{PromptTokens: scripted.EstimateTokens(len(req.Body)), CandidatesTokens: scripted.EstimateTokens(out)}
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
