package testsuite_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/app"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/devserver"
	"github.com/durable-ralph/ralph/sandbox"
	"github.com/durable-ralph/ralph/workflows/session"
)

// BenchmarkScale runs N sessions at once on one worker with the embedded
// server, each of 5 iterations (RALPH_BENCH_SCALE_ITERATIONS) of an agent
// that thinks for 1 s (RALPH_BENCH_SCALE_THINK_MS; a Bash tool call that
// sleeps, no CPU) and then bumps a counter, which the iteration commits.
// Beside them, in the same run, N plain loops do the same spawn, parse and
// commit concurrently without Temporal. For each N (RALPH_BENCH_SCALE, a
// comma list, default 10,50,200) it prints the wall-time ratio sessions /
// plain loops and the resident memory per session of the worker and of
// the server; then, to show what limits the ratio, the CPU time of each
// part and where the sessions' time went (see scaleWaits), and Temporal's
// floor at N twice: its activities handed over eagerly, and on a host
// queue of their own, as a session's iterations are (floorLoops).
//
// Each session and each loop has a git repository of its own. The
// sessions' time runs from the first start to the last completion; every
// session must end at its iteration limit with one commit per iteration,
// and every loop must commit each iteration.
//
// # Measuring memory
//
// The worker and the server must not share a process, or neither's memory
// can be told apart. The server is embedded in this test process, as
// `worker --dev` embeds it; the worker is the real worker binary in a
// process of its own, pointed at the server by TEMPORAL_ADDRESS, with
// worker.max-agents N and the fake agent's scenario passed by agent.env.
//
//   - Worker: its VmRSS (from /proc/<pid>/status) sampled every 100 ms while
//     the sessions run, and its VmHWM at the end, whichever is higher,
//     minus its VmRSS when idle (polling, before the first session starts).
//     The agents are processes of their own and count in neither figure.
//   - Server: this process's VmRSS, sampled alike, minus its VmRSS once the
//     server is up and idle (after a GC that returns the plain loops' freed
//     heap to the OS). This process also holds the test's client with its N
//     long polls for the results, a few KiB per session, which counts
//     against the server. VmHWM cannot be used: it includes the plain loops.
//
// Both are Go processes: their RSS follows the Go heap's GC cycle (about
// twice the live heap with GOGC=100), which is what a user sees.
//
// The plain loops run first, then the sessions, for each N in turn, with
// a fresh server and worker per N.
func BenchmarkScale(b *testing.B) {
	var ns []int
	for _, f := range strings.Split(envOr("RALPH_BENCH_SCALE", "10,50,200"), ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		require.NoError(b, err, "RALPH_BENCH_SCALE=%q", os.Getenv("RALPH_BENCH_SCALE"))
		require.Positive(b, n)
		ns = append(ns, n)
	}
	sc := &scaleBench{
		iterations: envInt("RALPH_BENCH_SCALE_ITERATIONS", 5),
		think:      time.Duration(envInt("RALPH_BENCH_SCALE_THINK_MS", 1000)) * time.Millisecond,
	}
	sc.template = sc.templateRepo(b)
	sc.scenario = filepath.Join(fakeDir(b), "scenario.json")
	data, err := json.Marshal(map[string]any{"steps": []any{
		map[string]any{"sleep_ms": sc.think.Milliseconds(), "counter_file": scaleCounter},
	}})
	require.NoError(b, err)
	require.NoError(b, os.WriteFile(sc.scenario, data, 0o644))

	for _, n := range ns {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			for range b.N {
				plain, plainCPU := sc.plainLoops(b, n)
				floor, floorCPU, floorWaits := sc.floorLoops(b, n, false)
				hosted, hostedCPU, hostedWaits := sc.floorLoops(b, n, true)
				s := sc.sessions(b, n)
				ratio := float64(s.elapsed) / float64(plain)
				const mib = 1 << 20
				workerMiB := float64(s.workerPeak-s.workerIdle) / mib
				serverMiB := float64(s.serverPeak-s.serverIdle) / mib
				fmt.Printf("scale N=%d: plain loops %.1f s, sessions %.1f s, ratio %.2f; worker +%.1f MiB (%.2f MiB/session), server +%.1f MiB (%.2f MiB/session)\n",
					n, plain.Seconds(), s.elapsed.Seconds(), ratio,
					workerMiB, workerMiB/float64(n), serverMiB, serverMiB/float64(n))
				fmt.Printf("scale N=%d: worker RSS idle %.1f MiB, peak %.1f MiB; test process (server) RSS idle %.1f MiB, peak %.1f MiB\n",
					n, float64(s.workerIdle)/mib, float64(s.workerPeak)/mib, float64(s.serverIdle)/mib, float64(s.serverPeak)/mib)
				fmt.Printf("scale N=%d: CPU plain loops %.1f s in the loops + %.1f s in agents and git; sessions %.1f s in the server (and client) + %.1f s in the worker + %.1f s in agents and git\n",
					n, plainCPU.self, plainCPU.children, s.serverCPU.self, s.workerCPU.self, s.workerCPU.children)
				fmt.Printf("scale N=%d: sessions per iteration: activities %.0f ms running, %.0f ms queued; workflow tasks %.0f ms queued, %.0f ms running\n",
					n, 1000*s.waits.activity, 1000*s.waits.activityQueue, 1000*s.waits.workflowQueue, 1000*s.waits.workflowTask)
				iters := float64(n * sc.iterations)
				orch := 1000 * (s.serverCPU.self + s.workerCPU.self - plainCPU.self) / iters
				fmt.Printf("scale N=%d: CPU per iteration: sessions %.1f ms (server %.1f, worker %.1f, agents and git %.1f), plain loops %.1f ms; orchestration %.1f ms (server and worker beyond the plain loop's own)\n",
					n, 1000*(s.serverCPU.self+s.workerCPU.self+s.workerCPU.children)/iters, 1000*s.serverCPU.self/iters, 1000*s.workerCPU.self/iters,
					1000*s.workerCPU.children/iters, 1000*(plainCPU.self+plainCPU.children)/iters, orch)
				p50, p99 := percentile(s.waits.gaps, 50), percentile(s.waits.gaps, 99)
				fmt.Printf("scale N=%d: an iteration's end to the next one's start: p50 %.0f ms, p99 %.0f ms (%d gaps)\n",
					n, ms(p50), ms(p99), len(s.waits.gaps))
				b.ReportMetric(orch, "orchestration-CPU-ms/iter")
				b.ReportMetric(ms(p50), "gap-p50-ms")
				b.ReportMetric(ms(p99), "gap-p99-ms")
				fmt.Printf("scale N=%d: Temporal floor (the plain loop's iteration as the one activity of a minimal workflow, same server): %.1f s, ratio %.2f to the plain loops, CPU %.1f ms per iteration; sessions %.2f× the floor\n",
					n, floor.Seconds(), float64(floor)/float64(plain), 1000*(floorCPU.self+floorCPU.children)/iters, float64(s.elapsed)/float64(floor))
				fmt.Printf("scale N=%d: Temporal floor per iteration: activities %.0f ms running, %.0f ms queued; workflow tasks %.0f ms queued, %.0f ms running; an iteration's end to the next one's start p50 %.0f ms, p99 %.0f ms\n",
					n, 1000*floorWaits.activity, 1000*floorWaits.activityQueue, 1000*floorWaits.workflowQueue, 1000*floorWaits.workflowTask,
					ms(percentile(floorWaits.gaps, 50)), ms(percentile(floorWaits.gaps, 99)))
				fmt.Printf("scale N=%d: the floor with its activities on a host queue (as a session's, not handed over eagerly): %.1f s, ratio %.2f to the plain loops, CPU %.1f ms per iteration; activities %.0f ms queued, workflow tasks %.0f ms queued; sessions %.2f× this floor\n",
					n, hosted.Seconds(), float64(hosted)/float64(plain), 1000*(hostedCPU.self+hostedCPU.children)/iters,
					1000*hostedWaits.activityQueue, 1000*hostedWaits.workflowQueue, float64(s.elapsed)/float64(hosted))
				b.ReportMetric(float64(floor)/float64(plain), "floor-ratio")
				b.ReportMetric(float64(hosted)/float64(plain), "hosted-floor-ratio")
				b.ReportMetric(plain.Seconds(), "plain-s")
				b.ReportMetric(s.elapsed.Seconds(), "sessions-s")
				b.ReportMetric(ratio, "ratio")
				b.ReportMetric(workerMiB/float64(n), "worker-MiB/session")
				b.ReportMetric(serverMiB/float64(n), "server-MiB/session")
			}
		})
	}
}

