package queue_test

import (
	"testing"

	"github.com/durable-ralph/ralph/workflows/queue"
	"github.com/durable-ralph/ralph/workflows/workflowtest"
)

// TestReplay replays every recorded history of IssueQueue against today's
// code.
func TestReplay(t *testing.T) { workflowtest.Replay(t, queue.IssueQueue) }
