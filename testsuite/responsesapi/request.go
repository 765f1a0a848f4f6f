package responsesapi

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/durable-ralph/ralph/testsuite/scripted"
)

// Request is one HTTP request the server received, with the fields of a
// Responses API request body decoded.
// Its Path is such as "/v1/responses".
type Request struct {
	scripted.Record

	// Fields of a POST /v1/responses body; zero for other requests.
	Model        string
	Stream       bool
	Instructions string
	// PromptCacheKey is the key the client asks the cache to use; Codex
	// sends its thread id.
	PromptCacheKey string
	// Input is the conversation so far, oldest first: the CLI sends all
	// of it with every request (store is false).
	Input []Item
	// Tools are the tools the request offers the model, those of its
	// tools field and those of additional_tools input items (Codex puts
	// its tools there for models that only run code), namespaces
	// flattened.
	Tools []Tool

	// Replied is the usage the server reported in its response; zero
	// for an error or a response cut off.
	Replied Usage
}

// Item is one item of a conversation: a message, a call of a tool, the
// output of a call, a reasoning item. Fields that do not apply to its Type
// are empty.
type Item struct {
	// Type is the item's type: "message", "function_call",
	// "function_call_output", "custom_tool_call",
	// "custom_tool_call_output", "reasoning", ...
	Type string
	// Role of a message: "user", "assistant", "developer" or "system".
	Role string
	// Text of a message (its text parts joined by newlines), or the
	// output of a call as text.
	Text string
	// Name of the tool a call calls and CallID, which its output repeats.
	Name   string
	CallID string
	// Input of a call: the arguments (JSON) of a function call, the input
	// of a custom tool call.
	Input string
}

// Tool is one tool a request offers.
type Tool struct {
	// Type is "function", "custom", "web_search", ...
	Type string
	// Name is the tool's name; Namespace is that of the namespace it is
	// in, if any.
	Name      string
	Namespace string
}

// ToolCall is a call of a tool the model made and its output, if the
// client sent one.
type ToolCall struct {
	// Type is "function_call" or "custom_tool_call".
	Type   string
	Name   string
	CallID string
	// Input is the arguments (JSON) of a function call, the input of a
	// custom tool call.
	Input string
	// Command is the shell command the call runs, when it calls one of
	// the shells Codex offers (exec_command, shell_command, shell), or
	// the script of a code-mode exec call, which runs its commands from
	// JavaScript.
	Command string
	// Output is what the client sent back for the call; HasOutput says
	// whether it did.
	Output    string
	HasOutput bool
}

// IsResponses reports whether r asks the model for a reply (POST
// /v1/responses).
func (r *Request) IsResponses() bool {
	return r.Method == http.MethodPost && strings.TrimSuffix(r.Path, "/") == "/v1/responses"
}

// Kind is what Codex says the request is for, the request_kind of its
// x-codex-turn-metadata header: "turn" for a step of the conversation,
// "compaction" for a request to summarise it (Codex sends one before the
// turn when the model changed, or when the context is nearly full); ""
// when the header does not say.
func (r *Request) Kind() string {
	var meta struct {
		RequestKind string `json:"request_kind"`
	}
	_ = json.Unmarshal([]byte(r.Header.Get("x-codex-turn-metadata")), &meta)
	return meta.RequestKind
}

// ThreadID is the Codex thread the request belongs to (its thread-id
// header); "" when it does not say.
func (r *Request) ThreadID() string { return r.Header.Get("thread-id") }

// Messages are the conversation's messages with the given role, oldest
// first.
func (r *Request) Messages(role string) []Item {
	var out []Item
	for _, it := range r.Input {
		if it.Type == "message" && it.Role == role {
			out = append(out, it)
		}
	}
	return out
}

// Prompt is the text of the conversation's first user message that is not
// context the CLI adds by itself (<environment_context>, the instructions
// of AGENTS.md, ...): for a conversation Codex started, the prompt it was
// given.
func (r *Request) Prompt() string {
	for _, m := range r.Messages("user") {
		if !isContext(m.Text) {
			return m.Text
		}
	}
	return ""
}

// LastUserText is the text of the conversation's last user message that
// is not context the CLI adds by itself: the prompt of the run a resumed
// conversation continues with.
func (r *Request) LastUserText() string {
	msgs := r.Messages("user")
	for i := len(msgs) - 1; i >= 0; i-- {
		if !isContext(msgs[i].Text) {
			return msgs[i].Text
		}
	}
	return ""
}

