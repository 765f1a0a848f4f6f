package pull_test

import (
	"testing"

	"github.com/durable-ralph/ralph/workflows/pull"
	"github.com/durable-ralph/ralph/workflows/workflowtest"
)

// TestReplay replays every recorded history of PullRequest and Adopted
// against today's code.
func TestReplay(t *testing.T) { workflowtest.Replay(t, pull.PullRequest, pull.Adopted) }
