package responsesapi

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/durable-ralph/ralph/internal/words"
	"github.com/durable-ralph/ralph/testsuite/scripted"
)

// Script chooses the reply to a request. The server calls it for every
// POST /v1/responses, one request at a time, so a script may keep state
// without locking. The Responses API keeps no state here (Codex sends
// store=false and the whole conversation every time), so a script can
// decide from the request alone.
type Script func(req *Request) Reply

// Usage is the token accounting of one reply, as the Responses API
// reports it: InputTokens counts every input token, CachedTokens those of
// them read from the prompt cache (input_tokens_details.cached_tokens)
// and CacheWriteTokens those written to it
// (input_tokens_details.cache_write_tokens, sent when not 0, which Codex
// reports as cache_write_input_tokens); OutputTokens counts every output
// token, ReasoningTokens those of them spent reasoning. A zero Usage is
// filled in from the sizes of the request and the reply.
type Usage struct {
	InputTokens      int
	CachedTokens     int
	CacheWriteTokens int
	OutputTokens     int
	ReasoningTokens  int
}

// Reply is the server's answer to one request: a model response (text,
// reasoning, tool calls), an API error, a response that fails in the
// stream, or a stream held open. Build it with Text, Shell, ApplyPatch,
// FunctionCall, CustomToolCall, Error (and the errors built on it),
// Failed or Hold.
type Reply struct {
	text      string
	reasoning string
	calls     []call
	err       *httpError
	failure   *failure
	hold      time.Duration
	// held is set by Hold: without content, the held stream is cut off
	// rather than finished.
	held  bool
	usage Usage
}

// call is a tool call of a reply. A shell or patch call is resolved
// against the tools of the request it answers.
type call struct {
	shell string // a shell command, for Shell
	patch string // a patch, for ApplyPatch
	// typ ("function_call" or "custom_tool_call"), name and input of a
	// call given as such or resolved.
	typ   string
	name  string
	input string
}

type httpError struct {
	status  int
	body    string
	headers []string // "Name: value"
}

type failure struct {
	code    string
	message string
}

// Text is a response of one assistant message that ends the model's turn.
func Text(s string) Reply { return Reply{text: s} }

// Shell is a response that runs cmd in the shell Codex offers in the
// request: exec_command ({"cmd": cmd}) where the request has it,
// shell_command or shell for other tool sets, and for models that only
// run code (Codex's default model), a call of its exec tool with a script
// that runs cmd through tools.exec_command and reports its output. Codex
// runs it in its working directory (bash -lc) and prints a
// command_execution item. Add more calls with the Shell, ApplyPatch, ...
// methods.
func Shell(cmd string) Reply { return Reply{}.Shell(cmd) }

// ApplyPatch is a response that edits files with Codex's apply_patch tool
// and patch, in its format ("*** Begin Patch\n*** Add File: a.txt\n+hi\n
// *** End Patch\n"): a custom tool call where the request offers it, from
// a code-mode script for models that only run code, else an apply_patch
// heredoc in the shell, which Codex intercepts.
func ApplyPatch(patch string) Reply { return Reply{}.ApplyPatch(patch) }

// FunctionCall is a response that calls the function tool name with args,
// marshalled to JSON.
func FunctionCall(name string, args any) Reply { return Reply{}.FunctionCall(name, args) }

// CustomToolCall is a response that calls the custom (freeform) tool name
// with input.
func CustomToolCall(name, input string) Reply { return Reply{}.CustomToolCall(name, input) }

// Shell adds a shell call to r; see the function Shell.
func (r Reply) Shell(cmd string) Reply { return r.with(call{shell: cmd}) }

// ApplyPatch adds a patch to r; see the function ApplyPatch.
func (r Reply) ApplyPatch(patch string) Reply { return r.with(call{patch: patch}) }

// FunctionCall adds a function call to r.
func (r Reply) FunctionCall(name string, args any) Reply {
	b, err := json.Marshal(args)
	if err != nil || args == nil {
		b = []byte("{}")
	}
	return r.with(call{typ: "function_call", name: name, input: string(b)})
}

// CustomToolCall adds a custom tool call to r.
func (r Reply) CustomToolCall(name, input string) Reply {
	return r.with(call{typ: "custom_tool_call", name: name, input: input})
}

func (r Reply) with(c call) Reply {
	r.calls = append(append([]call(nil), r.calls...), c)
	return r
}

