package testsuite_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/devserver"
)

// devServerRecord is the record of the dev server running on stateDir;
// it fails the test when none runs.
func devServerRecord(t *testing.T, stateDir string) devserver.Record {
	t.Helper()
	rec, st, err := devserver.Find(stateDir)
	require.NoError(t, err)
	require.Equal(t, devserver.Running, st, "a dev server runs on %s", stateDir)
	return rec
}

// devServerProcs are the live (not zombie) processes that serve a dev
// server in the background on stateDir: starter dev serve and worker
// dev-server, found by their command lines in /proc.
func devServerProcs(t testing.TB, stateDir string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
		serve := slices.Contains(args, "dev-server") || (len(args) > 2 && args[1] == "dev" && args[2] == "serve")
		i := slices.Index(args, "--state-dir")
		if !serve || i < 0 || i+1 >= len(args) || args[i+1] != stateDir || !alive(pid) {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// alive reports whether pid runs: a zombie counts as dead.
func alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) S ...: the state follows the last ')'.
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(fields) > 0 && fields[0] != "Z"
}

// stopDevServer stops the background dev server of stateDir, if one
// runs, and every process that serves one there: nothing else reaps it.
func stopDevServer(t testing.TB, stateDir string) {
	t.Helper()
	pids := devServerProcs(t, stateDir)
	if rec, st, err := devserver.Find(stateDir); err == nil && st != devserver.NotRunning && rec.PID > 0 && rec.PID != os.Getpid() {
		pids = append(pids, rec.PID)
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, pid := range pids {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if alive(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// withoutEnv is env without the variables named.
func withoutEnv(env []string, names ...string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(names, name) {
			out = append(out, kv)
		}
	}
	return out
}

// TestDevServerOutlivesTheStarterThatStartedIt is docs/sessions.md's
// example of parallel sessions in work trees: two starters 3 s apart on
// one clone, each with --dev. The first starts the dev server in the
// background and ends first; the second goes on on the same server.
// Both end complete, and one dev server process serves them throughout.
func TestDevServerOutlivesTheStarterThatStartedIt(t *testing.T) {
	r := newRepo(t, map[string]string{"prd.json": threeStoryPRD, "progress.txt": ""})
	se := newStarterEnv(t, scenario(t, map[string]any{"auto": true, "sleep_ms": 1500}))

	var mu sync.Mutex
	most := 0
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			n := len(devServerProcs(t, se.stateDir))
			mu.Lock()
			most = max(most, n)
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()

	auth := startProc(t, se.env, bins.starter, "run", "--dev", "--follow", "-q", "--worktree", "auth", r.Dir)
	time.Sleep(3 * time.Second)
	search := startProc(t, se.env, bins.starter, "run", "--dev", "--follow", "-q", "--worktree", "search", r.Dir)
	codeAuth := auth.wait(t, 3*time.Minute)
	ended := time.Now()
	codeSearch := search.wait(t, 3*time.Minute)
	close(stop)
	<-watched

	require.Equal(t, 0, codeAuth, auth.Output())
	require.Equal(t, 0, codeSearch, search.Output())
	for name, p := range map[string]*proc{"auth": auth, "search": search} {
		id := sessionIDOf(contract.SessionWorktree{Clone: r.Dir, Name: name}.Dir())
		require.Contains(t, p.Output(), "Session "+id+" ended: complete", p.Output())
		require.NotContains(t, p.Output(), "deadline exceeded")
	}
	require.Contains(t, auth.Output(), "Started the Temporal dev server on 127.0.0.1:"+strconv.Itoa(se.port))
	require.NotContains(t, search.Output(), "Started the Temporal dev server", "the second starter uses the first one's server")
	t.Logf("the second starter ran %s after the first one ended", time.Since(ended))

	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 1, most, "one dev server process at most, all along")
	rec := devServerRecord(t, se.stateDir)
	require.Equal(t, []int{rec.PID}, devServerProcs(t, se.stateDir), "the recorded server runs on, alone")
	require.NotEqual(t, auth.cmd.Process.Pid, rec.PID, "in a process of its own")
}

// TestDevServerRefusesASecondOnTheSameStateDir: a second server on a
// locked state directory is refused, naming the running one, whatever
// port it would take; worker --dev with another port uses the running
// one; and a server that is not ours on the configured port is named,
// not attached to.
func TestDevServerRefusesASecondOnTheSameStateDir(t *testing.T) {
	se := newStarterEnv(t, "")
	code, out := starter(t, se, "dev", "start")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "Started the Temporal dev server.")
	rec := devServerRecord(t, se.stateDir)
	require.Contains(t, out, "PID:         "+strconv.Itoa(rec.PID))
	code, out = starter(t, se, "dev", "start")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "The Temporal dev server already runs.")

	other := append(withoutEnv(se.env, "RALPH_DEV_PORT", "RALPH_DEV_UI_PORT"),
		"RALPH_DEV_PORT="+strconv.Itoa(fixedPort(t)), "RALPH_DEV_UI_PORT="+strconv.Itoa(fixedPort(t)))
	named := fmt.Sprintf("already runs on the state directory %s (PID %d, address %s)", se.stateDir, rec.PID, rec.Address)
	for _, cmd := range [][]string{{bins.starter, "dev", "serve"}, {bins.worker, "dev-server"}} {
		p := startProc(t, other, cmd[0], cmd[1:]...)
		require.Equal(t, 1, p.wait(t, time.Minute), p.Output())
		require.Contains(t, p.Output(), named)
	}

	w := startProc(t, other, bins.worker, "--dev")
	waitFor(t, time.Minute, "the worker", func() bool { return strings.Contains(w.Output(), "Worker polling") })
	require.Contains(t, w.Output(), fmt.Sprintf("Temporal server: %s (namespace default, state in %s; dev server PID %d, running)", rec.Address, se.stateDir, rec.PID))
	require.NoError(t, w.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, w.wait(t, time.Minute), w.Output())
	require.Equal(t, []int{rec.PID}, devServerProcs(t, se.stateDir), "the server outlives worker --dev")

	// A Temporal server that holds no lock on the state directory.
	foreign := startServer(t, "")
	defer foreign.Stop()
	fresh := newStarterEnv(t, "")
	port := foreign.Address()[strings.LastIndexByte(foreign.Address(), ':')+1:]
	env := append(withoutEnv(fresh.env, "RALPH_DEV_PORT"), "RALPH_DEV_PORT="+port)
	code, out = runStarter(t, env, "list", "--dev")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "a server answers on "+foreign.Address()+", but it is not the dev server of "+fresh.stateDir)
	require.Empty(t, devServerProcs(t, fresh.stateDir))

	code, out = starter(t, se, "dev", "logs")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, fmt.Sprintf("dev server PID %d serves %s", rec.PID, rec.Address))
	code, out = starter(t, se, "dev", "stop")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, fmt.Sprintf("Stopped the Temporal dev server (PID %d, %s)", rec.PID, rec.Address))
	code, out = starter(t, se, "dev", "logs")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, fmt.Sprintf("dev server PID %d stopped", rec.PID))
	require.False(t, alive(rec.PID))
	code, out = starter(t, se, "dev", "status")
	require.Equal(t, 3, code, out)
	require.Contains(t, out, "No Temporal dev server runs on "+se.stateDir)
}

