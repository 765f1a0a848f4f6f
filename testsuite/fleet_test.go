package testsuite_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/durable-ralph/ralph/app"
	"github.com/durable-ralph/ralph/contract"
	tcluster "github.com/durable-ralph/ralph/testsuite/cluster"
	"github.com/durable-ralph/ralph/testsuite/fakegithub"
)

// fleetHost is one machine of a fleet test: a worker process with its
// host ID and the workspaces that are "on" it.
type fleetHost struct {
	id      string
	env     []string
	worker  *proc
	metrics string // the worker's /metrics URL
	repos   []*repo
}

// start starts the host's worker process and waits until it polls.
func (h *fleetHost) start(t *testing.T) {
	t.Helper()
	h.worker = startProc(t, h.env, bins.worker)
	waitFor(t, time.Minute, "the worker of "+h.id, func() bool { return strings.Contains(h.worker.Output(), "Worker polling") })
	m := regexp.MustCompile(`Metrics: +(http://\S+/metrics)`).FindStringSubmatch(h.worker.Output())
	require.NotNil(t, m, h.worker.Output())
	h.metrics = m[1]
}

// workspaceCalls reads the fake agent's record of the runs in r, kept in
// the workspace when no FAKE_CLAUDE_STATE_DIR is set.
func workspaceCalls(t *testing.T, r *repo) []fakeCall {
	t.Helper()
	return readCalls(t, filepath.Join(r.Dir, ".ralph", "fake-claude", "calls.jsonl"))
}

// countSessions counts the open sessions of host in state, from
// visibility; every open session of host when state is "".
func countSessions(t *testing.T, c client.Client, host string, state contract.State) int {
	t.Helper()
	q := fmt.Sprintf("WorkflowType = 'Session' AND ExecutionStatus = 'Running' AND RalphHost = '%s'", host)
	if state != "" {
		q += fmt.Sprintf(" AND RalphStatus = '%s'", state)
	}
	resp, err := c.CountWorkflow(context.Background(), &workflowservice.CountWorkflowExecutionsRequest{Query: q})
	require.NoError(t, err)
	return int(resp.GetCount())
}

// scrape reads a Prometheus text endpoint into series → value.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		require.NoError(t, err, line)
		out[line[:i]] = v
	}
	return out
}

