// Package agent is what Ralph knows of a coding agent CLI whatever its
// kind: the Backend seam each kind of agent implements (its command line,
// the parser of its output, the classifier of how a run ended), and the
// neutral summary, outcome and usage of a run that the rest of Ralph reads.
//
// The backends live in packages of their own (agent/claude,
// agent/codex, agent/gemini, agent/command); the
// activities package picks one by name.
package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/durable-ralph/ralph/internal/words"

	"github.com/durable-ralph/ralph/contract"
)

// Backend is one kind of coding agent CLI.
type Backend interface {
	// Name is the agent.backend value that selects the backend.
	Name() string
	// Args is the command line of one run, after the binary and the
	// arguments configured before ours: a fresh run when resume is
	// empty, else a run that continues the agent's own session resume.
	// The prompt reaches the agent on its standard input.
	Args(o Options, resume string) []string
	// Env is what the backend adds to the agent's environment, as
	// KEY=value; nil for nothing.
	Env(o Options) []string
	// NewParser returns a parser for the output of one run.
	NewParser(o Options) Parser
}

// Installer is implemented by a Backend whose CLI installs the same way
// everywhere: Install names the CLI and says how to install it, for a
// person whose worker lacks it ("Codex: npm install -g @openai/codex").
type Installer interface {
	Install() string
}

// Sandboxed is implemented by a Backend whose CLI keeps configuration
// and state of its own and talks to a model API: a contained run gets the
// one read-write and may reach the other. getenv reads the run's
// environment.
type Sandboxed interface {
	// State are the CLI's directories (dirs, created when missing, so
	// that a session resumed in a later run finds its state) and files,
	// under home or where getenv says.
	State(home string, getenv func(string) string) (dirs, files []string)
	// APIHosts are the model API's hosts, host or host:port, as getenv
	// points the CLI at them.
	APIHosts(getenv func(string) string) []string
}

// HostOf is the host:port of the URL u, or host alone when u names no
// port; "" when u is not a URL with a host.
func HostOf(u string) string {
	rest, ok := strings.CutPrefix(u, "https://")
	if !ok {
		if rest, ok = strings.CutPrefix(u, "http://"); !ok {
			return ""
		}
	}
	host, _, _ := strings.Cut(rest, "/")
	if i := strings.LastIndex(host, "@"); i >= 0 {
		host = host[i+1:]
	}
	return host
}

// Finisher is implemented by a Backend whose stream ends in an event
// that says the run finished (a result, a completed turn): a saved stream
// that its parser reads as a success, with no exit status to go by, is a
// run that finished. The output of other backends cannot say so.
type Finisher interface {
	StreamSaysFinished() bool
}

// SessionUsage is implemented by a Backend whose resumed run reports the
// usage of the agent's whole session, the runs it continues included
// (Codex reports the thread's running total). A resumed run's usage then
// replaces, rather than adds to, what the runs before it reported.
type SessionUsage interface {
	ResumedUsageIsSessionTotal() bool
}

// Parser reads the standard output of one agent run, one line at a time,
// and keeps a running Summary. It is not safe for concurrent use.
type Parser interface {
	// Line parses one line, with or without its line end. An error says
	// the line was not what the backend prints (it is counted in
	// Summary.InvalidLines and the caller goes on).
	Line(line []byte) (Event, error)
	// Oversized records a line the caller dropped as too long to parse.
	Oversized()
	// Summary is what the parser learned so far.
	Summary() Summary
	// Verdict classifies the finished run from its output, the error its
	// process exited with (nil, an *exec.ExitError, or the error of
	// starting or reading it), the tail of its stderr, and now (which
	// resolves reset times such as "resets 7pm").
	Verdict(exitErr error, stderrTail string, now time.Time) Verdict
	// ResumeFailed reports that a run started to resume a session ended
	// because the agent had no such session, so a fresh run must follow.
	// It is asked after Verdict, which may have learned it from stderr.
	ResumeFailed() bool
}

