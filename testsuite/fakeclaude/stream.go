package main

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The event shapes below follow what Claude Code 2.1.329 prints, field
// order included; fields no consumer reads are left out.

// defaultModel is the model the real CLI reported without --model.
const defaultModel = "claude-opus-5-5"

// syntheticModel is the model of the messages Claude Code makes up itself.
const syntheticModel = "<synthetic>"

var tools = []string{
	"Task", "Bash", "Edit", "Glob", "Grep", "NotebookEdit", "Read", "TodoWrite",
	"WebFetch", "WebSearch", "Write",
}

type initEvent struct {
	Type              string   `json:"type"`
	Subtype           string   `json:"subtype"`
	CWD               string   `json:"cwd"`
	SessionID         string   `json:"session_id"`
	Tools             []string `json:"tools"`
	MCPServers        []any    `json:"mcp_servers"`
	Model             string   `json:"model"`
	PermissionMode    string   `json:"permissionMode"`
	SlashCommands     []string `json:"slash_commands"`
	APIKeySource      string   `json:"apiKeySource"`
	ClaudeCodeVersion string   `json:"claude_code_version"`
	OutputStyle       string   `json:"output_style"`
	Agents            []string `json:"agents"`
	Skills            []string `json:"skills"`
	Plugins           []any    `json:"plugins"`
	UUID              string   `json:"uuid"`
	FastModeState     string   `json:"fast_mode_state"`
}

type assistantEvent struct {
	Type              string     `json:"type"`
	Message           apiMessage `json:"message"`
	ParentToolUseID   *string    `json:"parent_tool_use_id"`
	SessionID         string     `json:"session_id"`
	UUID              string     `json:"uuid"`
	Timestamp         string     `json:"timestamp"`
	Error             string     `json:"error,omitempty"`
	IsAPIErrorMessage bool       `json:"is_api_error_message,omitempty"`
	APIError          string     `json:"api_error,omitempty"`
}

type apiMessage struct {
	ID                string       `json:"id"`
	Type              string       `json:"type"`
	Role              string       `json:"role"`
	Model             string       `json:"model"`
	Content           []any        `json:"content"`
	StopReason        *string      `json:"stop_reason"`
	StopSequence      *string      `json:"stop_sequence"`
	Usage             messageUsage `json:"usage"`
	ContextManagement any          `json:"context_management"`
}

