package testsuite_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"

	"github.com/durable-ralph/ralph/app"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/words"
	"github.com/durable-ralph/ralph/tasks"
)

// TestChaosSoak runs N sessions of M stories each (prd.json) on one real
// worker process against an embedded Temporal server, with the fake agent
// thinking a few seconds per run, while a driver injects faults at random
// for a while:
//
//   - kill -9 of the worker, which is then started again with the same
//     environment (the same HOME and state directory, so it finds the
//     attempts the dead worker left); the time from the kill until an
//     agent runs again is its recovery time;
//   - kill -9 of one running agent process;
//   - SIGSTOP of the worker for 15 s (longer than the 10 s heartbeat
//     timeout), then SIGCONT.
//
// Then it lets the sessions finish and checks that every session ended
// complete, every story is done with exactly one commit, nothing is left
// uncommitted, the cost and token totals are those of the agent runs that
// really ran, no log shows a panic or a nondeterminism error, no agent
// process is left, and every history replays. It prints a table (lines
// starting with "SOAK ").
//
// Its size comes from the environment: RALPH_SOAK_SESSIONS (default 6),
// RALPH_SOAK_STORIES (5), RALPH_SOAK_MINUTES (2: how long faults are
// injected; the sessions are paced to last about that long) and
// RALPH_SOAK_SEED (default: the clock). The seed fixes the plan (the
// agents' think times, the order and spacing of faults), not the timing,
// so a run is not exactly reproducible. `make soak` runs a bigger one.
func TestChaosSoak(t *testing.T) {
	n := soakEnvInt(t, "RALPH_SOAK_SESSIONS", 6)
	m := soakEnvInt(t, "RALPH_SOAK_STORIES", 5)
	minutes := soakEnvFloat(t, "RALPH_SOAK_MINUTES", 2)
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("RALPH_SOAK_SEED"); v != "" {
		var err error
		seed, err = strconv.ParseUint(v, 10, 64)
		require.NoError(t, err, "RALPH_SOAK_SEED=%q", v)
	}
	window := time.Duration(minutes * float64(time.Minute))
	began := time.Now()
	fmt.Printf("SOAK seed %d (RALPH_SOAK_SEED=%d replays the plan, not the timing)\n", seed, seed)
	planRNG := rand.New(rand.NewPCG(seed, 1))

	// The agent's think time, a Bash tool call that sleeps, is drawn per
	// run from [mean/2, 3·mean/2], mean sized so that a session's M+1
	// runs take about half the fault window: with the sessions' starts
	// spread over its first 30 %, faults keep hitting running agents
	// until the window ends. Run k of every workspace plays step k (the
	// fake agent counts its runs per workspace, in .ralph/fake-claude).
	mean := min(max(window/2/time.Duration(m+1), 2*time.Second), 30*time.Second)
	steps := make([]any, 400)
	for i := range steps {
		think := mean/2 + time.Duration(planRNG.Int64N(int64(mean)))
		steps[i] = map[string]any{"auto": true, "sleep_ms": think.Milliseconds()}
	}
	sc := rawScenario(t, map[string]any{"steps": steps, "repeat": "last"})

	serverDir := t.TempDir()
	srv := startServer(t, serverDir)
	t.Cleanup(srv.Stop)
	c := dial(t, srv.Address(), srv.Namespace())
	t.Cleanup(c.Close)

	home := t.TempDir()
	// No FAKE_CLAUDE_STATE_DIR: each workspace keeps its fake agent's
	// counter and calls.jsonl in .ralph/fake-claude.
	env := append(workerEnv(srv, home, n, sc),
		"PATH="+bins.dir+":"+getenv("PATH"),
		// The state directory holds attempts/<host>/: a worker started
		// after a kill -9 finds there the attempts the dead one left.
		"RALPH_DEV_STATE_DIR="+filepath.Join(home, "state"),
	)

	repos := make([]*repo, n)
	ids := make([]string, n)
	dirs := make([]string, n)
	for i := range repos {
		repos[i] = newRepo(t, map[string]string{"prd.json": soakPRD(m), "progress.txt": ""})
		ids[i], dirs[i] = sessionIDOf(repos[i].Dir), repos[i].Dir
	}

	ctx, cancel := context.WithCancel(context.Background())
	d := &soakDriver{t: t, ctx: ctx, env: env, home: home, dirs: dirs, sessions: n,
		rng: rand.New(rand.NewPCG(seed, 2)), pick: rand.New(rand.NewPCG(seed, 3))}
	t.Cleanup(func() {
		// Registered after the workspaces' temporary directories, so it
		// runs before they are removed.
		if t.Failed() {
			soakKeep(t, c, seed, repos, ids, d.allWorkers(), serverDir)
		}
	})
	t.Cleanup(d.killAll)
	_, err := d.startWorker()
	require.NoError(t, err)

	driverDone := make(chan struct{})
	go func() {
		defer close(driverDone)
		d.run(began.Add(window))
	}()
	t.Cleanup(func() {
		cancel()
		<-driverDone
	})

	// Start the sessions with the starter, spread over the first 30 % of
	// the window, and wait for each one's result.
	results := make([]contract.SessionResult, n)
	resultErrs := make([]error, n)
	ends := make([]time.Time, n)
	var waiting sync.WaitGroup
	finishBy := window + 15*time.Minute
	for i, r := range repos {
		time.Sleep(time.Until(began.Add(time.Duration(float64(window) * 0.3 * float64(i) / float64(n)))))
		p := startProc(t, env, bins.starter, "run", r.Dir,
			"--max-iterations", strconv.Itoa(3*m+10),
			// A killed agent is a failed iteration that changed
			// nothing; two in a row must not end a session.
			"--max-consecutive-failures", "10", "--max-no-progress", "10",
			// Continue-as-new every 4 iterations: faults hit it too.
			"--iterations-per-run", "4")
		require.Equal(t, 0, p.wait(t, 2*time.Minute), "starter run of session %d: %s", i, p.Output())
		require.Contains(t, p.Output(), "Started session "+ids[i])
		waiting.Go(func() {
			wctx, wcancel := context.WithTimeout(ctx, finishBy)
			defer wcancel()
			resultErrs[i] = c.GetWorkflow(wctx, ids[i], "").Get(wctx, &results[i])
			ends[i] = time.Now()
			d.ended.Add(1)
		})
	}
	<-driverDone
	faultsEnded := time.Now()
	allEnded := make(chan struct{})
	go func() {
		waiting.Wait()
		close(allEnded)
	}()
	select {
	case <-allEnded:
	case <-time.After(finishBy):
		t.Fatalf("the sessions did not end within %s of the last fault; the worker's log ends:\n%s", finishBy, tailOf(d.current().Output(), 8<<10))
	}
	d.stopLast()
	wall := time.Since(began)

	// What the histories, the saved streams and the fake agent's records
	// say, for the table and the checks.
	var hs soakHistoryStats
	iters := make([]map[int]*soakIteration, n)
	runs := make([][]soakRun, n)
	var iterations, interrupted, started, reported int
	for i, r := range repos {
		iters[i] = map[int]*soakIteration{}
		for _, h := range soakHistories(t, c, ids[i]) {
			hs.add(t, h, iters[i])
		}
		runs[i] = soakRuns(t, r)
		reported += len(runs[i])
		started += len(workspaceCalls(t, r))
		iterations += results[i].Iterations
		interrupted += len(r.commitsWith("Ralph-Interrupted"))
	}
	st := d.snapshot()
	last := began
	for _, e := range ends {
		last = later(last, e)
	}
	row := func(name, format string, args ...any) {
		fmt.Printf("SOAK %-44s %s\n", name, fmt.Sprintf(format, args...))
	}
	row("sessions × stories", "%d × %d (iterations-per-run 4, heartbeat timeout 10 s)", n, m)
	row("agent think time", "%.1f–%.1f s per run", (mean / 2).Seconds(), (mean * 3 / 2).Seconds())
	row("fault window", "%s (faults injected until %.0f s; last session ended at %.0f s)", window, faultsEnded.Sub(began).Seconds(), last.Sub(began).Seconds())
	row("faults: worker kill -9 (and restart)", "%d", st.workerKills)
	row("faults: agent kill -9", "%d", st.agentKills)
	row("faults: worker SIGSTOP 15 s", "%d", st.freezes)
	// A session of M stories without faults takes M+1 iterations, each
	// one agent run: one per story and one that finds every story done
	// and claims completion (TestWorkerKilledMidIterationRecovers: 3
	// stories, 4 iterations). Faults add iterations (a killed agent's
	// iteration failed and another one does its story) and agent runs
	// (a retried attempt runs the agent again, resuming its session).
	// Extra iterations can be negative: when a retry resumes an agent
	// whose dead attempt had done its story, the fake agent goes on to
	// the next story in the same iteration (the dead attempt's work
	// committed apart as "(interrupted)"), so one iteration does two.
	row("baseline without faults", "%d iterations and agent runs (sessions × (stories + 1))", n*(m+1))
	row("iterations (extra caused by faults)", "%d (%+d)", iterations, iterations-n*(m+1))
	row("agent runs started (extra caused by faults)", "%d (%+d); %d reported a result", started, started-n*(m+1), reported)
	row("iteration retries (attempt ≥ 2)", "%d: %d after a worker restart, %d after a heartbeat timeout, %d other", hs.retries, hs.restarted, hs.timedOut, hs.retries-hs.restarted-hs.timedOut)
	row("finished runs adopted by a retry", "%d", hs.adopted)
	row("interrupted commits (work of a dead attempt)", "%d", interrupted)
	rec := slices.Clone(st.recoveries)
	slices.Sort(rec)
	if len(rec) > 0 {
		row("recovery after worker kill (s)", "min %.1f, median %.1f, max %.1f (%d measured, %d without a running session)",
			rec[0].Seconds(), rec[len(rec)/2].Seconds(), rec[len(rec)-1].Seconds(), len(rec), st.unmeasured)
	} else {
		row("recovery after worker kill (s)", "none measured (%d without a running session)", st.unmeasured)
	}
	row("wall time", "%.0f s", wall.Seconds())

	require.Empty(t, st.errs, "the fault driver failed")

	// Each session is checked in a subtest of its own, so that one
	// session's failure does not hide another's.
	for i, r := range repos {
		t.Run(fmt.Sprintf("session-%d", i), func(t *testing.T) {
			what := fmt.Sprintf("session %d (%s, %s)", i, ids[i], r.Dir)
			gitLog := r.git("log", "--format=%h %s%n%(trailers:key=Ralph-Iteration,key=Ralph-Interrupted)", "--name-status", "HEAD")
			logs := soakWorkerLines(d.allWorkers(), ids[i], 60)
			require.NoError(t, resultErrs[i], "%s did not end well; git log:\n%s\nthe workers' lines about it:\n%s", what, gitLog, logs)
			require.Equal(t, contract.ReasonComplete, results[i].Reason, "%s: %s\niterations:\n%s\ngit log:\n%s\nthe workers' lines about it:\n%s",
				what, results[i].Message, soakIterationTable(iters[i], runs[i]), gitLog, logs)
			replayAs(t, c, ids[i], fmt.Sprintf("session-%d", i))

			// Every story done, nothing left uncommitted.
			for _, s := range soakStories(t, []byte(r.read("prd.json"))) {
				require.True(t, s.Passes, "%s: story %s does not pass in prd.json; git log:\n%s", what, s.ID, gitLog)
			}
			require.Empty(t, r.git("status", "--porcelain"), "%s left uncommitted changes; git log:\n%s", what, gitLog)

			soakCheckCommits(t, r, m, what, gitLog)
			soakCheckTotals(t, results[i], runs[i], what, soakIterationTable(iters[i], runs[i]))
		})
	}

	// No panic and no nondeterminism in any worker's output, nor in the
	// server's log.
	for k, w := range d.allWorkers() {
		require.Empty(t, soakBadLines(w.Output()), "worker process %d (of %d) logged a panic or a nondeterminism error", k+1, len(d.allWorkers()))
	}
	if data, err := os.ReadFile(filepath.Join(serverDir, "temporal.log")); err == nil {
		require.Empty(t, soakBadLines(string(data)), "the server's log (%s)", filepath.Join(serverDir, "temporal.log"))
	}

	// Every agent ended with its run: none is left in a workspace.
	waitFor(t, 10*time.Second, "no process left in the workspaces", func() bool {
		for _, dir := range dirs {
			if len(processesIn(dir)) > 0 {
				return false
			}
		}
		return true
	})
}