// WithText puts an assistant message before the reply's tool calls.
func (r Reply) WithText(s string) Reply { r.text = s; return r }

// WithReasoning puts a reasoning item with summary s first in the reply;
// Codex prints it as a reasoning item.
func (r Reply) WithReasoning(s string) Reply { r.reasoning = s; return r }

// WithUsage sets the reply's token usage instead of the estimate.
func (r Reply) WithUsage(u Usage) Reply { r.usage = u; return r }

// Error is an API error: HTTP status with body as it is, and headers given
// as "Name: value".
func Error(status int, body string, headers ...string) Reply {
	return Reply{err: &httpError{status: status, body: body, headers: headers}}
}

// APIError is an API error with the body the OpenAI API sends:
// {"error":{"message":...,"type":...,"param":null,"code":...}}; an empty
// code is null.
func APIError(status int, typ, code, message string, headers ...string) Reply {
	return Error(status, errorBody(typ, code, message), headers...)
}

// ServerError is the API's HTTP 500.
func ServerError() Reply {
	return APIError(500, "server_error", "", "The server had an error while processing your request. Sorry about that!")
}

// BadRequest is the API's HTTP 400 invalid_request_error, about param.
func BadRequest(param, message string) Reply {
	body := fmt.Sprintf(`{"error":{"message":%s,"type":"invalid_request_error","param":%s,"code":null}}`, jsonString(message), jsonString(param))
	return Error(400, body)
}

// Unauthorized is the API's HTTP 401 for a wrong API key.
func Unauthorized() Reply {
	return APIError(401, "invalid_request_error", "invalid_api_key",
		"Incorrect API key provided: sk-test-****. You can find your API key at https://platform.openai.com/account/api-keys.")
}

