package testsuite_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/app"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/sandbox"
	"github.com/durable-ralph/ralph/workflows/session"
)

// benchIterations is the length of each measured session; the issue asks
// for at least 100.
var benchIterations = envInt("RALPH_BENCH_ITERATIONS", 100)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// BenchmarkOrchestrationOverhead measures what an iteration costs, side
// by side in one run: the bare loop people write in bash (spawn the agent,
// check its stream, git add and commit), Ralph's iteration in a plain Go
// loop with no Temporal (the same Agent code: prompt, stream parsing,
// history guard, exactly-once commit), the least any loop on Temporal
// costs (one no-op activity an iteration, floorLoop), the same floor with
// its activity on a queue of its own (as a session's iteration is on its
// host's queue, which the server cannot hand over eagerly), and the same
// iteration as the activity of a durable session, bare and contained. All use the same
// instant fake agent; the Temporal side runs on the embedded server with
// its SQLite file, as `worker --dev` does, in this process.
//
// Per iteration it prints wall time, CPU (this process, which holds the
// server and worker, and its children: agents and git), git processes
// (a git on PATH that counts its runs), and the session's history events
// and payload bytes over every run of its continue-as-new chain.
func BenchmarkOrchestrationOverhead(b *testing.B) {
	rounds := envInt("RALPH_BENCH_ROUNDS", 3)
	contained := sandboxed()
	gitRuns := gitCounter(b)
	for range b.N {
		// Alternate the runs so that drift in the machine's speed (disk,
		// neighbours) hits all alike; compare the totals.
		costs := map[string]*iterCost{}
		order := []string{"bare bash loop", "plain loop (no Temporal)", "Temporal floor (no-op)", "floor, on a host queue", "Temporal session"}
		if contained {
			order = append(order, "contained session")
		}
		for _, name := range order {
			costs[name] = &iterCost{}
		}
		for r := 1; r <= rounds; r++ {
			costs[order[0]].measure(gitRuns, func() runFigures { return runFigures{wall: benchBareLoop(b)} })
			costs[order[1]].measure(gitRuns, func() runFigures { return runFigures{wall: benchPlainLoop(b)} })
			costs[order[2]].measure(gitRuns, func() runFigures { return benchTemporalFloor(b, false) })
			costs[order[3]].measure(gitRuns, func() runFigures { return benchTemporalFloor(b, true) })
			costs[order[4]].measure(gitRuns, func() runFigures { return benchSession(b, sandbox.ModeOff) })
			if contained {
				costs[order[5]].measure(gitRuns, func() runFigures { return benchSession(b, sandbox.ModeRequired) })
			}
			line := fmt.Sprintf("round %d:", r)
			for _, name := range order {
				line += fmt.Sprintf(" %s %.1f ms/iteration;", name, costs[name].last)
			}
			fmt.Println(strings.TrimSuffix(line, ";"))
		}
		bare := costs[order[0]]
		fmt.Printf("iteration cost, %d rounds of %d iterations, %d cores:\n", rounds, benchIterations, runtime.NumCPU())
		fmt.Printf("  %-26s %8s %6s %8s %10s %9s %10s\n", "", "wall ms", "ratio", "CPU ms", "git procs", "events", "bytes")
		for _, name := range order {
			c := costs[name]
			fmt.Printf("  %-26s %8.1f %6.2f %8.1f %10.1f %9s %10s\n", name, c.wallMs(rounds), c.wallMs(rounds)/bare.wallMs(rounds),
				c.cpuMs(rounds), c.gitPerIter(rounds), c.perIter(c.events, rounds), c.perIter(c.bytes, rounds))
		}
		floor, hosted, session := costs[order[2]], costs[order[3]], costs[order[4]]
		fmt.Printf("Temporal floor, per iteration over %d rounds: %s\n", rounds, floor.phases.div(rounds))
		fmt.Printf("the least a loop on Temporal adds: %.1f ms/iteration; the bare loop plus that is %.2f× the bare loop\n",
			floor.wallMs(rounds), (bare.wallMs(rounds)+floor.wallMs(rounds))/bare.wallMs(rounds))
		fmt.Printf("floor with its activity on a host queue (not handed over eagerly), per iteration over %d rounds: %s\n", rounds, hosted.phases.div(rounds))
		fmt.Printf("the host queue's hand-over costs %.1f ms of wall and %.1f ms of CPU an iteration over the floor's eager one\n",
			hosted.wallMs(rounds)-floor.wallMs(rounds), hosted.cpuMs(rounds)-floor.cpuMs(rounds))
		fmt.Printf("Temporal session, per iteration over %d rounds: %s\n", rounds, session.phases.div(rounds))
		fmt.Printf("orchestration CPU beyond the bare loop: %.1f ms/iteration (server, worker and client in this process); the floor's %.1f, on a host queue %.1f\n",
			session.cpuMs(rounds)-bare.cpuMs(rounds), floor.cpuMs(rounds), hosted.cpuMs(rounds))
		b.ReportMetric(bare.wallMs(rounds), "bare-ms/iter")
		b.ReportMetric(costs[order[1]].wallMs(rounds), "plain-ms/iter")
		b.ReportMetric(session.wallMs(rounds), "temporal-ms/iter")
		b.ReportMetric(session.wallMs(rounds)/bare.wallMs(rounds), "ratio")
		b.ReportMetric(session.gitPerIter(rounds), "git/iter")
		if contained {
			boxed := costs[order[5]]
			b.ReportMetric(boxed.wallMs(rounds), "contained-ms/iter")
			fmt.Printf("contained: %.1f ms/iteration, ratio %.2f to the bare loop, %.1f ms/iteration for the sandbox\n",
				boxed.wallMs(rounds), boxed.wallMs(rounds)/bare.wallMs(rounds), boxed.wallMs(rounds)-session.wallMs(rounds))
		}
	}
}