// soakEnvInt is the positive integer in the environment variable name, or
// def when it is unset.
func soakEnvInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err, "%s=%q", name, v)
	require.Positive(t, n, "%s=%q", name, v)
	return n
}

// soakEnvFloat is soakEnvInt for a positive number.
func soakEnvFloat(t *testing.T, name string, def float64) float64 {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	require.NoError(t, err, "%s=%q", name, v)
	require.Positive(t, f, "%s=%q", name, v)
	return f
}

// soakStoryID is the ID of story k (from 1).
func soakStoryID(k int) string { return fmt.Sprintf("US-%03d", k) }

// soakStoryFile is the file the fake agent's auto step writes for a
// story (story-<id>.txt, see testsuite/fakeclaude/auto.go).
func soakStoryFile(id string) string { return "story-" + id + ".txt" }

// soakPRD is a prd.json of m stories, in the shape of threeStoryPRD.
func soakPRD(m int) string {
	doc := tasks.PRD{Project: "Soak", BranchName: "ralph/soak", Description: "Stories for the chaos soak"}
	for k := 1; k <= m; k++ {
		doc.UserStories = append(doc.UserStories, tasks.PRDStory{
			ID: soakStoryID(k), Title: fmt.Sprintf("Feature %d", k),
			Description:        fmt.Sprintf("As a user I use feature %d.", k),
			AcceptanceCriteria: []string{fmt.Sprintf("feature %d works", k)}, Priority: k,
		})
	}
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		panic(err)
	}
	return string(data) + "\n"
}

