// Package claude is the Claude Code backend. It reads the stream-json output of Claude Code
// (claude -p --output-format stream-json --verbose) and decides how a run
// ended.
//
// A Parser consumes the output one line at a time and keeps a running
// Summary of it; Classify turns the Summary of a finished run, the process
// exit and the tail of its stderr into an agent.Verdict. The wire format is that
// of Claude Code 2.1.x: one JSON object per line with a "type" of system,
// assistant, user, rate_limit_event or result.
package claude

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/durable-ralph/ralph/agent"
	"github.com/durable-ralph/ralph/contract"
)

// MaxTextLen bounds every text a Summary or an Event keeps, in bytes.
// Longer texts keep their beginning and their end, where errors and
// completion promises are, joined by an ellipsis.
const MaxTextLen = agent.MaxTextLen

// maxIDLen bounds the identifiers a Summary keeps (session id, model,
// tool name, ...), which are short unless the agent misbehaves.
const maxIDLen = agent.MaxIDLen

// maxExcerptLen bounds the excerpt of an invalid line kept in a Summary
// and quoted in errors.
const maxExcerptLen = 200

// syntheticModel is the model Claude Code names in the assistant messages
// it makes up itself, such as API errors.
const syntheticModel = "<synthetic>"

// ErrInvalidLine is returned, wrapped, by Parser.Line for a line that is
// not a stream-json event.
var ErrInvalidLine = fmt.Errorf("%w: not a stream-json event", agent.ErrInvalidLine)

// Event types the Parser interprets. Events of other types are counted in
// Summary.UnknownEvents.
const (
	TypeSystem    = "system"
	TypeAssistant = "assistant"
	TypeUser      = "user"
	TypeResult    = "result"
	TypeRateLimit = "rate_limit_event"
)

// Event is what one line of stream-json said, reduced to what a Ralph loop
// cares about. Texts are truncated to MaxTextLen.
type Event struct {
	Type      string // "system", "assistant", "user", "result", "rate_limit_event", ...
	Subtype   string // "init", "api_retry", "success", "error_max_turns", ...
	SessionID string

	// MessageID is the API message id of an assistant event. Claude Code
	// prints every content block of a message as an event of its own; they
	// share the id.
	MessageID string
	// Subagent reports an event of a subagent (parent_tool_use_id set).
	Subagent bool
	// Text is the text of the assistant event's text blocks, joined by
	// newlines.
	Text string
	// Thinking reports a thinking block in the assistant event.
	Thinking bool
	// ToolUses counts the tool_use blocks of the assistant event;
	// ToolName and ToolUseID are those of the last one.
	ToolUses  int
	ToolName  string
	ToolUseID string
	// ToolSubject is what the last tool call works on, on one short line:
	// the command of Bash, the file of Read or Edit, the pattern of Grep.
	ToolSubject string
	// IsToolResult reports a user event carrying a tool result; ToolUseID
	// then names the tool call it answers and ToolError reports a failed
	// call.
	IsToolResult bool
	ToolError    bool
	// APIError is the error category ("authentication_failed",
	// "rate_limit", "billing_error", ...) of an assistant message that
	// Claude Code made up to report a failed API request; Text holds the
	// error message.
	APIError string
	// IsError is the is_error flag of a result event.
	IsError bool
	// RateLimit is the rate_limit_info of a rate_limit_event.
	RateLimit *RateLimit
}

