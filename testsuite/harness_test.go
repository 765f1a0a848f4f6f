package testsuite_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/activities/github"
	"github.com/durable-ralph/ralph/app"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/devserver"
	"github.com/durable-ralph/ralph/internal/gittest"
	"github.com/durable-ralph/ralph/internal/testkit"
)

// bins are the programs the tests run as real processes, built once.
var bins struct {
	dir     string
	claude  string // the fake agent, named like the real CLI
	hostile string // an agent that tries to escape its sandbox
	worker  string
	starter string
}

func TestMain(m *testing.M) {
	// The tests, and every process they start, run without the user's
	// settings: RALPH_DEV_PORT in the shell that runs make test would
	// move the dev servers of the tests that choose their own ports.
	// A test that runs again as another user (asUser) gives it the
	// binaries it built.
	prebuilt := os.Getenv(binsEnv)
	testkit.ClearRalphEnv()
	dir, err := prebuilt, error(nil)
	if dir == "" {
		dir, err = os.MkdirTemp("", "ralph-bins-")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bins.dir = dir
	bins.claude = filepath.Join(dir, "claude")
	bins.worker = filepath.Join(dir, "worker")
	bins.starter = filepath.Join(dir, "starter")
	bins.hostile = filepath.Join(dir, "hostile")
	if prebuilt != "" {
		os.Exit(m.Run())
	}
	for out, pkg := range map[string]string{
		bins.claude:  "./fakeclaude",
		bins.worker:  "../cmd/worker",
		bins.starter: "../cmd/starter",
		bins.hostile: "./hostile",
	} {
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "build %s: %v\n", pkg, err)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// repo is a git repository in a temp dir.
type repo struct {
	t   testing.TB
	Dir string
}

func newRepo(t testing.TB, files map[string]string) *repo {
	t.Helper()
	return &repo{t: t, Dir: gittest.NewRepo(t, files)}
}

func (r *repo) git(args ...string) string {
	r.t.Helper()
	return gittest.Run(r.t, r.Dir, args...)
}

func (r *repo) read(name string) string {
	r.t.Helper()
	data, err := os.ReadFile(filepath.Join(r.Dir, name))
	require.NoError(r.t, err)
	return string(data)
}

// write writes content to the file name of the repository.
func (r *repo) write(name, content string) {
	r.t.Helper()
	require.NoError(r.t, os.WriteFile(filepath.Join(r.Dir, name), []byte(content), 0o644))
}

// ralphCommits lists the subjects of commits carrying Ralph's trailers,
// oldest first.
func (r *repo) ralphCommits() []string { return r.commitsWith("Ralph-Iteration") }

// commitsWith are the subjects of the commits, oldest first, that carry
// one of the trailers.
func (r *repo) commitsWith(trailers ...string) []string {
	format := "%s%x00"
	for _, k := range trailers {
		format += "%(trailers:key=" + k + ",valueonly)"
	}
	out := r.git("log", "--reverse", "--format="+format+"%x00")
	var subjects []string
	parts := strings.Split(out, "\x00")
	for i := 0; i+1 < len(parts); i += 2 {
		if strings.TrimSpace(parts[i+1]) != "" {
			subjects = append(subjects, strings.TrimSpace(parts[i]))
		}
	}
	return subjects
}

// storyCommits are the subjects of Ralph's commits of work, oldest
// first: the iterations' (Ralph-Iteration) and those of a dead attempt's
// work committed before its retry (Ralph-Interrupted), which is a
// story's one commit when the worker died mid-story.
func (r *repo) storyCommits() []string { return r.commitsWith("Ralph-Iteration", "Ralph-Interrupted") }

const threeStoryPRD = `{
  "project": "Widgets",
  "branchName": "ralph/widgets",
  "description": "Widget catalogue",
  "userStories": [
    {"id": "US-001", "title": "List widgets", "description": "As a user I see all widgets.", "acceptanceCriteria": ["list renders"], "priority": 1, "passes": false, "notes": ""},
    {"id": "US-002", "title": "Add a widget", "description": "As a user I add a widget.", "acceptanceCriteria": ["form saves"], "priority": 2, "passes": false, "notes": ""},
    {"id": "US-003", "title": "Delete a widget", "description": "As a user I delete a widget.", "acceptanceCriteria": ["row disappears"], "priority": 3, "passes": false, "notes": ""}
  ]
}
`

const threeTaskProgress = `# Progress: Widgets

## Status

In Progress

## Tasks

### Phase 1: Catalogue

- [ ] List widgets
- [ ] Add a widget

### Phase 2: Cleanup

- [ ] Delete a widget

## Completed This Iteration

## Recent Attempts

## Iteration Log
`

// scenario writes a fake-agent scenario file and returns its path.
func scenario(t *testing.T, steps ...map[string]any) string {
	t.Helper()
	data, err := json.Marshal(map[string]any{"steps": steps})
	require.NoError(t, err)
	path := filepath.Join(fakeDir(t), "scenario.json")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return path
}

// fakeDir is a new directory for the fake agent's files, under bins.dir
// where its sandbox lets it read and write; removed after t.
func fakeDir(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp(bins.dir, "fake-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// fakeEnv is the environment that points the fake agent at a scenario and
// a state dir of its own.
//
// The agent gets only allowed variables of a worker's environment: worker
// processes pass the fake agent's own by agent.env (RALPH_AGENT_ENV).
func fakeEnv(t testing.TB, scenarioPath string) []string {
	env := []string{"FAKE_CLAUDE_STATE_DIR=" + fakeDir(t), "RALPH_AGENT_ENV=FAKE_CLAUDE_STATE_DIR FAKE_CLAUDE_SCENARIO"}
	if scenarioPath != "" {
		env = append(env, "FAKE_CLAUDE_SCENARIO="+scenarioPath)
	}
	return env
}

// fakeCall is one invocation of the fake agent, from its calls.jsonl.
type fakeCall struct {
	Time   time.Time `json:"time"`
	CWD    string    `json:"cwd"`
	Host   string    `json:"host"`
	Argv   []string  `json:"argv"`
	Prompt string    `json:"prompt"`
}

// calls reads what the fake agent recorded of its invocations; none
// before it first runs.
func calls(t testing.TB, env []string) []fakeCall {
	t.Helper()
	var dir string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "FAKE_CLAUDE_STATE_DIR="); ok {
			dir = v
		}
	}
	return readCalls(t, filepath.Join(dir, "calls.jsonl"))
}

// readCalls reads a calls.jsonl of the fake agent; none when it is not
// there yet.
func readCalls(t testing.TB, path string) []fakeCall {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	var out []fakeCall
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var c fakeCall
		// A line being appended right now is not complete yet.
		if json.Unmarshal(line, &c) == nil {
			out = append(out, c)
		}
	}
	return out
}

// cluster is an embedded server with a worker in this process.
type cluster struct {
	srv      *devserver.Server
	client   client.Client
	worker   *app.Worker
	stopOnce sync.Once
}

func startCluster(t testing.TB, stateDir string, agent *activities.Agent) *cluster {
	t.Helper()
	return startClusterWith(t, stateDir, agent, app.WorkerOptions{})
}

// startDevCluster is startCluster with the worker a `worker --dev` of
// stateDir runs: its records of iterations and of running attempts in
// stateDir (app.WorkerOptionsOf), where the benchmarks measure what
// they cost.
func startDevCluster(t testing.TB, stateDir string, agent *activities.Agent) *cluster {
	t.Helper()
	return startClusterWith(t, stateDir, agent, app.WorkerOptions{
		AttemptsDir: app.AttemptsDir(stateDir, testHost),
		RecordsDir:  app.RecordsDir(stateDir),
	})
}

// startClusterWith is startCluster with the worker's options opts (its
// task queue, host and agents are the test's).
func startClusterWith(t testing.TB, stateDir string, agent *activities.Agent, opts app.WorkerOptions) *cluster {
	t.Helper()
	srv := startServer(t, stateDir)
	c := dial(t, srv.Address(), srv.Namespace())
	opts.TaskQueue, opts.HostID, opts.MaxAgents = contract.TaskQueue, testHost, 8
	w := app.NewWorker(c, opts, agent, &github.Activities{WriteInterval: -1})
	require.NoError(t, w.Start())
	cl := &cluster{srv: srv, client: c, worker: w}
	t.Cleanup(cl.stop)
	return cl
}

// startServer starts an embedded Temporal server with Ralph's search
// attributes, its state in stateDir ("" keeps it in memory). The caller
// stops it.
func startServer(t testing.TB, stateDir string) *devserver.Server {
	t.Helper()
	srv, err := devserver.Start(context.Background(), devserver.Options{StateDir: stateDir, SearchAttributes: app.SearchAttributes(), LogLevel: "error"})
	require.NoError(t, err)
	return srv
}

// workerEnv is the environment of a worker process of srv allowed n
// agents at once, with HOME (and its configuration) in home. Its agents
// get the fake agent's scenario by agent.env.
func workerEnv(srv *devserver.Server, home string, n int, scenario string) []string {
	return []string{
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"TEMPORAL_ADDRESS=" + srv.Address(),
		"TEMPORAL_NAMESPACE=" + srv.Namespace(),
		"RALPH_WORKER_MAX_AGENTS=" + strconv.Itoa(n),
		"RALPH_AGENT_ENV=FAKE_CLAUDE_SCENARIO",
		"FAKE_CLAUDE_SCENARIO=" + scenario,
	}
}

// dial is a client of the Temporal server at hostPort, in namespace (""
// for the default). The caller closes it.
func dial(t testing.TB, hostPort, namespace string) client.Client {
	t.Helper()
	c, err := app.Dial(context.Background(), client.Options{HostPort: hostPort, Namespace: namespace, Logger: quiet{}})
	require.NoError(t, err)
	return c
}

func (c *cluster) stop() {
	c.stopOnce.Do(func() {
		c.worker.Stop()
		c.client.Close()
		c.srv.Stop()
	})
}

// testHost is the host ID of this machine's workers: the default,
// the hostname.
var testHost = func() string {
	name, err := os.Hostname()
	if err != nil {
		panic(err)
	}
	return name
}()

// sessionIDOf is the ID of the session of the workspace dir on this
// machine.
func sessionIDOf(dir string) string { return contract.SessionWorkflowID(testHost, dir) }

// input is a session input for a workspace with test-sized limits.
func input(workspace string) contract.SessionInput {
	return contract.SessionInput{
		Workspace: workspace,
		Host:      testHost,
		Agent: contract.AgentSettings{Command: []string{bins.claude},
			Sandbox: contract.SandboxSettings{ReadWrite: []string{bins.dir}}},
		Git: contract.GitSettings{AutoCommit: true},
		Limits: contract.Limits{
			MaxIterations:          10,
			MaxRuntime:             10 * time.Minute,
			MaxCostUSD:             5,
			MaxConsecutiveFailures: 3,
			MaxNoProgress:          3,
			IterationTimeout:       2 * time.Minute,
			HeartbeatTimeout:       10 * time.Second,
			IterationsPerRun:       25,
		},
	}
}

// proc is a real child process whose output the test keeps.
type proc struct {
	cmd *exec.Cmd
	mu  sync.Mutex
	out bytes.Buffer
	err error
	end chan struct{}
}

func (p *proc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *proc) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

func startProc(t testing.TB, env []string, name string, args ...string) *proc {
	t.Helper()
	return startProcIn(t, "", env, name, args...)
}

// childEnv is the environment of a process a test starts: this
// process's without any RALPH_* variable (the user's, or a test's own
// t.Setenv), then the harness's settings, then env, the test's.
func childEnv(env ...string) []string {
	// The fake agent's scenarios and state live under bins.dir (fakeDir),
	// which the sandbox of every session of these tests lets the agent
	// reach: sessions started by starter processes read it from the
	// environment, in-process ones from input.
	return testkit.Environ(append([]string{"RALPH_AGENT_SANDBOX_RW=" + bins.dir}, env...)...)
}

// startProcIn is startProc in the working directory dir.
func startProcIn(t testing.TB, dir string, env []string, name string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = childEnv(env...)
	return startCmd(t, cmd, func(p *os.Process) { _ = p.Kill() })
}

// startCmd starts cmd with its output kept, and ends it with kill at the
// end of the test if it still runs.
func startCmd(t testing.TB, cmd *exec.Cmd, kill func(*os.Process)) *proc {
	t.Helper()
	p := &proc{cmd: cmd, end: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p, p
	require.NoError(t, p.cmd.Start())
	go func() {
		p.err = p.cmd.Wait()
		close(p.end)
	}()
	t.Cleanup(func() {
		select {
		case <-p.end:
		default:
			kill(p.cmd.Process)
			<-p.end
		}
		if t.Failed() {
			t.Logf("%s %s printed (its end):\n%s", filepath.Base(cmd.Path), strings.Join(cmd.Args[1:], " "), tailOf(p.Output(), 4000))
		}
	})
	return p
}

// wait waits for the process to exit and returns its exit code.
func (p *proc) wait(t testing.TB, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.end:
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.end
		t.Fatalf("%s did not exit within %s; output:\n%s", p.cmd.Path, timeout, p.Output())
	}
	return p.cmd.ProcessState.ExitCode()
}

func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s", timeout, what)
}