// runFigures are what one measured run reports of itself.
type runFigures struct {
	wall          time.Duration
	events, bytes int
	phases        phases
}

// iterCost sums the figures of one kind of loop over the rounds.
type iterCost struct {
	wall, cpu     time.Duration
	git           int
	events, bytes int
	phases        phases
	last          float64 // ms per iteration of the last round
}

func (c *iterCost) measure(gitRuns func() int, run func() runFigures) {
	gitRuns()
	cpu := cpuNow()
	f := run()
	c.cpu += cpuNow() - cpu
	c.git += gitRuns()
	c.wall += f.wall
	c.events += f.events
	c.bytes += f.bytes
	c.phases.add(f.phases)
	c.last = msPerIter(f.wall)
}

func (c *iterCost) wallMs(rounds int) float64 { return msPerIter(c.wall) / float64(rounds) }
func (c *iterCost) cpuMs(rounds int) float64  { return msPerIter(c.cpu) / float64(rounds) }
func (c *iterCost) gitPerIter(rounds int) float64 {
	return float64(c.git) / float64(rounds*benchIterations)
}

func (c *iterCost) perIter(n, rounds int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", float64(n)/float64(rounds*benchIterations))
}

// sandboxed reports whether this machine can contain agents; CI can.
func sandboxed() bool {
	b, err := sandbox.Find()
	return err == nil && b.Socat != ""
}

func msPerIter(d time.Duration) float64 {
	return float64(d.Microseconds()) / 1000 / float64(benchIterations)
}

func benchRepo(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"config", "user.email", "bench@example.com"},
		{"config", "user.name", "Bench"},
	} {
		gitIn(b, dir, args...)
	}
	require.NoError(b, os.WriteFile(dir+"/PROMPT.md", []byte("# Objective\n\nKeep a counter in counter.txt.\n"), 0o644))
	gitIn(b, dir, "add", "-A")
	gitIn(b, dir, "commit", "-q", "-m", "initial")
	return dir
}

