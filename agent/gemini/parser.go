package gemini

import (
	"cmp"
	"encoding/json"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/durable-ralph/ralph/internal/words"

	"github.com/durable-ralph/ralph/agent"
	"github.com/durable-ralph/ralph/contract"
)

// Types of the stream-json events of Gemini CLI 0.61.
const (
	typeInit       = "init"
	typeMessage    = "message"
	typeToolUse    = "tool_use"
	typeToolResult = "tool_result"
	typeError      = "error"
	typeResult     = "result"
)

// known are the event types the parser reads.
var known = map[string]bool{typeInit: true, typeMessage: true, typeToolUse: true, typeToolResult: true, typeError: true, typeResult: true}

// wireEvent is one line of stream-json, all event types in one.
type wireEvent struct {
	Type string `json:"type"`

	// init
	SessionID string `json:"session_id"`
	Model     string `json:"model"`

	// message
	Role    string `json:"role"`
	Content string `json:"content"`
	Delta   bool   `json:"delta"`

	// tool_use
	ToolName   string          `json:"tool_name"`
	ToolID     string          `json:"tool_id"`
	Parameters json.RawMessage `json:"parameters"`

	// tool_result, result: "success" or "error"
	Status string `json:"status"`

	// error
	Severity string `json:"severity"`
	Message  string `json:"message"`

	// tool_result, result
	Error *wireError `json:"error"`

	// result
	Stats *wireStats `json:"stats"`
}

type wireError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// wireStats are the token counts of a result. InputTokens is the
// prompt, cached tokens included; Input is the prompt less the cached
// tokens; OutputTokens is the candidates, without thinking tokens, which
// only TotalTokens counts.
type wireStats struct {
	wireTokens
	DurationMS int64                 `json:"duration_ms"`
	ToolCalls  int                   `json:"tool_calls"`
	Models     map[string]wireTokens `json:"models"`
}

type wireTokens struct {
	TotalTokens  int64  `json:"total_tokens"`
	InputTokens  int64  `json:"input_tokens"`
	OutputTokens int64  `json:"output_tokens"`
	Cached       int64  `json:"cached"`
	Input        *int64 `json:"input"`
}

// usage is the agent.Usage of t. Output tokens are what the API bills
// as output: the total less the prompt, so thinking tokens count.
func (t wireTokens) usage() contract.Usage {
	in := t.InputTokens - t.Cached
	if t.Input != nil {
		in = *t.Input
	}
	out := t.OutputTokens
	if billed := t.TotalTokens - t.InputTokens; billed > out {
		out = billed
	}
	return contract.Usage{
		InputTokens:          max(in, 0),
		OutputTokens:         max(out, 0),
		CacheReadInputTokens: max(t.Cached, 0),
	}
}

// Parser reads the stream-json of one Gemini CLI run and keeps its
// agent.Summary. It is not safe for concurrent use.
type Parser struct {
	// Stream holds the Summary so far and the messages of error events.
	agent.Stream
	// model is the model asked for; prices prices the tokens.
	model  string
	prices contract.Prices

	// text is the assistant message being streamed; talking says one is.
	text    boundedText
	talking bool
	// inTurn says the model's turn is under way: it spoke or called a
	// tool since the last tool result or user message.
	inTurn bool

	// result is the status of the result event, "" before it; stats its
	// token counts.
	result string
	stats  *wireStats
	// resultError is the error of the result: the CLI's own words,
	// never the model's.
	resultError string
}

// Line parses one line of stream-json. Blank lines are skipped; a line
// that is not a JSON object with a type is an error wrapping
// agent.ErrInvalidLine.
//
// The model's text arrives in delta chunks; the Event of the line that
// ends a message (a tool call, the result, ...) says the whole message.
func (p *Parser) Line(line []byte) (agent.Event, error) {
	return agent.ParseLine(&p.Sum, line, p.event)
}

