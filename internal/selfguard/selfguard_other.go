//go:build !linux

package selfguard

// Protect does nothing outside Linux: other systems guard a process's
// environment and memory from other users their own way, and have no
// PR_SET_DUMPABLE.
func Protect() error { return nil }

// Dumpable reports true outside Linux: nothing made the process
// non-dumpable.
func Dumpable() (bool, error) { return true, nil }