// Summary is what a Parser learned from the lines so far. Its texts are
// truncated to MaxTextLen and it holds no tool input or output, so it stays
// small however much the agent prints.
type Summary struct {
	SessionID  string
	Model      string
	CLIVersion string // claude_code_version from system/init
	CWD        string

	// Lines counts the lines: Events those that were stream-json events,
	// InvalidLines those that were not (not a JSON object, or without a
	// "type"), OversizedLines those the caller dropped as too long to
	// parse (see Parser.Oversized). UnknownEvents counts events of a type
	// this package does not interpret, such as stream_event or
	// tool_progress.
	agent.Lines

	// Turns counts the assistant messages of the main agent (not of
	// subagents, and not the error messages Claude Code makes up).
	Turns int
	// ToolUses counts tool calls, of subagents too; LastTool names the
	// latest. ToolResults and ToolErrors count the results and the failed
	// ones.
	ToolUses    int
	LastTool    string
	ToolResults int
	ToolErrors  int
	// LastText is the last text block the main agent wrote.
	LastText string
	// APIRetries counts system/api_retry events: failed API requests that
	// Claude Code retried.
	APIRetries int
	// APIError and APIErrorText are the category and message of the last
	// API error Claude Code reported as an assistant message (see
	// Event.APIError).
	APIError     string
	APIErrorText string

	// HasResult reports a result event; the fields below come from the
	// last one.
	HasResult     bool
	ResultSubtype string // "success", "error_max_turns", "error_during_execution", ...
	// IsError is the result's is_error. Claude Code reports failed API
	// requests with subtype "success" and IsError set.
	IsError bool
	// ResultText is the result's text or, for error subtypes, its errors
	// joined by "; ".
	ResultText     string
	TerminalReason string // "completed", "max_turns", "api_error", ...
	// APIErrorStatus is the HTTP status of the failed API request that
	// ended the run, 0 if none.
	APIErrorStatus int
	// ResultAPIError is the result's api_error, such as
	// "usage_limit_reached" or "connection_failed".
	ResultAPIError    string
	CostUSD           float64
	Usage             contract.Usage
	NumTurns          int
	DurationMS        int64
	DurationAPIMS     int64
	PermissionDenials int

	// RateLimit is the last rate_limit_event, nil if there was none.
	RateLimit *RateLimit
}

// Parser consumes Claude Code stream-json one line at a time and keeps a
// running Summary. A Parser is not safe for concurrent use.
type Parser struct {
	s         Summary
	lastMsgID string
}

// NewParser returns a Parser that has seen nothing yet.
func NewParser() *Parser {
	return &Parser{}
}

// Summary returns what the parser learned so far.
func (p *Parser) Summary() Summary {
	return p.s
}

// Oversized records a line the caller dropped because it was too long to
// parse.
func (p *Parser) Oversized() {
	p.s.OversizedLines++
}

// Line parses one line of stream-json, with or without its line end.
// Blank lines are ignored: Line returns a zero Event and no error. A line
// that is not a JSON object, or has no "type", is counted in
// Summary.InvalidLines and reported by an error wrapping ErrInvalidLine;
// the caller should keep going. Events of unknown types are counted in
// Summary.UnknownEvents and returned with only Type, Subtype and SessionID
// set.
func (p *Parser) Line(line []byte) (Event, error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return Event{}, nil
	}
	if line[0] != '{' {
		return Event{}, p.invalid(line, "not a JSON object")
	}
	var w wireEvent
	if err := json.Unmarshal(line, &w); err != nil {
		// A field of an unexpected type leaves the others decoded; only
		// malformed JSON makes the line invalid.
		if _, ok := errors.AsType[*json.UnmarshalTypeError](err); !ok {
			return Event{}, p.invalid(line, err.Error())
		}
	}
	if w.Type == "" {
		return Event{}, p.invalid(line, `no "type"`)
	}

	s := &p.s
	s.Events++
	ev := Event{
		Type:      clipMiddle(w.Type, maxIDLen),
		Subtype:   clipMiddle(w.Subtype, maxIDLen),
		SessionID: clipMiddle(w.SessionID, maxIDLen),
	}
	if ev.SessionID != "" {
		s.SessionID = ev.SessionID
	}
	switch w.Type {
	case TypeSystem:
		p.system(&w)
	case TypeAssistant:
		p.assistant(&w, &ev)
	case TypeUser:
		p.user(&w, &ev)
	case TypeRateLimit:
		p.rateLimit(&w, &ev)
	case TypeResult:
		p.result(&w, &ev)
	default:
		s.UnknownEvents++
	}
	return ev, nil
}

