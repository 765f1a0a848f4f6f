package geminiapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/durable-ralph/ralph/internal/words"
	"github.com/durable-ralph/ralph/testsuite/scripted"
)

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
	return Call(ShellTool, map[string]any{"command": command, "description": "Run " + words.Clip(command, 60+len("…"))})
}

// WriteFile is a reply that calls the CLI's write_file tool. The CLI
// wants an absolute path or one relative to its workspace.
func WriteFile(path, content string) Reply {
	return Call(WriteFileTool, map[string]any{"file_path": path, "content": content})
}

// WithText puts text before the reply's function calls.
func (r Reply) WithText(s string) Reply { r.text = s; return r }

// WithThought puts a thought (a part with "thought": true, as thinking
// models stream them) before the reply's text.
func (r Reply) WithThought(s string) Reply { r.thought = s; return r }

// WithUsage sets the reply's token usage instead of the estimate.
func (r Reply) WithUsage(u Usage) Reply { r.usage = u; return r }

// After delays the reply by d (a slow model); a client that goes away
// ends the wait.
func (r Reply) After(d time.Duration) Reply { r.delay = d; return r }

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

// describe is r for the log.
func (r Reply) describe() string {
	var d scripted.Description
	d.Wait("after", r.delay)
	if r.err != nil {
		d.Add("error %d %s", r.err.status, words.Clip(string(r.err.body), 200))
	}
	d.Quote("thought", r.thought, 80)
	d.Quote("text", r.text, 80)
	for _, c := range r.calls {
		d.Add("call %s %s", c.name, words.Clip(string(scripted.JSON(c.args)), 120))
	}
	return d.String()
}
