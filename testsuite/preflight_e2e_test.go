package testsuite_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/durable-ralph/ralph/app"
	"github.com/durable-ralph/ralph/contract"
)

// TestPreflightRefusesAMissingAgent: `run --backend codex` against a
// worker that has no codex on its PATH starts nothing: the preflight on
// the worker says which binary of which backend is missing and how to
// install it, and the starter exits non-zero.
func TestPreflightRefusesAMissingAgent(t *testing.T) {
	// Nothing but the fake claude and the system's tools: no codex.
	path := bins.dir + ":/usr/local/bin:/usr/bin:/bin"
	for _, dir := range filepath.SplitList(path) {
		if _, err := os.Stat(filepath.Join(dir, "codex")); err == nil {
			t.Skipf("codex is installed in %s", dir)
		}
	}
	r := newRepo(t, map[string]string{"prd.json": threeStoryPRD, "progress.txt": ""})
	se := newStarterEnv(t, scenario(t, map[string]any{"auto": true}))
	se.env = append(se.env, "PATH="+path)
	startDevWorker(t, se)

	code, out := starter(t, se, "run", "--dev", "--backend", "codex", r.Dir)
	require.NotEqual(t, 0, code, out)
	require.Contains(t, out, `agent binary "codex" (backend codex) not found on the PATH of host `+testHost+"'s worker\n", out)
	require.Contains(t, out, "Install the agent where the worker runs (Codex: npm install -g @openai/codex), or name another with --agent-command.")
	require.NotContains(t, out, "anthropic-ai", "Codex's hint, not Claude Code's")
	require.NotContains(t, out, "Started session")

	c := se.dial(t)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := c.DescribeWorkflowExecution(ctx, sessionIDOf(r.Dir), "")
	var notFound *serviceerror.NotFound
	require.ErrorAs(t, err, &notFound, "no session was started")

	// The preflight ran on the worker, and its history replays.
	ids := preflights(t, c)
	require.Len(t, ids, 1)
	require.True(t, strings.HasPrefix(ids[0], "ralph-preflight-") && strings.HasSuffix(ids[0], "@"+testHost), ids[0])
	replayPreflight(t, c, ids[0], "missing-agent")

	// The same run with the agent there starts the session; the worker
	// of its own reads its own agent.env, which the starter says.
	code, out = starter(t, se, "run", "--dev", "--follow", "--agent-env", "GOFLAGS=-mod=mod", r.Dir)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "ended: complete")
	require.Contains(t, out, "The session runs on a worker of its own: --agent-env is ignored")
	require.Contains(t, out, "Give it to that worker instead: worker --agent-env …")
	first := ids[0]
	ids = preflights(t, c)
	require.Len(t, ids, 2)
	for _, id := range ids {
		if id != first {
			replayPreflight(t, c, id, "agent-found")
		}
	}
}

// TestLivenessSaysNoWorkerRuns: status and list of a running session
// whose worker was killed say that no worker runs for its host and how
// to start one, as text and as JSON; while the worker runs they say
// nothing of it.
func TestLivenessSaysNoWorkerRuns(t *testing.T) {
	r := newRepo(t, map[string]string{"prd.json": threeStoryPRD, "progress.txt": ""})
	se := newStarterEnv(t, scenario(t, map[string]any{"auto": true, "sleep_ms": 120000}))
	id := sessionIDOf(r.Dir)
	w := startDevWorker(t, se)
	code, out := starter(t, se, "run", "--dev", r.Dir)
	require.Equal(t, 0, code, out)
	waitForStarter(t, se, "the first iteration to run", "(running)", "status", "--dev", r.Dir)

	const note = "no worker is running for host " // + testHost + ": start one with `worker --dev`"
	want := note + testHost + ": start one with `worker --dev`"
	code, out = starter(t, se, "status", "--dev", r.Dir)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "running; execution running")
	require.NotContains(t, out, note)
	_, doc := statusJSON(t, se.env, r.Dir)
	require.Equal(t, true, doc["worker_seen"])
	require.NotContains(t, doc, "liveness_note")

	// kill -9 takes the worker and its embedded server; status --dev
	// opens the saved state itself, and no worker polls the host's queue.
	require.NoError(t, w.cmd.Process.Kill())
	w.wait(t, time.Minute)

	// Until the server gives up on the dead worker's sticky queue, the
	// status query gets no answer: status waits for another worker (its
	// own) to take the session over, saying so at most once, and answers.
	code, out = starter(t, se, "status", "--dev", r.Dir)
	require.Equal(t, 0, code, out)
	require.LessOrEqual(t, strings.Count(out, "waiting for a worker to take over"), 1, out)
	require.Contains(t, out, "State")
	require.Contains(t, out, want+"; execution running")
	require.Equal(t, 1, strings.Count(out, note), out)

	_, doc = statusJSON(t, se.env, r.Dir)
	require.Equal(t, "running", doc["execution_status"])
	require.Equal(t, false, doc["worker_seen"])
	require.Equal(t, want, doc["liveness_note"])

	code, out = starter(t, se, "list", "--dev")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "running, no worker")
	require.Contains(t, out, "\n"+want+"\n")

	code, out, _ = starterOut(t, se.env, "list", "--dev", "-o", "json")
	require.Equal(t, 0, code, out)
	var line map[string]any
	for l := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m), l)
		if m["workflow_id"] == id {
			line = m
		}
	}
	require.NotNil(t, line, out)
	require.Equal(t, false, line["worker_seen"])
	require.Equal(t, want, line["liveness_note"])
}