// soakStory is what the checks read of a prd.json story.
type soakStory struct {
	ID     string `json:"id"`
	Passes bool   `json:"passes"`
}

func soakStories(t *testing.T, data []byte) []soakStory {
	t.Helper()
	var doc struct {
		UserStories []soakStory `json:"userStories"`
	}
	require.NoError(t, json.Unmarshal(data, &doc), "prd.json: %s", data)
	return doc.UserStories
}

// soakCommit is one commit of a workspace's branch.
type soakCommit struct {
	sha, subject string
	interrupted  bool     // a Ralph-Interrupted commit
	added        []string // files it adds
}

// soakCheckCommits checks that each story has exactly one commit, on the
// branch Ralph worked on (HEAD):
//
//   - a story's commit is the commit that adds its story file
//     (story-<id>.txt, which only the fake agent's run on that story
//     writes): every story file is added by exactly one commit;
//   - no commit adds the story files of two stories (the bug this guards
//     against: a retry that ran the agent again after a dead attempt's
//     agent had finished folded the next story into the same commit);
//   - no commit sets "passes" of two stories in prd.json, and each
//     story's "passes" goes from false to true in exactly one commit and
//     never back.
//
// A commit marked "(interrupted)" (trailer Ralph-Interrupted) holds what a
// dead attempt left, committed apart before the iteration ran again. It
// is held to the same rules: it is a story's commit if, and only if, it
// adds that story's file, and then the story's iteration commit, which
// may follow it with the rest of the work (prd.json, progress.txt), must
// not add it again. An interrupted commit that adds no story file belongs
// to no story and is allowed.
func soakCheckCommits(t *testing.T, r *repo, m int, what, gitLog string) {
	t.Helper()
	commits := soakBranchCommits(t, r)
	addedBy := map[string][]string{} // story file → commits that add it
	passedIn := map[string][]string{}
	var prev map[string]bool
	for i, cm := range commits {
		var files []string
		for _, f := range cm.added {
			if strings.HasPrefix(f, "story-") && strings.HasSuffix(f, ".txt") {
				files = append(files, f)
				addedBy[f] = append(addedBy[f], cm.sha)
			}
		}
		require.LessOrEqual(t, len(files), 1, "%s: commit %s %q (interrupted: %v) adds the files of %d stories: %v; git log:\n%s",
			what, cm.sha, cm.subject, cm.interrupted, len(files), files, gitLog)

		passes := map[string]bool{}
		for _, s := range soakStories(t, []byte(r.git("show", cm.sha+":prd.json"))) {
			passes[s.ID] = s.Passes
		}
		if i > 0 {
			var flipped []string
			for id, p := range passes {
				require.False(t, prev[id] && !p, "%s: commit %s %q sets %s back to passes=false; git log:\n%s", what, cm.sha, cm.subject, id, gitLog)
				if p && !prev[id] {
					flipped = append(flipped, id)
					passedIn[id] = append(passedIn[id], cm.sha)
				}
			}
			require.LessOrEqual(t, len(flipped), 1, "%s: commit %s %q marks %d stories as passing: %v; git log:\n%s",
				what, cm.sha, cm.subject, len(flipped), flipped, gitLog)
		}
		prev = passes
	}
	for k := 1; k <= m; k++ {
		id := soakStoryID(k)
		require.Len(t, addedBy[soakStoryFile(id)], 1, "%s: story %s must have exactly one commit adding %s; git log:\n%s", what, id, soakStoryFile(id), gitLog)
		require.Len(t, passedIn[id], 1, "%s: story %s must be marked as passing in exactly one commit; git log:\n%s", what, id, gitLog)
	}
}

