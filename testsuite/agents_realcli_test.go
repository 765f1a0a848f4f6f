package testsuite_test

// Helpers shared by the tests that run the real Codex and Gemini CLIs
// (codex_test.go, gemini_test.go), each against a scripted stand-in for
// its vendor's API: a whole three-story session, and a worker killed by
// SIGKILL while the CLI waits for the model.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/sandbox"
	"github.com/durable-ralph/ralph/workflows/session"
)

// cliAgent is a real agent CLI as a session runs it.
type cliAgent struct {
	backend string
	bin     string
	// model is the model to ask for; "" is the CLI's default.
	model string
	// env is the CLI's environment: its API, HOME, credentials.
	env []string
}

func (a cliAgent) input(dir string) contract.SessionInput {
	in := input(dir)
	in.Agent.Backend, in.Agent.Command, in.Agent.Model = a.backend, []string{a.bin}, a.model
	return in
}

// threeStorySession runs a whole session with the CLI as its agent, on
// a prd.json of three stories that the API's script implements, and
// checks that it completes with one commit per story.
func threeStorySession(t *testing.T, a cliAgent) (contract.SessionResult, *repo) {
	t.Helper()
	r := newRepo(t, map[string]string{"prd.json": threeStoryPRD, "progress.txt": "# Progress log\n"})
	cl := startCluster(t, "", &activities.Agent{Env: a.env})
	began := time.Now()
	res, err := runSession(t, cl, a.input(r.Dir))
	require.NoError(t, err)
	t.Logf("session with the real %s CLI: %d iterations in %.1f s, $%.4f, %d tokens",
		a.backend, res.Iterations, time.Since(began).Seconds(), res.Totals.CostUSD, res.Totals.Usage.Total())
	require.Equal(t, contract.ReasonComplete, res.Reason, res.Message)
	require.Zero(t, res.Totals.Failures)
	commits := r.ralphCommits()
	require.Len(t, commits, 3, "one commit per story: %v", commits)
	for i, id := range []string{"US-001", "US-002", "US-003"} {
		require.Contains(t, commits[i], fmt.Sprintf("iteration %d: %s", i+1, id))
		require.Equal(t, fmt.Sprintf("Story %s is implemented.\n", id), r.read("story-"+id+".txt"))
		require.Contains(t, r.read("progress.txt"), id+":")
	}
	for id, passes := range prdPasses(t, r) {
		require.True(t, passes, id)
	}
	require.Empty(t, strings.TrimSpace(r.git("status", "--porcelain")), "the tree is clean")
	require.Positive(t, res.Totals.Usage.Total(), "tokens as the CLI reported them")
	return res, r
}

// killWorkerMidIteration runs a session in a worker process, kills the
// worker with SIGKILL once held reports that the CLI waits on a held
// turn of the first iteration, starts another worker and waits for the
// session to complete. It returns the session's result, its repository
// and the client, for the caller to check how the CLI resumed.
func killWorkerMidIteration(t *testing.T, a cliAgent, held func() bool) (contract.SessionResult, *repo, client.Client) {
	t.Helper()
	ws := startWorkerSession(t, append(append([]string(nil), a.env...), "RALPH_WORKER_HOST_ID="+testHost), a.input)
	waitFor(t, 2*time.Minute, "the CLI to wait on the held turn", held)
	res, _ := ws.killWorker(t)
	r, c := ws.r, ws.c
	require.Equal(t, 1, strings.Count(r.read("progress.txt"), "US-001:"), "the resumed story was recorded once")
	require.Zero(t, res.Totals.Failures)
	replay(t, c, sessionIDOf(r.Dir))
	return res, r, c
}

// workerSession is a session of a fresh three-story repository run by
// worker processes on an embedded server, for the tests that kill a
// worker.
type workerSession struct {
	r      *repo
	env    []string
	worker *proc
	c      client.Client
	ctx    context.Context
	run    client.WorkflowRun
}

// startWorkerSession starts an embedded server, a worker process with env
// (and the server's address) and a session with input in(workspace). The
// server and the client are stopped when the test ends.
func startWorkerSession(t *testing.T, env []string, in func(workspace string) contract.SessionInput) *workerSession {
	t.Helper()
	srv := startServer(t, t.TempDir())
	t.Cleanup(srv.Stop)
	ws := &workerSession{r: newRepo(t, map[string]string{"prd.json": threeStoryPRD, "progress.txt": ""})}
	ws.env = append(append([]string(nil), env...), "TEMPORAL_ADDRESS="+srv.Address(), "TEMPORAL_NAMESPACE="+srv.Namespace())
	ws.worker = startProc(t, ws.env, bins.worker)
	ws.c = dial(t, srv.Address(), srv.Namespace())
	t.Cleanup(ws.c.Close)
	var cancel context.CancelFunc
	ws.ctx, cancel = context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	var err error
	ws.run, err = ws.c.ExecuteWorkflow(ws.ctx, client.StartWorkflowOptions{ID: sessionIDOf(ws.r.Dir), TaskQueue: contract.TaskQueue}, session.Session, in(ws.r.Dir))
	require.NoError(t, err)
	return ws
}