// hasSeries reports whether m has a series whose name starts with prefix.
func hasSeries(m map[string]float64, prefix string) bool {
	for k := range m {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

// TestFleetOnPostgres runs a fleet as real processes: PostgreSQL, a
// Temporal server process on it (the same server version as the embedded
// one), and two worker processes with different host IDs. Twenty sessions
// run on the two hosts, each only on its own host; the worker of one host
// is killed -9 mid-run: its sessions show host_offline and wait while the
// other host's sessions finish; started again, it finishes them with one
// commit per story.
func TestFleetOnPostgres(t *testing.T) {
	pg := tcluster.StartPostgres(t)
	srv := tcluster.StartServer(t, pg, tcluster.Options{SearchAttributes: app.SearchAttributes(), LogLevel: "warn"})
	c := srv.Dial(t)

	sc := rawScenario(t, map[string]any{"steps": []any{map[string]any{"auto": true, "sleep_ms": 2500}}, "repeat": "last"})
	base := []string{
		"PATH=" + bins.dir + ":" + getenv("PATH"),
		"HOME=" + t.TempDir(),
		"TEMPORAL_ADDRESS=" + srv.HostPort(),
		"TEMPORAL_NAMESPACE=" + srv.Namespace(),
		"FAKE_CLAUDE_SCENARIO=" + sc,
	}
	hosts := []*fleetHost{{id: "host-a"}, {id: "host-b"}}
	for _, h := range hosts {
		h.env = append(slices.Clone(base),
			"RALPH_WORKER_HOST_ID="+h.id,
			"RALPH_WORKER_MAX_AGENTS=10",
			"RALPH_WORKER_METRICS_ADDR=127.0.0.1:0",
			"RALPH_AGENT_ENV=FAKE_CLAUDE_SCENARIO FAKE_CLAUDE_HOST="+h.id,
			"GITHUB_TOKEN="+ghToken, "RALPH_GITHUB_WRITE_INTERVAL=200ms",
		)
		h.start(t)
	}
	a, b := hosts[0], hosts[1]

	const perHost = 10
	ids := map[*repo]string{}
	for i := range 2 * perHost {
		h := hosts[i%2]
		r := newRepo(t, map[string]string{"prd.json": threeStoryPRD, "progress.txt": ""})
		h.repos = append(h.repos, r)
		ids[r] = contract.SessionWorkflowID(h.id, r.Dir)
		p := startProc(t, base, bins.starter, "run", r.Dir, "--host-id", h.id,
			"--heartbeat-timeout", "3s", "--host-timeout", "4s", "--max-iterations", "10")
		require.Equal(t, 0, p.wait(t, time.Minute), p.Output())
		require.Contains(t, p.Output(), "Started session "+ids[r])
	}

	// Kill host-a's worker once each of its sessions has committed a
	// story and most are mid-iteration.
	waitFor(t, 3*time.Minute, "a commit in every session of host-a", func() bool {
		for _, r := range a.repos {
			if len(r.ralphCommits()) < 1 {
				return false
			}
		}
		return true
	})
	require.NoError(t, a.worker.cmd.Process.Signal(syscall.SIGKILL))
	killed := time.Now()
	a.worker.wait(t, time.Minute)
	open := countSessions(t, c, a.id, "")
	require.Positive(t, open, "host-a still has sessions to finish")

	waitFor(t, time.Minute, "host-a's sessions to show host_offline", func() bool {
		return countSessions(t, c, a.id, contract.StateHostOffline) == open
	})
	offline := time.Since(killed)
	code, out := runStarter(t, base, "status", ids[a.repos[0]])
	require.Equal(t, 0, code, out)
	if strings.Contains(out, "execution running") {
		require.Contains(t, out, "host_offline: no worker of host host-a takes its work")
	}

	// The other host is not affected: its sessions all finish while
	// host-a is down, and none of them ever waited for a host.
	waitFor(t, 3*time.Minute, "host-b's sessions to finish", func() bool { return countSessions(t, c, b.id, "") == 0 })
	require.Equal(t, open, countSessions(t, c, a.id, contract.StateHostOffline), "host-a's sessions wait, they do not fail")
	for _, r := range b.repos {
		require.Equal(t, 0, countEvents(t, c, ids[r], "HostReady"), "session %s of host-b waited for a host", ids[r])
	}

	// Metrics of the live worker: the SDK's own and Ralph's.
	m := scrape(t, b.metrics)
	require.True(t, hasSeries(m, "temporal_"), "the SDK's worker metrics")
	require.Equal(t, float64(4*perHost), m[`ralph_iterations_total{outcome="success"}`], "3 stories and the claim per session")
	require.InDelta(t, 4*perHost*0.0125, m["ralph_agent_cost_usd_total"], 1e-9)
	require.Equal(t, float64(4*perHost*1200), m[`ralph_agent_tokens_total{kind="input"}`])
	require.Equal(t, float64(0), m["ralph_agents_running"])
	require.Equal(t, float64(10), m["ralph_agents_max"])

	restarted := time.Now()
	a.start(t)
	waitFor(t, time.Minute, "host-a's sessions to resume", func() bool {
		return countSessions(t, c, a.id, contract.StateHostOffline) < open
	})
	resumed := time.Since(restarted)
	waitFor(t, 3*time.Minute, "host-a's sessions to finish", func() bool { return countSessions(t, c, a.id, "") == 0 })
	done := time.Since(restarted)

	for _, h := range hosts {
		for _, r := range h.repos {
			id := ids[r]
			var res contract.SessionResult
			require.NoError(t, c.GetWorkflow(context.Background(), id, "").Get(context.Background(), &res), id)
			require.Equal(t, contract.ReasonComplete, res.Reason, "%s: %s", id, res.Message)
			require.Equal(t, 0, res.Totals.Failures, "%s: a host that went away is not a failure", id)
			require.Equal(t, []string{"US-001 List widgets", "US-002 Add a widget", "US-003 Delete a widget"},
				storySubjects(r.storyCommits()), "%s: one commit per story, nothing twice", id)
			for _, call := range workspaceCalls(t, r) {
				require.Equal(t, h.id, call.Host, "%s: an iteration ran on another host", id)
				require.Equal(t, r.Dir, call.CWD, "%s", id)
			}
			replayAs(t, c, id, h.id)
		}
	}
	// At least one of host-a's sessions went offline mid-iteration and
	// resumed its agent's session where the dead attempt left it.
	resumedAgents := 0
	for _, r := range a.repos {
		for _, call := range workspaceCalls(t, r) {
			if slices.Contains(call.Argv, "--resume") {
				resumedAgents++
			}
		}
	}
	require.Positive(t, resumedAgents, "no agent session was resumed after the host came back")
	replayAs(t, c, ids[a.repos[0]], "host-offline")

	code, out = runStarter(t, base, "list", "--limit", "100")
	require.Equal(t, 0, code, out)
	require.Regexp(t, regexp.MustCompile(regexp.QuoteMeta(ids[a.repos[0]])+`\s+session\s+completed\s+completed\s+4\s+\S+\s+\S+\s+host-a\s`), out)

	fleetQueue(t, c, base, b)
	fleetGoneHost(t, c, base)

	t.Logf("kill -9 of host-a's worker → all %d open sessions host_offline: %.1f s (heartbeat timeout 3s + host timeout 4s); worker back → first session resumed: %.1f s; → all done: %.1f s",
		open, offline.Seconds(), resumed.Seconds(), done.Seconds())
	fmt.Printf("FIGURE host_offline_after_kill_seconds %.1f\n", offline.Seconds())
	fmt.Printf("FIGURE resumed_after_worker_back_seconds %.1f\n", resumed.Seconds())
}

// countEvents counts the activities of type name that a workflow's
// history scheduled, over every run.
func countEvents(t *testing.T, c client.Client, id, name string) int {
	t.Helper()
	it := c.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	n := 0
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == name {
			n++
		}
	}
	return n
}

// storySubjects keeps the story part of Ralph's commit subjects.
func storySubjects(subjects []string) []string {
	var out []string
	for _, s := range subjects {
		if m := regexp.MustCompile(`US-\d{3} [A-Za-z ]+`).FindString(s); m != "" {
			out = append(out, strings.TrimSpace(m))
		}
	}
	return out
}

// TestAgentSlotsCapAWorker runs two sessions on a worker with one agent
// slot (worker.max-agents 1, on the embedded server of worker --dev):
// one session shows waiting_for_agent_slot while the other's agent runs,
// no two agents ever run at once, and both complete. The worker's
// metrics say the same.
func TestAgentSlotsCapAWorker(t *testing.T) {
	const think = 3 * time.Second
	se := newStarterEnv(t, rawScenario(t, map[string]any{"steps": []any{map[string]any{"auto": true, "sleep_ms": think.Milliseconds()}}}))
	w := startProc(t, se.env, bins.worker, "--dev", "--max-agents", "1", "--metrics-addr", "127.0.0.1:0")
	waitFor(t, time.Minute, "the worker", func() bool { return strings.Contains(w.Output(), "Worker polling") })
	require.Contains(t, w.Output(), "at most 1 agents at once")
	metricsURL := regexp.MustCompile(`Metrics: +(http://\S+/metrics)`).FindStringSubmatch(w.Output())
	require.NotNil(t, metricsURL, w.Output())

	var repos []*repo
	for range 2 {
		r := newRepo(t, map[string]string{"prd.json": oneStoryPRD, "progress.txt": ""})
		repos = append(repos, r)
		code, out := starter(t, se, "run", "--dev", r.Dir)
		require.Equal(t, 0, code, out)
	}
	c := se.dial(t)
	defer c.Close()

	var waiting string
	waitFor(t, time.Minute, "a session waiting for the agent slot", func() bool {
		for _, r := range repos {
			code, out := starter(t, se, "status", "--dev", r.Dir)
			if code == 0 && strings.Contains(out, "waiting_for_agent_slot: its worker already runs worker.max-agents agents") {
				waiting = out
				return true
			}
		}
		return false
	})
	require.Contains(t, waiting, "on host "+testHost)
	m := scrape(t, metricsURL[1])
	require.Equal(t, float64(1), m["ralph_agents_max"])
	require.Equal(t, float64(1), m["ralph_agents_running"])
	require.Equal(t, float64(1), m["ralph_agents_waiting"])
	require.Equal(t, float64(1), m[`ralph_sessions{state="waiting_for_agent_slot"}`], "sessions by state from visibility")

	for _, r := range repos {
		var res contract.SessionResult
		require.NoError(t, c.GetWorkflow(context.Background(), sessionIDOf(r.Dir), "").Get(context.Background(), &res))
		require.Equal(t, contract.ReasonComplete, res.Reason, res.Message)
		require.Equal(t, 0, res.Totals.Failures, "waiting for a slot is not a failure")
	}
	// One agent at a time: each run starts after the one before has
	// thought for its whole time.
	starts := make([]time.Time, 0, 4)
	for _, c := range calls(t, se.env) {
		starts = append(starts, c.Time)
	}
	require.Len(t, starts, 4, "a story and a completion claim per session")
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	for i := 1; i < len(starts); i++ {
		require.GreaterOrEqual(t, starts[i].Sub(starts[i-1]), think, "agents %d and %d overlapped", i, i+1)
	}
	m = scrape(t, metricsURL[1])
	require.Equal(t, float64(4), m[`ralph_iterations_total{outcome="success"}`])
	require.Equal(t, float64(0), m["ralph_agents_running"])
	require.True(t, hasSeries(m, "temporal_"), "the SDK's worker metrics")
}

// fleetQueue runs an issue queue whose clone is on host h: its issue's
// session runs there (GitHub calls may run on any host).
func fleetQueue(t *testing.T, c client.Client, env []string, h *fleetHost) {
	t.Helper()
	gh := fakegithub.New("acme", "app", ghToken, ghBot)
	t.Cleanup(gh.Close)
	gh.SetPermission("alice", "write")
	n := gh.AddIssue(fakegithub.IssueSpec{Title: "Add a greeting", Author: "alice", Labels: []string{"ralph-ready"}})
	clone, _ := newClone(t)

	code, text := runStarter(t, env, "queue", clone.Dir, "--host-id", h.id, "--repo", "acme/app",
		"--github-api-url", gh.URL(), "--until-idle", "--poll-interval", "1h", "--follow-pulls=false")
	require.Equal(t, 0, code, text)
	qid := contract.QueueWorkflowID(h.id, "acme", "app")
	require.Contains(t, text, qid)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var res contract.QueueResult
	require.NoError(t, c.GetWorkflow(ctx, qid, "").Get(ctx, &res))
	require.Len(t, gh.Pulls(), 1)

	sid := contract.IssueSessionID(h.id, "acme", "app", n)
	desc, err := c.DescribeWorkflowExecution(ctx, sid, "")
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, desc.GetWorkflowExecutionInfo().GetStatus())
	var host string
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(
		desc.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()[contract.SearchRalphHost], &host))
	require.Equal(t, h.id, host)
	wt := &repo{t: t, Dir: filepath.Join(clone.Dir, ".ralph", "worktrees", fmt.Sprintf("issue-%d", n))}
	agentRuns := workspaceCalls(t, wt)
	require.NotEmpty(t, agentRuns)
	for _, call := range agentRuns {
		require.Equal(t, h.id, call.Host, "the issue's agent ran on another host")
	}
	replayAs(t, c, qid, "queue")
	replayAs(t, c, sid, "issue")
}

// fleetGoneHost starts a session for a host that has no worker: the
// starter warns, the session shows host_offline, and a stop ends it,
// which is what a person does when a machine is gone for good.
func fleetGoneHost(t *testing.T, c client.Client, env []string) {
	t.Helper()
	r := newRepo(t, map[string]string{"prd.json": threeStoryPRD, "progress.txt": ""})
	id := contract.SessionWorkflowID("host-gone", r.Dir)
	code, out := runStarter(t, env, "run", r.Dir, "--host-id", "host-gone", "--host-timeout", "2s")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "warning: no worker of host host-gone polls the task queue ralph@host-gone")
	waitFor(t, time.Minute, "the session to show host_offline", func() bool {
		return countSessions(t, c, "host-gone", contract.StateHostOffline) == 1
	})
	code, out = runStarter(t, env, "stop", id, "--reason", "the machine is gone")
	require.Equal(t, 0, code, out)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var res contract.SessionResult
	require.NoError(t, c.GetWorkflow(ctx, id, "").Get(ctx, &res))
	require.Equal(t, contract.ReasonStopped, res.Reason)
	require.Contains(t, res.Message, "while host host-gone was offline")
	require.Equal(t, 0, res.Iterations)
}
