package testsuite_test

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// binsEnv names, for a test run again as another user, the directory of
// the binaries the first run built.
const binsEnv = "RALPH_TEST_BINS"

// ordinaryUser is the user CI makes to run a test as someone other
// than root.
const ordinaryUser = "ralph-ci"

// TestHostileAgentRunsNothingOutside: an agent that, contained
// (agent.sandbox required), aims past its sandbox: root's capabilities,
// unmounting the worker's locks, mount, mknod, namespaces, files opened
// by handle, and the worker's own git, which runs outside with the
// worker's token after the agent ends (a .git/commondir leading to a
// copy with core.fsmonitor, a replaced .git, a hook, the git config, a
// config.worktree, a filter in .gitattributes and in a nested
// repository) and a wrapper of the agent's binary that acts on
// --version, which the preflight runs. Nothing of it runs outside the
// sandbox, and each session completes or ends with a clear error. As
// root, and as an ordinary user (the first run, as root, makes one and
// runs the test again as it).
func TestHostileAgentRunsNothingOutside(t *testing.T) {
	requireSandbox(t)
	root := os.Geteuid() == 0
	t.Run("root", func(t *testing.T) {
		if !root {
			t.Skip("the tests do not run as root here")
		}
		outsideRuns(t)
	})
	t.Run("ordinary user", func(t *testing.T) {
		if !root {
			outsideRuns(t)
			return
		}
		asUser(t, ordinaryUser, "^TestHostileAgentRunsNothingOutside$/^ordinary_user$")
	})
}

// outsideRuns runs one session of the hostile agent per way out.
func outsideRuns(t *testing.T) {
	const canary = "ghp_CANARYoutsideTheSandbox0000000000"
	se := newStarterEnv(t, "")
	se.env = append(se.env, "GITHUB_TOKEN="+canary)
	w := startDevWorker(t, se)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("worker:\n%s", w.Output())
		}
	})
	marker := filepath.Join(t.TempDir(), "ran-outside")
	noneRan := func(t *testing.T) {
		t.Helper()
		data, err := os.ReadFile(marker)
		require.True(t, os.IsNotExist(err), "the agent's program ran outside the sandbox: %s", data)
	}
	hostile := func(plan string) string {
		return strings.Join([]string{bins.hostile, "-caps", "-syscalls", ".git/config", "-git", plan, "-marker", marker}, " ")
	}
	run := func(t *testing.T, dir string, args ...string) (int, string) {
		t.Helper()
		all := append([]string{"run", "--dev", "--follow", "--max-iterations", "1", "--sandbox", "required", "--network", "none"}, args...)
		p := startProc(t, se.env, bins.starter, append(all, dir)...)
		code := p.wait(t, 3*time.Minute)
		return code, p.Output()
	}

	t.Run("in place", func(t *testing.T) {
		h := newRepo(t, map[string]string{"PROMPT.md": "Do as you like.\n"})
		code, out := run(t, h.Dir, "--backend", "command", "--agent-command", hostile("inplace"))
		tries := readTries(t, h.Dir, out)
		require.False(t, tries["capabilities"].OK, "capabilities inside: %s", tries["capabilities"].Detail)
		require.Contains(t, tries["capabilities"].Detail, "CapEff 0000000000000000")
		for _, call := range []string{"umount .git/config", "mount tmpfs", "mknod", "unshare", "name_to_handle_at", "open_by_handle_at"} {
			require.False(t, tries[call].OK, "%s: %s", call, tries[call].Detail)
		}
		require.False(t, tries["git config"].OK, "the git config is locked")
		require.False(t, tries["git hook"].OK, "the hooks are locked")
		require.True(t, tries["nested repository"].OK, "a nested repository with its own filter: %s", tries["nested repository"].Detail)
		require.Equal(t, 2, code, "stopped by max_iterations, the agent's work committed:\n%s", out)
		require.Contains(t, out, "stopped by limit: max_iterations")
		noneRan(t)
		require.Contains(t, h.git("log", "-1", "--format=%s"), "ralph: iteration 1")
	})

	for _, plan := range []string{"commondir", "replace", "worktree-config"} {
		t.Run(plan, func(t *testing.T) {
			h := newRepo(t, map[string]string{"PROMPT.md": "Do as you like.\n"})
			code, out := run(t, h.Dir, "--backend", "command", "--agent-command", hostile(plan))
			tries := readTries(t, h.Dir, out)
			t.Logf("%s: %v", plan, tries["git "+plan])
			noneRan(t)
			if !tries["git "+plan].OK {
				// The sandbox stopped the plant itself (a rename of .git,
				// whose locks are mount points): the session goes on.
				require.Contains(t, out, "stopped by limit: max_iterations", out)
				return
			}
			require.Equal(t, 1, code, out)
			require.Contains(t, out, "is not the one Ralph trusts", "the session says why it stopped:\n%s", out)
			require.NotContains(t, out, canary)
		})
	}

	t.Run("a wrapper that acts on --version", func(t *testing.T) {
		h := newRepo(t, map[string]string{"prd.json": onePRD})
		wrapper := filepath.Join(t.TempDir(), "claude")
		script := fmt.Sprintf("#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = --version ] && { echo \"pwned $GITHUB_TOKEN\" >> %s; echo '2.1.329 (Claude Code)'; exit 0; }; done\nexec %s \"$@\"\n", marker, bins.claude)
		require.NoError(t, os.WriteFile(wrapper, []byte(script), 0o755))
		code, out := run(t, h.Dir, "--agent-command", wrapper, "--max-iterations", "3")
		require.Equal(t, 0, code, out)
		require.Contains(t, out, "ended: complete")
		noneRan(t)
	})
}