// soakBranchCommits lists the commits of HEAD, oldest first, with the
// files each adds (the root commit's against the empty tree).
func soakBranchCommits(t *testing.T, r *repo) []soakCommit {
	t.Helper()
	out := r.git("log", "--reverse", "--no-renames", "--name-status",
		"--format=%x1e%H%x1f%s%x1f%(trailers:key=Ralph-Interrupted,valueonly)%x1f", "HEAD")
	var commits []soakCommit
	for _, rec := range strings.Split(out, "\x1e") {
		if strings.TrimSpace(rec) == "" {
			continue
		}
		f := strings.SplitN(rec, "\x1f", 4)
		require.Len(t, f, 4, "git log record %q", rec)
		cm := soakCommit{sha: f[0], subject: f[1], interrupted: strings.TrimSpace(f[2]) != ""}
		for _, line := range strings.Split(f[3], "\n") {
			if status, path, ok := strings.Cut(line, "\t"); ok && status == "A" {
				cm.added = append(cm.added, path)
			}
		}
		commits = append(commits, cm)
	}
	require.NotEmpty(t, commits)
	return commits
}

// soakRun is an agent run that reported a result: a `result` event of a
// saved stream.
type soakRun struct {
	iteration, attempt int
	cost               float64
	usage              contract.Usage
}

