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

// startMarked starts `sleep 30` in a session of its own with env and
// returns it with the window of a run that started it.
func startMarked(t *testing.T, env ...string) (*exec.Cmd, pidWindow) {
	t.Helper()
	w := openWindow()
	cmd := exec.Command("sleep", "30")
	cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	w.first = cmd.Process.Pid
	return cmd, w
}

// TestScannerReadsAMarkedProcessOnce: a process found holding a mark is
// answered from what the scan saw, not read again, while it lives and
// its PID cannot have gone round; once it ended, it is forgotten. A
// process with no mark is never kept.
func TestScannerReadsAMarkedProcessOnce(t *testing.T) {
	mark, other := runMark(), runMark()
	cmd, w := startMarked(t, mark)
	plain, pw := startMarked(t)
	pid := cmd.Process.Pid
	s := newScanner()
	require.Equal(t, []int{pid}, s.marked(mark, w))
	require.Equal(t, []string{mark}, s.seen[pid].marks)
	require.Empty(t, s.marked(other, pw))
	require.NotContains(t, s.seen, plain.Process.Pid, "no mark: read again each time")

	// What was seen answers: the process's environment is not read again.
	seen := s.seen[pid]
	seen.marks = []string{other}
	s.seen[pid] = seen
	require.Empty(t, s.marked(mark, w), "answered from what was seen")
	require.Equal(t, []int{pid}, s.marked(other, w))

	// Unless its PID may have gone round since: then it is read again.
	seen = s.seen[pid]
	seen.since = readPIDCursor().forks - int64(pidMax())
	s.seen[pid] = seen
	require.Equal(t, []int{pid}, s.marked(mark, w))
	require.Equal(t, []string{mark}, s.seen[pid].marks, "read again")

	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	require.Empty(t, s.marked(mark, w))
	require.NotContains(t, s.seen, pid, "an ended process is forgotten")
}

// TestScannerOfAMarkedProcessKeepsNothing: a worker that runs as a
// run's agent holds a mark itself, and so do its children between fork
// and exec: what it reads may be about to change, so nothing is kept.
func TestScannerOfAMarkedProcessKeepsNothing(t *testing.T) {
	t.Setenv(markVar, "outer")
	mark := runMark()
	cmd, w := startMarked(t, mark)
	s := newScanner()
	require.Equal(t, []int{cmd.Process.Pid}, s.marked(mark, w))
	require.Empty(t, s.seen)
}
