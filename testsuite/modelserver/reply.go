package modelserver

import (
	"time"

	"github.com/durable-ralph/ralph/internal/words"
	"github.com/durable-ralph/ralph/testsuite/scripted"
)

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
func (r Reply) WithText(s string) Reply { r.text = s; return r }

// WithUsage sets the reply's token usage instead of the estimate.
func (r Reply) WithUsage(u Usage) Reply { r.usage = u; return r }

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

// describe is r for the log.
func (r Reply) describe() string {
	var d scripted.Description
	d.Wait("hold", r.hold)
	if r.err != nil {
		d.Add("error %d %s: %s", r.err.status, r.err.typ, r.err.message)
	}
	d.Quote("text", r.text, 80)
	for _, tc := range r.tools {
		d.Add("tool_use %s %s", tc.name, words.Clip(string(scripted.JSON(tc.input)), 120))
	}
	d.CutOff(r.held)
	return d.String()
}