type messageUsage struct {
	InputTokens              int64  `json:"input_tokens"`
	CacheCreationInputTokens int64  `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64  `json:"cache_read_input_tokens"`
	OutputTokens             int64  `json:"output_tokens"`
	ServiceTier              string `json:"service_tier"`
}

type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type toolUseBlock struct {
	Type  string `json:"type"`
	ID    string `json:"id"`
	Name  string `json:"name"`
	Input any    `json:"input"`
}

// Tool inputs and structured outputs (tool_use_result), as in the real
// CLI's sdk-tools.d.ts.
type (
	writeInput struct {
		FilePath string `json:"file_path"`
		Content  string `json:"content"`
	}
	writeOutput struct {
		Type            string  `json:"type"` // "create" or "update"
		FilePath        string  `json:"filePath"`
		Content         string  `json:"content"`
		StructuredPatch []any   `json:"structuredPatch"`
		OriginalFile    *string `json:"originalFile"`
	}
	bashInput struct {
		Command     string `json:"command"`
		Description string `json:"description,omitempty"`
		Timeout     int    `json:"timeout,omitempty"`
	}
	bashOutput struct {
		Stdout      string `json:"stdout"`
		Stderr      string `json:"stderr"`
		Interrupted bool   `json:"interrupted"`
		IsImage     bool   `json:"isImage"`
	}
)

type userEvent struct {
	Type            string      `json:"type"`
	Message         userMessage `json:"message"`
	ParentToolUseID *string     `json:"parent_tool_use_id"`
	SessionID       string      `json:"session_id"`
	UUID            string      `json:"uuid"`
	Timestamp       string      `json:"timestamp"`
	ToolUseResult   any         `json:"tool_use_result,omitempty"`
}

type userMessage struct {
	Role    string            `json:"role"`
	Content []toolResultBlock `json:"content"`
}

type toolResultBlock struct {
	ToolUseID string `json:"tool_use_id"`
	Type      string `json:"type"`
	Content   string `json:"content"`
	IsError   bool   `json:"is_error,omitempty"`
}

type toolProgressEvent struct {
	Type               string  `json:"type"`
	ToolUseID          string  `json:"tool_use_id"`
	ToolName           string  `json:"tool_name"`
	ParentToolUseID    *string `json:"parent_tool_use_id"`
	ElapsedTimeSeconds int     `json:"elapsed_time_seconds"`
	SessionID          string  `json:"session_id"`
	UUID               string  `json:"uuid"`
}

type rateLimitEvent struct {
	Type          string        `json:"type"`
	RateLimitInfo rateLimitInfo `json:"rate_limit_info"`
	UUID          string        `json:"uuid"`
	SessionID     string        `json:"session_id"`
}

type rateLimitInfo struct {
	Status                string `json:"status"`
	ResetsAt              int64  `json:"resetsAt"`
	RateLimitType         string `json:"rateLimitType"`
	OverageStatus         string `json:"overageStatus,omitempty"`
	OverageDisabledReason string `json:"overageDisabledReason,omitempty"`
	IsUsingOverage        bool   `json:"isUsingOverage"`
}

// resultHead is how every result begins.
type resultHead struct {
	DurationAPIMS     int64                 `json:"duration_api_ms"`
	StopReason        *string               `json:"stop_reason"`
	SessionID         string                `json:"session_id"`
	TotalCostUSD      float64               `json:"total_cost_usd"`
	Usage             resultUsage           `json:"usage"`
	ModelUsage        map[string]modelUsage `json:"modelUsage"`
	PermissionDenials []any                 `json:"permission_denials"`
}

// resultTail is how every result ends.
type resultTail struct {
	Type       string `json:"type"`
	DurationMS int64  `json:"duration_ms"`
	UUID       string `json:"uuid"`
}

// successResult is a result with subtype "success", which Claude Code
// also prints, with is_error set, for a failed API request.
type successResult struct {
	resultHead
	TerminalReason string `json:"terminal_reason"`
	IsError        bool   `json:"is_error"`
	NumTurns       int    `json:"num_turns"`
	Subtype        string `json:"subtype"`
	APIErrorStatus *int   `json:"api_error_status"`
	APIError       string `json:"api_error,omitempty"`
	Result         string `json:"result"`
	resultTail
}

// errorResult is a result with an error subtype: errors instead of a
// result text.
type errorResult struct {
	resultHead
	TerminalReason string   `json:"terminal_reason,omitempty"`
	IsError        bool     `json:"is_error"`
	NumTurns       int      `json:"num_turns"`
	Subtype        string   `json:"subtype"`
	Errors         []string `json:"errors"`
	resultTail
}

type resultUsage struct {
	InputTokens              int64         `json:"input_tokens"`
	CacheCreationInputTokens int64         `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64         `json:"cache_read_input_tokens"`
	OutputTokens             int64         `json:"output_tokens"`
	ServerToolUse            serverToolUse `json:"server_tool_use"`
	ServiceTier              string        `json:"service_tier"`
	CacheCreation            cacheCreation `json:"cache_creation"`
}

type serverToolUse struct {
	WebSearchRequests int `json:"web_search_requests"`
	WebFetchRequests  int `json:"web_fetch_requests"`
}

type cacheCreation struct {
	Ephemeral1hInputTokens int64 `json:"ephemeral_1h_input_tokens"`
	Ephemeral5mInputTokens int64 `json:"ephemeral_5m_input_tokens"`
}

type modelUsage struct {
	InputTokens              int64   `json:"inputTokens"`
	OutputTokens             int64   `json:"outputTokens"`
	CacheReadInputTokens     int64   `json:"cacheReadInputTokens"`
	CacheCreationInputTokens int64   `json:"cacheCreationInputTokens"`
	WebSearchRequests        int     `json:"webSearchRequests"`
	CostUSD                  float64 `json:"costUSD"`
	ContextWindow            int     `json:"contextWindow"`
	MaxOutputTokens          int     `json:"maxOutputTokens"`
}

// emitter prints the events of one run in the chosen output format and
// keeps the run's accounting.
type emitter struct {
	out       io.Writer
	format    string // "text", "json" or "stream-json"
	sessionID string
	model     string
	start     time.Time
	turns     int    // assistant messages so far
	msgID     string // the current assistant message
}

