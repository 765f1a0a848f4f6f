package activities

import (
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/durable-ralph/ralph/activities/agent"
	"github.com/durable-ralph/ralph/activities/redact"
)

// liveLog keeps the last LiveLimit events of a running agent for its
// heartbeats. It is not safe for concurrent use.
type liveLog struct {
	redact *redact.Redactor
	// dir is the workspace: paths in it are shown relative to it.
	dir    string
	seq    int
	events []LiveEvent
}

// add records what ev shows a person: an error the agent reported, a
// message, a tool call.
func (l *liveLog) add(ev agent.Event, now time.Time) {
	if t := strings.TrimSpace(ev.Error); t != "" {
		l.push(LiveEvent{At: now, Kind: LiveError, Text: t})
	}
	if t := strings.TrimSpace(ev.Says); t != "" {
		l.push(LiveEvent{At: now, Kind: LiveSays, Text: t})
	}
	if ev.Tool != "" {
		subject := ev.ToolSubject
		if l.dir != "" {
			subject = strings.TrimPrefix(subject, strings.TrimSuffix(l.dir, "/")+"/")
		}
		l.push(LiveEvent{At: now, Kind: LiveTool, Name: ev.Tool, Text: subject})
	}
}

func (l *liveLog) push(e LiveEvent) {
	l.seq++
	e.Seq = l.seq
	e.Name = liveText(l.redact.String(e.Name), 64)
	e.Text = liveText(l.redact.String(e.Text), LiveTextLimit)
	l.events = append(l.events, e)
	if n := len(l.events); n > LiveLimit {
		l.events = append(l.events[:0], l.events[n-LiveLimit:]...)
	}
}

// snapshot is a copy of the kept events.
func (l *liveLog) snapshot() []LiveEvent {
	if len(l.events) == 0 {
		return nil
	}
	return append([]LiveEvent(nil), l.events...)
}

// liveText folds s onto one line (white space runs become one space,
// control and format characters go) and cuts it to max bytes, ending in
// "…".
func liveText(s string, max int) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		switch {
		case unicode.IsSpace(r):
			space = b.Len() > 0
			continue
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
		if b.Len() > max {
			break
		}
	}
	return agent.Cut(b.String(), max)
}

// Line is how e reads for a person: the time since start, then the tool
// and its subject, the message or the error.
func (e LiveEvent) Line(start time.Time) string {
	at := Elapsed(start, e.At)
	switch e.Kind {
	case LiveSays:
		return fmt.Sprintf("%s ▸ says  %q", at, e.Text)
	case LiveError:
		return fmt.Sprintf("%s ▸ error %s", at, e.Text)
	}
	return strings.TrimRight(fmt.Sprintf("%s ▸ %-5s %s", at, e.Name, e.Text), " ")
}

// Elapsed is the time from start to at as m:ss, or h:mm:ss.
func Elapsed(start, at time.Time) string {
	d := at.Sub(start)
	if start.IsZero() || d < 0 {
		d = 0
	}
	s := int(d / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// tail is events as Lines.
func tail(start time.Time, events []LiveEvent) []string {
	if len(events) == 0 {
		return nil
	}
	lines := make([]string, len(events))
	for i, e := range events {
		lines[i] = e.Line(start)
	}
	return lines
}
