// Package command is the generic backend: any command line that reads a
// prompt on its standard input and writes plain text. Ralph looks for the
// completion promise in that text; the agent has no session to resume and
// reports no cost.
package command

import (
	"regexp"
	"strings"
	"time"

	"github.com/durable-ralph/ralph/internal/words"

	"github.com/durable-ralph/ralph/agent"
	"github.com/durable-ralph/ralph/contract"
)

// finalLimit bounds Summary.FinalText: the end of the output, where a
// conclusion and a completion promise are.
const finalLimit = 8 << 10

// Backend runs agent.command as it is, the prompt on its stdin.
type Backend struct{}

// Name is "command".
func (Backend) Name() string { return "command" }

// Args is the configured extra arguments: the command has no flags of
// ours, and no session to resume.
func (Backend) Args(o agent.Options, _ string) []string {
	return append([]string(nil), o.ExtraArgs...)
}

// Env adds nothing.
func (Backend) Env(agent.Options) []string { return nil }

// NewParser returns a parser of plain text.
func (Backend) NewParser(agent.Options) agent.Parser { return &parser{} }

// parser takes every line for text the agent says.
type parser struct {
	agent.Stream
	// final is the end of the output, at most finalLimit bytes.
	final []byte
}

func (p *parser) Line(line []byte) (agent.Event, error) {
	p.Sum.Events++
	p.final = append(p.final, line...)
	p.final = append(p.final, '\n')
	if n := len(p.final); n > finalLimit {
		p.final = append(p.final[:0], p.final[n-finalLimit:]...)
	}
	text := strings.TrimSpace(string(line))
	if text == "" {
		return agent.Event{}, nil
	}
	return agent.Event{Says: words.Cut(text, agent.MaxTextLen)}, nil
}

func (p *parser) Summary() agent.Summary {
	s := p.Sum
	s.FinalText = strings.ToValidUTF8(strings.TrimSpace(string(p.final)), "")
	s.CostNote = "cost unknown: the command backend reports no cost"
	return s
}

// throttled matches what a CLI says on stderr when an API refused it for
// a rate or usage limit.
var throttled = regexp.MustCompile(`(?i)\b(429|rate[ -]?limit(ed)?|too many requests|usage limit|quota exceeded|resource[_ ]exhausted)\b`)

// Verdict is success when the command exited 0. A failed command whose
// stderr speaks of a rate limit is rate limited; one that could not be
// started failed for good; any other failure is an agent error. Only
// stderr is read: the text on stdout is the agent's own.
func (p *parser) Verdict(exitErr error, stderrTail string, _ time.Time) agent.Verdict {
	if exitErr == nil {
		return agent.Verdict{Outcome: contract.OutcomeSuccess}
	}
	if agent.NotStarted(exitErr) {
		return agent.Verdict{Outcome: contract.OutcomePermanent, Reason: "agent could not be started: " + exitErr.Error()}
	}
	last := agent.LastLine(stderrTail)
	if throttled.MatchString(stderrTail) {
		return agent.Verdict{Outcome: contract.OutcomeRateLimited, Reason: words.Cut("rate limited: "+last, agent.MaxReasonLen)}
	}
	reason := "agent " + agent.ExitPhrase(exitErr)
	if last != "" {
		reason += ": " + last
	}
	return agent.Verdict{Outcome: contract.OutcomeAgentError, Reason: words.Cut(reason, agent.MaxReasonLen)}
}

// ResumeFailed is false: a command is never resumed.
func (p *parser) ResumeFailed() bool { return false }