// fixedPort is a free port below the kernel's ephemeral range, for a
// server that a child process binds later: a port the kernel handed out
// (devserver.FreePort) can be handed out again, to the embedded server's own
// internal listeners, before the child binds it, and the Temporal UI
// exits on a taken port.
func fixedPort(t testing.TB) int {
	t.Helper()
	for range 200 {
		p := 20000 + rand.IntN(12000)
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err == nil {
			ln.Close()
			return p
		}
	}
	t.Fatal("no free port in 20000-32000")
	return 0
}

type quiet struct{}

func (quiet) Debug(string, ...any) {}
func (quiet) Info(string, ...any)  {}
func (quiet) Warn(string, ...any)  {}
func (quiet) Error(string, ...any) {}

// collectHistory reads a whole history from its iterator.
func collectHistory(it client.HistoryEventIterator) (*historypb.History, error) {
	h := &historypb.History{}
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return nil, err
		}
		h.Events = append(h.Events, e)
	}
	return h, nil
}

func getenv(k string) string { return os.Getenv(k) }

func writeFile(path, content string) error { return os.WriteFile(path, []byte(content), 0o644) }

// sessionLog is the path of a file in the log directory of the session
// execution of workflow id (named by its key: the ID and first run ID).
func sessionLog(t *testing.T, workspace, id, name string) string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(workspace, ".ralph", "logs", id+".*"))
	require.NoError(t, err)
	require.Len(t, dirs, 1, "log directories of %s", id)
	return filepath.Join(dirs[0], name)
}

// sessionPrompt is the prompt of iteration n's first attempt of the
// session id in workspace: the first record of its log.
func sessionPrompt(t *testing.T, workspace, id string, n int) []byte {
	t.Helper()
	return logPrompt(t, sessionLog(t, workspace, id, fmt.Sprintf("iteration-%04d.attempt-1.jsonl", n)))
}

// logPrompt is the prompt the attempt's log at path begins with.
func logPrompt(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	prompt, _, ok := contract.ReadLogPrompt(bytes.NewReader(data))
	require.True(t, ok, "%s begins with its prompt: %.200q", path, data)
	return []byte(prompt)
}