// percentile is the p-th percentile of ds (nearest rank); 0 for none.
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, (len(s)*p+99)/100-1)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// scaleCounter is the file the fake agent bumps each iteration.
const scaleCounter = "counter.txt"

type scaleBench struct {
	iterations int
	think      time.Duration
	template   string // a repository the workspaces are copies of
	scenario   string // the fake agent's scenario
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// templateRepo is the repository every workspace starts as: a PROMPT.md
// and one commit.
func (sc *scaleBench) templateRepo(b *testing.B) string {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "template")
	require.NoError(b, os.Mkdir(dir, 0o755))
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"config", "user.email", "bench@example.com"},
		{"config", "user.name", "Bench"},
	} {
		gitIn(b, dir, args...)
	}
	require.NoError(b, os.WriteFile(filepath.Join(dir, "PROMPT.md"), []byte("# Objective\n\nKeep a counter in counter.txt.\n"), 0o644))
	gitIn(b, dir, "add", "-A")
	gitIn(b, dir, "commit", "-q", "-m", "initial")
	return dir
}

// workspaces copies the template into n workspaces of their own: copying
// is much cheaper than n times git init and commit, and git refreshes
// the copied index's stat data on its first status.
func (sc *scaleBench) workspaces(b *testing.B, n int) []string {
	b.Helper()
	parent := b.TempDir()
	if resolved, err := filepath.EvalSymlinks(parent); err == nil {
		parent = resolved
	}
	dirs := make([]string, n)
	for i := range dirs {
		dirs[i] = filepath.Join(parent, fmt.Sprintf("ws-%03d", i))
		require.NoError(b, os.CopyFS(dirs[i], os.DirFS(sc.template)))
	}
	return dirs
}

