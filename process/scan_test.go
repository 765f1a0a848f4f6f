package process

import (
	"os/exec"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestScannerAnswersEachRunItsOwn: runs that end together ask at once;
// each is told its own escapees (in a session of their own, out of its
// group), and those of no other run, however the scans coalesce; a run
// that asks again after its processes ended is told none.
func TestScannerAnswersEachRunItsOwn(t *testing.T) {
	const runs = 8
	marks := make([]string, runs)
	windows := make([]pidWindow, runs)
	pids := make([]int, runs)
	for i := range runs {
		marks[i] = runMark()
		windows[i] = openWindow()
		cmd := exec.Command("sleep", "30")
		cmd.Env = []string{"PATH=/usr/bin:/bin", marks[i]}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		windows[i].first, pids[i] = cmd.Process.Pid, cmd.Process.Pid
	}
	s := newScanner()
	got := make([][]int, runs)
	var wg sync.WaitGroup
	for round := range 3 {
		for i := range runs {
			wg.Go(func() { got[i] = s.marked(marks[i], windows[i]) })
		}
		wg.Wait()
		for i := range runs {
			require.Equal(t, []int{pids[i]}, got[i], "round %d, run %d", round, i)
		}
	}
	require.Empty(t, s.found, "every answer was read")
	require.LessOrEqual(t, s.done, uint64(3*runs), "at most one scan a question")

	for i := range runs {
		require.NoError(t, syscall.Kill(pids[i], syscall.SIGKILL))
	}
	for i := range runs {
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pids[i], &ws, 0, nil)
	}
	for i := range runs {
		require.Empty(t, s.marked(marks[i], windows[i]), "run %d: its process ended", i)
	}
}