// soakRuns reads the result events of every attempt's saved stream
// (.ralph/logs/<key>/iteration-NNNN.attempt-K.jsonl; an attempt that
// resumed an agent session and fell back to a fresh run holds both runs'
// events).
func soakRuns(t *testing.T, r *repo) []soakRun {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(r.Dir, ".ralph", "logs", "*", "iteration-*.attempt-*.jsonl"))
	require.NoError(t, err)
	var runs []soakRun
	for _, path := range logs {
		var it, attempt int
		_, err := fmt.Sscanf(filepath.Base(path), "iteration-%d.attempt-%d.jsonl", &it, &attempt)
		require.NoError(t, err, path)
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
		for sc.Scan() {
			var ev struct {
				Type         string         `json:"type"`
				TotalCostUSD float64        `json:"total_cost_usd"`
				Usage        contract.Usage `json:"usage"`
			}
			if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Type == "result" {
				runs = append(runs, soakRun{iteration: it, attempt: attempt, cost: ev.TotalCostUSD, usage: ev.Usage})
			}
		}
		require.NoError(t, sc.Err(), path)
	}
	return runs
}

// soakCheckTotals checks the session's cost and token totals against the
// agent runs that really ran, the result events of the streams Ralph
// saved (soakRuns). Claude Code, which the fake agent plays, reports cost
// and tokens only in its result event, at the end of a run: a run killed
// before it printed one (with its worker, or by itself) cost nothing that
// can be counted, and a run that printed one must be counted exactly
// once, whether its attempt ended normally, died after it, or was adopted
// by a retry.
func soakCheckTotals(t *testing.T, res contract.SessionResult, runs []soakRun, what, table string) {
	t.Helper()
	var cost float64
	var usage contract.Usage
	for _, r := range runs {
		cost += r.cost
		usage = usage.Add(r.usage)
	}
	require.InDelta(t, cost, res.Totals.CostUSD, 1e-9, "%s: the cost total must be the sum of the results of the %d agent runs that reported one; per iteration:\n%s", what, len(runs), table)
	require.Equal(t, usage, res.Totals.Usage, "%s: the token totals must be the sum of the results of the %d agent runs that reported one; per iteration:\n%s", what, len(runs), table)
}

// soakIteration is what a session's history says of one iteration.
type soakIteration struct {
	attempts int
	end      string  // how its activity ended: the outcome, or the failure
	cost     float64 // the cost its result reported
}

// soakIterationTable shows, per iteration, what the history says and the
// results of the saved streams, for a failure's message.
func soakIterationTable(iters map[int]*soakIteration, runs []soakRun) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(iters)) {
		it := iters[k]
		var logged []string
		for _, r := range runs {
			if r.iteration == k {
				logged = append(logged, fmt.Sprintf("attempt %d $%.4f", r.attempt, r.cost))
			}
		}
		fmt.Fprintf(&b, "  iteration %d: %d attempts, ended %s, reported $%.4f; results in the saved streams: %v\n", k, it.attempts, it.end, it.cost, logged)
	}
	return b.String()
}

// soakWorkerLines are the last limit lines of the workers' outputs that
// mention id, each prefixed with its worker's number.
func soakWorkerLines(workers []*proc, id string, limit int) string {
	var lines []string
	for k, w := range workers {
		for _, line := range strings.Split(w.Output(), "\n") {
			if strings.Contains(line, id) {
				lines = append(lines, fmt.Sprintf("worker %d: %s", k+1, line))
			}
		}
	}
	if len(lines) > limit {
		lines = lines[len(lines)-limit:]
	}
	return strings.Join(lines, "\n")
}

