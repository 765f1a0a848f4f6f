package modelserver

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/durable-ralph/ralph/testsuite/scripted"
)

// Request is one HTTP request the server received, with the fields of a
// Messages API request body decoded. Its Path is such as "/v1/messages",
// its Query such as "beta=true".
type Request struct {
	scripted.Record

	// Fields of a /v1/messages (or count_tokens) body; zero for others.
	Model     string
	Stream    bool
	MaxTokens int
	// System is the text of the system prompt, its blocks joined by
	// newlines.
	System   string
	Messages []Message
	// Tools are the names of the tools the request offers the model.
	Tools []string

	// LastUserText is the text of the last user message (its text blocks
	// joined by newlines; tool results left out).
	LastUserText string
	// ToolResults are the tool_result blocks of the last user message.
	ToolResults []Block
}

// Message is one message of a conversation.
type Message struct {
	Role    string  `json:"role"`
	Content []Block `json:"content"`
}

// Block is one content block: text, tool_use or tool_result (others keep
// only their type).
type Block struct {
	Type string `json:"type"`
	// Text of a text block; for a tool_result, its content as text.
	Text string `json:"text,omitempty"`
	// ID and Name of a tool_use, and its input.
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// ToolUseID and IsError of a tool_result.
	ToolUseID string `json:"tool_use_id,omitempty"`
	IsError   bool   `json:"is_error,omitempty"`
}

// Text is the text of the message's text blocks, joined by newlines.
func (m Message) Text() string {
	var parts []string
	for _, b := range m.Content {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// ToolUses are the message's tool_use blocks.
func (m Message) ToolUses() []Block {
	var out []Block
	for _, b := range m.Content {
		if b.Type == "tool_use" {
			out = append(out, b)
		}
	}
	return out
}

// IsMessages reports whether r asks the model for a reply (POST
// /v1/messages, not count_tokens).
func (r *Request) IsMessages() bool {
	return r.Method == http.MethodPost && strings.TrimSuffix(r.Path, "/") == "/v1/messages"
}

// Prompt is the text of the conversation's first user message: for the
// CLI's main conversation, the prompt it was given (with whatever context
// the CLI put in front of it).
func (r *Request) Prompt() string {
	for _, m := range r.Messages {
		if m.Role == "user" {
			return m.Text()
		}
	}
	return ""
}

// Turn is how many replies the model has given in this conversation so
// far: 0 for the first request of a conversation.
func (r *Request) Turn() int {
	n := 0
	for _, m := range r.Messages {
		if m.Role == "assistant" {
			n++
		}
	}
	return n
}

// ToolUses lists every tool_use block the model sent in the conversation,
// oldest first.
func (r *Request) ToolUses() []Block {
	var out []Block
	for _, m := range r.Messages {
		if m.Role == "assistant" {
			out = append(out, m.ToolUses()...)
		}
	}
	return out
}

// HasText reports whether any text block or tool result of any message
// contains s.
func (r *Request) HasText(s string) bool {
	for _, m := range r.Messages {
		for _, b := range m.Content {
			if strings.Contains(b.Text, s) {
				return true
			}
		}
	}
	return false
}

// decodeBody fills in the Messages API fields of req from its body.
func decodeBody(req *Request) {
	var body struct {
		Model     string          `json:"model"`
		Stream    bool            `json:"stream"`
		MaxTokens int             `json:"max_tokens"`
		System    json.RawMessage `json:"system"`
		Messages  []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if len(req.Body) == 0 || json.Unmarshal(req.Body, &body) != nil {
		return
	}
	req.Model, req.Stream, req.MaxTokens = body.Model, body.Stream, body.MaxTokens
	req.System = strings.Join(texts(body.System), "\n")
	for _, t := range body.Tools {
		req.Tools = append(req.Tools, t.Name)
	}
	for _, m := range body.Messages {
		req.Messages = append(req.Messages, Message{Role: m.Role, Content: blocks(m.Content)})
	}
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if m := req.Messages[i]; m.Role == "user" {
			req.LastUserText = m.Text()
			for _, b := range m.Content {
				if b.Type == "tool_result" {
					req.ToolResults = append(req.ToolResults, b)
				}
			}
			break
		}
	}
}

// blocks decodes message content: a string or a list of blocks.
func blocks(raw json.RawMessage) []Block {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []Block{{Type: "text", Text: s}}
	}
	var list []struct {
		Type      string          `json:"type"`
		Text      string          `json:"text"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
		ToolUseID string          `json:"tool_use_id"`
		Content   json.RawMessage `json:"content"`
		IsError   bool            `json:"is_error"`
	}
	if json.Unmarshal(raw, &list) != nil {
		return nil
	}
	out := make([]Block, 0, len(list))
	for _, b := range list {
		blk := Block{Type: b.Type, Text: b.Text, ID: b.ID, Name: b.Name, Input: b.Input, ToolUseID: b.ToolUseID, IsError: b.IsError}
		if b.Type == "tool_result" {
			blk.Text = strings.Join(texts(b.Content), "\n")
		}
		out = append(out, blk)
	}
	return out
}

// texts returns the text of a string or of the text blocks of a list.
func texts(raw json.RawMessage) []string {
	return scripted.Texts(raw, func(typ, _ string) bool { return typ == "text" })
}