// event reads one event of stream-json.
func (p *Parser) event(w wireEvent) agent.Event {
	var ev agent.Event
	if known[w.Type] && !(w.Type == typeMessage && w.Role == "assistant") {
		ev.Says = p.endMessage()
	}
	switch w.Type {
	case typeInit:
		agent.SetID(&p.Sum.SessionID, w.SessionID)
		agent.SetID(&p.Sum.Model, w.Model)
	case typeMessage:
		if w.Role != "assistant" {
			p.inTurn = false
			break
		}
		p.startTurn()
		if !p.talking || !w.Delta {
			p.text = boundedText{}
			p.talking = true
		}
		p.text.write(w.Content)
		if !w.Delta {
			ev.Says = p.endMessage()
		}
	case typeToolUse:
		p.startTurn()
		ev.Tool = p.Sum.UseTool(w.ToolName)
		ev.ToolSubject = toolSubject(w.Parameters)
	case typeToolResult:
		p.inTurn = false
	case typeError:
		msg := strings.TrimSpace(w.Message)
		p.addError(msg)
		ev.Error = words.Cut(msg, agent.MaxTextLen)
		if w.Severity == "warning" {
			ev.Error = words.Cut("warning: "+msg, agent.MaxTextLen)
		}
	case typeResult:
		p.result = w.Status
		if w.Stats != nil {
			p.stats = w.Stats
		}
		if w.Error != nil {
			p.resultError = words.Cut(strings.TrimSpace(w.Error.Message), agent.MaxTextLen)
		}
		if w.Status != "success" {
			ev.Error = cmp.Or(p.resultError, "the Gemini CLI ended with status "+words.Cut(w.Status, agent.MaxIDLen))
		}
	default:
		p.Sum.UnknownEvents++
	}
	return ev
}

// startTurn counts a turn of the model when it starts one.
func (p *Parser) startTurn() {
	if !p.inTurn {
		p.inTurn = true
		p.Sum.Turns++
	}
}

// endMessage ends the assistant message being streamed, which becomes
// the final text, and returns what it says.
func (p *Parser) endMessage() string {
	if !p.talking {
		return ""
	}
	p.talking = false
	p.Sum.FinalText = p.text.String()
	return words.Cut(strings.TrimSpace(p.Sum.FinalText), agent.MaxTextLen)
}

// addError keeps msg, the message of an error event, unless it is empty.
func (p *Parser) addError(msg string) {
	if msg != "" {
		p.Errors.Add(words.Cut(msg, agent.MaxTextLen))
	}
}

// Summary is what the parser learned so far. Usage is that of the result
// event, priced per model with the prices of the parser's options.
func (p *Parser) Summary() agent.Summary {
	s := p.Sum
	if p.talking {
		s.FinalText = p.text.String()
	}
	if p.stats == nil {
		s.CostNote = "cost unknown: the Gemini CLI printed no result with token counts"
		return s
	}
	s.Usage = p.stats.usage()
	if main := mainModel(p.stats.Models); main != "" && (s.Model == "" || isAlias(s.Model)) {
		s.Model = words.Cut(main, agent.MaxIDLen)
	}
	s.CostUSD, s.CostKnown, s.CostNote = p.cost(s.Model)
	return s
}

// cost prices the result's tokens: per model when the result counts them
// per model, else all of them at the price of model.
func (p *Parser) cost(model string) (float64, bool, string) {
	prices := p.prices
	if prices == nil {
		prices = agent.DefaultPrices
	}
	if len(p.stats.Models) == 0 {
		if model == "" || isAlias(model) {
			model = p.model
		}
		return prices.Cost(priceName(model), p.stats.usage())
	}
	total := 0.0
	for _, m := range sortedModels(p.stats.Models) {
		t := p.stats.Models[m]
		if t.TotalTokens == 0 && t.InputTokens == 0 && t.OutputTokens == 0 {
			continue
		}
		c, ok, note := prices.Cost(priceName(m), t.usage())
		if !ok {
			return 0, false, note
		}
		total += c
	}
	return total, true, ""
}