// input is the session of one workspace: scaleIterations iterations, each
// of which commits, and no other limit in the way.
func (sc *scaleBench) input(dir string) contract.SessionInput {
	in := input(dir)
	in.Task = contract.TaskSettings{Mode: "prompt"}
	in.Limits.MaxIterations = sc.iterations
	in.Limits.MaxNoProgress = sc.iterations
	in.Limits.MaxRuntime = time.Hour
	in.Limits.MaxCostUSD = 0
	// Scale is measured bare, as it was before the sandbox; its cost is
	// BenchmarkOrchestrationOverhead's contained figure.
	in.Agent.Sandbox.Mode = sandbox.ModeOff
	return in
}

// checkCounter requires that the workspace's counter reached the
// iteration count and that every iteration committed; context says more
// when it did not (the worker's log).
func (sc *scaleBench) checkCounter(b *testing.B, dir, context string) {
	b.Helper()
	data, err := os.ReadFile(filepath.Join(dir, scaleCounter))
	require.NoError(b, err)
	require.Equal(b, strconv.Itoa(sc.iterations), strings.TrimSpace(string(data)), "counter of %s%s", dir, context)
	cmd := exec.Command("git", "rev-list", "--count", "HEAD")
	cmd.Dir = dir
	out, err := cmd.Output()
	require.NoError(b, err)
	require.Equal(b, strconv.Itoa(sc.iterations+1), strings.TrimSpace(string(out)), "commits of %s (with the initial one)", dir)
}

