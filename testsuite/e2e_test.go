package testsuite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/workflows"
	"github.com/durable-ralph/ralph/workflows/session"
)

// runSession starts a session on the cluster and waits for its result.
func runSession(t *testing.T, cl *cluster, in contract.SessionInput) (contract.SessionResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	id := sessionIDOf(in.Workspace)
	run, err := cl.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: contract.TaskQueue}, session.Session, in)
	require.NoError(t, err)
	var res contract.SessionResult
	err = run.Get(ctx, &res)
	replay(t, cl.client, id)
	return res, err
}

// replay replays every run of a session's history against the current
// workflow code, so a nondeterministic change fails here first.
func replay(t *testing.T, c client.Client, id string) {
	t.Helper()
	replayAs(t, c, id, "")
}

// newReplayer is a workflow replayer of every workflow.
func newReplayer() worker.WorkflowReplayer {
	replayer := worker.NewWorkflowReplayer()
	workflows.Register(replayer)
	return replayer
}

// replayAs replays every run of workflow id (a session or a queue) and
// records each under the test's name and label.
func replayAs(t *testing.T, c client.Client, id, label string) {
	t.Helper()
	ctx := context.Background()
	latest, err := collectHistory(c.GetWorkflowHistory(ctx, id, "", false, 0))
	require.NoError(t, err)
	// Start from the session's first run and follow continue-as-new.
	runID := latest.Events[0].GetWorkflowExecutionStartedEventAttributes().GetFirstExecutionRunId()
	for run := 1; ; run++ {
		hist := c.GetWorkflowHistory(ctx, id, runID, false, 0)
		replayer := newReplayer()
		h, err := collectHistory(hist)
		require.NoError(t, err)
		require.NoError(t, replayer.ReplayWorkflowHistory(nil, h), "replay of %s run %s", id, runID)
		recordHistory(t, h, label, run)
		next := h.Events[len(h.Events)-1].GetWorkflowExecutionContinuedAsNewEventAttributes()
		if next == nil {
			return
		}
		runID = next.GetNewExecutionRunId()
	}
}

func TestSessionCompletesPRDWithOneCommitPerStory(t *testing.T) {
	r := newRepo(t, map[string]string{"prd.json": threeStoryPRD, "progress.txt": "# Progress log\n"})
	env := fakeEnv(t, "")
	cl := startCluster(t, "", &activities.Agent{Env: env})

	res, err := runSession(t, cl, input(r.Dir))
	require.NoError(t, err)
	require.Equal(t, contract.ReasonComplete, res.Reason, res.Message)

	// Three stories, three commits, on the branch prd.json names; then
	// one more iteration that finds nothing left and claims completion.
	require.Equal(t, "ralph/widgets", strings.TrimSpace(r.git("branch", "--show-current")))
	commits := r.ralphCommits()
	require.Len(t, commits, 3, "commits: %v", commits)
	for i, id := range []string{"US-001", "US-002", "US-003"} {
		require.Contains(t, commits[i], fmt.Sprintf("iteration %d: %s", i+1, id))
	}
	for id, passes := range prdPasses(t, r) {
		require.True(t, passes, id)
	}
	require.Equal(t, 4, res.Iterations)
	require.Equal(t, 3, res.Totals.Commits)
	require.Positive(t, res.Totals.CostUSD)
	require.Positive(t, res.Totals.Usage.Total())
	require.Empty(t, strings.TrimSpace(r.git("status", "--porcelain")), "the tree is clean")

	// Each iteration's prompt names the story it should do.
	cs := calls(t, env)
	require.Len(t, cs, 4)
	require.Contains(t, cs[0].Prompt, "US-001")
	require.Contains(t, cs[1].Prompt, "US-002")
	require.Contains(t, cs[2].Prompt, "US-003")
}

func TestSessionCompletesProgressFile(t *testing.T) {
	r := newRepo(t, map[string]string{"progress.md": threeTaskProgress})
	cl := startCluster(t, "", &activities.Agent{Env: fakeEnv(t, "")})

	res, err := runSession(t, cl, input(r.Dir))
	require.NoError(t, err)
	require.Equal(t, contract.ReasonComplete, res.Reason, res.Message)
	require.Len(t, r.ralphCommits(), 3)
	require.NotContains(t, r.read("progress.md"), "- [ ]")
	require.Equal(t, 3, res.Task.Done)
	require.Equal(t, 3, res.Task.Total)
}

