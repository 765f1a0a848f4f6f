package changeset_test

import (
	"testing"

	"github.com/durable-ralph/ralph/workflows/changeset"
	"github.com/durable-ralph/ralph/workflows/workflowtest"
)

func TestReplay(t *testing.T) { workflowtest.Replay(t, changeset.ChangeSet) }
