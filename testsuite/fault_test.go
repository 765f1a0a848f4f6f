package testsuite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/devserver"
)

// processesIn lists the processes whose working directory is dir.
func processesIn(dir string) []string {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var procs []string
	for _, e := range entries {
		if cwd, err := os.Readlink("/proc/" + e.Name() + "/cwd"); err == nil && cwd == dir {
			cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
			procs = append(procs, e.Name()+": "+strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " ")))
		}
	}
	return procs
}

// TestNoOrphansWhenWorkerIsKilled kills -9 a worker while its agent and a
// tool the agent started are running, and checks that both die with it.
func TestNoOrphansWhenWorkerIsKilled(t *testing.T) {
	r := newRepo(t, map[string]string{"prd.json": threeStoryPRD})
	se := newStarterEnv(t, scenario(t, map[string]any{"hang": true}))
	w := startDevWorker(t, se)
	code, out := starter(t, se, "run", "--dev", r.Dir)
	require.Equal(t, 0, code, out)

	waitFor(t, time.Minute, "the agent and its tool", func() bool {
		procs := strings.Join(processesIn(r.Dir), "\n")
		return strings.Contains(procs, "sleep 300") && strings.Contains(procs, "claude")
	})
	require.NoError(t, w.cmd.Process.Signal(syscall.SIGKILL))
	w.wait(t, time.Minute)

	waitFor(t, 5*time.Second, "the agent's process group to die with its worker", func() bool {
		return len(processesIn(r.Dir)) == 0
	})
}

// TestWorkerKilledMidIterationRecovers kills -9 the worker process while
// the agent is mid-iteration. A new worker process resumes the agent's
// session at once (it fails the dead worker's attempt by its task token
// when it starts); the session completes with one
// commit per story and its iteration numbers intact. It prints the time
// from the kill to the iteration running again.
func TestWorkerKilledMidIterationRecovers(t *testing.T) {
	k := killWorkerMidAgent(t, map[string]any{
		"steps":  []any{map[string]any{"auto": true, "sleep_ms": 8000}},
		"repeat": "auto",
	})
	r, env, id, killed := k.r, k.env, k.id, k.killed

	waitFor(t, time.Minute, "the iteration to run again", func() bool {
		return len(calls(t, env)) >= 2
	})
	cs := calls(t, env)
	recovery := cs[1].Time.Sub(killed)
	t.Logf("recovery after kill -9 of the worker: %.1f s (heartbeat timeout 10s)", recovery.Seconds())
	fmt.Printf("FIGURE recovery_after_worker_kill_seconds %.1f\n", recovery.Seconds())
	require.Contains(t, strings.Join(cs[1].Argv, " "), "--resume", "the agent's own session is resumed")

	// Wait for the session itself: `starter run` on a workspace whose
	// session already ended would start a second session.
	res, c := k.complete(t)
	commits := r.ralphCommits()
	require.Len(t, commits, 3, "no duplicate commits: %v", commits)
	for i, c := range commits {
		require.Contains(t, c, fmt.Sprintf("iteration %d: US-00%d", i+1, i+1))
	}

	replay(t, c, id)
	require.Equal(t, 4, res.Iterations)
	require.Equal(t, 0, res.Totals.Failures)

	// The new worker failed the dead worker's attempt by its task token
	// at start: the retry did not wait for the heartbeat timeout.
	h, err := collectHistory(c.GetWorkflowHistory(context.Background(), id, "", false, 0))
	require.NoError(t, err)
	var causes []string
	for _, e := range h.Events {
		if a := e.GetActivityTaskStartedEventAttributes(); a != nil && a.GetAttempt() > 1 {
			causes = append(causes, a.GetLastFailure().GetMessage())
		}
	}
	require.Len(t, causes, 1, "one retry")
	require.Contains(t, causes[0], "worker restarted")
}

// killedWorker is a session whose worker process was killed with SIGKILL
// while the agent ran, and another worker started.
type killedWorker struct {
	srv    *devserver.Server
	r      *repo
	env    []string
	id     string
	killed time.Time
}

