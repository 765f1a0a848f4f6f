package geminiapi

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"

	"github.com/durable-ralph/ralph/testsuite/scripted"
)

// Request is one HTTP request the server received, with the fields of a
// GenerateContentRequest decoded.
//
// Its Path is such as
// "/v1beta/models/gemini-2.5-flash:streamGenerateContent", its Query such
// as "alt=sse".
type Request struct {
	scripted.Record

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

// modelPathRE matches "/v1beta/models/{model}:{action}".
var modelPathRE = regexp.MustCompile(`^/v1[a-z0-9]*/models/([^/:]+):([A-Za-z]+)$`)

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
