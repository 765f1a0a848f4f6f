package devserver

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// deadPID is the PID of a process that has ended and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	return cmd.Process.Pid
}

func TestLockAndRecord(t *testing.T) {
	for _, tc := range []struct {
		name string
		// before sets the state directory up.
		before func(t *testing.T, dir string)
	}{
		{"empty_state_dir", func(*testing.T, string) {}},
		{"stale_record_with_a_dead_pid", func(t *testing.T, dir string) {
			pid := deadPID(t)
			require.NoError(t, os.WriteFile(filepath.Join(dir, LockFile), []byte(strconv.Itoa(pid)+"\n"), 0o644))
			l := &lock{dir: dir}
			require.NoError(t, l.publish(Record{PID: pid, Address: "127.0.0.1:1", StateDir: dir}))
		}},
		{"garbage_record", func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, RecordFile), []byte("{not json"), 0o644))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.before(t, dir)
			_, st, err := Find(dir)
			require.NoError(t, err)
			require.Equal(t, NotRunning, st, "nothing holds the lock: whatever is recorded is stale")

			l, err := acquire(dir)
			require.NoError(t, err)
			rec, st, err := Find(dir)
			require.NoError(t, err)
			require.Equal(t, Starting, st, "locked, not recorded yet")
			require.Equal(t, os.Getpid(), rec.PID)

			want := Record{PID: os.Getpid(), Address: "127.0.0.1:7233", UIURL: "http://127.0.0.1:8233", Namespace: "default",
				StateDir: dir, Started: time.Now().UTC().Truncate(time.Second)}
			require.NoError(t, l.publish(want))
			rec, st, err = Find(dir)
			require.NoError(t, err)
			require.Equal(t, Running, st)
			require.Equal(t, want, rec, "the stale record is replaced")

			l.release()
			_, st, err = Find(dir)
			require.NoError(t, err)
			require.Equal(t, NotRunning, st)
			require.NoFileExists(t, filepath.Join(dir, RecordFile), "a stopped server removes its record")
		})
	}
}

func TestLiveLockRefuses(t *testing.T) {
	dir := t.TempDir()
	l, err := acquire(dir)
	require.NoError(t, err)
	defer l.release()
	require.NoError(t, l.publish(Record{PID: os.Getpid(), Address: "127.0.0.1:7299", Namespace: "default", StateDir: dir}))

	// flock locks belong to open files: a second acquire in this process
	// is refused as another process's would be.
	_, err = acquire(dir)
	var locked *LockedError
	require.True(t, errors.As(err, &locked), "%v", err)
	require.Equal(t, os.Getpid(), locked.Holder.PID)
	require.Equal(t, "127.0.0.1:7299", locked.Holder.Address)
	require.ErrorContains(t, err, "already runs on the state directory "+dir+" (PID "+strconv.Itoa(os.Getpid())+", address 127.0.0.1:7299)")

	// Looking does not get in the way of the holder, nor of a looker.
	for range 3 {
		_, st, err := Find(dir)
		require.NoError(t, err)
		require.Equal(t, Running, st)
	}
}