// soakKeep copies what a failed soak leaves (the workspaces with their
// .git and .ralph, every worker's output, the server's log and the
// sessions' histories) to a directory that outlives the test, and says
// where.
func soakKeep(t *testing.T, c client.Client, seed uint64, repos []*repo, ids []string, workers []*proc, serverDir string) {
	dir, err := os.MkdirTemp("", fmt.Sprintf("ralph-soak-%d-", seed))
	if err != nil {
		t.Logf("the soak's workspaces and logs were not kept: %v", err)
		return
	}
	for i, r := range repos {
		if err := os.CopyFS(filepath.Join(dir, fmt.Sprintf("session-%d", i)), os.DirFS(r.Dir)); err != nil {
			t.Logf("session %d's workspace not kept: %v", i, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		h, err := collectHistory(c.GetWorkflowHistory(ctx, ids[i], "", false, 0))
		cancel()
		if err == nil {
			data, _ := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(h)
			_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("session-%d.last-run-history.json", i)), data, 0o644)
		}
	}
	for k, w := range workers {
		_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("worker-%d.log", k+1)), []byte(w.Output()), 0o644)
	}
	if data, err := os.ReadFile(filepath.Join(serverDir, "temporal.log")); err == nil {
		_ = os.WriteFile(filepath.Join(dir, "temporal.log"), data, 0o644)
	}
	fmt.Printf("SOAK kept the workspaces, worker logs and histories in %s\n", dir)
}

// soakBad finds what must never be in a worker's or the server's log.
var soakBad = regexp.MustCompile(`(?i)panic|fatal error|nondetermin|non-determin|TMPRL1100`)

// soakBadLines are the lines of out that soakBad matches, but for the
// frames of stack traces (lines without a space, or indented): the
// server logs errors with their stack, whose frames name functions such
// as capturePanicHandler; a panic shows in its own line ("panic: ...",
// a log message) anyway.
func soakBadLines(out string) []string {
	var bad []string
	for _, line := range strings.Split(out, "\n") {
		if !strings.Contains(strings.TrimSpace(line), " ") || strings.HasPrefix(line, "\t") || strings.HasPrefix(line, " ") {
			continue
		}
		if soakBad.MatchString(line) {
			bad = append(bad, line)
		}
	}
	return bad
}

// soakHistories reads every run of workflow id, from its first,
// following continue-as-new.
func soakHistories(t *testing.T, c client.Client, id string) []*historypb.History {
	t.Helper()
	ctx := context.Background()
	latest, err := collectHistory(c.GetWorkflowHistory(ctx, id, "", false, 0))
	require.NoError(t, err)
	runID := latest.Events[0].GetWorkflowExecutionStartedEventAttributes().GetFirstExecutionRunId()
	var hs []*historypb.History
	for {
		h, err := collectHistory(c.GetWorkflowHistory(ctx, id, runID, false, 0))
		require.NoError(t, err)
		hs = append(hs, h)
		next := h.Events[len(h.Events)-1].GetWorkflowExecutionContinuedAsNewEventAttributes()
		if next == nil {
			return hs
		}
		runID = next.GetNewExecutionRunId()
	}
}

// soakHistoryStats count, over histories, the retried iteration attempts
// by what failed the attempt before, and the iterations whose retry
// adopted the dead attempt's finished run.
type soakHistoryStats struct {
	retries, restarted, timedOut, adopted int
}

// add counts h's events, and records what h says of each iteration in
// iters.
func (s *soakHistoryStats) add(t *testing.T, h *historypb.History, iters map[int]*soakIteration) {
	t.Helper()
	scheduled := map[int64]*soakIteration{} // RunIteration's scheduled event → its iteration
	for _, e := range h.Events {
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == contract.ActivityRunIteration {
			var in contract.IterationInput
			require.NoError(t, json.Unmarshal(a.GetInput().GetPayloads()[0].GetData(), &in))
			if iters[in.Iteration] == nil {
				iters[in.Iteration] = &soakIteration{end: "not at all"}
			}
			scheduled[e.GetEventId()] = iters[in.Iteration]
		}
		if a := e.GetActivityTaskStartedEventAttributes(); a != nil && scheduled[a.GetScheduledEventId()] != nil {
			scheduled[a.GetScheduledEventId()].attempts = int(a.GetAttempt())
			if a.GetAttempt() > 1 {
				s.retries++
				switch f := a.GetLastFailure(); {
				case f.GetTimeoutFailureInfo() != nil:
					s.timedOut++
				case strings.Contains(f.GetMessage(), "worker restarted"):
					s.restarted++
				}
			}
		}
		if a := e.GetActivityTaskCompletedEventAttributes(); a != nil && scheduled[a.GetScheduledEventId()] != nil {
			var res contract.IterationResult
			require.NoError(t, json.Unmarshal(a.GetResult().GetPayloads()[0].GetData(), &res))
			it := scheduled[a.GetScheduledEventId()]
			it.end, it.cost = string(res.Outcome), res.CostUSD
			if res.Commit != "" {
				it.end += " (commit " + contract.ShortSHA(res.Commit) + ")"
			}
			for _, w := range res.Warnings {
				if strings.Contains(w, "its run was recorded, not run again") {
					s.adopted++
					it.end += " (adopted)"
				}
			}
		}
		if a := e.GetActivityTaskFailedEventAttributes(); a != nil && scheduled[a.GetScheduledEventId()] != nil {
			scheduled[a.GetScheduledEventId()].end = "failed: " + words.Clip(a.GetFailure().GetMessage(), 200)
		}
		if a := e.GetActivityTaskTimedOutEventAttributes(); a != nil && scheduled[a.GetScheduledEventId()] != nil {
			scheduled[a.GetScheduledEventId()].end = "timed out: " + words.Clip(a.GetFailure().GetMessage(), 200)
		}
	}
}