func TestSessionEndsOnGarbageWithoutCrashingTheWorker(t *testing.T) {
	r := newRepo(t, map[string]string{"prd.json": threeStoryPRD})
	env := fakeEnv(t, scenario(t, map[string]any{"garbage": true}))
	cl := startCluster(t, "", &activities.Agent{Env: env})

	res, err := runSession(t, cl, input(r.Dir))
	require.NoError(t, err)
	require.Equal(t, contract.ReasonConsecutiveFailures, res.Reason)
	require.Equal(t, 3, res.Iterations)
	require.Contains(t, res.Message, "not stream-json")
	require.Equal(t, 3, res.Totals.Failures)
}

func TestSessionFailsOnceWhenAgentBinaryIsMissing(t *testing.T) {
	r := newRepo(t, map[string]string{"prd.json": threeStoryPRD})
	cl := startCluster(t, "", &activities.Agent{})
	in := input(r.Dir)
	in.Agent.Command = []string{"claude-does-not-exist"}

	_, err := runSession(t, cl, in)
	require.Error(t, err)
	require.Contains(t, err.Error(), `agent binary "claude-does-not-exist" not found`)

	hist := cl.client.GetWorkflowHistory(context.Background(), sessionIDOf(r.Dir), "", false, 0)
	h, err := collectHistory(hist)
	require.NoError(t, err)
	attempts := 0
	for _, e := range h.Events {
		if a := e.GetActivityTaskStartedEventAttributes(); a != nil {
			attempts++
			require.EqualValues(t, 1, a.GetAttempt())
		}
	}
	require.Equal(t, 2, attempts, "prepare, then one attempt of the iteration")
}

// starterEnv is the environment of CLI processes in a test: the fake agent
// first on PATH, the embedded server on private ports and state dir.
type starterEnv struct {
	env      []string
	stateDir string
	port     int
}

// dial is a client of the dev server of the starters and workers of se.
// The caller closes it.
func (se *starterEnv) dial(t *testing.T) client.Client {
	t.Helper()
	return dial(t, fmt.Sprintf("127.0.0.1:%d", se.port), "")
}

func newStarterEnv(t testing.TB, scenarioPath string) *starterEnv {
	t.Helper()
	se := &starterEnv{stateDir: t.TempDir(), port: fixedPort(t)}
	t.Cleanup(func() { stopDevServer(t, se.stateDir) }) // --dev leaves it running
	se.env = append(fakeEnv(t, scenarioPath),
		"PATH="+bins.dir+":"+getenv("PATH"),
		"RALPH_DEV_STATE_DIR="+se.stateDir,
		"RALPH_DEV_PORT="+strconv.Itoa(se.port),
		"RALPH_DEV_UI_PORT="+strconv.Itoa(fixedPort(t)),
		"TEMPORAL_ADDRESS=",
		"HOME="+t.TempDir(),
		"XDG_DATA_HOME=", // clones under HOME
	)
	return se
}

func TestCLIWorkerRestartBetweenIterationsAndAttach(t *testing.T) {
	r := newRepo(t, map[string]string{"prd.json": threeStoryPRD, "progress.txt": ""})
	se := newStarterEnv(t, scenario(t, map[string]any{"auto": true, "sleep_ms": 1500}))

	w := startDevWorker(t, se)
	start := startProc(t, se.env, bins.starter, "run", "--dev", r.Dir)
	require.Equal(t, 0, start.wait(t, time.Minute), start.Output())
	require.Contains(t, start.Output(), "Started session "+sessionIDOf(r.Dir))
	require.Contains(t, start.Output(), "Temporal UI: http://127.0.0.1:")

	// Stop the worker once the first iteration has committed.
	waitFor(t, 2*time.Minute, "the first commit", func() bool { return len(r.ralphCommits()) >= 1 })
	require.NoError(t, w.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, w.wait(t, time.Minute), w.Output())

	w2 := startProc(t, se.env, bins.worker, "--dev")
	waitFor(t, time.Minute, "the restarted worker", func() bool {
		return strings.Contains(w2.Output(), "Worker polling")
	})
	code, out := starter(t, se, "run", "--dev", "--follow", r.Dir)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "Attached to running session")
	require.Contains(t, out, "ended: complete")
	require.Contains(t, out, "iteration 3: success")

	require.Len(t, r.ralphCommits(), 3, "no duplicate commits across the restart")

	status := startProc(t, se.env, bins.starter, "status", "--dev", r.Dir)
	require.Equal(t, 0, status.wait(t, time.Minute), status.Output())
	st := status.Output()
	require.Contains(t, st, "completed (complete)")
	require.Contains(t, st, "Iteration")
	require.Regexp(t, `Cost\s+\$0\.0[1-9]`, st)
	require.Regexp(t, `Tokens\s+[1-9][0-9]* \(input`, st)

	list := startProc(t, se.env, bins.starter, "list", "--dev", "--status", "completed")
	require.Equal(t, 0, list.wait(t, time.Minute), list.Output())
	require.Contains(t, list.Output(), sessionIDOf(r.Dir))
	replayFrom(t, se, sessionIDOf(r.Dir))
}