// preflights are the IDs of the preflight workflows the server knows,
// oldest first.
func preflights(t *testing.T, c client.Client) []string {
	t.Helper()
	var ids []string
	waitFor(t, 30*time.Second, "the preflights in visibility", func() bool {
		resp, err := c.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
			Query: "WorkflowType = '" + contract.WorkflowAgentPreflight + "'"})
		if err != nil {
			return false
		}
		ids = ids[:0]
		for _, e := range resp.GetExecutions() {
			if e.GetCloseTime() != nil {
				ids = append([]string{e.GetExecution().GetWorkflowId()}, ids...)
			}
		}
		return len(ids) > 0
	})
	return ids
}

// replayPreflight replays the history of the preflight id against the
// current code and, with RALPH_RECORD_HISTORIES set, records it as label.
func replayPreflight(t *testing.T, c client.Client, id, label string) {
	t.Helper()
	h, err := collectHistory(c.GetWorkflowHistory(context.Background(), id, "", false, 0))
	require.NoError(t, err)
	require.NoError(t, newReplayer().ReplayWorkflowHistory(nil, h), "replay of %s", id)
	recordHistory(t, h, label, 1)
}

// TestPreflightWaitsForAStoppedWorker: the host's worker is stopped
// (SIGSTOP, as a suspended laptop is) when a session starts, for longer
// than the preflight waits for it (15 s to take the check, 10 s to run
// --version, 10 s of slack): the starter waits as long again, says so,
// and the session starts once the worker goes on.
func TestPreflightWaitsForAStoppedWorker(t *testing.T) {
	r := newRepo(t, map[string]string{"prd.json": threeStoryPRD, "progress.txt": ""})
	se := newStarterEnv(t, scenario(t, map[string]any{"auto": true}))
	w := startDevWorker(t, se)
	// Stopped once it has polled its host's queue: the starter checks
	// only a host whose worker polled lately.
	c := se.dial(t)
	host, err := os.Hostname()
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		seen, err := app.HasWorker(t.Context(), c, contract.HostTaskQueue("ralph", host), enumspb.TASK_QUEUE_TYPE_ACTIVITY, false)
		return err == nil && seen
	}, time.Minute, 200*time.Millisecond)
	require.NoError(t, w.cmd.Process.Signal(syscall.SIGSTOP))
	cont := time.AfterFunc(45*time.Second, func() { _ = w.cmd.Process.Signal(syscall.SIGCONT) })
	defer func() {
		cont.Stop()
		_ = w.cmd.Process.Signal(syscall.SIGCONT)
	}()
	// Not --dev: the starter is never the worker, as on a cluster.
	env := append(slices.Clone(se.env), "TEMPORAL_ADDRESS=127.0.0.1:"+strconv.Itoa(se.port))
	code, out := runStarter(t, env, "run", r.Dir)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "has not answered the check in time (busy, or stopped a moment): waiting as long again")
	require.Contains(t, out, "Started session")
	require.NotContains(t, out, "no worker is running")
}
