//go:build linux

package selfguard

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Protect makes this process non-dumpable (prctl PR_SET_DUMPABLE 0):
// processes of the same user without CAP_SYS_PTRACE can no longer read
// its environment or memory through /proc, nor attach to it, and it
// leaves no core dump.
func Protect() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("make this process non-dumpable (prctl PR_SET_DUMPABLE): %w", err)
	}
	return nil
}

// Dumpable reports whether this process is dumpable.
func Dumpable() (bool, error) {
	n, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	if err != nil {
		return false, fmt.Errorf("read the dumpable flag (prctl PR_GET_DUMPABLE): %w", err)
	}
	return n != 0, nil
}
