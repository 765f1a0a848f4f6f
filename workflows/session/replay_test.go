package session_test

import (
	"testing"

	"github.com/durable-ralph/ralph/workflows/session"
	"github.com/durable-ralph/ralph/workflows/workflowtest"
)

// TestReplay replays every recorded history of Session against today's
// code.
func TestReplay(t *testing.T) { workflowtest.Replay(t, session.Session) }