// killWorker kills the worker with SIGKILL, waits for it and for the
// CLI's processes in the workspace to die, and starts another worker. It
// requires the session to complete with one commit per story, every story
// passing in prd.json, and returns its result and the commits.
func (ws *workerSession) killWorker(t *testing.T) (contract.SessionResult, []string) {
	t.Helper()
	require.NoError(t, ws.worker.cmd.Process.Signal(syscall.SIGKILL))
	killed := time.Now()
	ws.worker.wait(t, time.Minute)
	waitFor(t, 10*time.Second, "the CLI's process group to die with its worker", func() bool {
		return len(processesIn(ws.r.Dir)) == 0
	})
	ws.worker = startProc(t, ws.env, bins.worker)
	t.Cleanup(func() {
		if t.Failed() {
			ws.explain(t)
		}
	})

	var res contract.SessionResult
	require.NoError(t, ws.run.Get(ws.ctx, &res))
	t.Logf("session after kill -9 of the worker: %s %.1f s after the kill, %d iterations", res.Reason, time.Since(killed).Seconds(), res.Iterations)
	require.Equal(t, contract.ReasonComplete, res.Reason, res.Message)
	commits := ws.r.ralphCommits()
	require.Len(t, commits, 3, "no duplicate commits: %v", commits)
	for story, passes := range prdPasses(t, ws.r) {
		require.True(t, passes, story)
	}
	return res, commits
}

// explain says how each iteration of the session ended, the last lines
// of the raw log of each that did not succeed, and what the worker saw.
func (ws *workerSession) explain(t *testing.T) {
	v, err := ws.c.QueryWorkflow(context.Background(), sessionIDOf(ws.r.Dir), "", contract.QueryStatus)
	var st contract.Status
	if err == nil && v.Get(&st) == nil {
		for _, it := range st.Recent {
			t.Logf("%s", it.Line())
			if it.Outcome == contract.OutcomeSuccess {
				continue
			}
			logs, _ := filepath.Glob(filepath.Join(ws.r.Dir, contract.StateDir, "logs", "*", fmt.Sprintf("iteration-%04d.attempt-*.jsonl", it.Iteration)))
			for _, l := range logs {
				data, _ := os.ReadFile(l)
				lines := strings.Split(strings.TrimSpace(string(data)), "\n")
				t.Logf("%s, last lines:\n%s", filepath.Base(l), strings.Join(lines[max(0, len(lines)-6):], "\n"))
			}
		}
	}
	t.Logf("worker after the kill:\n%s", ws.worker.Output())
}

// requireWorkerKillResumes kills the worker of a session of the CLI while
// it waits on held (killWorkerMidIteration) and requires the retry to
// have resumed the CLI's session, as session reads it from a raw log (msg
// says how), and the API to have seen the resumed conversation among the
// requests that requests lists once the session is over; calls counts the
// model's tool calls a request holds.
func requireWorkerKillResumes[Q any, R interface {
	*Q
	apiRequest
}](t *testing.T, a cliAgent, held *heldTurn, session func(t *testing.T, path string) string, msg string, requests func() []Q, calls func(R) int) {
	t.Helper()
	_, r, _ := killWorkerMidIteration(t, a, held.waited)
	requireResumedSession(t, r, session, msg)
	requireResumedConversation(t, requests(), calls)
}

// requireResumedSession requires the two attempts of the first iteration
// to have run the same session of the CLI, as session reads it from a raw
// log: the second resumed the first's.
func requireResumedSession(t *testing.T, r *repo, session func(t *testing.T, path string) string, msg string) {
	t.Helper()
	first, second := attemptLogs(t, r)
	id1, id2 := session(t, first), session(t, second)
	require.NotEmpty(t, id1)
	require.Equal(t, id1, id2, msg)
}

// requireResumedConversation requires the API to have seen the resumed
// conversation among reqs: Ralph's "You were interrupted" after the first
// prompt and the first turn's tool call, as calls counts a request's tool
// calls of the model.
func requireResumedConversation[Q any, R interface {
	*Q
	apiRequest
}](t *testing.T, reqs []Q, calls func(R) int) {
	t.Helper()
	var resumed bool
	for i := range reqs {
		req := R(&reqs[i])
		if strings.HasPrefix(strings.TrimSpace(req.LastUserText()), "You were interrupted") {
			resumed = true
			require.Contains(t, req.Prompt(), "## This iteration: US-001", "the resumed conversation holds the first prompt")
			require.NotZero(t, calls(req), "and the first turn's tool call")
		}
	}
	require.True(t, resumed, "the API saw the resumed conversation")
}

// apiRequest is a request to a scripted stand-in for a vendor's model
// API, as requireResumedConversation reads it: the texts of the first and
// of the last user message of its conversation.
type apiRequest interface {
	Prompt() string
	LastUserText() string
}