// isContext reports whether the text of a user message is context Codex
// adds by itself rather than something the user said.
func isContext(s string) bool {
	s = strings.TrimSpace(s)
	for _, p := range []string{"<environment_context>", "<user_instructions>", "# AGENTS.md instructions", "<turn_aborted>", "<user_shell_command>"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// Turn is how many replies the model has given in this conversation so
// far: the assistant messages and tool calls, counted once for each
// stretch of them between inputs of the client. It is 0 for the first
// request of a conversation.
func (r *Request) Turn() int {
	n, in := 0, false
	for _, it := range r.Input {
		switch it.Type {
		case "message":
			if it.Role == "assistant" {
				if !in {
					n++
				}
				in = true
			} else {
				in = false
			}
		case "function_call", "custom_tool_call", "local_shell_call", "reasoning":
			if !in {
				n++
			}
			in = true
		default:
			in = false
		}
	}
	return n
}

// ToolCalls lists every tool call the model made in the conversation,
// oldest first, with its output if the client sent one.
func (r *Request) ToolCalls() []ToolCall {
	var out []ToolCall
	index := map[string]int{}
	for _, it := range r.Input {
		switch it.Type {
		case "function_call", "custom_tool_call":
			index[it.CallID] = len(out)
			out = append(out, ToolCall{Type: it.Type, Name: it.Name, CallID: it.CallID, Input: it.Input, Command: command(it)})
		case "function_call_output", "custom_tool_call_output":
			if i, ok := index[it.CallID]; ok {
				out[i].Output, out[i].HasOutput = it.Text, true
			}
		}
	}
	return out
}

// Commands lists the shell commands (or code-mode scripts) of the
// conversation's tool calls, oldest first; see ToolCall.Command.
func (r *Request) Commands() []string {
	var out []string
	for _, tc := range r.ToolCalls() {
		if tc.Command != "" {
			out = append(out, tc.Command)
		}
	}
	return out
}

// HasText reports whether the text of any message or tool output of the
// conversation contains s.
func (r *Request) HasText(s string) bool {
	for _, it := range r.Input {
		if strings.Contains(it.Text, s) {
			return true
		}
	}
	return false
}

// HasTool reports whether the request offers a tool of that name (in any
// namespace).
func (r *Request) HasTool(name string) bool {
	for _, t := range r.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// offers reports whether the request offers the model a tool of that name
// to call directly: outside a namespace, or in the default one
// ("functions").
func (r *Request) offers(name string) bool {
	for _, t := range r.Tools {
		if t.Name == name && (t.Namespace == "" || t.Namespace == "functions") {
			return true
		}
	}
	return false
}

// codeMode reports whether the request offers Codex's code-mode exec
// tool, which runs JavaScript that calls the other tools; models that only
// run code are offered no shell of their own.
func (r *Request) codeMode() bool {
	for _, t := range r.Tools {
		if t.Name == "exec" && t.Type == "custom" {
			return true
		}
	}
	return false
}

// command is the shell command of a call of one of Codex's shells, or the
// script of a code-mode exec call; "" for other calls.
func command(it Item) string {
	if it.Type == "custom_tool_call" {
		if it.Name == "exec" {
			return it.Input
		}
		return ""
	}
	var args struct {
		Cmd     string          `json:"cmd"`
		Command json.RawMessage `json:"command"`
	}
	if json.Unmarshal([]byte(it.Input), &args) != nil {
		return ""
	}
	switch it.Name {
	case "exec_command":
		return args.Cmd
	case "shell_command":
		var s string
		_ = json.Unmarshal(args.Command, &s)
		return s
	case "shell", "container.exec", "local_shell":
		var argv []string
		if json.Unmarshal(args.Command, &argv) == nil {
			return strings.Join(argv, " ")
		}
	}
	return ""
}

// decodeBody fills in the Responses API fields of req from its body.
func decodeBody(req *Request) {
	var body struct {
		Model          string            `json:"model"`
		Stream         bool              `json:"stream"`
		Instructions   string            `json:"instructions"`
		PromptCacheKey string            `json:"prompt_cache_key"`
		Input          json.RawMessage   `json:"input"`
		Tools          []json.RawMessage `json:"tools"`
	}
	if len(req.Body) == 0 || json.Unmarshal(req.Body, &body) != nil {
		return
	}
	req.Model, req.Stream, req.Instructions, req.PromptCacheKey = body.Model, body.Stream, body.Instructions, body.PromptCacheKey
	req.Tools = tools(body.Tools, "")

	var s string
	if json.Unmarshal(body.Input, &s) == nil {
		req.Input = []Item{{Type: "message", Role: "user", Text: s}}
		return
	}
	var items []struct {
		Type      string            `json:"type"`
		Role      string            `json:"role"`
		Content   json.RawMessage   `json:"content"`
		Name      string            `json:"name"`
		CallID    string            `json:"call_id"`
		Arguments string            `json:"arguments"`
		Input     string            `json:"input"`
		Output    json.RawMessage   `json:"output"`
		Tools     []json.RawMessage `json:"tools"`
	}
	if json.Unmarshal(body.Input, &items) != nil {
		return
	}
	for _, it := range items {
		item := Item{Type: it.Type, Role: it.Role, Name: it.Name, CallID: it.CallID}
		if item.Type == "" && it.Role != "" {
			item.Type = "message"
		}
		switch item.Type {
		case "message":
			item.Text = strings.Join(texts(it.Content), "\n")
		case "function_call":
			item.Input = it.Arguments
		case "custom_tool_call":
			item.Input = it.Input
		case "function_call_output", "custom_tool_call_output":
			item.Text = strings.Join(texts(it.Output), "\n")
		case "additional_tools":
			req.Tools = append(req.Tools, tools(it.Tools, "")...)
		}
		req.Input = append(req.Input, item)
	}
}

// tools decodes a list of tool definitions, flattening namespaces.
func tools(raw []json.RawMessage, namespace string) []Tool {
	var out []Tool
	for _, r := range raw {
		var t struct {
			Type  string            `json:"type"`
			Name  string            `json:"name"`
			Tools []json.RawMessage `json:"tools"`
		}
		if json.Unmarshal(r, &t) != nil {
			continue
		}
		if t.Type == "namespace" {
			out = append(out, tools(t.Tools, t.Name)...)
			continue
		}
		out = append(out, Tool{Type: t.Type, Name: t.Name, Namespace: namespace})
	}
	return out
}

// texts returns a string, or the texts of a list of content parts
// (input_text, output_text, text).
func texts(raw json.RawMessage) []string {
	return scripted.Texts(raw, func(_, text string) bool { return text != "" })
}