// replayFrom replays a session's history from the server of a CLI test.
func replayFrom(t *testing.T, se *starterEnv, id string) {
	t.Helper()
	c := se.dial(t)
	defer c.Close()
	replay(t, c, id)
}

func TestCLIRunDevAloneResumesAfterKill(t *testing.T) {
	r := newRepo(t, map[string]string{"progress.md": threeTaskProgress})
	se := newStarterEnv(t, scenario(t, map[string]any{"auto": true, "sleep_ms": 1000}))

	first := startProc(t, se.env, bins.starter, "run", "--dev", r.Dir)
	waitFor(t, 2*time.Minute, "the first commit", func() bool { return len(r.ralphCommits()) >= 1 })
	require.NoError(t, first.cmd.Process.Signal(syscall.SIGKILL))
	first.wait(t, time.Minute)

	second := startProc(t, se.env, bins.starter, "run", "--dev", r.Dir)
	code := second.wait(t, 3*time.Minute)
	out := second.Output()
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "Attached to running session")
	require.Contains(t, out, "ended: complete")
	require.Len(t, r.ralphCommits(), 3, "commits: %v", r.ralphCommits())

	// With nothing running any more, status --dev opens the saved state
	// itself and shows the whole session.
	status := startProc(t, se.env, bins.starter, "status", "--dev", r.Dir)
	require.Equal(t, 0, status.wait(t, time.Minute), status.Output())
	st := status.Output()
	require.Contains(t, st, "completed (complete)")
	require.Regexp(t, `Iteration\s+3 of 10`, st)
	require.Regexp(t, `Cost\s+\$0\.0375`, st)
	require.Regexp(t, `Tokens\s+61650 \(input`, st)
	require.Regexp(t, `Commits\s+3\n`, st)
}

func TestCLIBadInput(t *testing.T) {
	t.Run("invalid_config_value_names_the_key", func(t *testing.T) {
		r := newRepo(t, map[string]string{"prd.json": threeStoryPRD})
		se := newStarterEnv(t, "")
		p := startProc(t, append(se.env, "RALPH_LIMITS_MAX_ITERATIONS=lots"), bins.starter, "run", "--dev", r.Dir)
		require.Equal(t, 1, p.wait(t, time.Minute))
		require.Contains(t, p.Output(), "limits.max-iterations")
		require.Contains(t, p.Output(), "RALPH_LIMITS_MAX_ITERATIONS")
	})
	t.Run("malformed_prd_names_file_and_position", func(t *testing.T) {
		r := newRepo(t, map[string]string{"prd.json": "{\n  \"userStories\": [\n    {\"id\": \"US-001\",}\n  ]\n}\n"})
		se := newStarterEnv(t, "")
		p := startProc(t, se.env, bins.starter, "run", "--dev", r.Dir)
		require.Equal(t, 1, p.wait(t, 2*time.Minute))
		require.Regexp(t, `prd\.json:3:\d+`, p.Output())
	})
	t.Run("missing_agent_binary_names_it", func(t *testing.T) {
		r := newRepo(t, map[string]string{"prd.json": threeStoryPRD})
		se := newStarterEnv(t, "")
		p := startProc(t, se.env, bins.starter, "run", "--dev", "--agent-command", "no-such-claude", r.Dir)
		require.Equal(t, 1, p.wait(t, 2*time.Minute))
		require.Contains(t, p.Output(), `agent binary "no-such-claude" not found`)
	})
	t.Run("dirty_tree_is_refused", func(t *testing.T) {
		r := newRepo(t, map[string]string{"prd.json": threeStoryPRD})
		require.NoError(t, writeFile(filepath.Join(r.Dir, "scratch.txt"), "wip"))
		se := newStarterEnv(t, "")
		p := startProc(t, se.env, bins.starter, "run", "--dev", r.Dir)
		require.Equal(t, 1, p.wait(t, 2*time.Minute))
		require.Contains(t, p.Output(), "uncommitted changes (scratch.txt)")
	})
}
