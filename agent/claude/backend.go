package claude

import (
	"cmp"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/durable-ralph/ralph/agent"
)

// Backend runs Claude Code: claude -p --output-format stream-json
// --verbose, resumed with --resume.
type Backend struct{}

// Name is "claude".
func (Backend) Name() string { return "claude" }

// StreamSaysFinished: the stream ends in its final event (agent.Finisher).
func (Backend) StreamSaysFinished() bool { return true }

// Install says how to install Claude Code (its npm package).
func (Backend) Install() string { return "Claude Code: npm install -g @anthropic-ai/claude-code" }

// Args is the command line of one run.
func (Backend) Args(o agent.Options, resume string) []string {
	args := []string{"-p", "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions"}
	if o.Model != "" {
		args = append(args, "--model", o.Model)
	}
	if o.MaxTurns > 0 {
		args = append(args, "--max-turns", fmt.Sprint(o.MaxTurns))
	}
	args = append(args, o.ExtraArgs...)
	if resume != "" {
		args = append(args, "--resume", resume)
	}
	return args
}

// Env adds nothing: Claude Code reads its settings and credentials from
// the worker's environment.
func (Backend) Env(agent.Options) []string { return nil }

// State are Claude Code's ~/.claude (or $CLAUDE_CONFIG_DIR) and
// ~/.claude.json: its settings, credentials and the sessions a resumed
// run continues.
func (Backend) State(home string, getenv func(string) string) (dirs, files []string) {
	if d := getenv("CLAUDE_CONFIG_DIR"); filepath.IsAbs(d) {
		return []string{d}, nil
	}
	return []string{filepath.Join(home, ".claude")}, []string{filepath.Join(home, ".claude.json")}
}

// APIHosts is the host of $ANTHROPIC_BASE_URL, else api.anthropic.com.
func (Backend) APIHosts(getenv func(string) string) []string {
	if h := agent.HostOf(getenv("ANTHROPIC_BASE_URL")); h != "" {
		return []string{h}
	}
	return []string{"api.anthropic.com"}
}

// NewParser returns a parser of Claude Code's stream-json.
func (Backend) NewParser(agent.Options) agent.Parser { return &backendParser{p: NewParser()} }

// backendParser is Parser behind the agent.Parser seam.
type backendParser struct{ p *Parser }

func (b *backendParser) Line(line []byte) (agent.Event, error) {
	ev, err := b.p.Line(line)
	if err != nil || ev.Subagent {
		return agent.Event{}, err
	}
	switch {
	case ev.Type != TypeAssistant:
		return agent.Event{}, nil
	case ev.APIError != "":
		return agent.Event{Error: cmp.Or(ev.Text, ev.APIError)}, nil
	}
	out := agent.Event{Says: strings.TrimSpace(ev.Text)}
	if ev.ToolUses > 0 {
		out.Tool, out.ToolSubject = ev.ToolName, ev.ToolSubject
	}
	return out, nil
}

func (b *backendParser) Oversized() { b.p.Oversized() }

// Summary is the neutral summary: Claude Code reports its cost itself,
// in its result event.
func (b *backendParser) Summary() agent.Summary {
	s := b.p.Summary()
	final := s.ResultText
	if final == "" {
		final = s.LastText
	}
	turns := s.Turns
	if s.NumTurns > 0 {
		turns = s.NumTurns
	}
	return agent.Summary{
		SessionID: s.SessionID,
		Model:     s.Model,
		Lines:     s.Lines,
		Turns:     turns,
		ToolUses:  s.ToolUses,
		LastTool:  s.LastTool,
		FinalText: final,
		Usage:     s.Usage,
		CostUSD:   s.CostUSD,
		// Claude Code reports its cost in its result event; a run
		// that died before it has cost nothing Ralph can know of.
		CostKnown: true,
	}
}

func (b *backendParser) Verdict(exitErr error, stderrTail string, now time.Time) agent.Verdict {
	return Classify(b.p.Summary(), exitErr, stderrTail, now)
}

// ResumeFailed reports Claude Code's answer to --resume of a session it
// does not have.
func (b *backendParser) ResumeFailed() bool {
	s := b.p.Summary()
	return s.IsError && strings.Contains(s.ResultText, "No conversation found")
}
