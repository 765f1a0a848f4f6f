package testsuite_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/sandbox"
	"github.com/durable-ralph/ralph/workflows"
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

// BenchmarkOrchestrationOverhead measures what running each iteration as a
// Temporal activity of a durable session costs, against a plain loop that
// does the same work per iteration (spawn the agent, parse its stream,
// inspect the workspace, commit) with no Temporal at all. Both use the same
// instant fake agent and the same Agent code; the Temporal side runs on the
// embedded server with its SQLite file, as `worker --dev` does.
func BenchmarkOrchestrationOverhead(b *testing.B) {
	rounds := envInt("RALPH_BENCH_ROUNDS", 3)
	contained := sandboxed()
	for range b.N {
		// Alternate the runs so that drift in the machine's speed (disk,
		// neighbours) hits all alike; compare the totals. The plain loop
		// and the first session run bare; the second session contains
		// every agent run (agent.sandbox required, network internet),
		// as sessions do by default.
		var plain, durable, boxed time.Duration
		for r := 1; r <= rounds; r++ {
			p := benchPlainLoop(b)
			d := benchSession(b, sandbox.ModeOff)
			plain += p
			durable += d
			line := fmt.Sprintf("round %d: plain loop %.1f ms/iteration, Temporal session %.1f ms/iteration", r, msPerIter(p), msPerIter(d))
			if contained {
				c := benchSession(b, sandbox.ModeRequired)
				boxed += c
				line += fmt.Sprintf(", contained %.1f ms/iteration", msPerIter(c))
			}
			fmt.Println(line)
		}
		plain /= time.Duration(rounds)
		durable /= time.Duration(rounds)
		ratio := float64(durable) / float64(plain)
		b.ReportMetric(msPerIter(plain), "plain-ms/iter")
		b.ReportMetric(msPerIter(durable), "temporal-ms/iter")
		b.ReportMetric(ratio, "ratio")
		fmt.Printf("orchestration overhead, %d rounds of %d iterations: plain loop %.1f ms/iteration, Temporal session %.1f ms/iteration, ratio %.2f\n",
			rounds, benchIterations, msPerIter(plain), msPerIter(durable), ratio)
		if contained {
			boxed /= time.Duration(rounds)
			b.ReportMetric(msPerIter(boxed), "contained-ms/iter")
			fmt.Printf("contained: Temporal session with every agent run in the sandbox %.1f ms/iteration, ratio %.2f to the plain loop, %.1f ms/iteration for the sandbox\n",
				msPerIter(boxed), float64(boxed)/float64(plain), msPerIter(boxed)-msPerIter(durable))
		}
	}
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
	ag := &activities.Agent{Env: benchEnv(b)}
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
func benchSession(b *testing.B, mode string) time.Duration {
	b.Helper()
	dir := benchRepo(b)
	cl := startCluster(b, b.TempDir(), &activities.Agent{Env: benchEnv(b)})
	defer cl.stop() // an idle server must not slow the next plain loop
	in := benchInput(dir)
	in.Agent.Sandbox.Mode = mode
	ctx := context.Background()
	start := time.Now()
	run, err := cl.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: sessionIDOf(dir), TaskQueue: contract.TaskQueue,
	}, workflows.Session, in)
	require.NoError(b, err)
	var res contract.SessionResult
	require.NoError(b, run.Get(ctx, &res))
	elapsed := time.Since(start)
	require.Equal(b, contract.ReasonMaxIterations, res.Reason, res.Message)
	require.Equal(b, benchIterations, res.Totals.Commits)
	return elapsed
}

func gitIn(b *testing.B, dir string, args ...string) {
	b.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(b, err, "git %v: %s", args, out)
}