// onePRD is a task file of one story.
const onePRD = `{"project": "One", "branchName": "ralph/one", "userStories": [
  {"id": "US-001", "title": "One thing", "description": "d", "acceptanceCriteria": ["a"], "priority": 1, "passes": false, "notes": ""}]}
`

// readTries reads the hostile agent's hostile.json in dir.
func readTries(t *testing.T, dir, out string) map[string]hostTry {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "hostile.json"))
	require.NoError(t, err, out)
	var tries map[string]hostTry
	require.NoError(t, json.Unmarshal(data, &tries))
	return tries
}

// asUser runs the tests run names again as the ordinary user name (made
// when missing), with the binaries this run built, and fails t when
// they fail. This process must be root.
func asUser(t *testing.T, name, run string) {
	t.Helper()
	if _, err := user.Lookup(name); err != nil {
		out, err := exec.Command("useradd", "--create-home", "--shell", "/bin/sh", name).CombinedOutput()
		require.NoError(t, err, "useradd: %s", out)
	}
	u, err := user.Lookup(name)
	require.NoError(t, err)
	// The binaries and this test binary, where the user can run them;
	// the fake agents' directories are made among the binaries.
	require.NoError(t, os.Chmod(bins.dir, 0o1777))
	dir, err := os.MkdirTemp("", "ralph-as-user-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	self, err := os.Executable()
	require.NoError(t, err)
	testBin := filepath.Join(dir, "testsuite.test")
	copyFile(t, self, testBin, 0o755)

	cmd := exec.Command("runuser", "-u", name, "--", "env", "-i",
		"PATH="+os.Getenv("PATH"), "HOME="+u.HomeDir, "USER="+name, "LANG=C.UTF-8",
		"CI="+os.Getenv("CI"), binsEnv+"="+bins.dir,
		testBin, "-test.run", run, "-test.v", "-test.timeout", "15m")
	cmd.Dir = u.HomeDir
	out, err := cmd.CombinedOutput()
	t.Logf("as %s:\n%s", name, out)
	require.NoError(t, err, "the run as %s failed", name)
	require.Contains(t, string(out), "--- PASS", "the run as %s ran its test", name)
	require.NotContains(t, string(out), "--- SKIP")
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(from)
	require.NoError(t, err)
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, err)
	require.NoError(t, out.Close())
}
