package testsuite_test

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