// soakDriver injects the faults and keeps every worker process it
// started. It runs in a goroutine of its own: it reports errors instead
// of failing the test.
type soakDriver struct {
	t        *testing.T
	ctx      context.Context
	rng      *rand.Rand // the faults' kinds and spacing
	pick     *rand.Rand // which agent to kill, apart so as not to shift rng
	env      []string
	home     string
	dirs     []string
	sessions int
	ended    atomic.Int32 // sessions that ended
	round    []int        // the fault kinds left of this round

	mu      sync.Mutex
	workers []*proc
	stats   soakStats
}

// soakStats are what the driver did and measured.
type soakStats struct {
	workerKills, agentKills, freezes int
	recoveries                       []time.Duration
	unmeasured                       int // worker kills with no session left to recover
	errs                             []string
}

// freezeFor is how long the worker stays stopped (SIGSTOP): longer than
// the heartbeat timeout (10 s), so the server times its attempts out.
const freezeFor = 15 * time.Second

// run injects a fault every 2–6 s until deadline, or until every session
// ended or the test ends.
func (d *soakDriver) run(deadline time.Time) {
	for time.Now().Before(deadline) && !d.done() {
		if !d.sleep(time.Duration(2000+d.rng.IntN(4000)) * time.Millisecond) {
			return
		}
		// Each round of three faults is the three kinds in a random
		// order: every kind is injected about as often.
		if len(d.round) == 0 {
			d.round = d.rng.Perm(3)
		}
		kind := d.round[0]
		d.round = d.round[1:]
		var err error
		switch kind {
		case 0:
			err = d.killWorker()
		case 1:
			err = d.killAgent()
		case 2:
			err = d.freeze()
		}
		if err != nil {
			d.mu.Lock()
			d.stats.errs = append(d.stats.errs, err.Error())
			d.mu.Unlock()
			return
		}
	}
}

// done reports whether every session ended.
func (d *soakDriver) done() bool { return int(d.ended.Load()) == d.sessions }

// sleep waits for dur; false if the test ended meanwhile.
func (d *soakDriver) sleep(dur time.Duration) bool {
	select {
	case <-d.ctx.Done():
		return false
	case <-time.After(dur):
		return true
	}
}

// startWorker starts a worker process with the driver's environment (the
// same HOME and state directory every time) and waits until it polls.
func (d *soakDriver) startWorker() (*proc, error) {
	cmd := exec.Command(bins.worker)
	cmd.Dir = d.home // no ralph.yaml of the test's directory
	cmd.Env = childEnv(d.env...)
	p := &proc{cmd: cmd, end: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p, p
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start a worker: %w", err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.end)
	}()
	d.mu.Lock()
	d.workers = append(d.workers, p)
	d.mu.Unlock()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(p.Output(), "Worker polling") {
		select {
		case <-p.end:
			return p, fmt.Errorf("worker process %d exited before it polled: %s", len(d.allWorkers()), p.Output())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return p, fmt.Errorf("worker process %d did not poll within a minute: %s", len(d.allWorkers()), p.Output())
		}
	}
	return p, nil
}

// current is the worker process started last.
func (d *soakDriver) current() *proc {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.workers[len(d.workers)-1]
}

func (d *soakDriver) allWorkers() []*proc {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.workers)
}

func (d *soakDriver) snapshot() soakStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.stats
	s.recoveries = slices.Clone(s.recoveries)
	s.errs = slices.Clone(s.errs)
	return s
}

