package notify_test

import (
	"testing"

	"github.com/durable-ralph/ralph/workflows/notify"
	"github.com/durable-ralph/ralph/workflows/workflowtest"
)

// TestReplay replays every recorded history of Notification against today's
// code.
func TestReplay(t *testing.T) { workflowtest.Replay(t, notify.Notification) }
