package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/converter"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/workflows"
)

func TestLiveLines(t *testing.T) {
	start := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		e    activities.LiveEvent
		want string
	}{
		{activities.LiveEvent{At: start.Add(72 * time.Second), Kind: activities.LiveTool, Name: "Bash", Text: "go test ./..."}, "  1:12 ▸ Bash  go test ./..."},
		{activities.LiveEvent{At: start.Add(3 * time.Second), Kind: activities.LiveTool, Name: "TodoWrite"}, "  0:03 ▸ TodoWrite"},
		{activities.LiveEvent{At: start.Add(2 * time.Hour), Kind: activities.LiveSays, Text: `All "tests" pass`}, `  2:00:00 ▸ says  "All \"tests\" pass"`},
		{activities.LiveEvent{At: start.Add(-time.Second), Kind: activities.LiveError, Text: "API Error: 529"}, "  0:00 ▸ error API Error: 529"},
	} {
		require.Equal(t, tc.want, liveLine(start, tc.e))
	}
	require.Equal(t, "  1:12 ▸ Bash  go t…", elide("  1:12 ▸ Bash  go test ./...", 20))
	require.Equal(t, "short", elide("short", 20))
}

func TestLiveTail(t *testing.T) {
	dc := converter.GetDefaultDataConverter()
	start := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	p := activities.Progress{
		Attempt: 2, StartedAt: start, UpdatedAt: start.Add(95 * time.Second), Turns: 7, LastTool: "Edit",
		Live: []activities.LiveEvent{
			{Seq: 4, At: start.Add(80 * time.Second), Kind: activities.LiveTool, Name: "Edit", Text: "internal/db/store.go"},
			{Seq: 5, At: start.Add(90 * time.Second), Kind: activities.LiveSays, Text: "Committing"},
		},
	}
	details, err := dc.ToPayloads(p)
	require.NoError(t, err)
	pending := []*workflowpb.PendingActivityInfo{
		{ActivityType: &commonpb.ActivityType{Name: "PrepareWorkspace"}},
		{ActivityType: &commonpb.ActivityType{Name: iterationActivity}, Attempt: 2, HeartbeatDetails: details},
	}
	require.Equal(t, "Running iteration (attempt 2, 1:35: 7 turns, last tool Edit so far):\n"+
		"  1:20 ▸ Edit  internal/db/store.go\n"+
		"  1:30 ▸ says  \"Committing\"\n", liveTail(dc, pending, 100))

	// Before the first heartbeat, and with no iteration running.
	pending[1].HeartbeatDetails = nil
	require.Equal(t, "Running iteration (attempt 2):\n  (nothing reported yet)\n", liveTail(dc, pending, 100))
	require.Empty(t, liveTail(dc, pending[:1], 100))
}

func TestIterationLine(t *testing.T) {
	for _, tc := range []struct {
		it   workflows.IterationSummary
		want string
	}{
		{workflows.IterationSummary{Iteration: 1, Outcome: "success", CostUSD: 0.0125, Tokens: 1, FilesChanged: 1, Commit: "1122d1df0000", Story: "US-001 List widgets"},
			"iteration 1: success, $0.0125, 1 token, 1 file changed, commit 1122d1df [US-001 List widgets]"},
		{workflows.IterationSummary{Iteration: 4, Outcome: "success", Tokens: 20550, FilesChanged: 0, Claimed: true, Reason: "completion claimed but prd.json has 2 of 3 done"},
			"iteration 4: success, $0.0000, 20550 tokens, 0 files changed, no commit; completion claimed, not verified (completion claimed but prd.json has 2 of 3 done)"},
		{workflows.IterationSummary{Iteration: 5, Outcome: "success", Tokens: 2, FilesChanged: 3, Commit: "abc", Claimed: true, Verified: true},
			"iteration 5: success, $0.0000, 2 tokens, 3 files changed, commit abc; completion claimed and verified"},
	} {
		require.Equal(t, tc.want, iterationLine(tc.it))
	}
	require.Equal(t, "stopped by limit", stateText(workflows.StateLimited, workflows.ReasonMaxCost))
	require.Equal(t, "stopped by limit", stateText(workflows.StateFailed, workflows.ReasonMaxIterations), "sessions of earlier versions")
	require.Equal(t, "failed", stateText(workflows.StateFailed, workflows.ReasonConsecutiveFailures))
}
