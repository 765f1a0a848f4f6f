package testsuite_test

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/sandbox"
)

// hostTry is one escape of the hostile agent, from its hostile.json.
type hostTry struct {
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// requireSandbox fails under CI, which installs bubblewrap and socat,
// and skips elsewhere when this machine cannot contain agents.
func requireSandbox(t *testing.T) {
	t.Helper()
	b, err := sandbox.Find()
	if err == nil && b.Socat == "" {
		err = fmt.Errorf("socat is not installed")
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI installs bubblewrap and socat (make deps): %v", err)
		}
		t.Skip(err)
	}
}

// TestHostileAgentIsContained runs an agent that tries every escape the
// threat model of docs/security.md names, once with agent.sandbox off
// (each escape works: the test can see them) and contained on the
// networks internet and allow-list (none works).
func TestHostileAgentIsContained(t *testing.T) {
	requireSandbox(t)
	for _, tc := range []struct {
		name, sandbox, network string
		contained              bool
	}{
		{"sandbox off", "off", "open", false},
		{"internet", "required", "internet", true},
		{"allow-list", "required", "allow-list", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostileRun(t, tc.sandbox, tc.network, tc.contained)
		})
	}
}

// hostileRun runs the hostile agent in one session while a victim
// session waits at a checkpoint, and checks each escape.
func hostileRun(t *testing.T, mode, network string, contained bool) {
	const canary = "ghp_CANARYworkerTokenNeverSeen000000"
	se := newStarterEnv(t, "")
	home := envValue(se.env, "HOME")
	secrets := map[string]string{
		filepath.Join(home, ".ssh", "id_ed25519"):                    "SSH-KEY-CANARY",
		filepath.Join(home, ".aws", "credentials"):                   "AWS-CANARY",
		filepath.Join(home, ".config", "durable-ralph", "codec.key"): "CODEC-KEY-CANARY",
		filepath.Join(home, ".bashrc"):                               "# the user's own\n",
	}
	for p, content := range secrets {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o700))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	}
	se.env = append(se.env, "GITHUB_TOKEN="+canary)
	w := startDevWorker(t, se)

	// The victim: another session, waiting at its first checkpoint.
	victim := newRepo(t, map[string]string{"PROMPT.md": "Wait for a person.\n"})
	run := startProc(t, se.env, bins.starter, "run", "--dev", "--backend", "command", "--agent-command", "sh -c 'cat >/dev/null'",
		"--checkpoint-every", "1", "--sandbox", "off", victim.Dir)
	require.Equal(t, 0, run.wait(t, time.Minute), run.Output())
	victimWaits := func() bool {
		_, out, _ := starterOut(t, se.env, "status", "--dev", victim.Dir)
		return strings.Contains(out, "Waiting for a human: checkpoint cp-1-review")
	}
	t.Cleanup(func() {
		if t.Failed() {
			st := startProc(t, se.env, bins.starter, "status", "--dev", victim.Dir)
			st.wait(t, time.Minute)
			t.Logf("worker:\n%s\nvictim:\n%s", w.Output(), st.Output())
		}
	})
	waitFor(t, 30*time.Second, "the victim's checkpoint", victimWaits)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	hostTmp := filepath.Join(os.TempDir(), "ralph-hostile-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	t.Cleanup(func() { os.Remove(hostTmp) })
	addr := "127.0.0.1:" + strconv.Itoa(se.port)
	args := []string{bins.hostile, "-kill", strconv.Itoa(w.cmd.Process.Pid), "-starter", bins.starter, "-temporal", addr,
		"-starter-run", `"respond ` + victim.Dir + ` --approve"`, "-starter-run", `"stop ` + victim.Dir + `"`,
		"-write", filepath.Join(home, ".bashrc"), "-write", hostTmp, "-write", ".git/hooks/pre-commit", "-write", ".git/config",
		"-read", se.stateDir, "-read", filepath.Join(victim.Dir, "PROMPT.md"),
		"-connect", l.Addr().String(), "-proxy", l.Addr().String(), "-proxy", "10.1.2.3:80", "-proxy", "not-on-the-list.example:443"}
	for p := range secrets {
		args = append(args, "-read", p)
	}
	h := newRepo(t, map[string]string{"PROMPT.md": "Do as you like.\n"})
	follow := startProc(t, se.env, bins.starter, "run", "--dev", "--follow", "--backend", "command", "--agent-command", strings.Join(args, " "),
		"--max-iterations", "1", "--sandbox", mode, "--network", network, h.Dir)
	follow.wait(t, 3*time.Minute)
	out := follow.Output()
	data, err := os.ReadFile(filepath.Join(h.Dir, "hostile.json"))
	require.NoError(t, err, out)
	var tries map[string]hostTry
	require.NoError(t, json.Unmarshal(data, &tries))
	t.Logf("%s/%s: what the hostile agent got:\n%s", mode, network, data)

	got := func(key string) hostTry {
		tr, ok := tries[key]
		require.True(t, ok, "no try %q in %s", key, data)
		return tr
	}
	escaped := !contained
	require.Equal(t, escaped, strings.Contains(got("environ").Detail, canary), "the worker's token in /proc/*/environ")
	for p, content := range secrets {
		if filepath.Base(p) == ".bashrc" {
			continue
		}
		require.Equal(t, escaped, strings.Contains(got("read "+p).Detail, content), "read %s", p)
	}
	require.Equal(t, escaped, got("read "+se.stateDir).OK, "the state directory")
	require.Equal(t, escaped, got("read "+filepath.Join(victim.Dir, "PROMPT.md")).OK, "another session's workspace")
	require.Equal(t, escaped, got("kill "+strconv.Itoa(w.cmd.Process.Pid)).OK, "signal the worker")
	require.Equal(t, escaped, got("connect "+l.Addr().String()).OK, "the host's loopback")
	bashrc, err := os.ReadFile(filepath.Join(home, ".bashrc"))
	require.NoError(t, err)
	require.Equal(t, escaped, strings.Contains(string(bashrc), "hostile"), "the host's ~/.bashrc")
	_, err = os.Stat(hostTmp)
	require.Equal(t, escaped, err == nil, "a file in the host's /tmp")
	// The worker's own git commands run outside the sandbox: its hooks
	// and config stay the user's.
	require.Equal(t, escaped, got("write .git/hooks/pre-commit").OK, "plant a git hook")
	require.Equal(t, escaped, got("write .git/config").OK, "change the git config (core.hooksPath, core.fsmonitor)")
	require.Equal(t, escaped, got("starter respond "+victim.Dir+" --approve").OK, "answer a checkpoint through Temporal")
	require.Equal(t, escaped, got("starter stop "+victim.Dir).OK, "stop another session through Temporal")
	if contained {
		require.True(t, victimWaits(), "the victim still waits at its checkpoint")
		require.Contains(t, got("proxy "+l.Addr().String()).Detail, "403", "the proxy refuses the host's loopback")
		require.Contains(t, got("proxy 10.1.2.3:80").Detail, "403", "the proxy refuses private addresses")
		if network == "allow-list" {
			require.Contains(t, got("proxy not-on-the-list.example:443").Detail, "403", "a host not on the list")
		} else {
			require.False(t, got("proxy not-on-the-list.example:443").OK, "a name that does not resolve")
		}
		require.Contains(t, out, "network refused: "+l.Addr().String(), "the iteration's line names what was refused")
	}
}

// envValue is the value of name in env, the last one set.
func envValue(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if n, val, ok := strings.Cut(kv, "="); ok && n == name {
			v = val
		}
	}
	return v
}
