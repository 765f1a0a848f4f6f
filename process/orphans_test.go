package process

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestEndOrphansEndsTheRunsOfDeadMakers: a process marked by a run whose
// maker is gone (its PID free) is ended; one of a live maker's run, and
// one of a run older than the process now at its maker's PID, are
// judged by that process: left while it is the maker.
func TestEndOrphansEndsTheRunsOfDeadMakers(t *testing.T) {
	gone := exec.Command("true")
	require.NoError(t, gone.Run())
	deadPID := gone.Process.Pid // reaped: its PID is free (or another's, started since)
	start := func(maker int, began time.Time) *exec.Cmd {
		cmd := exec.Command("sleep", "30")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d.%d.1", markVar, maker, began.UnixNano()))
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	orphan := start(deadPID, time.Now())
	ours := start(os.Getpid(), time.Now())
	// A run that began before this process did cannot be this process's:
	// its maker was another process that had this PID.
	reused := start(os.Getpid(), time.Now().Add(-24*time.Hour))

	require.GreaterOrEqual(t, EndOrphans(), 2)
	for _, c := range []*exec.Cmd{orphan, reused} {
		require.Eventually(t, func() bool {
			var ws syscall.WaitStatus
			pid, _ := syscall.Wait4(c.Process.Pid, &ws, syscall.WNOHANG, nil)
			return pid == c.Process.Pid
		}, 5*time.Second, 10*time.Millisecond, "pid %d ended", c.Process.Pid)
	}
	require.NoError(t, ours.Process.Signal(syscall.Signal(0)), "a live maker's run is left")
}
