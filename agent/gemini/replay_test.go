package gemini

import (
	"testing"

	"github.com/durable-ralph/ralph/agent"
	"github.com/durable-ralph/ralph/agent/agenttest"
)

// replay feeds the recorded stdout testdata/name.jsonl to a new parser and
// returns it with the events that show something.
func replay(t *testing.T, name string, o agent.Options) (*Parser, []agent.Event) {
	t.Helper()
	p := Backend{}.NewParser(o).(*Parser)
	return p, agenttest.Feed(t, p, agenttest.Lines(t, "testdata", name))
}

// newParser returns a new parser for the default options.
func newParser() *Parser {
	return Backend{}.NewParser(agent.Options{}).(*Parser)
}