// killWorker kills the worker with SIGKILL, starts another and waits
// until an agent runs again (the fake agent records each run's start in
// calls.jsonl): that is the recovery time.
func (d *soakDriver) killWorker() error {
	w := d.current()
	running := !d.done()
	if err := w.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill -9 the worker: %w", err)
	}
	killed := time.Now()
	<-w.end
	if _, err := d.startWorker(); err != nil {
		return err
	}
	d.mu.Lock()
	d.stats.workerKills++
	d.mu.Unlock()
	for running {
		if at, ok := soakFirstCallAfter(d.dirs, killed); ok {
			d.mu.Lock()
			d.stats.recoveries = append(d.stats.recoveries, at.Sub(killed))
			d.mu.Unlock()
			d.t.Logf("kill -9 of the worker (PID %d): an agent ran again %.1f s later", w.cmd.Process.Pid, at.Sub(killed).Seconds())
			return nil
		}
		if time.Since(killed) > 2*time.Minute {
			return fmt.Errorf("no agent ran within 2 minutes of the kill -9 of worker PID %d; the new worker's log:\n%s", w.cmd.Process.Pid, tailOf(d.current().Output(), 8<<10))
		}
		if d.done() || !d.sleep(100*time.Millisecond) {
			break
		}
	}
	d.mu.Lock()
	d.stats.unmeasured++
	d.mu.Unlock()
	d.t.Logf("kill -9 of the worker (PID %d): no session left to recover", w.cmd.Process.Pid)
	return nil
}

// killAgent kills one running fake agent process, picked at random, with
// SIGKILL; none running is no fault.
func (d *soakDriver) killAgent() error {
	agents := soakAgents(d.dirs)
	if len(agents) == 0 {
		d.t.Logf("no agent running to kill")
		return nil
	}
	a := agents[d.pick.IntN(len(agents))]
	if err := syscall.Kill(a.pid, syscall.SIGKILL); err != nil {
		d.t.Logf("kill -9 of the agent PID %d in %s: %v (it had ended)", a.pid, a.dir, err)
		return nil
	}
	d.mu.Lock()
	d.stats.agentKills++
	d.mu.Unlock()
	d.t.Logf("kill -9 of the agent PID %d in %s", a.pid, a.dir)
	return nil
}

// freeze stops the worker with SIGSTOP for freezeFor, then continues it.
func (d *soakDriver) freeze() error {
	w := d.current()
	if err := w.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("SIGSTOP the worker: %w", err)
	}
	d.mu.Lock()
	d.stats.freezes++
	d.mu.Unlock()
	d.t.Logf("SIGSTOP of the worker (PID %d) for %s", w.cmd.Process.Pid, freezeFor)
	select {
	case <-d.ctx.Done():
	case <-time.After(freezeFor):
	}
	if err := w.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		return fmt.Errorf("SIGCONT the worker: %w", err)
	}
	return nil
}

// stopLast stops the last worker as a user does, by SIGTERM, so that
// what it logs when it stops is checked too.
func (d *soakDriver) stopLast() {
	w := d.current()
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-w.end:
	case <-time.After(app.WorkerStopTimeout + 10*time.Second):
		d.t.Errorf("the last worker did not stop on SIGTERM within %s", app.WorkerStopTimeout+10*time.Second)
	}
}

// killAll kills every worker process still running (continued first, in
// case one is stopped).
func (d *soakDriver) killAll() {
	for _, w := range d.allWorkers() {
		select {
		case <-w.end:
		default:
			_ = w.cmd.Process.Signal(syscall.SIGCONT)
			_ = w.cmd.Process.Kill()
			<-w.end
		}
	}
}

// soakAgent is a running fake agent process.
type soakAgent struct {
	pid int
	dir string
}

// soakAgents lists the fake agent processes (argv[0] named claude, not a
// zombie) whose working directory is one of dirs.
func soakAgents(dirs []string) []soakAgent {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var agents []soakAgent
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cwd, err := os.Readlink("/proc/" + e.Name() + "/cwd")
		if err != nil || !slices.Contains(dirs, cwd) {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		argv0, _, _ := strings.Cut(string(cmdline), "\x00")
		if filepath.Base(argv0) != "claude" {
			continue
		}
		if stat, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err != nil || soakZombie(stat) {
			continue
		}
		agents = append(agents, soakAgent{pid: pid, dir: cwd})
	}
	return agents
}

// soakZombie reports whether /proc/<pid>/stat says the process is a
// zombie (state Z, the field after the parenthesized command name).
func soakZombie(stat []byte) bool {
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || bytes.HasPrefix(bytes.TrimSpace(stat[i+1:]), []byte("Z"))
}

// soakFirstCallAfter is the earliest start of a fake agent run after t in
// any of dirs (from each workspace's .ralph/fake-claude/calls.jsonl).
func soakFirstCallAfter(dirs []string, t time.Time) (time.Time, bool) {
	var first time.Time
	for _, dir := range dirs {
		data, err := os.ReadFile(filepath.Join(dir, ".ralph", "fake-claude", "calls.jsonl"))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		for _, line := range bytes.Split(data, []byte("\n")) {
			var c fakeCall
			if json.Unmarshal(line, &c) != nil || !c.Time.After(t) {
				continue
			}
			if first.IsZero() || c.Time.Before(first) {
				first = c.Time
			}
		}
	}
	return first, !first.IsZero()
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