func (p *Parser) invalid(line []byte, why string) error {
	excerpt := clipMiddle(line, maxExcerptLen)
	p.s.InvalidLines++
	if p.s.FirstInvalidLine == "" {
		p.s.FirstInvalidLine = excerpt
	}
	return fmt.Errorf("%w: %s: %q", ErrInvalidLine, why, clipMiddle(excerpt, 80))
}

func (p *Parser) system(w *wireEvent) {
	s := &p.s
	switch w.Subtype {
	case "init":
		if w.Model != "" {
			s.Model = clipMiddle(w.Model, maxIDLen)
		}
		if w.CLIVersion != "" {
			s.CLIVersion = clipMiddle(w.CLIVersion, maxIDLen)
		}
		if w.CWD != "" {
			s.CWD = clipMiddle(w.CWD, MaxTextLen)
		}
	case "api_retry":
		s.APIRetries++
	}
}

func (p *Parser) assistant(w *wireEvent, ev *Event) {
	s := &p.s
	ev.Subagent = w.ParentToolUseID != nil && *w.ParentToolUseID != ""
	var (
		texts   []string
		msgID   string
		model   string
		content []contentBlock
	)
	if w.Message != nil {
		msgID, model, content = w.Message.ID, w.Message.Model, w.Message.Content
	}
	ev.MessageID = clipMiddle(msgID, maxIDLen)
	for _, b := range content {
		switch b.Type {
		case "text":
			texts = append(texts, b.Text)
		case "thinking", "redacted_thinking":
			ev.Thinking = true
		case "tool_use", "server_tool_use":
			ev.ToolUses++
			ev.ToolName = clipMiddle(b.Name, maxIDLen)
			ev.ToolUseID = clipMiddle(b.ID, maxIDLen)
			ev.ToolSubject = toolSubject(b.Name, b.Input)
		}
	}
	if len(texts) > 0 {
		ev.Text = clipMiddle(strings.Join(texts, "\n"), MaxTextLen)
	}
	if ev.ToolUses > 0 {
		s.ToolUses += ev.ToolUses
		s.LastTool = ev.ToolName
	}

	if w.Error != "" || w.IsAPIError || model == syntheticModel {
		ev.APIError = clipMiddle(w.Error, maxIDLen)
		if ev.APIError == "" {
			ev.APIError = "unknown"
		}
		if !ev.Subagent {
			s.APIError, s.APIErrorText = ev.APIError, ev.Text
		}
		return
	}
	if ev.Subagent {
		return
	}
	if msgID == "" || msgID != p.lastMsgID {
		s.Turns++
		p.lastMsgID = ev.MessageID
	}
	if len(texts) > 0 {
		s.LastText = clipMiddle(texts[len(texts)-1], MaxTextLen)
	}
}

func (p *Parser) user(w *wireEvent, ev *Event) {
	s := &p.s
	ev.Subagent = w.ParentToolUseID != nil && *w.ParentToolUseID != ""
	if w.Message == nil {
		return
	}
	for _, b := range w.Message.Content {
		if b.Type != "tool_result" {
			continue
		}
		ev.IsToolResult = true
		ev.ToolUseID = clipMiddle(b.ToolUseID, maxIDLen)
		s.ToolResults++
		if b.IsError {
			ev.ToolError = true
			s.ToolErrors++
		}
	}
}

func (p *Parser) rateLimit(w *wireEvent, ev *Event) {
	if w.RateLimitInfo == nil {
		return
	}
	info := w.RateLimitInfo
	rl := &RateLimit{
		Status: clipMiddle(info.Status, maxIDLen),
		Type:   clipMiddle(info.RateLimitType, maxIDLen),
	}
	if info.ResetsAt > 0 && info.ResetsAt < 1e11 {
		rl.ResetsAt = time.Unix(int64(info.ResetsAt), 0).UTC()
	}
	ev.RateLimit = rl
	p.s.RateLimit = rl
}