// complete waits for the session to end and requires it to have
// completed. It returns the session's result and a client of the server,
// closed when the test ends.
func (k killedWorker) complete(t *testing.T) (contract.SessionResult, client.Client) {
	t.Helper()
	c := dial(t, k.srv.Address(), "")
	t.Cleanup(c.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var res contract.SessionResult
	require.NoError(t, c.GetWorkflow(ctx, k.id, "").Get(ctx, &res))
	require.Equal(t, contract.ReasonComplete, res.Reason, res.Message)
	return res, c
}

// killWorkerMidAgent starts a session of a three-story repository with
// the fake agent playing scenario, on a worker process of its own, kills
// that worker once the agent has run for 3 s (long enough to report its
// session in a heartbeat), and starts another worker.
func killWorkerMidAgent(t *testing.T, scenario map[string]any) killedWorker {
	t.Helper()
	k, _, _ := killWorker(t, scenario, 3*time.Second)
	return k
}

// killWorker starts a worker on a server of its own and a session of
// scenario, kills the worker with SIGKILL once the agent has run for
// settle, and starts another worker, which it returns with when it
// started.
func killWorker(t testing.TB, scenario map[string]any, settle time.Duration) (killedWorker, *proc, time.Time) {
	t.Helper()
	k := killedWorker{srv: startServer(t, t.TempDir())}
	t.Cleanup(k.srv.Stop)
	k.r = newRepo(t, map[string]string{"prd.json": threeStoryPRD, "progress.txt": ""})
	se := newStarterEnv(t, rawScenario(t, scenario))
	k.env = append(se.env, "TEMPORAL_ADDRESS="+k.srv.Address())
	k.id = sessionIDOf(k.r.Dir)
	w1 := startProc(t, k.env, bins.worker)
	p := startProc(t, k.env, bins.starter, "run", k.r.Dir)
	require.Equal(t, 0, p.wait(t, time.Minute), p.Output())
	waitFor(t, time.Minute, "the agent to start", func() bool {
		cs := calls(t, k.env)
		return len(cs) == 1 && time.Since(cs[0].Time) > settle
	})
	require.NoError(t, w1.cmd.Process.Signal(syscall.SIGKILL))
	k.killed = time.Now()
	w1.wait(t, time.Minute)
	restarted := time.Now()
	return k, startProc(t, k.env, bins.worker), restarted
}

// peakRSS is the peak resident memory of a process, from /proc.
func peakRSS(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			_, err := fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(v), " kB"), &kb)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}

// TestAgentFloodingStdoutKeepsWorkerMemoryBounded has the agent print
// 200 MB of stream-json (one line of 64 KB after another, then one line of
// 40 MB, longer than any line the parser holds) and measures the worker
// process's peak memory. The iteration still completes its story.
func TestAgentFloodingStdoutKeepsWorkerMemoryBounded(t *testing.T) {
	srv := startServer(t, t.TempDir())
	defer srv.Stop()

	r := newRepo(t, map[string]string{"prd.json": threeStoryPRD, "progress.txt": ""})
	se := newStarterEnv(t, rawScenario(t, map[string]any{
		"steps": []any{
			map[string]any{"auto": true, "flood_mb": 160},
			map[string]any{"auto": true, "flood_mb": 40, "flood_line_kb": 40 << 10},
		},
		"repeat": "auto",
	}))
	env := append(se.env, "TEMPORAL_ADDRESS="+srv.Address())
	w := startProc(t, env, bins.worker)
	waitFor(t, time.Minute, "the worker", func() bool { return strings.Contains(w.Output(), "Worker polling") })
	time.Sleep(time.Second)
	baseline, err := peakRSS(w.cmd.Process.Pid)
	require.NoError(t, err)
	follow := startProc(t, env, bins.starter, "run", "--follow", r.Dir)

	var peak int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-follow.end:
				return
			case <-time.After(100 * time.Millisecond):
				if v, err := peakRSS(w.cmd.Process.Pid); err == nil {
					peak = max(peak, v)
				}
			}
		}
	}()
	require.Equal(t, 0, follow.wait(t, 5*time.Minute), follow.Output())
	<-done
	require.Contains(t, follow.Output(), "ended: complete")
	require.Len(t, r.ralphCommits(), 3)

	t.Logf("worker memory: %d MiB idle, %d MiB peak while the agent printed 200 MB", baseline>>20, peak>>20)
	fmt.Printf("FIGURE worker_rss_mib idle %d, peak during a 200 MB agent flood %d\n", baseline>>20, peak>>20)
	require.Less(t, peak-baseline, int64(64<<20), "the worker must not hold the agent's output in memory")

	logs, err := filepath.Glob(filepath.Join(r.Dir, ".ralph", "logs", "*", "iteration-0001.attempt-1.jsonl"))
	require.NoError(t, err)
	require.Len(t, logs, 1)
	fi, err := os.Stat(logs[0])
	require.NoError(t, err)
	require.LessOrEqual(t, fi.Size(), int64(activities.DefaultMaxLogBytes+1024), "the saved stream is capped")
}