// Options are the settings of one agent run that a backend reads.
type Options struct {
	// Model is the model to ask for; empty means the agent's default.
	Model string
	// MaxTurns bounds the agent's turns when positive and the agent has
	// such a bound.
	MaxTurns int
	// ExtraArgs are appended to the command line.
	ExtraArgs []string
	// Prices are the prices per model for backends whose agent reports
	// tokens but no cost.
	Prices contract.Prices
}

// Event is what one line of an agent's output shows a person. Several
// fields may be set (a message that also calls a tool); a zero Event
// shows nothing.
type Event struct {
	// Says is text the agent wrote to the user.
	Says string
	// Tool names a tool the agent called, ToolSubject what it works on
	// (a command, a file, a pattern) on one short line.
	Tool        string
	ToolSubject string
	// Error is an error the agent reported (an API error, a failed turn).
	Error string
}

// Summary is the neutral record of one agent run so far. Its texts are
// bounded, whatever the agent prints.
type Summary struct {
	// SessionID is the agent's own session (conversation, thread), which
	// a later run may resume.
	SessionID string
	Model     string

	Lines

	// Turns counts the model's turns (replies), as the agent counts them.
	Turns int
	// ToolUses counts tool calls; LastTool names the latest.
	ToolUses int
	LastTool string

	// FinalText is the agent's last word: the text in which a completion
	// promise or a checkpoint tag counts.
	FinalText string

	// Usage is the tokens the run used, as far as the agent reported them.
	Usage contract.Usage
	// CostUSD is what the run cost; CostKnown says whether it is known
	// (the agent reported it, or it was priced from tokens). A backend
	// that cannot price its model leaves CostKnown false and CostNote
	// says why.
	CostUSD   float64
	CostKnown bool
	CostNote  string
}

// Sane is s with a cost and token counts that can be added to a total:
// a negative, infinite or NaN cost is 0 (not known), a negative count
// 0. What the agent's stream says is the agent's to write.
func (s Summary) Sane() Summary {
	if s.CostUSD < 0 || math.IsNaN(s.CostUSD) || math.IsInf(s.CostUSD, 0) {
		s.CostUSD, s.CostKnown = 0, false
		if s.CostNote == "" {
			s.CostNote = "the agent reported a cost that is not a cost"
		}
	}
	s.Usage = s.Usage.NonNegative()
	return s
}

// Lines counts what a parser made of the lines of an agent's output.
type Lines struct {
	// Events counts the lines that were events of the agent's format.
	Events int
	// InvalidLines counts the lines that were not; FirstInvalidLine is
	// an excerpt of the first one.
	InvalidLines     int
	FirstInvalidLine string
	// OversizedLines counts the lines dropped as too long to parse.
	OversizedLines int
	// UnknownEvents counts events of a type the parser does not read.
	UnknownEvents int
}

// Verdict is how one agent run ended.
type Verdict struct {
	Outcome contract.Outcome
	// Reason explains the outcome in one line; empty for a success.
	Reason string
	// ResetsAt is when a rate limit lifts, for OutcomeRateLimited; zero
	// when the agent did not say.
	ResetsAt time.Time
}

// ErrInvalidLine is returned, wrapped, by Parser.Line for a line that is
// not an event of the agent's format.
var ErrInvalidLine = errors.New("not an event of the agent's output format")

// ExcerptLen bounds the excerpt of an invalid line a Summary keeps.
const ExcerptLen = 200

// JSONLine begins the parsing of one line of a JSON-lines stream: it
// trims the line and reads its "type". A blank line gives "" and no
// error. A line that is not a JSON object with a type is counted in
// l.InvalidLines (the first kept as an excerpt) and reported by an error
// wrapping ErrInvalidLine; any other is counted in l.Events.
func (l *Lines) JSONLine(line []byte) (typ string, trimmed []byte, err error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return "", nil, nil
	}
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(line, &head); err != nil || head.Type == "" {
		l.InvalidLines++
		excerpt := words.Cut(strings.ToValidUTF8(string(line), "?"), ExcerptLen)
		if l.FirstInvalidLine == "" {
			l.FirstInvalidLine = excerpt
		}
		return "", nil, fmt.Errorf("%w: %q", ErrInvalidLine, excerpt)
	}
	l.Events++
	return head.Type, line, nil
}
