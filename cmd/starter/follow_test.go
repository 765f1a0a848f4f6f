package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/converter"

	"github.com/durable-ralph/ralph/contract"
)

func TestLiveLines(t *testing.T) {
	start := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		e    contract.LiveEvent
		want string
	}{
		{contract.LiveEvent{At: start.Add(72 * time.Second), Kind: contract.LiveTool, Name: "Bash", Text: "go test ./..."}, "  1:12 ▸ Bash  go test ./..."},
		{contract.LiveEvent{At: start.Add(3 * time.Second), Kind: contract.LiveTool, Name: "TodoWrite"}, "  0:03 ▸ TodoWrite"},
		{contract.LiveEvent{At: start.Add(2 * time.Hour), Kind: contract.LiveSays, Text: `All "tests" pass`}, `  2:00:00 ▸ says  "All \"tests\" pass"`},
		{contract.LiveEvent{At: start.Add(-time.Second), Kind: contract.LiveError, Text: "API Error: 529"}, "  0:00 ▸ error API Error: 529"},
	} {
		require.Equal(t, tc.want, liveLine(start, tc.e))
	}
	require.Equal(t, "  1:12 ▸ Bash  go t…", elide("  1:12 ▸ Bash  go test ./...", 20))
	require.Equal(t, "short", elide("short", 20))
}

func TestLiveTail(t *testing.T) {
	dc := converter.GetDefaultDataConverter()
	start := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	p := contract.Progress{
		Attempt: 2, StartedAt: start, UpdatedAt: start.Add(95 * time.Second), Turns: 7, LastTool: "Edit",
		Live: []contract.LiveEvent{
			{Seq: 4, At: start.Add(80 * time.Second), Kind: contract.LiveTool, Name: "Edit", Text: "internal/db/store.go"},
			{Seq: 5, At: start.Add(90 * time.Second), Kind: contract.LiveSays, Text: "Committing"},
		},
	}
	details, err := dc.ToPayloads(p)
	require.NoError(t, err)
	pending := []*workflowpb.PendingActivityInfo{
		{ActivityType: &commonpb.ActivityType{Name: "PrepareWorkspace"}},
		{ActivityType: &commonpb.ActivityType{Name: contract.ActivityRunIteration}, Attempt: 2, HeartbeatDetails: details},
	}
	require.Equal(t, "Running iteration (attempt 2, 1:35: 7 turns, last tool Edit so far):\n"+
		"  1:20 ▸ Edit  internal/db/store.go\n"+
		"  1:30 ▸ says  \"Committing\"\n", liveTail(dc, pending, 100))

	// Before the first heartbeat, and with no iteration running.
	pending[1].HeartbeatDetails = nil
	require.Equal(t, "Running iteration (attempt 2):\n  (nothing reported yet)\n", liveTail(dc, pending, 100))
	require.Empty(t, liveTail(dc, pending[:1], 100))
}

func TestStateText(t *testing.T) {
	require.Equal(t, "stopped by limit", stateText(contract.StateLimited, contract.ReasonMaxCost))
	require.Equal(t, "stopped by limit", stateText(contract.StateFailed, contract.ReasonMaxIterations), "sessions of earlier versions")
	require.Equal(t, "failed", stateText(contract.StateFailed, contract.ReasonConsecutiveFailures))
}

// TestFollowAnswers: a checkpoint seen pending is told once when it is
// answered, with who answered through what; one never seen pending (the
// follower attached later) is not.
func TestFollowAnswers(t *testing.T) {
	var out strings.Builder
	f := &follower{out: &out}
	cp := contract.Checkpoint{ID: "cp-2", Question: "Which database?"}
	f.answers(contract.Status{Pending: &cp, Answered: []contract.AnsweredCheckpoint{
		{Checkpoint: contract.Checkpoint{ID: "cp-1"}, Answer: contract.Answer{ID: "cp-1", Approve: true}},
	}})
	require.Empty(t, out.String(), "cp-1 was answered before the follower saw it asked")
	answered := []contract.AnsweredCheckpoint{
		{Checkpoint: contract.Checkpoint{ID: "cp-1"}, Answer: contract.Answer{ID: "cp-1", Approve: true}},
		{Checkpoint: cp, Answer: contract.Answer{ID: "cp-2", Answer: "Postgres", By: "alice", Via: "starter respond"}},
	}
	f.answers(contract.Status{Answered: answered})
	f.answers(contract.Status{Answered: answered})
	require.Equal(t, "checkpoint cp-2 answered: Postgres by alice through starter respond\n", out.String())

	out.Reset()
	late := contract.Checkpoint{ID: "cp-3"}
	f.answers(contract.Status{Pending: &late})
	f.answers(contract.Status{Answered: append(answered, contract.AnsweredCheckpoint{Checkpoint: late, TimedOut: true})})
	require.Equal(t, "checkpoint cp-3 timed out: nobody answered, the session goes on\n", out.String())
}