func (p *Parser) result(w *wireEvent, ev *Event) {
	s := &p.s
	ev.IsError = w.IsError
	s.HasResult = true
	s.ResultSubtype = ev.Subtype
	s.IsError = w.IsError
	switch {
	case w.Result != nil:
		s.ResultText = clipMiddle(*w.Result, MaxTextLen)
	case len(w.Errors) > 0:
		s.ResultText = clipMiddle(strings.Join(w.Errors, "; "), MaxTextLen)
	default:
		s.ResultText = ""
	}
	ev.Text = s.ResultText
	s.TerminalReason = clipMiddle(w.TerminalReason, maxIDLen)
	s.APIErrorStatus = 0
	if w.APIErrorStatus != nil {
		s.APIErrorStatus = *w.APIErrorStatus
	}
	s.ResultAPIError = clipMiddle(w.APIError, maxIDLen)
	s.CostUSD = w.TotalCostUSD
	if w.Usage != nil {
		s.Usage = *w.Usage
	}
	s.NumTurns = w.NumTurns
	s.DurationMS = int64(w.DurationMS)
	s.DurationAPIMS = int64(w.DurationAPIMS)
	s.PermissionDenials = len(w.PermissionDenials)
}

// wireEvent is the union of the fields of the events the Parser reads.
// Fields it has no use for, tool inputs and outputs above all, are left
// out so that decoding skips them.
type wireEvent struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	SessionID string `json:"session_id"`

	// system/init
	Model      string `json:"model"`
	CWD        string `json:"cwd"`
	CLIVersion string `json:"claude_code_version"`

	// assistant and user
	Message         *wireMessage `json:"message"`
	ParentToolUseID *string      `json:"parent_tool_use_id"`
	Error           string       `json:"error"`
	IsAPIError      bool         `json:"is_api_error_message"`

	// result
	IsError           bool            `json:"is_error"`
	Result            *string         `json:"result"`
	Errors            []string        `json:"errors"`
	TotalCostUSD      float64         `json:"total_cost_usd"`
	Usage             *contract.Usage `json:"usage"`
	NumTurns          int             `json:"num_turns"`
	DurationMS        float64         `json:"duration_ms"`
	DurationAPIMS     float64         `json:"duration_api_ms"`
	TerminalReason    string          `json:"terminal_reason"`
	APIErrorStatus    *int            `json:"api_error_status"`
	APIError          string          `json:"api_error"`
	PermissionDenials []struct{}      `json:"permission_denials"`

	// rate_limit_event
	RateLimitInfo *wireRateLimit `json:"rate_limit_info"`
}

type wireMessage struct {
	ID    string `json:"id"`
	Model string `json:"model"`
	// Content is a list of blocks; a user message may have a plain string
	// instead, which decodes as a type error and leaves Content empty.
	Content []contentBlock `json:"content"`
}

// contentBlock is one block of a message's content. The input of a
// tool_use and the content of a tool_result are left out.
type contentBlock struct {
	Type      string `json:"type"`
	Text      string `json:"text"`
	ID        string `json:"id"`
	Name      string `json:"name"`
	ToolUseID string `json:"tool_use_id"`
	IsError   bool   `json:"is_error"`
	// Input is a tool call's input, read only for its subject.
	Input json.RawMessage `json:"input"`
}

type wireRateLimit struct {
	Status        string  `json:"status"`
	ResetsAt      float64 `json:"resetsAt"`
	RateLimitType string  `json:"rateLimitType"`
}

// clipMiddle returns s if it fits in max bytes. A longer s is cut to its
// beginning and its end, at rune boundaries, joined by an ellipsis; the
// result is a copy and does not keep s alive. Max must exceed 16.
func clipMiddle[S ~string | ~[]byte](s S, max int) string {
	if len(s) <= max {
		return string(s)
	}
	const ellipsis = " … "
	keep := max - len(ellipsis)
	head := keep / 2
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	tail := len(s) - (keep - head)
	for tail < len(s) && !utf8.RuneStart(s[tail]) {
		tail++
	}
	return string(s[:head]) + ellipsis + string(s[tail:])
}
