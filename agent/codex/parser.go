package codex

import (
	"cmp"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/durable-ralph/ralph/internal/words"

	"github.com/durable-ralph/ralph/agent"
	"github.com/durable-ralph/ralph/contract"
)

// maxItems bounds the item ids a Parser remembers, so that an item's
// started and completed events count one tool call.
const maxItems = 4096

// Event types of `codex exec --json`.
const (
	typeThreadStarted = "thread.started"
	typeTurnStarted   = "turn.started"
	typeTurnCompleted = "turn.completed"
	typeTurnFailed    = "turn.failed"
	typeItemStarted   = "item.started"
	typeItemUpdated   = "item.updated"
	typeItemCompleted = "item.completed"
	typeError         = "error"
)

// Item types of `codex exec --json` (the type of an item; older versions
// called it item_type, and an agent message assistant_message).
const (
	itemAgentMessage     = "agent_message"
	itemAssistantMessage = "assistant_message"
	itemReasoning        = "reasoning"
	itemPlan             = "plan"
	itemCommand          = "command_execution"
	itemFileChange       = "file_change"
	itemMCPToolCall      = "mcp_tool_call"
	itemCollabToolCall   = "collab_tool_call"
	itemWebSearch        = "web_search"
	itemTodoList         = "todo_list"
	itemError            = "error"
)

// Tool names the parser gives the items that are tool calls. Codex names
// no tool in its output; these are what Claude Code calls the like. An
// MCP tool is mcp__SERVER__TOOL, a collaboration tool keeps its name
// (spawn_agent, wait, ...).
const (
	toolCommand    = "Bash"
	toolFileChange = "Edit"
	toolWebSearch  = "WebSearch"
	toolTodoList   = "Plan"
)

// wireEvent is one line of `codex exec --json`, all event types in one.
type wireEvent struct {
	Type string `json:"type"`
	// thread.started
	ThreadID string `json:"thread_id"`
	// turn.completed
	Usage *wireUsage `json:"usage"`
	// turn.failed
	Error *wireError `json:"error"`
	// error
	Message string `json:"message"`
	// item.*: an object whose fields depend on its type, read one by
	// one, so that a field of an unexpected shape spoils only itself.
	Item map[string]json.RawMessage `json:"item"`
}

type wireError struct {
	Message string `json:"message"`
}

// wireUsage is the token usage of turn.completed. InputTokens counts
// every input token, those read from the prompt cache (CachedInputTokens)
// and written to it (CacheWriteInputTokens) included, as the Responses
// API counts them; OutputTokens counts every output token, reasoning
// tokens (ReasoningOutputTokens) included. Codex 0.169 reports the total
// of the thread so far: for a resumed thread, the runs before count too.
type wireUsage struct {
	InputTokens           int64 `json:"input_tokens"`
	CachedInputTokens     int64 `json:"cached_input_tokens"`
	CacheWriteInputTokens int64 `json:"cache_write_input_tokens"`
	OutputTokens          int64 `json:"output_tokens"`
	ReasoningOutputTokens int64 `json:"reasoning_output_tokens"`
}

// usage is the agent.Usage of u: the input tokens read from or written to
// the cache apart from the others.
func (u wireUsage) usage() contract.Usage {
	cached, written := max(u.CachedInputTokens, 0), max(u.CacheWriteInputTokens, 0)
	return contract.Usage{
		InputTokens:              max(u.InputTokens-cached-written, 0),
		OutputTokens:             max(u.OutputTokens, 0),
		CacheCreationInputTokens: written,
		CacheReadInputTokens:     cached,
	}
}

// metadataRE matches Codex's warning about a model it has no metadata for,
// which names the model.
var metadataRE = regexp.MustCompile("Model metadata for `([^`]+)` not found")

