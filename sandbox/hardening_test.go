package sandbox_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/durable-ralph/ralph/sandbox"
)

// probeEnv makes this test binary the probe of TestRootIsNobody: run in
// a sandbox with it set, it tries what a hostile agent would and prints
// what each try did as JSON.
const probeEnv = "RALPH_SANDBOX_PROBE"

func TestMain(m *testing.M) {
	if what := os.Getenv(probeEnv); what != "" {
		probe(what)
		return
	}
	os.Exit(m.Run())
}

// probe runs inside a sandbox: what is "syscalls" (each escape a
// contained root tried, with its error) or "forks N" (how many of N
// sleeping children it could start).
func probe(what string) {
	out := map[string]string{}
	switch f := strings.Fields(what); f[0] {
	case "syscalls":
		out["capeff"] = capEff()
		tmp, _ := os.MkdirTemp("", "m")
		out["mount"] = errText(unix.Mount("none", tmp, "tmpfs", 0, ""))
		out["umount"] = errText(unix.Unmount(f[1], unix.MNT_DETACH))
		out["unshare"] = errText(unix.Unshare(unix.CLONE_NEWUSER | unix.CLONE_NEWNS))
		out["mknod"] = errText(unix.Mknod(filepath.Join(tmp, "sda"), unix.S_IFBLK|0o600, int(unix.Mkdev(8, 0))))
		_, _, err := unix.NameToHandleAt(unix.AT_FDCWD, "/", 0)
		out["name_to_handle_at"] = errText(err)
		_, err = unix.OpenByHandleAt(unix.AT_FDCWD, unix.NewFileHandle(1, []byte{2, 0, 0, 0, 0, 0, 0, 0}), unix.O_RDONLY)
		out["open_by_handle_at"] = errText(err)
		_, err = unix.KeyctlJoinSessionKeyring("ralph")
		out["keyctl"] = errText(err)
		out["ptrace"] = errText(unix.PtraceAttach(1))
		cmd := exec.Command("/bin/sh", "-c", "echo child")
		b, err := cmd.Output()
		out["fork"] = strings.TrimSpace(string(b))
		if err != nil {
			out["fork"] += ": " + err.Error()
		}
	case "forks":
		n, _ := strconv.Atoi(f[1])
		started := 0
		var cmds []*exec.Cmd
		for range n {
			c := exec.Command("/bin/sleep", "5")
			if c.Start() != nil {
				break
			}
			started++
			cmds = append(cmds, c)
		}
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
		out["started"] = strconv.Itoa(started)
	}
	data, _ := json.Marshal(out)
	fmt.Println(string(data))
}

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

func capEff() string {
	data, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "CapEff:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

// runProbe runs this test binary as the probe what in a sandbox of f.
func runProbe(t *testing.T, f fixture, lim sandbox.Limits, what string) map[string]string {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	spec := f.spec(sandbox.NetNone)
	spec.Binary, spec.Limits = self, lim
	c, err := box(t).Wrap(spec, sandbox.Command{Path: self, Args: []string{"-test.run=^$"},
		Env: []string{"PATH=/usr/bin:/bin", "HOME=" + f.home, probeEnv + "=" + what}})
	require.NoError(t, err)
	out, err := runWrapped(t, c, "")
	require.NoError(t, err, out)
	var res map[string]string
	require.NoError(t, json.Unmarshal([]byte(out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:]), &res), out)
	return res
}

// TestRootIsNobody: a contained run, as root too, has no capability and
// cannot unmount the worker's locks, mount, make devices or namespaces,
// open files by handle (which reads the host's files past every mount),
// join a keyring or trace a process; it still starts processes.
func TestRootIsNobody(t *testing.T) {
	f := newFixture(t)
	res := runProbe(t, f, sandbox.Limits{}, "syscalls "+filepath.Join(f.ws, ".git", "config"))
	require.Equal(t, "0000000000000000", res["capeff"], "CapEff inside")
	for _, call := range []string{"mount", "umount", "unshare", "mknod", "name_to_handle_at", "open_by_handle_at", "keyctl", "ptrace"} {
		require.NotEqual(t, "ok", res[call], "%s got through", call)
	}
	require.Contains(t, res["name_to_handle_at"], "not permitted", "the seccomp filter, not a missing capability, refuses file handles")
	require.Equal(t, "child", res["fork"])
}

// TestLimitsHold: a run's processes, its /tmp and its home directory are
// bounded as agent.limits says.
func TestLimitsHold(t *testing.T) {
	f := newFixture(t)
	res := runProbe(t, f, sandbox.Limits{Processes: 64}, "forks 300")
	started, err := strconv.Atoi(res["started"])
	require.NoError(t, err)
	require.Less(t, started, 64, "300 processes asked, at most 64 at once")
	require.Greater(t, started, 10)

	spec := f.spec(sandbox.NetNone)
	spec.Limits = sandbox.Limits{Tmp: 64 << 20}
	for _, dir := range []string{"/tmp", f.home, "/dev/shm"} {
		out, err := run(t, spec, fmt.Sprintf("head -c %d /dev/zero > %s/big", 128<<20, dir))
		require.Error(t, err, "a 128 MiB file in %s with a 64 MiB limit", dir)
		require.Contains(t, out, "No space left", dir)
	}
	out, err := run(t, spec, "echo x > /big; echo x > /dev/big")
	require.Error(t, err)
	require.Contains(t, out, "Read-only", "the root and /dev take no writes")
}

// TestMemoryLimitHolds: a process that allocates more than the run's
// memory is stopped (by the control group, or RLIMIT_DATA without one).
func TestMemoryLimitHolds(t *testing.T) {
	f := newFixture(t)
	spec := f.spec(sandbox.NetNone)
	spec.Limits = sandbox.Limits{Memory: 256 << 20}
	start := time.Now()
	// Python is not everywhere; a shell's string is: doubling it 30 times
	// asks for a gigabyte.
	out, err := run(t, spec, `s=x; i=0; while [ $i -lt 30 ]; do s="$s$s"; i=$((i+1)); done; echo survived ${#s}`)
	require.Error(t, err, out)
	require.NotContains(t, out, "survived")
	t.Logf("stopped after %s: %s (%s)", time.Since(start), strings.TrimSpace(out), box(t).Enforcement())
}