// event prints v as one line of stream-json; other formats print only the
// result.
func (e *emitter) event(v any) {
	if e.format != "stream-json" {
		return
	}
	e.writeJSON(v)
}

func (e *emitter) writeJSON(v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // like JSON.stringify
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("encode %T: %v", v, err)) // the event types always encode
	}
	e.out.Write(buf.Bytes())
}

func (e *emitter) init(cwd, permissionMode string) {
	apiKeySource := "none"
	if os.Getenv("ANTHROPIC_API_KEY") != "" {
		apiKeySource = "ANTHROPIC_API_KEY"
	}
	e.event(initEvent{
		Type: "system", Subtype: "init", CWD: cwd, SessionID: e.sessionID,
		Tools: tools, MCPServers: []any{}, Model: e.model, PermissionMode: permissionMode,
		SlashCommands: []string{"compact", "context", "cost", "init", "review", "security-review"},
		APIKeySource:  apiKeySource, ClaudeCodeVersion: strings.Fields(version)[0], OutputStyle: "default",
		Agents: []string{"general-purpose", "Explore", "Plan"}, Skills: []string{}, Plugins: []any{},
		UUID: newUUID(), FastModeState: "off",
	})
}

// newTurn starts a new assistant message: the next blocks belong to it.
func (e *emitter) newTurn() {
	e.turns++
	e.msgID = "msg_01" + randomID(22)
}

// assistant prints one content block of the current assistant message as
// an event of its own, as Claude Code does.
func (e *emitter) assistant(block any, stop string) {
	var stopReason *string
	if stop != "" {
		stopReason = &stop
	}
	e.event(assistantEvent{
		Type: "assistant",
		Message: apiMessage{
			ID: e.msgID, Type: "message", Role: "assistant", Model: e.model,
			Content: []any{block}, StopReason: stopReason,
			Usage: messageUsage{InputTokens: 4, CacheCreationInputTokens: 512, CacheReadInputTokens: 14000, OutputTokens: 96, ServiceTier: "standard"},
		},
		SessionID: e.sessionID, UUID: newUUID(), Timestamp: timestamp(),
	})
}

func (e *emitter) text(text, stop string) {
	e.assistant(textBlock{Type: "text", Text: text}, stop)
}

// toolUse prints a tool call of the current message and returns its id.
func (e *emitter) toolUse(name string, input any) string {
	id := "toolu_01" + randomID(22)
	e.assistant(toolUseBlock{Type: "tool_use", ID: id, Name: name, Input: input}, "")
	return id
}

// toolResult prints the result of tool call id.
func (e *emitter) toolResult(id, content string, isError bool, structured any) {
	e.event(userEvent{
		Type: "user",
		Message: userMessage{Role: "user", Content: []toolResultBlock{
			{ToolUseID: id, Type: "tool_result", Content: content, IsError: isError},
		}},
		SessionID: e.sessionID, UUID: newUUID(), Timestamp: timestamp(), ToolUseResult: structured,
	})
}

func (e *emitter) toolProgress(id, tool string, elapsed time.Duration) {
	e.event(toolProgressEvent{
		Type: "tool_progress", ToolUseID: id, ToolName: tool,
		ElapsedTimeSeconds: int(elapsed / time.Second), SessionID: e.sessionID, UUID: newUUID(),
	})
}

// apiError prints the assistant message Claude Code makes up for a failed
// API request.
func (e *emitter) apiError(text, category, apiError string) {
	stop, seq := "stop_sequence", ""
	e.event(assistantEvent{
		Type: "assistant",
		Message: apiMessage{
			ID: newUUID(), Type: "message", Role: "assistant", Model: syntheticModel,
			Content: []any{textBlock{Type: "text", Text: text}}, StopReason: &stop, StopSequence: &seq,
		},
		SessionID: e.sessionID, UUID: newUUID(), Timestamp: timestamp(),
		Error: category, IsAPIErrorMessage: true, APIError: apiError,
	})
}

func (e *emitter) rateLimit(info rateLimitInfo) {
	e.event(rateLimitEvent{Type: "rate_limit_event", RateLimitInfo: info, UUID: newUUID(), SessionID: e.sessionID})
}

// outcome is how a run ends.
type outcome struct {
	subtype        string // "success", "error_max_turns", "error_during_execution"
	isError        bool
	text           string   // the result text of a success
	errors         []string // the errors of an error subtype
	costUSD        float64
	usage          usage
	numTurns       int
	stopReason     string
	terminalReason string
	apiErrorStatus int
	apiError       string
}