// Parser reads the JSONL of one `codex exec --json` run and keeps its
// agent.Summary. It is not safe for concurrent use.
//
// Codex counts turns by prompt, one a run, so Summary.Turns counts the
// model's messages (agent_message items) instead. The items that are tool
// calls count in ToolUses once each, by id, and show as an Event when
// first seen: a command_execution as Bash with its command (without the
// bash -lc Codex wraps it in), a file_change as Edit with its paths, an
// MCP tool call as mcp__SERVER__TOOL, a web_search as WebSearch, a
// todo_list as Plan with its next step.
type Parser struct {
	// Stream holds the Summary so far and the messages of error events.
	agent.Stream
	// model is the model asked for; prices prices the tokens. named is
	// the model the output named, if any.
	model  string
	prices contract.Prices
	named  string

	// items are the ids of the tool items already counted.
	items map[string]bool

	// completed counts turn.completed events; usage is the usage of the
	// latest.
	completed int
	usage     contract.Usage
	// failed is the error of the latest turn.failed; hasFailed says there
	// was one. It is the CLI's own words, never the model's.
	failed    string
	hasFailed bool
}

// Line parses one line of `codex exec --json`. Blank lines are skipped; a
// line that is not a JSON object with a type is an error wrapping
// agent.ErrInvalidLine.
func (p *Parser) Line(line []byte) (agent.Event, error) {
	return agent.ParseLine(&p.Sum, line, p.event)
}

// event reads one event of `codex exec --json`.
func (p *Parser) event(w wireEvent) agent.Event {
	var ev agent.Event
	switch w.Type {
	case typeThreadStarted:
		agent.SetID(&p.Sum.SessionID, w.ThreadID)
	case typeTurnStarted:
	case typeTurnCompleted:
		p.completed++
		if w.Usage != nil {
			// The usage is the thread's total so far, not the turn's.
			p.usage = w.Usage.usage()
		}
	case typeTurnFailed:
		msg := "turn failed"
		if w.Error != nil && w.Error.Message != "" {
			msg = w.Error.Message
		}
		p.failed, p.hasFailed = cutMiddle(msg, agent.MaxTextLen), true
		ev.Error = p.failed
	case typeError:
		msg := cutMiddle(w.Message, agent.MaxTextLen)
		p.Errors.Add(msg)
		ev.Error = msg
	case typeItemStarted, typeItemUpdated, typeItemCompleted:
		ev = p.item(w.Type, w.Item)
	default:
		p.Sum.UnknownEvents++
	}
	return ev
}

// item reads an item event.
func (p *Parser) item(event string, item map[string]json.RawMessage) agent.Event {
	kind := str(item, "type")
	if kind == "" {
		kind = str(item, "item_type")
	}
	id := str(item, "id")
	var ev agent.Event
	switch kind {
	case itemAgentMessage, itemAssistantMessage:
		if event != typeItemCompleted {
			break
		}
		text := cutMiddle(str(item, "text"), agent.MaxTextLen)
		p.Sum.Turns++
		p.Sum.FinalText = text
		ev.Says = text
	case itemReasoning, itemPlan:
	case itemError:
		// A warning that does not end the turn, such as an unknown
		// model's missing metadata.
		msg := str(item, "message")
		if m := metadataRE.FindStringSubmatch(msg); m != nil {
			agent.SetID(&p.named, m[1])
		}
		if event == typeItemCompleted {
			ev.Error = cutMiddle(msg, agent.MaxTextLen)
		}
	case itemCommand:
		ev = p.tool(id, toolCommand, commandSubject(item["command"]))
	case itemFileChange:
		ev = p.tool(id, toolFileChange, changesSubject(item["changes"]))
	case itemMCPToolCall:
		name := "mcp__" + str(item, "server") + "__" + str(item, "tool")
		ev = p.tool(id, name, headOnOneLine(string(item["arguments"])))
	case itemCollabToolCall:
		ev = p.tool(id, cmp.Or(str(item, "tool"), "agent"), headOnOneLine(str(item, "prompt")))
	case itemWebSearch:
		ev = p.tool(id, toolWebSearch, headOnOneLine(str(item, "query")))
	case itemTodoList:
		ev = p.tool(id, toolTodoList, todoSubject(item["items"]))
	default:
		p.Sum.UnknownEvents++
	}
	return ev
}

// tool counts the tool call of item id the first time it is seen and
// returns the Event that shows it; later events of the item show nothing.
func (p *Parser) tool(id, name, subject string) agent.Event {
	if id != "" {
		if p.items[id] {
			return agent.Event{}
		}
		if len(p.items) >= maxItems {
			clear(p.items)
		}
		p.items[id] = true
	}
	return agent.Event{Tool: p.Sum.UseTool(name), ToolSubject: words.Cut(subject, agent.MaxSubjectLen)}
}

