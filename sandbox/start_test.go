package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestARunThatCannotJoinItsGroupRunsNothing: when the worker cannot put
// a run in its control group, the run's command never starts (bwrap is
// killed at its gate), and the error says the sandbox could not be set
// up.
func TestARunThatCannotJoinItsGroupRunsNothing(t *testing.T) {
	b, err := Find()
	if err != nil {
		t.Skip(err)
	}
	if !b.cgroups.usable() {
		t.Skip("runs get no control group here (not root)")
	}
	ws := t.TempDir()
	ran := filepath.Join(ws, "ran")
	c, err := b.Wrap(Spec{Workspace: ws, Network: NetNone, Path: "/usr/bin:/bin", Binary: "/bin/sh"},
		Command{Path: "/bin/sh", Args: []string{"-c", "touch " + ran}, Env: []string{"PATH=/usr/bin:/bin"}})
	require.NoError(t, err)
	defer c.Release()
	// The group Wrap just made goes away before the run starts.
	removed := 0
	for _, parent := range b.cgroups.parents() {
		entries, err := os.ReadDir(parent)
		require.NoError(t, err)
		for _, e := range entries {
			if e.IsDir() && strings.HasPrefix(e.Name(), "run-") && unix.Rmdir(filepath.Join(parent, e.Name())) == nil {
				removed++
			}
		}
	}
	require.NotZero(t, removed)

	cmd := exec.Command(c.Path, c.Args...)
	cmd.Env = c.Env
	err = c.Start(cmd)
	require.True(t, errors.Is(err, ErrStart), "%v", err)
	require.Contains(t, err.Error(), "control group")
	werr := cmd.Wait()
	require.Error(t, werr, "bwrap was killed")
	_, statErr := os.Stat(ran)
	require.True(t, os.IsNotExist(statErr), "the command ran outside its control group")
}
