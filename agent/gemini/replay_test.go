package gemini

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/agent"
	"github.com/durable-ralph/ralph/agent/agenttest"
)

// replay feeds the recorded stdout testdata/name.jsonl to a new parser and
// returns it with the events that show something.
func replay(t *testing.T, name string, o agent.Options) (*Parser, []agent.Event) {
	t.Helper()
	p := Backend{}.NewParser(o).(*Parser)
	return p, feed(t, p, agenttest.Lines(t, "testdata", name))
}

// feed feeds lines to p, which must parse each, and returns the events
// that show something.
func feed(t *testing.T, p *Parser, lines []string) []agent.Event {
	t.Helper()
	var events []agent.Event
	for _, l := range lines {
		ev, err := p.Line([]byte(l))
		require.NoError(t, err, l)
		if ev != (agent.Event{}) {
			events = append(events, ev)
		}
	}
	return events
}
