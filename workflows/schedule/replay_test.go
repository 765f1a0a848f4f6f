package schedule_test

import (
	"testing"

	"github.com/durable-ralph/ralph/workflows/schedule"
	"github.com/durable-ralph/ralph/workflows/workflowtest"
)

func TestReplay(t *testing.T) { workflowtest.Replay(t, schedule.Scheduled) }
