package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestARunIsBornInItsGroup: on cgroup v1 a run's first process is
// started by the spawner from within the run's groups, so it is there
// from its first instruction, with no move afterwards; the spawner's
// thread is back in the worker's groups once it has started it.
func TestARunIsBornInItsGroup(t *testing.T) {
	g := v1Group(t)
	defer g.remove()

	for round := range 3 { // the second run too: the thread went home
		var out bytes.Buffer
		cmd := exec.Command("/bin/sh", "-c", "cat /proc/self/cgroup")
		cmd.Stdout = &out
		born, err := g.startIn(cmd)
		require.NoError(t, err)
		require.True(t, born, "round %d", round)
		require.NoError(t, cmd.Wait())
		for _, d := range g.dirs {
			ctrl := filepath.Base(filepath.Dir(filepath.Dir(d)))
			require.Regexp(t, fmt.Sprintf(`(?m)^\d+:([^:]*,)?%s(,[^:]*)?:.*/%s$`, ctrl, filepath.Base(d)), out.String(),
				"the run's process is in its %s group", ctrl)
		}

		s, err := theSpawner()
		require.NoError(t, err)
		spawner, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/cgroup", s.tid))
		require.NoError(t, err)
		worker, err := os.ReadFile("/proc/self/cgroup")
		require.NoError(t, err)
		require.Equal(t, string(worker), string(spawner), "the spawner's thread is back in the worker's groups")
		require.NotEqual(t, os.Getpid(), s.tid, "the spawner is not the process's first thread")
	}
}

// TestASpawnerThatCannotEnterStartsNothingThere: a group whose tasks file
// is gone cannot be entered: the process is started where the worker is
// (Ready then moves it, or fails the run).
func TestASpawnerThatCannotEnterStartsNothingThere(t *testing.T) {
	g := v1Group(t)
	g.remove()

	var out bytes.Buffer
	cmd := exec.Command("/bin/sh", "-c", "cat /proc/self/cgroup")
	cmd.Stdout = &out
	born, err := g.startIn(cmd)
	require.NoError(t, err)
	require.False(t, born)
	require.NoError(t, cmd.Wait())
	worker, err := os.ReadFile("/proc/self/cgroup")
	require.NoError(t, err)
	require.Equal(t, string(worker), out.String(), "started in the worker's groups")
}

// v1Group is a fresh cgroup v1 group of a run; the test is skipped where
// runs get none.
func v1Group(t *testing.T) group {
	t.Helper()
	b, err := Find()
	if err != nil {
		t.Skip(err)
	}
	if !b.cgroups.usable() || b.cgroups.v2 != "" {
		t.Skip("no cgroup v1 groups for runs here (not root, or cgroup v2)")
	}
	g, err := b.cgroups.make(Limits{}.withDefaults())
	require.NoError(t, err)
	return g
}

// TestARunIsBornInItsV2Group: on cgroup v2 a run's first process is
// started in its group by CLONE_INTO_CGROUP. A v2 hierarchy is mounted
// for the test (beside v1's on a machine that has them); without the
// right to mount one, the test is skipped.
func TestARunIsBornInItsV2Group(t *testing.T) {
	mnt := t.TempDir()
	if err := unix.Mount("none", mnt, "cgroup2", 0, ""); err != nil {
		t.Skipf("no cgroup v2 hierarchy can be mounted here: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(mnt, unix.MNT_DETACH) })
	name := fmt.Sprintf("ralph-test-%d", os.Getpid())
	g := group{dirs: []string{filepath.Join(mnt, name)}, v2: true}
	require.NoError(t, os.Mkdir(g.dirs[0], 0o755))
	defer g.remove()

	var out bytes.Buffer
	cmd := exec.Command("/bin/sh", "-c", "cat /proc/self/cgroup")
	cmd.Stdout = &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	born, err := g.startIn(cmd)
	require.NoError(t, err)
	require.True(t, born, "this kernel has clone3's CLONE_INTO_CGROUP (5.7)")
	require.NoError(t, cmd.Wait())
	require.Regexp(t, `(?m)^0::.*/`+name+`$`, out.String(), "the run's process is in its group")
	require.True(t, cmd.SysProcAttr.Setpgid, "the caller's attributes are kept")
}