// TestDevFollowSurvivesAServerRestart stops the dev server under a
// following starter (which is the session's worker) and starts it again:
// the starter says it lost the server and that it is back, and ends with
// the session's own result.
func TestDevFollowSurvivesAServerRestart(t *testing.T) {
	r := newRepo(t, map[string]string{"prd.json": threeStoryPRD, "progress.txt": ""})
	se := newStarterEnv(t, scenario(t, map[string]any{"auto": true, "sleep_ms": 3000}))

	follow := startProc(t, se.env, bins.starter, "run", "--dev", "--follow", "-q", r.Dir)
	waitFor(t, 2*time.Minute, "the first iteration", func() bool { return strings.Contains(follow.Output(), "iteration 1:") })
	code, out := starter(t, se, "dev", "stop")
	require.Equal(t, 0, code, out)
	waitFor(t, time.Minute, "the starter to notice", func() bool {
		return strings.Contains(follow.Output(), "lost the Temporal server at 127.0.0.1:"+strconv.Itoa(se.port)+": waiting for it")
	})
	select {
	case <-follow.end:
		t.Fatalf("the starter ended without its server:\n%s", follow.Output())
	case <-time.After(3 * time.Second):
	}
	code, out = starter(t, se, "dev", "start")
	require.Equal(t, 0, code, out)

	code = follow.wait(t, 3*time.Minute)
	out = follow.Output()
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "the Temporal server is back")
	require.Less(t, strings.Index(out, "lost the Temporal server"), strings.Index(out, "the Temporal server is back"))
	require.Equal(t, 1, strings.Count(out, "lost the Temporal server"), out)
	require.Contains(t, out, "Session "+sessionIDOf(r.Dir)+" ended: complete")
	t.Logf("follow output:\n%s", out)
	require.Len(t, r.ralphCommits(), 3, "one commit per story: %v", r.ralphCommits())
}

// TestDevServerFoundWithoutDev: a dev server started on a custom port
// (RALPH_DEV_PORT) is found by run, status and list in a terminal without
// that variable and without --dev; TEMPORAL_ADDRESS still wins.
func TestDevServerFoundWithoutDev(t *testing.T) {
	r := newRepo(t, map[string]string{"prd.json": threeStoryPRD, "progress.txt": ""})
	se := newStarterEnv(t, scenario(t, map[string]any{"auto": true}))
	code, out := starter(t, se, "dev", "start")
	require.Equal(t, 0, code, out)
	rec := devServerRecord(t, se.stateDir)
	require.Equal(t, "127.0.0.1:"+strconv.Itoa(se.port), rec.Address)

	plain := withoutEnv(se.env, "RALPH_DEV_PORT", "RALPH_DEV_UI_PORT")
	code, out = runStarter(t, plain, "run", "--follow", "-q", r.Dir)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "ended: complete")
	require.Contains(t, out, "this process is the worker", "no worker ran: the starter was one")
	require.NotContains(t, out, "Started the Temporal dev server")

	code, out = runStarter(t, plain, "status", r.Dir)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "completed (complete)")
	require.Contains(t, out, rec.UIURL, "the UI link is the running server's")
	code, out = runStarter(t, plain, "list")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, sessionIDOf(r.Dir))

	code, out = runStarter(t, append(plain, "TEMPORAL_ADDRESS=127.0.0.1:1"), "list")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "no Temporal server answers at 127.0.0.1:1")
	require.Equal(t, []int{rec.PID}, devServerProcs(t, se.stateDir))
}