// plainLoops runs n loops at once, each doing sc.iterations iterations in
// its own workspace with the same Agent code the worker runs, and returns
// the wall time from the start of the first to the end of the last.
func (sc *scaleBench) plainLoops(b *testing.B, n int) (time.Duration, cpuTimes) {
	b.Helper()
	dirs := sc.workspaces(b, n)
	errs := make([]error, n)
	ctx := context.Background()
	var wg sync.WaitGroup
	cpu0, err := procCPU(os.Getpid())
	require.NoError(b, err)
	start := time.Now()
	for i, dir := range dirs {
		wg.Go(func() {
			// The fake agent keeps its state in the workspace's .ralph,
			// as it does for the worker's agents, whose environment is
			// the worker's.
			ag := &activities.Agent{Env: []string{"FAKE_CLAUDE_SCENARIO=" + sc.scenario}}
			in := sc.input(dir)
			for it := 1; it <= sc.iterations; it++ {
				res, err := ag.Iterate(ctx, contract.IterationInput{
					SessionID: fmt.Sprintf("plain-%d", i), Iteration: it, MaxIterations: sc.iterations,
					Workspace: dir, Agent: in.Agent, Task: in.Task, Git: in.Git,
				}, 1, nil, nil)
				switch {
				case err != nil:
					errs[i] = fmt.Errorf("loop %d iteration %d: %w", i, it, err)
				case res.Outcome != contract.OutcomeSuccess:
					errs[i] = fmt.Errorf("loop %d iteration %d: %s: %s", i, it, res.Outcome, res.Reason)
				case res.Commit == "":
					errs[i] = fmt.Errorf("loop %d iteration %d committed nothing", i, it)
				}
				if errs[i] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu, err := procCPU(os.Getpid())
	require.NoError(b, err)
	for _, err := range errs {
		require.NoError(b, err)
	}
	for _, dir := range dirs {
		sc.checkCounter(b, dir, "")
	}
	return elapsed, cpu.sub(cpu0)
}

// scaleRun is what the sessions of one N measured.
type scaleRun struct {
	elapsed                time.Duration
	workerIdle, workerPeak int64 // bytes
	serverIdle, serverPeak int64 // bytes, of this process
	serverCPU, workerCPU   cpuTimes
	waits                  scaleWaits
}

// sessions runs n sessions at once on one worker process with a fresh
// embedded server in this process; see BenchmarkScale for the memory.
func (sc *scaleBench) sessions(b *testing.B, n int) scaleRun {
	b.Helper()
	dirs := sc.workspaces(b, n)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	srv := startServer(b, b.TempDir())
	defer srv.Stop()
	c := dial(b, srv.Address(), srv.Namespace())
	defer c.Close()

	w := startScaleWorker(b, srv, n, sc.scenario)
	defer w.stop(b)
	// Let the worker settle (its pollers connected, startup garbage
	// collected) before its idle memory is taken.
	time.Sleep(2 * time.Second)
	var run scaleRun
	var err error
	run.workerIdle, err = procMem(w.cmd.Process.Pid, "VmRSS")
	require.NoError(b, err)
	runtime.GC()
	debug.FreeOSMemory()
	run.serverIdle, err = procMem(os.Getpid(), "VmRSS")
	require.NoError(b, err)

	// Sample both processes' RSS until the sessions are done.
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	var workerPeak, serverPeak int64
	go func() {
		defer close(sampled)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			if v, err := procMem(w.cmd.Process.Pid, "VmRSS"); err == nil {
				workerPeak = max(workerPeak, v)
			}
			if v, err := procMem(os.Getpid(), "VmRSS"); err == nil {
				serverPeak = max(serverPeak, v)
			}
			select {
			case <-stopSampling:
				return
			case <-tick.C:
			}
		}
	}()

	results := make([]contract.SessionResult, n)
	errs := make([]error, n)
	ends := make([]time.Time, n)
	var wg sync.WaitGroup
	serverCPU0, err := procCPU(os.Getpid())
	require.NoError(b, err)
	workerCPU0, err := procCPU(w.cmd.Process.Pid)
	require.NoError(b, err)
	start := time.Now()
	for i, dir := range dirs {
		wg.Go(func() {
			r, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
				ID: sessionIDOf(dir), TaskQueue: contract.TaskQueue,
			}, session.Session, sc.input(dir))
			if err == nil {
				err = r.Get(ctx, &results[i])
			}
			errs[i], ends[i] = err, time.Now()
		})
	}
	wg.Wait()
	close(stopSampling)
	<-sampled
	serverCPU, err := procCPU(os.Getpid())
	require.NoError(b, err)
	workerCPU, err := procCPU(w.cmd.Process.Pid)
	require.NoError(b, err)
	run.serverCPU, run.workerCPU = serverCPU.sub(serverCPU0), workerCPU.sub(workerCPU0)

	var last time.Time
	for i := range dirs {
		require.NoError(b, errs[i], "session %d; worker output:\n%s", i, w.output())
		require.Equal(b, contract.ReasonMaxIterations, results[i].Reason, "session %d: %s", i, results[i].Message)
		require.Equal(b, sc.iterations, results[i].Totals.Commits, "session %d", i)
		sc.checkCounter(b, dirs[i], "; the worker's log ends:\n"+tailOf(w.output(), 8<<10))
		if ends[i].After(last) {
			last = ends[i]
		}
	}
	run.elapsed = last.Sub(start)
	ids := make([]string, len(dirs))
	for i, dir := range dirs {
		ids[i] = sessionIDOf(dir)
	}
	run.waits = sessionWaits(b, c, ids, true)
	hwm, err := procMem(w.cmd.Process.Pid, "VmHWM")
	require.NoError(b, err)
	run.workerPeak = max(workerPeak, hwm)
	run.serverPeak = serverPeak
	return run
}

// scaleWaits say where the sessions' time went, from their histories: the
// sums over all sessions divided by the iterations, in seconds. The
// preparation activity and the first workflow task of each session count
// too, spread over its iterations.
type scaleWaits struct {
	// activity is the time from an activity's start (taken by the
	// worker) to its completion: the work the plain loop does too.
	activity float64
	// activityQueue is the time from an activity's scheduling to its
	// start: the activity task waiting in its task queue for a poll.
	activityQueue float64
	// workflowQueue is the same for workflow tasks, and workflowTask the
	// time from their start to their completion (the worker running the
	// workflow code and the round trip of its answer).
	workflowQueue, workflowTask float64
	// gaps are, for every iteration but each session's first, the time
	// from the end of the iteration before (its activity's completion)
	// to the start of its own activity: what the session adds between
	// two agent runs that a plain loop does not.
	gaps []time.Duration
}

// sessionWaits reads the histories of the workflows ids; prepared says
// that each runs one activity (the preparation) before its iterations.
func sessionWaits(b *testing.B, c client.Client, ids []string, prepared bool) scaleWaits {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var w scaleWaits
	var iterations int
	first := 1 // the completion after which gaps are counted
	if prepared {
		first = 2
	}
	for _, id := range ids {
		h, err := collectHistory(c.GetWorkflowHistory(ctx, id, "", false, 0))
		require.NoError(b, err)
		at := map[int64]time.Time{}
		var completed int
		var lastEnd time.Time
		for _, e := range h.Events {
			at[e.GetEventId()] = e.GetEventTime().AsTime()
			since := func(id int64) float64 { return e.GetEventTime().AsTime().Sub(at[id]).Seconds() }
			switch {
			case e.GetActivityTaskStartedEventAttributes() != nil:
				w.activityQueue += since(e.GetActivityTaskStartedEventAttributes().GetScheduledEventId())
				if completed >= first {
					w.gaps = append(w.gaps, e.GetEventTime().AsTime().Sub(lastEnd))
				}
			case e.GetActivityTaskCompletedEventAttributes() != nil:
				w.activity += since(e.GetActivityTaskCompletedEventAttributes().GetStartedEventId())
				iterations++
				completed++
				lastEnd = e.GetEventTime().AsTime()
			case e.GetWorkflowTaskStartedEventAttributes() != nil:
				w.workflowQueue += since(e.GetWorkflowTaskStartedEventAttributes().GetScheduledEventId())
			case e.GetWorkflowTaskCompletedEventAttributes() != nil:
				w.workflowTask += since(e.GetWorkflowTaskCompletedEventAttributes().GetStartedEventId())
			}
		}
	}
	// The activities are the iterations and one preparation each.
	if prepared {
		iterations -= len(ids)
	}
	n := float64(iterations)
	return scaleWaits{activity: w.activity / n, activityQueue: w.activityQueue / n, workflowQueue: w.workflowQueue / n, workflowTask: w.workflowTask / n, gaps: w.gaps}
}

// scaleWorker is a worker process.
type scaleWorker struct {
	cmd *exec.Cmd
	mu  sync.Mutex
	out bytes.Buffer
	end chan struct{}
}

func (w *scaleWorker) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.out.Write(p)
}

