package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
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
		born, err := g.startIn(cmd.Start)
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
	born, err := g.startIn(cmd.Start)
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
