package preflight_test

import (
	"testing"

	"github.com/durable-ralph/ralph/workflows/preflight"
	"github.com/durable-ralph/ralph/workflows/workflowtest"
)

// TestReplay replays every recorded history of AgentPreflight against today's
// code.
func TestReplay(t *testing.T) { workflowtest.Replay(t, preflight.AgentPreflight) }
