package main

import (
	"os"
	"path/filepath"
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

// TestFastIterationShown: an iteration that ended before its first
// heartbeat (an agent done in a second) is followed by the events its
// result recorded, before its line, as if the live view had shown them;
// with --raw its log, when it is on this machine. One the live view
// showed gets only what it did not show, and iterations that ended before
// a follower attached are not played again.
func TestFastIterationShown(t *testing.T) {
	start := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	says := func(seq int, text string) contract.LiveEvent {
		return contract.LiveEvent{Seq: seq, At: start.Add(time.Duration(seq) * 100 * time.Millisecond), Kind: contract.LiveSays, Text: text}
	}
	fast := contract.IterationSummary{Iteration: 1, Outcome: contract.OutcomeSuccess, LiveStartedAt: start,
		Live: []contract.LiveEvent{says(1, "1 self"), says(2, "LOOP_COMPLETE")}}
	line := fast.Line()

	var out strings.Builder
	f := &follower{out: &out, view: ViewLive, width: 100, fresh: true}
	f.print([]contract.IterationSummary{fast})
	require.Equal(t, "  0:00 ▸ says  \"1 self\"\n  0:00 ▸ says  \"LOOP_COMPLETE\"\n"+line+"\n", out.String())

	// Ten events kept of twelve: the two before are counted.
	out.Reset()
	f = &follower{out: &out, view: ViewLive, width: 100, fresh: true}
	many := fast
	many.Live = nil
	for seq := 3; seq <= 12; seq++ {
		many.Live = append(many.Live, says(seq, "line"))
	}
	f.print([]contract.IterationSummary{many})
	require.True(t, strings.HasPrefix(out.String(), "  0:00 … 2 more\n"), out.String())

	// The live view showed the first event: the rest only.
	out.Reset()
	f = &follower{out: &out, view: ViewLive, width: 100, fresh: true}
	f.live = liveState{iteration: 1, started: start, seq: 1}
	f.print([]contract.IterationSummary{fast})
	require.Equal(t, "  0:00 ▸ says  \"LOOP_COMPLETE\"\n"+line+"\n", out.String())

	// Quiet, and attaching to a session whose iterations ended before.
	for _, f := range []*follower{{out: &out, view: ViewQuiet, fresh: true}, {out: &out, view: ViewLive}} {
		out.Reset()
		f.print([]contract.IterationSummary{fast})
		require.Equal(t, line+"\n", out.String())
	}

	// --raw, the workspace on this machine: the last attempt's log.
	ws := t.TempDir()
	dir := filepath.Join(ws, contract.StateDir, "logs", "ralph-ws-1@box_run")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "iteration-0001.attempt-1.jsonl"), []byte("first attempt\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "iteration-0001.attempt-2.jsonl"), []byte("1 self\x1b]0;title\x07\nLOOP_COMPLETE\n"), 0o644))
	out.Reset()
	f = &follower{out: &out, view: ViewRaw, width: 100, fresh: true}
	f.located(contract.Status{SessionID: "ralph-ws-1@box", ExecutionKey: "ralph-ws-1@box/run", Workspace: ws})
	f.print([]contract.IterationSummary{fast})
	require.Equal(t, "1 self\nLOOP_COMPLETE\n"+line+"\n", out.String())

	// --raw with the log elsewhere: the recorded events.
	out.Reset()
	f = &follower{out: &out, view: ViewRaw, width: 100, fresh: true}
	f.located(contract.Status{SessionID: "other", Workspace: ws})
	f.print([]contract.IterationSummary{fast})
	require.Equal(t, "  0:00 ▸ says  \"1 self\"\n  0:00 ▸ says  \"LOOP_COMPLETE\"\n"+line+"\n", out.String())
}