// result prints the result in every output format.
func (e *emitter) result(o outcome) {
	elapsed := time.Since(e.start)
	u := resultUsage{
		InputTokens: o.usage.InputTokens, CacheCreationInputTokens: o.usage.CacheCreationInputTokens,
		CacheReadInputTokens: o.usage.CacheReadInputTokens, OutputTokens: o.usage.OutputTokens,
		ServiceTier: "standard", CacheCreation: cacheCreation{Ephemeral5mInputTokens: o.usage.CacheCreationInputTokens},
	}
	models := map[string]modelUsage{}
	if o.usage != (usage{}) || o.costUSD != 0 {
		models[e.model] = modelUsage{
			InputTokens: o.usage.InputTokens, OutputTokens: o.usage.OutputTokens,
			CacheReadInputTokens: o.usage.CacheReadInputTokens, CacheCreationInputTokens: o.usage.CacheCreationInputTokens,
			CostUSD: o.costUSD, ContextWindow: 200000, MaxOutputTokens: 32000,
		}
	}
	var stop *string
	if o.stopReason != "" {
		stop = &o.stopReason
	}
	durationMS := elapsed.Milliseconds()
	apiMS := durationMS * 4 / 5
	head := resultHead{
		DurationAPIMS: apiMS, StopReason: stop, SessionID: e.sessionID, TotalCostUSD: o.costUSD,
		Usage: u, ModelUsage: models, PermissionDenials: []any{},
	}
	tail := resultTail{Type: "result", DurationMS: durationMS, UUID: newUUID()}
	var v any
	if o.subtype == "success" {
		var status *int
		if o.apiErrorStatus != 0 {
			status = &o.apiErrorStatus
		}
		v = successResult{
			resultHead: head, TerminalReason: o.terminalReason, IsError: o.isError, NumTurns: o.numTurns,
			Subtype: o.subtype, APIErrorStatus: status, APIError: o.apiError, Result: o.text, resultTail: tail,
		}
	} else {
		v = errorResult{
			resultHead: head, TerminalReason: o.terminalReason, IsError: o.isError, NumTurns: o.numTurns,
			Subtype: o.subtype, Errors: o.errors, resultTail: tail,
		}
	}
	switch e.format {
	case "stream-json", "json":
		e.writeJSON(v)
	default:
		text := o.text
		if o.subtype != "success" {
			text = "Error: " + strings.Join(o.errors, "\n")
		}
		fmt.Fprintln(e.out, text)
	}
}

// newUUID returns a random version 4 UUID.
func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

const idAlphabet = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz123456789"

// randomID returns n random characters of the alphabet of Anthropic's
// message and tool-use ids.
func randomID(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	for i := range b {
		b[i] = idAlphabet[int(b[i])%len(idAlphabet)]
	}
	return string(b)
}

// timestamp is now as JavaScript's toISOString writes it.
func timestamp() string {
	return time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
}

// localZone returns the IANA name of the local time zone and the zone
// itself, as the real CLI names it in reset times; UTC when unknown.
func localZone() (string, *time.Location) {
	name := strings.TrimPrefix(os.Getenv("TZ"), ":")
	if name == "" {
		if target, err := os.Readlink("/etc/localtime"); err == nil {
			if _, after, ok := strings.Cut(target, "zoneinfo/"); ok {
				name = after
			}
		}
	}
	if name == "" || filepath.IsAbs(name) {
		return "UTC", time.UTC
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return "UTC", time.UTC
	}
	return name, loc
}

// resetTime formats a reset time as Claude Code does: "7pm (Europe/London)",
// "3:30pm (UTC)", or "Aug 8, 7pm (UTC)" more than a day ahead.
func resetTime(t, now time.Time) string {
	name, loc := localZone()
	t = t.In(loc)
	clock := "3pm"
	if t.Minute() != 0 {
		clock = "3:04pm"
	}
	layout := clock
	if t.Sub(now) > 24*time.Hour {
		layout = "Jan 2, " + clock
		if t.Year() != now.In(loc).Year() {
			layout = "Jan 2, 2006, " + clock
		}
	}
	return fmt.Sprintf("%s (%s)", t.Format(layout), name)
}
