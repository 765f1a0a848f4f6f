package activities

import (
	"strings"
	"time"

	"github.com/durable-ralph/ralph/internal/termtext"
	"github.com/durable-ralph/ralph/internal/words"

	"github.com/durable-ralph/ralph/agent"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/redact"
)

// liveLog keeps the last LiveLimit events of a running agent for its
// heartbeats. It is not safe for concurrent use.
type liveLog struct {
	redact *redact.Redactor
	// dir is the workspace: paths in it are shown relative to it.
	dir    string
	seq    int
	events []contract.LiveEvent
}

// add records what ev shows a person: an error the agent reported, a
// message, a tool call.
func (l *liveLog) add(ev agent.Event, now time.Time) {
	if t := strings.TrimSpace(ev.Error); t != "" {
		l.push(contract.LiveEvent{At: now, Kind: contract.LiveError, Text: t})
	}
	if t := strings.TrimSpace(ev.Says); t != "" {
		l.push(contract.LiveEvent{At: now, Kind: contract.LiveSays, Text: t})
	}
	if ev.Tool != "" {
		subject := ev.ToolSubject
		if l.dir != "" {
			subject = strings.TrimPrefix(subject, strings.TrimSuffix(l.dir, "/")+"/")
		}
		l.push(contract.LiveEvent{At: now, Kind: contract.LiveTool, Name: ev.Tool, Text: subject})
	}
}

func (l *liveLog) push(e contract.LiveEvent) {
	l.seq++
	e.Seq = l.seq
	e.Name = liveText(l.redact.String(e.Name), 64)
	e.Text = liveText(l.redact.String(e.Text), contract.LiveTextLimit)
	l.events = append(l.events, e)
	if n := len(l.events); n > contract.LiveLimit {
		l.events = append(l.events[:0], l.events[n-contract.LiveLimit:]...)
	}
}

// snapshot is a copy of the kept events.
func (l *liveLog) snapshot() []contract.LiveEvent {
	if len(l.events) == 0 {
		return nil
	}
	return append([]contract.LiveEvent(nil), l.events...)
}

// liveText is s without terminal control sequences, control and format
// characters (termtext), folded onto one line (white space runs become
// one space) and cut to max bytes, ending in "…".
func liveText(s string, max int) string {
	return words.Clip(termtext.String(s), max)
}

// tail is events as Lines.
func tail(start time.Time, events []contract.LiveEvent) []string {
	if len(events) == 0 {
		return nil
	}
	lines := make([]string, len(events))
	for i, e := range events {
		lines[i] = e.Line(start)
	}
	return lines
}
