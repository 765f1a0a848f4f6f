package inbox_test

import (
	"testing"

	"github.com/durable-ralph/ralph/workflows/inbox"
	"github.com/durable-ralph/ralph/workflows/workflowtest"
)

// TestReplay replays every recorded history of ChatInbox against today's
// code.
func TestReplay(t *testing.T) { workflowtest.Replay(t, inbox.ChatInbox) }