func benchEnv(b *testing.B) []string {
	b.Helper()
	path := fakeDir(b) + "/scenario.json"
	require.NoError(b, os.WriteFile(path, []byte(`{"steps":[{"counter_file":"counter.txt"}]}`), 0o644))
	return []string{"FAKE_CLAUDE_SCENARIO=" + path, "FAKE_CLAUDE_STATE_DIR=" + fakeDir(b)}
}

func benchInput(dir string) contract.SessionInput {
	in := input(dir)
	in.Task = contract.TaskSettings{Mode: "prompt"}
	in.Limits.MaxIterations = benchIterations
	in.Limits.MaxNoProgress = benchIterations
	in.Limits.MaxRuntime = time.Hour
	in.Limits.MaxCostUSD = 0
	return in
}

func benchPlainLoop(b *testing.B) time.Duration {
	b.Helper()
	dir := benchRepo(b)
	// The worker's records of its iterations, as a worker keeps them.
	ag := &activities.Agent{Env: benchEnv(b), Records: app.RecordsDir(b.TempDir())}
	in := benchInput(dir)
	in.Agent.Sandbox.Mode = sandbox.ModeOff
	ctx := context.Background()
	start := time.Now()
	for i := 1; i <= benchIterations; i++ {
		res, err := ag.Iterate(ctx, contract.IterationInput{
			SessionID: "plain", Iteration: i, MaxIterations: benchIterations,
			Workspace: dir, Agent: in.Agent, Task: in.Task, Git: in.Git,
		}, 1, nil, nil)
		require.NoError(b, err)
		require.Equal(b, contract.OutcomeSuccess, res.Outcome, res.Reason)
		require.NotEmpty(b, res.Commit, "iteration %d committed nothing", i)
	}
	return time.Since(start)
}

// benchSession runs a session of benchIterations iterations with
// agent.sandbox mode.
func benchSession(b *testing.B, mode string) runFigures {
	b.Helper()
	return benchSessionIn(b, benchRepo(b), mode)
}

// benchSessionIn runs the session in the repository dir.
func benchSessionIn(b *testing.B, dir, mode string) runFigures {
	b.Helper()
	cl := startDevCluster(b, b.TempDir(), &activities.Agent{Env: benchEnv(b)})
	defer cl.stop() // an idle server must not slow the next plain loop
	in := benchInput(dir)
	in.Agent.Sandbox.Mode = mode
	ctx := context.Background()
	start := time.Now()
	run, err := cl.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: sessionIDOf(dir), TaskQueue: contract.TaskQueue,
	}, session.Session, in)
	require.NoError(b, err)
	started := time.Since(start)
	var res contract.SessionResult
	require.NoError(b, run.Get(ctx, &res))
	f := runFigures{wall: time.Since(start)}
	require.Equal(b, contract.ReasonMaxIterations, res.Reason, res.Message)
	require.Equal(b, benchIterations, res.Totals.Commits)
	f.events, f.bytes, f.phases = historyCost(b, cl.client, sessionIDOf(dir))
	f.countToClose("session ("+mode+")", started)
	return f
}

// countToClose ends a run's wall time at its close event when the
// result reached this client more than a second after it: one CI run
// measured a session at 220 ms per iteration whose history spanned 27 ms
// per iteration, with normal CPU, and this machine one round of 100
// contained iterations at 240 ms each whose history spanned 4.3 s of the
// 24 s. The wait is the result's long poll returning late, which no
// session waits for (its next iteration does not): it is not counted in
// the session's cost, and said.
func (f *runFigures) countToClose(name string, startCall time.Duration) {
	if late := f.wall - startCall - f.phases.span; late > time.Second {
		fmt.Printf("%s: its result arrived %v after its close event (start call %v, history %v): counted to the close event\n",
			name, late.Round(time.Millisecond), startCall.Round(time.Millisecond), f.phases.span.Round(time.Millisecond))
		f.wall = startCall + f.phases.span
	}
}

func gitIn(b *testing.B, dir string, args ...string) {
	b.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(b, err, "git %v: %s", args, out)
}