// Summary is what the parser learned so far. Usage is that of the latest
// turn.completed, which for a resumed thread counts the runs before it
// too. The cost prices it for the model asked for, else the model the
// output named, else DefaultModel; it is unknown until a turn completed.
func (p *Parser) Summary() agent.Summary {
	s := p.Sum
	s.Model = words.Cut(cmp.Or(p.model, p.named), agent.MaxIDLen)
	assumed := s.Model == ""
	if assumed {
		s.Model = DefaultModel
	}
	if p.completed == 0 {
		s.CostNote = "cost unknown: Codex reported no token usage (no turn completed)"
		return s
	}
	s.Usage = p.usage
	s.CostUSD, s.CostKnown, s.CostNote = p.prices.Cost(s.Model, s.Usage)
	if !s.CostKnown && assumed {
		s.CostNote = fmt.Sprintf("cost unknown: no price for model %q, Codex's default, assumed as no model was set (set agent.model or agent.prices)", s.Model)
	}
	return s
}

// str is the string field key of an object; "" if it has none or it is
// not a string.
func str(obj map[string]json.RawMessage, key string) string {
	var s string
	_ = json.Unmarshal(obj[key], &s)
	return s
}

// commandSubject is the command of a command_execution item on one line:
// the script of a shell's -c or -lc, which Codex wraps every command in
// (/bin/bash -lc 'ls -la'), else the command. Codex prints it as a
// string; a list of words is read too.
func commandSubject(raw json.RawMessage) string {
	var words []string
	var s string
	if json.Unmarshal(raw, &s) == nil {
		w, ok := shellWords(s)
		if !ok {
			return headOnOneLine(s)
		}
		words = w
	} else if json.Unmarshal(raw, &words) != nil {
		return ""
	}
	if len(words) == 3 && (words[1] == "-lc" || words[1] == "-c") {
		switch path.Base(words[0]) {
		case "bash", "sh", "zsh", "dash":
			return headOnOneLine(words[2])
		}
	}
	return headOnOneLine(strings.Join(words, " "))
}

// shellWords splits s into words as a POSIX shell does, with its single
// and double quotes and backslashes; ok is false for an unfinished quote.
func shellWords(s string) (words []string, ok bool) {
	var w strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case c == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, false
			}
			w.WriteString(s[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
					i++
				}
				w.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, false
			}
			inWord = true
		case c == '\\' && i+1 < len(s):
			i++
			w.WriteByte(s[i])
			inWord = true
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, true
}

// changesSubject lists the paths of a file_change item's changes.
func changesSubject(raw json.RawMessage) string {
	var changes []struct {
		Path string `json:"path"`
	}
	_ = json.Unmarshal(raw, &changes)
	paths := make([]string, 0, len(changes))
	for _, c := range changes {
		paths = append(paths, c.Path)
	}
	return headOnOneLine(strings.Join(paths, ", "))
}

// todoSubject is the first step of a todo_list item not yet completed.
func todoSubject(raw json.RawMessage) string {
	var items []struct {
		Text      string `json:"text"`
		Completed bool   `json:"completed"`
	}
	_ = json.Unmarshal(raw, &items)
	for _, it := range items {
		if !it.Completed {
			return headOnOneLine(it.Text)
		}
	}
	return ""
}

// headOnOneLine is the beginning of s, at most 4*agent.MaxSubjectLen
// bytes, with its runs of white space, line ends included, made one
// space: words.OneLine of a head that is long enough for a subject.
func headOnOneLine(s string) string {
	return words.OneLine(words.Cut(s, 4*agent.MaxSubjectLen))
}

// cutMiddle shortens s to at most n bytes, keeping its beginning and its
// end joined by "…", cutting between runes.
func cutMiddle(s string, n int) string {
	if len(s) <= n {
		return s
	}
	keep := n - len("…")
	head, tail := keep/2, keep-keep/2
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	start := len(s) - tail
	for start < len(s) && !utf8.RuneStart(s[start]) {
		start++
	}
	return s[:head] + "…" + s[start:]
}
