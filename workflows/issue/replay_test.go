package issue_test

import (
	"testing"

	"github.com/durable-ralph/ralph/workflows/issue"
	"github.com/durable-ralph/ralph/workflows/workflowtest"
)

// TestReplay replays every recorded history of IssueWork against today's
// code.
func TestReplay(t *testing.T) { workflowtest.Replay(t, issue.IssueWork) }
