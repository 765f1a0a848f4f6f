//go:build linux

package selfguard

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// The test binary runs itself as these helpers, chosen by helperEnv.
const (
	helperEnv = "RALPH_SELFGUARD_HELPER"
	// helperTarget holds a secret in its environment until its stdin
	// closes, after calling Protect when protectEnv is true.
	helperTarget = "target"
	// helperSpawn calls Protect, then starts helperDumpable and prints
	// its own dumpable flag and the child's.
	helperSpawn = "spawn"
	// helperDumpable prints its dumpable flag.
	helperDumpable = "dumpable"

	protectEnv = "RALPH_SELFGUARD_PROTECT"
	secretEnv  = "RALPH_SELFGUARD_SECRET"
	secret     = "selfguard-test-secret-4f1c"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		if err := helper(mode); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// helper runs the helper mode.
func helper(mode string) error {
	switch mode {
	case helperTarget:
		if os.Getenv(protectEnv) == "true" {
			if err := Protect(); err != nil {
				return err
			}
		}
		fmt.Println("ready")
		_, err := io.Copy(io.Discard, os.Stdin)
		return err
	case helperSpawn:
		if err := Protect(); err != nil {
			return err
		}
		self, err := Dumpable()
		if err != nil {
			return err
		}
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		child := exec.Command(exe)
		child.Env = []string{helperEnv + "=" + helperDumpable}
		out, err := child.Output()
		if err != nil {
			return fmt.Errorf("run the child: %w", err)
		}
		fmt.Printf("self=%t child=%s\n", self, strings.TrimSpace(string(out)))
		return nil
	case helperDumpable:
		d, err := Dumpable()
		if err != nil {
			return err
		}
		fmt.Println(d)
		return nil
	}
	return fmt.Errorf("unknown helper %q", mode)
}

// TestProtectHidesEnviron starts a process holding a secret in its
// environment and reads its /proc/<pid>/environ from another process of
// the same user: the read works unless the target called Protect. Root
// reads every process's environ (CAP_SYS_PTRACE), so as root both run as
// nobody (65534).
func TestProtectHidesEnviron(t *testing.T) {
	exe, cred := runnableCopy(t)
	tests := []struct {
		name     string
		protect  bool
		wantRead bool
	}{
		{name: "without Protect the same user reads the environment", protect: false, wantRead: true},
		{name: "after Protect the same user cannot", protect: true, wantRead: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pid := startTarget(t, exe, cred, tt.protect)
			reader := exec.Command("cat", "/proc/"+strconv.Itoa(pid)+"/environ")
			reader.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
			out, err := reader.CombinedOutput()
			if tt.wantRead {
				require.NoError(t, err, "%s", out)
				require.Contains(t, string(out), secretEnv+"="+secret)
				return
			}
			require.Error(t, err)
			require.Contains(t, string(out), "Permission denied")
			require.NotContains(t, string(out), secret)
		})
	}
}

// TestProtectSpawnedDumpable checks that what a protected process starts
// is dumpable again: execve resets the flag, so the agents the worker
// runs keep their ordinary /proc files.
func TestProtectSpawnedDumpable(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe)
	cmd.Env = []string{helperEnv + "=" + helperSpawn}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Equal(t, "self=false child=true\n", string(out))
}

// runnableCopy returns a copy of the test binary that the user of cred
// can run, and cred: nobody when the test runs as root, else nil (this
// user).
func runnableCopy(t *testing.T) (string, *syscall.Credential) {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	if os.Geteuid() != 0 {
		return exe, nil
	}
	// t.TempDir is 0700; nobody must reach the copy.
	dir, err := os.MkdirTemp("", "selfguard")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	src, err := os.ReadFile(exe)
	require.NoError(t, err)
	dst := filepath.Join(dir, "selfguard.test")
	require.NoError(t, os.WriteFile(dst, src, 0o755))
	return dst, &syscall.Credential{Uid: 65534, Gid: 65534}
}

// startTarget starts the target helper as the user of cred and returns
// its PID once it is ready; it ends with the test.
func startTarget(t *testing.T, exe string, cred *syscall.Credential, protect bool) int {
	t.Helper()
	cmd := exec.Command(exe)
	cmd.Env = []string{helperEnv + "=" + helperTarget, secretEnv + "=" + secret, protectEnv + "=" + strconv.FormatBool(protect)}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "the target did not start")
	require.Equal(t, "ready\n", line)
	return cmd.Process.Pid
}
