package process

import (
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPIDWindowHolds(t *testing.T) {
	tests := []struct {
		name        string
		first, last int
		known       bool
		in, out     []int
	}{
		{"in order", 1000, 1200, true, []int{1000, 1100, 1200}, []int{999, 1, 1201, 40000}},
		{"gone round pid_max", 32000, 400, true, []int{32000, 32767, 300, 400}, []int{31999, 401, 2000}},
		{"not known: every process", 1000, 0, false, []int{1, 999, 1000, 50000}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := pidWindow{first: tt.first}
			for _, pid := range tt.in {
				require.True(t, w.holds(pid, tt.last, tt.known), "pid %d", pid)
			}
			for _, pid := range tt.out {
				require.False(t, w.holds(pid, tt.last, tt.known), "pid %d", pid)
			}
		})
	}
}

// TestPIDWindowOfARun checks the window against this machine's kernel:
// it holds a process started after the run's first one and not the
// processes that were there before.
func TestPIDWindowOfARun(t *testing.T) {
	w := openWindow()
	first := exec.Command("sleep", "5")
	require.NoError(t, first.Start())
	t.Cleanup(func() { _ = first.Process.Kill(); _ = first.Wait() })
	w.first = first.Process.Pid
	later := exec.Command("sleep", "5")
	require.NoError(t, later.Start())
	t.Cleanup(func() { _ = later.Process.Kill(); _ = later.Wait() })

	last, known := w.bounds(readPIDCursor())
	require.True(t, known, "Linux tells the last PID and the forks since boot")
	require.True(t, w.holds(first.Process.Pid, last, known))
	require.True(t, w.holds(later.Process.Pid, last, known))
	require.False(t, w.holds(os.Getpid(), last, known), "this test's process was there before the run")
	require.False(t, w.holds(1, last, known))

	_, known = pidWindow{first: w.first, forks: -1}.bounds(readPIDCursor())
	require.False(t, known, "no count of forks: no window")
}

// BenchmarkMarked measures the look for a run's leftovers at its end:
// through every process of the machine, and through the run's window.
func BenchmarkMarked(b *testing.B) {
	entries, err := os.ReadDir("/proc")
	require.NoError(b, err)
	w := openWindow()
	run := exec.Command("true")
	require.NoError(b, run.Run())
	w.first = run.Process.Pid
	for _, c := range []struct {
		name string
		w    pidWindow
	}{{"every process", pidWindow{forks: -1}}, {"the run's window", w}} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				marked("RALPH_AGENT_RUN=none", c.w)
			}
			b.ReportMetric(float64(len(entries)), "entries-in-/proc")
		})
	}
}
