package testsuite_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/sandbox"
	"github.com/durable-ralph/ralph/workflows/session"
)

// BenchmarkRepositorySize runs the same sessions on two generated
// repositories of the same 20k files, one with 10 commits and one with
// 100k, to show that an iteration's git work does not grow with history
// (it once walked all of it: git log --all --grep). It prints, for each,
// the bare bash loop's and the Temporal session's wall time per
// iteration, and the ratio of the big history to the small one.
func BenchmarkRepositorySize(b *testing.B) {
	files := envInt("RALPH_BENCH_REPO_FILES", 20000)
	iterations := envInt("RALPH_BENCH_REPO_ITERATIONS", 30)
	commits := envInt("RALPH_BENCH_REPO_COMMITS", 100000)
	rounds := envInt("RALPH_BENCH_ROUNDS", 2)
	small := generatedRepo(b, files, 10)
	big := generatedRepo(b, files, commits)
	saved := benchIterations
	benchIterations = iterations
	defer func() { benchIterations = saved }()
	for range b.N {
		// Alternate the two, round after round, so that the machine's
		// drift and the page cache hit both alike.
		var bare, session [2]time.Duration
		for range rounds {
			for i, tmpl := range []string{small, big} {
				bare[i] += benchBareLoopIn(b, cloneRepo(b, tmpl))
				session[i] += benchSessionIn(b, cloneRepo(b, tmpl), sandbox.ModeOff).wall
			}
		}
		per := func(d time.Duration) float64 { return msPerIter(d) / float64(rounds) }
		fmt.Printf("repository size, %d files, %d rounds of %d iterations: bare loop %.1f ms/iteration on 10 commits, %.1f on %d (ratio %.2f); "+
			"Temporal session %.1f ms/iteration on 10 commits, %.1f on %d (ratio %.2f)\n", files, rounds, iterations,
			per(bare[0]), per(bare[1]), commits, float64(bare[1])/float64(bare[0]),
			per(session[0]), per(session[1]), commits, float64(session[1])/float64(session[0]))
		b.ReportMetric(float64(session[1])/float64(session[0]), "history-ratio")
	}
}

// generatedRepo is a repository of files files in 10 directories, whose
// branch main has commits commits (the first adds the files, each other
// changes history.txt), made with git fast-import.
func generatedRepo(b *testing.B, files, commits int) string {
	b.Helper()
	dir := filepath.Join(b.TempDir(), fmt.Sprintf("repo-%d", commits))
	gitIn(b, filepath.Dir(dir), "init", "-q", "-b", "main", dir)
	gitIn(b, dir, "config", "user.email", "bench@example.com")
	gitIn(b, dir, "config", "user.name", "Bench")
	cmd := exec.Command("git", "fast-import", "--quiet")
	cmd.Dir = dir
	in, err := cmd.StdinPipe()
	require.NoError(b, err)
	require.NoError(b, cmd.Start())
	w := bufio.NewWriterSize(in, 1<<20)
	fmt.Fprintf(w, "blob\nmark :1\ndata 2\nx\n")
	prompt := "# Objective\n\nKeep a counter in counter.txt.\n"
	for c := 1; c <= commits; c++ {
		msg := fmt.Sprintf("commit %d", c)
		fmt.Fprintf(w, "commit refs/heads/main\ncommitter Bench <bench@example.com> %d +0000\ndata %d\n%s\n", 1700000000+c, len(msg), msg)
		if c == 1 {
			for f := 0; f < files; f++ {
				fmt.Fprintf(w, "M 100644 :1 d%d/f%05d.txt\n", f%10, f)
			}
			fmt.Fprintf(w, "M 100644 inline PROMPT.md\ndata %d\n%s\n", len(prompt), prompt)
		}
		n := fmt.Sprintf("%d\n", c)
		fmt.Fprintf(w, "M 100644 inline history.txt\ndata %d\n%s\n", len(n), n)
	}
	require.NoError(b, w.Flush())
	require.NoError(b, in.Close())
	require.NoError(b, cmd.Wait())
	gitIn(b, dir, "checkout", "-q", "-f", "main")
	return dir
}

// cloneRepo is a copy of the repository tmpl to run one loop in: a local
// clone (objects hard-linked) with its files checked out.
func cloneRepo(b *testing.B, tmpl string) string {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "ws")
	gitIn(b, filepath.Dir(dir), "clone", "-q", tmpl, dir)
	gitIn(b, dir, "config", "user.email", "bench@example.com")
	gitIn(b, dir, "config", "user.name", "Bench")
	_, err := os.Stat(filepath.Join(dir, "PROMPT.md"))
	require.NoError(b, err)
	return dir
}

// BenchmarkLongSession runs one session of 600 instant iterations (24
// runs of continue-as-new) and prints the wall time of each 100
// iterations, from the agent's own start times, which must stay flat,
// and the refs left under refs/ralph.
func BenchmarkLongSession(b *testing.B) {
	saved := benchIterations
	benchIterations = envInt("RALPH_BENCH_LONG_ITERATIONS", 600)
	defer func() { benchIterations = saved }()
	for range b.N {
		dir := benchRepo(b)
		env := benchEnv(b)
		cl := startDevCluster(b, b.TempDir(), &activities.Agent{Env: env})
		in := benchInput(dir)
		in.Agent.Sandbox.Mode = sandbox.ModeOff
		ctx := context.Background()
		run, err := cl.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: sessionIDOf(dir), TaskQueue: contract.TaskQueue}, session.Session, in)
		require.NoError(b, err)
		var res contract.SessionResult
		require.NoError(b, run.Get(ctx, &res))
		end := time.Now()
		cl.stop()
		require.Equal(b, benchIterations, res.Totals.Commits)
		var state string
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, "FAKE_CLAUDE_STATE_DIR="); ok {
				state = v
			}
		}
		cs := readCalls(b, filepath.Join(state, "calls.jsonl"))
		require.Len(b, cs, benchIterations)
		// Iteration i starts at starts[i-1]; the last ends with the session.
		starts := make([]time.Time, 0, len(cs)+1)
		for _, c := range cs {
			starts = append(starts, c.Time)
		}
		starts = append(starts, end)
		var per []string
		for i := 100; i < len(starts); i += 100 {
			per = append(per, fmt.Sprintf("%.1f s", starts[i].Sub(starts[i-100]).Seconds()))
		}
		refs := strings.Fields(gitOut(b, dir, "for-each-ref", "--format=%(refname)", "refs/ralph/"))
		fmt.Printf("long session, %d iterations (continue-as-new every %d): per 100 iterations %s; %d refs left under refs/ralph/\n",
			benchIterations, in.Limits.IterationsPerRun, strings.Join(per, ", "), len(refs))
		b.ReportMetric(float64(len(refs)), "refs")
	}
}