// tailOf is the last n bytes of s.
func tailOf(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

func (w *scaleWorker) output() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.out.String()
}

// startScaleWorker starts the worker binary against srv, allowed n agents
// at once, and waits until it polls. Its agents get the fake agent's
// scenario by agent.env; their state stays in their workspaces.
func startScaleWorker(b *testing.B, srv *devserver.Server, n int, scenario string) *scaleWorker {
	b.Helper()
	home := b.TempDir()
	w := &scaleWorker{cmd: exec.Command(bins.worker), end: make(chan struct{})}
	w.cmd.Dir = home // no ralph.yaml of the caller's directory
	// None of the caller's settings: another host ID, say, would leave
	// the sessions' iterations to a worker that does not exist.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "RALPH_") && !strings.HasPrefix(kv, "TEMPORAL_") && !strings.HasPrefix(kv, "FAKE_CLAUDE_") {
			w.cmd.Env = append(w.cmd.Env, kv)
		}
	}
	w.cmd.Env = append(w.cmd.Env, workerEnv(srv, home, n, scenario)...)
	// RALPH_BENCH_WORKER_PROFILE=DIR: a CPU profile of each N's worker,
	// worker-N.pprof (docs/development.md).
	if dir := os.Getenv("RALPH_BENCH_WORKER_PROFILE"); dir != "" {
		w.cmd.Env = append(w.cmd.Env, fmt.Sprintf("RALPH_WORKER_CPU_PROFILE=%s/worker-%d.pprof", dir, n))
	}
	w.cmd.Stdout, w.cmd.Stderr = w, w
	require.NoError(b, w.cmd.Start())
	go func() {
		_ = w.cmd.Wait()
		close(w.end)
	}()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(w.output(), "Worker polling") {
		select {
		case <-w.end:
			b.Fatalf("the worker exited: %s", w.output())
		default:
		}
		if time.Now().After(deadline) {
			w.stop(b)
			b.Fatalf("the worker did not poll within a minute: %s", w.output())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return w
}

// stop stops the worker as a user does, by SIGINT, and kills it if it
// does not exit in time.
func (w *scaleWorker) stop(b *testing.B) {
	select {
	case <-w.end:
		return
	default:
	}
	_ = w.cmd.Process.Signal(os.Interrupt)
	select {
	case <-w.end:
	case <-time.After(app.WorkerStopTimeout + 5*time.Second):
		_ = w.cmd.Process.Kill()
		<-w.end
		b.Logf("the worker did not stop on SIGINT; killed")
	}
}

// cpuTimes are the CPU seconds of a process, from /proc/<pid>/stat: its
// own (user and system) and those of its children it waited for.
type cpuTimes struct{ self, children float64 }

func (c cpuTimes) sub(d cpuTimes) cpuTimes {
	return cpuTimes{self: c.self - d.self, children: c.children - d.children}
}

// procCPU reads pid's CPU times; the kernel counts them in ticks of
// 1/100 s (USER_HZ, 100 on Linux).
func procCPU(pid int) (cpuTimes, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return cpuTimes{}, err
	}
	// The fields after the command name, which is in parentheses and may
	// hold spaces: state is field 3, utime 14, stime 15, cutime 16,
	// cstime 17.
	i := bytes.LastIndexByte(data, ')')
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 15 {
		return cpuTimes{}, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	var ticks [4]float64
	for k := range ticks {
		v, err := strconv.ParseFloat(f[11+k], 64)
		if err != nil {
			return cpuTimes{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks[k] = v / 100
	}
	return cpuTimes{self: ticks[0] + ticks[1], children: ticks[2] + ticks[3]}, nil
}

// procMem is a memory figure of /proc/<pid>/status (VmRSS, VmHWM), in
// bytes.
func procMem(pid int, field string) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}