// attemptLogs are the raw stream logs of the attempts of the first
// iteration.
func attemptLogs(t *testing.T, r *repo) (first, second string) {
	t.Helper()
	a1, err := filepath.Glob(filepath.Join(r.Dir, ".ralph", "logs", "*", "iteration-0001.attempt-1.jsonl"))
	require.NoError(t, err)
	a2, err := filepath.Glob(filepath.Join(r.Dir, ".ralph", "logs", "*", "iteration-0001.attempt-2.jsonl"))
	require.NoError(t, err)
	require.Len(t, a1, 1)
	require.Len(t, a2, 1)
	return a1[0], a2[0]
}

// iterateWith runs one iteration of a fresh three-story workspace with
// the CLI, outside of Temporal.
func iterateWith(t *testing.T, a cliAgent) contract.IterationResult {
	t.Helper()
	res, err := iterate(t, a)
	require.NoError(t, err)
	return res
}

// iterate is iterateWith for an iteration that may fail for good.
func iterate(t *testing.T, a cliAgent) (contract.IterationResult, error) {
	t.Helper()
	r := newRepo(t, map[string]string{"prd.json": threeStoryPRD, "progress.txt": ""})
	ag := &activities.Agent{Env: a.env}
	in := contract.IterationInput{
		SessionID:     "realcli-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")),
		Iteration:     1,
		MaxIterations: 10,
		Workspace:     r.Dir,
		Agent:         contract.AgentSettings{Backend: a.backend, Command: []string{a.bin}, Timeout: 2 * time.Minute, Sandbox: realSandbox(t)},
		Git:           contract.GitSettings{AutoCommit: true},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	began := time.Now()
	res, err := ag.Iterate(ctx, in, 1, nil, nil)
	t.Logf("iteration took %.1f s: outcome %s, reason %q, resets at %v, error %v", time.Since(began).Seconds(), res.Outcome, res.Reason, res.RateLimitResetsAt, err)
	if raw, err := os.ReadFile(filepath.Join(r.Dir, filepath.FromSlash(res.LogFile))); err == nil {
		t.Logf("the CLI printed:\n%s", raw)
	}
	if err == nil && in.Agent.Sandbox.Mode == sandbox.ModeRequired {
		require.NotEmpty(t, res.Contained, "the CLI ran in the sandbox")
	}
	return res, err
}

// realSandbox contains a real CLI on the allow-list network, where only
// its model API (the local scripted server its base URL names) is
// reachable; without bubblewrap, outside CI, it runs bare.
func realSandbox(t *testing.T) contract.SandboxSettings {
	b, err := sandbox.Find()
	if err != nil || b.Socat == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI installs bubblewrap and socat: %v", err)
		}
		return contract.SandboxSettings{Mode: sandbox.ModeOff}
	}
	return contract.SandboxSettings{Mode: sandbox.ModeRequired, Network: sandbox.NetAllowList}
}

// heldTurn is the model turn a kill test holds: the reply to the first
// tool call of the first iteration, until the CLI is gone. A request of
// that turn that comes again (the CLI retrying a connection that broke)
// is held too, until the test is ready to kill: a broken hold must not
// let the iteration run to its end before the kill.
type heldTurn struct {
	mu       sync.Mutex
	at       time.Time
	released bool
}

var firstIterationRE = regexp.MustCompile(`(?m)^# Ralph loop: iteration 1\b`)

// take reports whether a request of the conversation that began with
// prompt, at turn, is to be held: the first iteration's turn 1, until
// waited has said yes.
func (h *heldTurn) take(prompt string, turn int) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.released || turn != 1 || !firstIterationRE.MatchString(prompt) {
		return false
	}
	if h.at.IsZero() {
		h.at = time.Now()
	}
	return true
}

// waited reports whether the held turn has waited long enough for the
// CLI to have reported its session in a heartbeat. Once it has, no
// request is held any more: the caller kills the worker now, and the
// resumed conversation must get its answers.
func (h *heldTurn) waited() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.at.IsZero() || time.Since(h.at) <= 4*time.Second {
		return false
	}
	h.released = true
	return true
}

// holdingScript is script, but for its reply to held's turn, which is
// held: hold delays a reply until the CLI is gone.
func holdingScript[R interface {
	Prompt() string
	Turn() int
}, P any](held *heldTurn, script func(R) P, hold func(P) P) func(R) P {
	return func(req R) P {
		if held.take(req.Prompt(), req.Turn()) {
			return hold(script(req))
		}
		return script(req)
	}
}

// eventField is the string field key of the first event of type typ in a
// raw log: the CLI's session or thread id.
func eventField(t *testing.T, path, typ, key string) string {
	t.Helper()
	for _, ev := range streamLines(t, path) {
		if ev["type"] == typ {
			v, _ := ev[key].(string)
			return v
		}
	}
	return ""
}