// ModelNotFound is the API's error for a model that does not exist or
// that the key has no access to.
func ModelNotFound(model string) Reply {
	return APIError(404, "invalid_request_error", "model_not_found",
		fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", model))
}

// QuotaExceeded is the API's HTTP 429 for an account out of credit.
func QuotaExceeded() Reply {
	return APIError(429, "insufficient_quota", "insufficient_quota",
		"You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.")
}

// RateLimit is the API's HTTP 429 for a rate limit of tokens per minute,
// with the body and headers OpenAI sends: the message says "Please try
// again in 20s.", retry-after and x-ratelimit-reset-tokens say when, and
// the x-ratelimit-* headers give the limits.
func RateLimit(retryIn time.Duration) Reply {
	secs := max(int(retryIn.Round(time.Second)/time.Second), 1)
	msg := fmt.Sprintf("Rate limit reached for gpt-5 in organization org-scripted on tokens per min (TPM): "+
		"Limit 30000, Used 29512, Requested 1834. Please try again in %s. "+
		"Visit https://platform.openai.com/account/rate-limits to learn more.", retryIn.Round(time.Millisecond))
	return APIError(429, "tokens", "rate_limit_exceeded", msg,
		fmt.Sprintf("retry-after: %d", secs),
		fmt.Sprintf("retry-after-ms: %d", retryIn.Milliseconds()),
		"x-ratelimit-limit-requests: 500",
		"x-ratelimit-limit-tokens: 30000",
		"x-ratelimit-remaining-requests: 499",
		"x-ratelimit-remaining-tokens: 0",
		"x-ratelimit-reset-requests: 120ms",
		"x-ratelimit-reset-tokens: "+retryIn.Round(time.Millisecond).String(),
	)
}

// UsageLimit is the HTTP 429 of the ChatGPT backend that Codex reaches
// with a ChatGPT sign-in, when the plan's usage limit is reached:
// {"error":{"type":"usage_limit_reached","message":...,"plan_type":plan,
// "resets_at":<unix>,"resets_in_seconds":<n>}}.
func UsageLimit(resetsIn time.Duration, plan string) Reply {
	body, _ := json.Marshal(map[string]any{"error": map[string]any{
		"type":              "usage_limit_reached",
		"message":           "The usage limit has been reached",
		"plan_type":         plan,
		"resets_at":         time.Now().Add(resetsIn).Unix(),
		"resets_in_seconds": int(resetsIn / time.Second),
	}})
	return Error(429, string(body))
}

// Failed is a response that starts streaming and then fails
// (response.failed) with the error code and message, as the API reports
// errors it meets after the stream began (codes such as server_error,
// rate_limit_exceeded, insufficient_quota, context_length_exceeded).
func Failed(code, message string) Reply {
	return Reply{failure: &failure{code: code, message: message}}
}

// Hold is a slow model: the stream starts (response.created,
// response.in_progress) and is kept open for d. Alone, the stream is then
// cut off unfinished, like a dropped connection; Hold(d).Then(r) streams
// r after the wait. A client that goes away ends the hold at once.
func Hold(d time.Duration) Reply { return Reply{hold: d, held: true} }

// Then is r's hold followed by next.
func (r Reply) Then(next Reply) Reply {
	next.hold, next.held = r.hold, false
	return next
}

// errorBody is the JSON body of an OpenAI API error, in the API's field
// order.
func errorBody(typ, code, message string) string {
	codeJSON := "null"
	if code != "" {
		codeJSON = jsonString(code)
	}
	return fmt.Sprintf(`{"error":{"message":%s,"type":%s,"param":null,"code":%s}}`, jsonString(message), jsonString(typ), codeJSON)
}

// resolve turns the reply's shell and patch calls into the calls of the
// tools req offers.
func (r Reply) resolve(req *Request) []call {
	out := make([]call, 0, len(r.calls))
	for _, c := range r.calls {
		switch {
		case c.shell != "":
			out = append(out, shellCall(req, c.shell))
		case c.patch != "":
			out = append(out, patchCall(req, c.patch))
		default:
			out = append(out, c)
		}
	}
	return out
}

// shellCall is the call that runs cmd in the shell req offers; see Shell.
func shellCall(req *Request, cmd string) call {
	switch {
	case req.offers("exec_command"):
		return call{typ: "function_call", name: "exec_command", input: jsonString(map[string]any{"cmd": cmd})}
	case req.offers("shell_command"):
		return call{typ: "function_call", name: "shell_command", input: jsonString(map[string]any{"command": cmd})}
	case req.offers("shell"):
		return call{typ: "function_call", name: "shell", input: jsonString(map[string]any{"command": []string{"bash", "-lc", cmd}})}
	case req.codeMode():
		script := fmt.Sprintf("const r = await tools.exec_command({cmd: %s});\n"+
			"text(r.output ?? \"\");\n"+
			"if (r.exit_code) text(\"exit code \" + r.exit_code);\n", jsonString(cmd))
		return call{typ: "custom_tool_call", name: "exec", input: script}
	}
	return call{typ: "function_call", name: "exec_command", input: jsonString(map[string]any{"cmd": cmd})}
}

// patchCall is the call that applies patch with the tools req offers; see
// ApplyPatch.
func patchCall(req *Request, patch string) call {
	for _, t := range req.Tools {
		if t.Name != "apply_patch" || (t.Namespace != "" && t.Namespace != "functions") {
			continue
		}
		if t.Type == "function" {
			return call{typ: "function_call", name: "apply_patch", input: jsonString(map[string]any{"input": patch})}
		}
		return call{typ: "custom_tool_call", name: "apply_patch", input: patch}
	}
	if req.codeMode() {
		return call{typ: "custom_tool_call", name: "exec", input: fmt.Sprintf("text(await tools.apply_patch(%s));\n", jsonString(patch))}
	}
	return shellCall(req, "apply_patch <<'PATCH'\n"+strings.TrimSuffix(patch, "\n")+"\nPATCH")
}

// jsonString is v in JSON, with <, > and & left as they are.
func jsonString(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}

// describe is r for the log.
func (r Reply) describe() string {
	var d scripted.Description
	d.Wait("hold", r.hold)
	if r.err != nil {
		d.Add("error %d %s", r.err.status, words.Clip(r.err.body, 160))
	}
	if r.failure != nil {
		d.Add("response.failed %s: %s", r.failure.code, words.Clip(r.failure.message, 120))
	}
	d.Quote("reasoning", r.reasoning, 60)
	d.Quote("text", r.text, 80)
	for _, c := range r.calls {
		switch {
		case c.shell != "":
			d.Quote("shell", c.shell, 120)
		case c.patch != "":
			d.Quote("apply_patch", c.patch, 80)
		default:
			d.Add("%s %s %s", c.typ, c.name, words.Clip(c.input, 120))
		}
	}
	d.CutOff(r.held)
	return d.String()
}
