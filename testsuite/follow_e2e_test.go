package testsuite_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestFollowShowsTheRunningAgent: `run --follow`, from a directory that is
// not the workspace and a process that is not the worker, prints the
// agent's tool calls and messages while the iteration still runs (read
// from its heartbeat), and `status` shows the same live tail.
func TestFollowShowsTheRunningAgent(t *testing.T) {
	r := newRepo(t, map[string]string{"prd.json": threeStoryPRD, "progress.txt": ""})
	se := newStarterEnv(t, scenario(t, map[string]any{"auto": true, "sleep_ms": 8000}))
	// The worker's UI listens elsewhere than the starter's settings say:
	// the starter's links follow the UI in use.
	uiPort := fixedPort(t)
	w := startProc(t, se.env, bins.worker, "--dev", "--dev-ui-port", strconv.Itoa(uiPort))
	waitFor(t, time.Minute, "the worker's embedded server", func() bool { return strings.Contains(w.Output(), "Worker polling") })

	elsewhere := t.TempDir()
	follow := startProcIn(t, elsewhere, se.env, bins.starter, "run", "--dev", "--follow", "--max-iterations", "1", r.Dir)
	waitFor(t, time.Minute, "the live view of the running agent", func() bool {
		return strings.Contains(follow.Output(), "▸ Bash  sleep 8")
	})
	out := follow.Output()
	require.Contains(t, out, fmt.Sprintf("Temporal UI: http://127.0.0.1:%d/namespaces/default/workflows/ralph-", uiPort))
	require.NotContains(t, out, "iteration 1:", "the live lines come while the iteration runs")
	require.Regexp(t, `(?m)^  0:0\d ▸ says  "Running the test suite; this takes a moment\."$`, out)
	require.Less(t, strings.Index(out, "▸ says"), strings.Index(out, "▸ Bash"), "in the order the agent did them")

	// --raw copies the agent's own stream (its log is on this machine).
	// Session flags that differ from the running session's are said to be
	// ignored.
	raw := startProcIn(t, elsewhere, se.env, bins.starter, "run", "--dev", "--follow", "--raw", "--max-cost", "7", r.Dir)

	// The same flags as the session's: nothing to say.
	same := startProcIn(t, elsewhere, se.env, bins.starter, "run", "--dev", "--max-iterations", "1", r.Dir)
	require.Equal(t, 0, same.wait(t, time.Minute), same.Output())
	require.Contains(t, same.Output(), "Attached to running session")
	require.NotContains(t, same.Output(), "ignored")

	status := startProcIn(t, elsewhere, se.env, bins.starter, "status", "--dev", r.Dir)
	require.Equal(t, 0, status.wait(t, time.Minute), status.Output())
	require.Contains(t, status.Output(), "Running iteration (attempt 1, ")
	require.Contains(t, status.Output(), "▸ Bash  sleep 8")

	require.Equal(t, 2, follow.wait(t, 2*time.Minute), follow.Output()) // max_iterations
	out = follow.Output()
	require.Contains(t, out, "iteration 1: success")
	require.Less(t, strings.Index(out, "▸ Bash  sleep 8"), strings.Index(out, "iteration 1: success"))
	require.Equal(t, 1, strings.Count(out, "▸ Bash  sleep 8"), "each live event once")
	// The events after the last heartbeat still show, before the
	// iteration's line: they come with its result.
	end := strings.Index(out, "iteration 1: success")
	for _, want := range []string{"▸ Write story-US-001.txt", "▸ Write prd.json", `▸ says  "Implemented US-001`} {
		require.Equal(t, 1, strings.Count(out, want), "%s once in:\n%s", want, out)
		require.Less(t, strings.Index(out, want), end, want)
	}
	t.Logf("follow output:\n%s", out)

	require.Equal(t, 2, raw.wait(t, time.Minute), raw.Output())
	require.Contains(t, raw.Output(), "Attached to running session")
	require.Contains(t, raw.Output(), "The session is already running with its own settings: --max-cost is ignored.\n"+
		"Change its limits with: starter set-limits --state-dir "+se.stateDir+" ralph-")
	require.Contains(t, raw.Output(), `"type":"system","subtype":"init"`)
	require.Contains(t, raw.Output(), `"type":"result"`, "to the end of the attempt's stream")
	require.Less(t, strings.Index(raw.Output(), `"type":"result"`), strings.Index(raw.Output(), "iteration 1: success"))
	require.NotContains(t, raw.Output(), "▸")
}

// TestFollowQuietAndEveryIteration: with -q, --follow prints nothing of
// the running agent and every iteration's line exactly once and in order,
// however fast they come and across continue-as-new.
func TestFollowQuietAndEveryIteration(t *testing.T) {
	const stories = 40
	type story struct {
		ID       string   `json:"id"`
		Title    string   `json:"title"`
		Criteria []string `json:"acceptanceCriteria"`
		Priority int      `json:"priority"`
		Passes   bool     `json:"passes"`
	}
	prd := map[string]any{"project": "Many", "branchName": "ralph/many", "description": "many small stories"}
	var list []story
	for i := 1; i <= stories; i++ {
		list = append(list, story{ID: fmt.Sprintf("US-%03d", i), Title: fmt.Sprintf("Story %d", i), Criteria: []string{"done"}, Priority: i})
	}
	prd["userStories"] = list
	data, err := json.MarshalIndent(prd, "", "  ")
	require.NoError(t, err)
	r := newRepo(t, map[string]string{"prd.json": string(data), "progress.txt": ""})
	se := newStarterEnv(t, scenario(t, map[string]any{"auto": true}))

	follow := startProcIn(t, t.TempDir(), se.env, bins.starter, "run", "--dev", "-q",
		"--iterations-per-run", "7", "--max-iterations", "100", r.Dir)
	require.Equal(t, 0, follow.wait(t, 5*time.Minute), follow.Output())
	out := follow.Output()
	require.NotContains(t, out, "▸")
	lines := regexp.MustCompile(`(?m)^iteration (\d+): `).FindAllStringSubmatch(out, -1)
	var got []string
	for _, m := range lines {
		got = append(got, m[1])
	}
	var want []string
	for i := 1; i <= stories+1; i++ { // the last one finds nothing left and claims completion
		want = append(want, fmt.Sprint(i))
	}
	require.Equal(t, want[:len(got)], got, "in order, none twice")
	require.GreaterOrEqual(t, len(got), stories, "every iteration's line")
	require.Contains(t, out, "ended: complete")
}
