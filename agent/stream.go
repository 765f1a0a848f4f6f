package agent

import (
	"encoding/json"

	"github.com/durable-ralph/ralph/internal/words"
)

// Bounds of what the parsers of JSON-lines streams keep, in bytes.
const (
	// MaxTextLen bounds every text a Summary or an Event keeps.
	MaxTextLen = 4 << 10
	// MaxIDLen bounds identifiers: session id, model, tool name.
	MaxIDLen = 256
	// MaxSubjectLen bounds Event.ToolSubject.
	MaxSubjectLen = 200
)

// Stream is what a parser of an agent's output keeps whatever the
// backend: the Summary so far and the latest messages of the CLI's error
// events. The backend's parser embeds it.
type Stream struct {
	// Sum is the Summary so far, before what the backend adds when asked
	// for it (usage, cost, model).
	Sum Summary
	// Errors are the latest messages of the CLI's error events: its own
	// words, never the model's.
	Errors Recent
	// NoSession says the run, started to resume a session, ended because
	// the agent had no such session (see Parser.ResumeFailed).
	NoSession bool
}

// Oversized records a line the caller dropped as too long to parse.
func (st *Stream) Oversized() { st.Sum.OversizedLines++ }

// decodeLine parses one line of a JSON-lines stream into the wire event W
// of a backend's format, after JSONLine has read its type. ok is false for
// a blank line, for an invalid one (err says why), and for an event of a
// shape W does not decode, which is counted in s.UnknownEvents as an event
// of a shape the agent's version does not print.
func decodeLine[W any](s *Summary, line []byte) (w W, ok bool, err error) {
	typ, line, err := s.JSONLine(line)
	if typ == "" {
		return w, false, err
	}
	if err := json.Unmarshal(line, &w); err != nil {
		s.UnknownEvents++
		return w, false, nil
	}
	return w, true, nil
}

// ParseLine parses one line of a JSON-lines stream into the wire event W
// with decodeLine and returns the Event that event makes of it; a line
// decodeLine decodes no event of shows nothing.
func ParseLine[W any](s *Summary, line []byte, event func(W) Event) (Event, error) {
	w, ok, err := decodeLine[W](s, line)
	if !ok {
		return Event{}, err
	}
	return event(w), nil
}

// SetID sets *dst to id cut to MaxIDLen, unless id is empty.
func SetID(dst *string, id string) {
	if id != "" {
		*dst = words.Cut(id, MaxIDLen)
	}
}

// UseTool counts a call of the tool name in s and returns the name cut to
// MaxIDLen, as LastTool keeps it.
func (s *Summary) UseTool(name string) string {
	s.ToolUses++
	s.LastTool = words.Cut(name, MaxIDLen)
	return s.LastTool
}

// MaxErrors is how many messages of an agent CLI's error events a Recent
// keeps for its Verdict.
const MaxErrors = 8

// Recent are the latest messages of an agent CLI's error events, oldest
// first, at most MaxErrors of them.
type Recent []string

// Add keeps msg, dropping the oldest message when there are too many.
func (r *Recent) Add(msg string) {
	if len(*r) == MaxErrors {
		*r = append((*r)[:0], (*r)[1:]...)
	}
	*r = append(*r, msg)
}

// Latest is the latest message, "" if there is none.
func (r Recent) Latest() string {
	if len(r) == 0 {
		return ""
	}
	return r[len(r)-1]
}

// NewestFirst are the messages, the latest first.
func (r Recent) NewestFirst() []string {
	out := make([]string, 0, len(r))
	for i := len(r) - 1; i >= 0; i-- {
		out = append(out, r[i])
	}
	return out
}