// usage is the Usage of the whole run: the sum over the models when the
// result counts tokens per model.
func (s *wireStats) usage() contract.Usage {
	if len(s.Models) == 0 {
		return s.wireTokens.usage()
	}
	var u contract.Usage
	for _, t := range s.Models {
		u = u.Add(t.usage())
	}
	return u
}

// mainModel is the model that used the most tokens: the one of the
// conversation, not of the CLI's side requests (routing, checks).
func mainModel(models map[string]wireTokens) string {
	best, most := "", int64(-1)
	for _, m := range sortedModels(models) {
		if t := models[m].TotalTokens; t > most {
			best, most = m, t
		}
	}
	return best
}

func sortedModels(models map[string]wireTokens) []string {
	names := make([]string, 0, len(models))
	for m := range models {
		names = append(names, m)
	}
	sort.Strings(names)
	return names
}

// isAlias reports whether model names no model but a choice the CLI
// makes ("auto", "auto-gemini-3", "pro", "flash").
func isAlias(model string) bool {
	m := strings.ToLower(model)
	return strings.HasPrefix(m, "auto") || m == "pro" || m == "flash" || m == "flash-lite"
}

// priceName is model as prices name it, without an API path prefix.
func priceName(model string) string {
	return strings.TrimPrefix(model, "models/")
}

// toolSubject is what a tool call works on, on one short line: the
// command, the file, the pattern, the URL, the query; else the first
// string parameter.
func toolSubject(raw json.RawMessage) string {
	var params map[string]any
	if json.Unmarshal(raw, &params) != nil {
		return ""
	}
	for _, key := range []string{"command", "file_path", "absolute_path", "pattern", "url", "query", "dir_path", "path", "prompt", "name"} {
		if s, ok := params[key].(string); ok && strings.TrimSpace(s) != "" {
			return firstLine(s)
		}
	}
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if s, ok := params[k].(string); ok && strings.TrimSpace(s) != "" {
			return firstLine(s)
		}
	}
	return ""
}

// firstLine is the first non-blank line of s, cut to
// agent.MaxSubjectLen.
func firstLine(s string) string {
	for l := range strings.Lines(s) {
		if l = strings.TrimSpace(l); l != "" {
			return words.Cut(l, agent.MaxSubjectLen)
		}
	}
	return ""
}

// boundedText is a text written in pieces that keeps at most agent.MaxTextLen
// bytes of it: its beginning and its end.
type boundedText struct {
	head, tail []byte
	n          int // bytes written
}

func (b *boundedText) write(s string) {
	b.n += len(s)
	if room := agent.MaxTextLen/2 - len(b.head); room > 0 {
		take := min(room, len(s))
		b.head = append(b.head, s[:take]...)
		s = s[take:]
	}
	b.tail = append(b.tail, s...)
	if len(b.tail) > 2*agent.MaxTextLen {
		b.tail = append(b.tail[:0], b.tail[len(b.tail)-agent.MaxTextLen:]...)
	}
}

// String is the text if it fits in agent.MaxTextLen bytes, else its beginning
// and its end joined by an ellipsis.
func (b *boundedText) String() string {
	if b.n <= agent.MaxTextLen {
		return strings.ToValidUTF8(string(b.head)+string(b.tail), "")
	}
	const ellipsis = " … "
	head := b.head
	for len(head) > 0 && !utf8.FullRune(head[lastRuneStart(head):]) {
		head = head[:lastRuneStart(head)]
	}
	keep := agent.MaxTextLen - len(head) - len(ellipsis)
	tail := b.tail[max(len(b.tail)-keep, 0):]
	for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
		tail = tail[1:]
	}
	return strings.ToValidUTF8(string(head)+ellipsis+string(tail), "")
}

// lastRuneStart is the index of the start of the last rune of b.
func lastRuneStart(b []byte) int {
	i := len(b) - 1
	for i > 0 && !utf8.RuneStart(b[i]) {
		i--
	}
	return max(i, 0)
}