// TestWorkspaceDeletedMidSession deletes the workspace while the agent
// works in it: the session fails at once with a message naming it.
func TestWorkspaceDeletedMidSession(t *testing.T) {
	r := newRepo(t, map[string]string{"prd.json": threeStoryPRD})
	se := newStarterEnv(t, scenario(t, map[string]any{"auto": true, "sleep_ms": 3000}))
	w := startDevWorker(t, se)
	code, out := starter(t, se, "run", "--dev", r.Dir)
	require.Equal(t, 0, code, out)
	t.Cleanup(func() {
		if t.Failed() {
			_, st := starter(t, se, "status", "--dev", sessionIDOf(r.Dir))
			t.Logf("agent calls: %d\nstatus:\n%s\nworker:\n%s\ndev server:\n%s", len(calls(t, se.env)), st, w.Output(), devServerLog(se))
		}
	})
	waitFor(t, time.Minute, "the agent to start", func() bool {
		return len(calls(t, se.env)) >= 1
	})
	require.NoError(t, os.RemoveAll(r.Dir))

	c := se.dial(t)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := c.GetWorkflow(ctx, sessionIDOf(r.Dir), "").Get(ctx, nil)
	require.Error(t, err)
	// Depending on whether the agent, still running in the deleted
	// directory, recreated it before it died, the workspace is gone or
	// no longer a repository; either way the error names it and no retry
	// is attempted.
	require.Regexp(t, "workspace "+regexp.QuoteMeta(r.Dir)+" is not (accessible|a git repository)", err.Error())
	require.Contains(t, err.Error(), "retryable: false")

	code, out = starter(t, se, "status", "--dev", sessionIDOf(r.Dir))
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "failed")
}

// TestAgentHangsCrashesAndPrintsGarbage runs a session whose agent hangs,
// then crashes mid-stream, then prints garbage, on a real worker process:
// the hang is killed (with its whole process group) by the iteration
// timeout, each iteration counts as a failure, and the session ends
// consecutive_failures with exit code 1 while the worker stays up.
func TestAgentHangsCrashesAndPrintsGarbage(t *testing.T) {
	r := newRepo(t, map[string]string{"prd.json": threeStoryPRD})
	se := newStarterEnv(t, scenario(t,
		map[string]any{"hang": true},
		map[string]any{"crash": true},
		map[string]any{"garbage": true},
	))
	w := startDevWorker(t, se)
	code, out := starter(t, se, "run", "--dev", "--follow",
		"--iteration-timeout", "3s", "--heartbeat-timeout", "2s", "--max-consecutive-failures", "3", r.Dir)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "ended: consecutive_failures")
	require.Regexp(t, `iteration 1: timeout.*iteration timeout of 3s`, out)
	require.Contains(t, out, "iteration 2: agent_error")
	require.Contains(t, out, "iteration 3: agent_error")
	require.Contains(t, out, "not stream-json")
	require.Empty(t, processesIn(r.Dir), "the hung agent's group is gone")

	select {
	case <-w.end:
		t.Fatalf("the worker exited: %s", w.Output())
	default:
	}
	replayFrom(t, se, sessionIDOf(r.Dir))
}

// TestStaleGitLocksDoNotEndTheSession: lock files a killed git left in
// the workspace (an index.lock and the session branch's ref lock, as
// after a kill -9 of the worker), planted while the session runs, cost
// it nothing: the session completes, every story committed once.
func TestStaleGitLocksDoNotEndTheSession(t *testing.T) {
	r := newRepo(t, map[string]string{"prd.json": threeStoryPRD, "progress.txt": ""})
	se := newStarterEnv(t, scenario(t, map[string]any{"auto": true, "sleep_ms": 800}))
	startDevWorker(t, se)
	run := startProc(t, se.env, bins.starter, "run", "--dev", "--follow", r.Dir)
	waitFor(t, time.Minute, "the first commit", func() bool { return len(r.ralphCommits()) >= 1 })
	branch := strings.TrimSpace(r.git("symbolic-ref", "--short", "HEAD"))
	for _, lock := range []string{".git/index.lock", ".git/refs/heads/" + branch + ".lock"} {
		require.NoError(t, os.WriteFile(filepath.Join(r.Dir, lock), nil, 0o644))
	}
	require.Equal(t, 0, run.wait(t, 3*time.Minute), run.Output())
	require.Contains(t, run.Output(), "ended: complete")
	require.Len(t, r.ralphCommits(), 3, "each story once")
	_, err := os.Stat(filepath.Join(r.Dir, ".git", "index.lock"))
	require.True(t, os.IsNotExist(err), "the stale lock is gone")
}
