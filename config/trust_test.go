package config

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRunKeys checks that every key whose value is a command line needs
// trust in a workspace's ralph.yaml, and that runKeys names real keys a
// workspace may set.
func TestRunKeys(t *testing.T) {
	for i := range specs {
		if specs[i].kind == kindCommand {
			require.Contains(t, runKeys, specs[i].key)
		}
	}
	for _, key := range runKeys {
		s := lookupSpec(key)
		require.False(t, s.trusted, "%s: a workspace may not set it at all", key)
		require.Contains(t, []kind{kindCommand, kindArgs, kindString}, s.kind, key)
	}
	require.Contains(t, runKeys, "task.check-command")
}

// TestWorkspaceTrust loads a workspace whose ralph.yaml sets commands,
// trusted (starter trust) with the contents of trusted, if any, and asks
// CheckWorkspaceTrusted whether a session may start there.
func TestWorkspaceTrust(t *testing.T) {
	const (
		command = "agent:\n  command: ./agent.sh --fast\n"
		both    = "agent:\n  command: ./agent.sh --fast\ntask:\n  check-command: make test\n"
	)
	tests := []struct {
		name    string
		trusted string // ralph.yaml when the workspace was trusted; "" never
		file    string // ralph.yaml when the session starts
		args    []string
		env     map[string]string
		want    []string // in the error, with FILE and DIR; none: may start
	}{
		{name: "no commands", file: "agent:\n  model: opus\nlimits:\n  max-iterations: 5\n"},
		{name: "emptied commands", file: "agent:\n  command: \"\"\n  args: []\ntask:\n  check-command: \" \"\n"},
		{name: "untrusted agent.command", file: command, want: []string{
			"FILE sets commands that run on this machine, and you have not trusted this workspace:\n" +
				"    agent.command  ./agent.sh --fast\n" +
				"A workspace's ralph.yaml comes with the repository, which may not be yours. Read the commands above; if you trust them, run\n" +
				"    starter trust DIR\n" +
				"and start again (or override them with their flags, such as --agent-command).",
		}},
		{name: "untrusted check command", file: "task:\n  check-command: curl x | sh\n", want: []string{"    task.check-command  curl x | sh\n"}},
		{name: "untrusted agent args", file: "agent:\n  args: [--mcp-config, '{\"a\": 1}']\n", want: []string{"    agent.args  --mcp-config '{\"a\": 1}'\n"}},
		{name: "untrusted role commands", file: "roles:\n  reviewer:\n    command: ./review.sh\n  planner:\n    command: [./plan.sh, -v]\n",
			want: []string{"    roles.reviewer.command  ./review.sh\n    roles.planner.command   ./plan.sh -v\n"}},
		{name: "trusted", trusted: both, file: both},
		{name: "comment and other keys changed", trusted: both,
			file: "# a new comment\nagent:\n  model: opus\n  command: ./agent.sh --fast\nlimits:\n  max-iterations: 3\ntask:\n  check-command: make test\n"},
		{name: "same words spelled otherwise", trusted: command, file: "agent:\n  command: [./agent.sh, --fast]\n"},
		{name: "value changed", trusted: both, file: "agent:\n  command: ./agent.sh --slow\ntask:\n  check-command: make test\n", want: []string{
			"FILE sets commands that run on this machine, and they changed since you trusted this workspace on " + time.Now().Format(time.DateOnly) + ":\n" +
				"    agent.command       ./agent.sh --slow    (was: ./agent.sh --fast)\n" +
				"    task.check-command  make test\n",
			"    starter trust DIR\n",
		}},
		{name: "key added", trusted: command, file: both, want: []string{"    task.check-command  make test    (new)\n"}},
		{name: "key removed", trusted: both, file: command, want: []string{"    task.check-command  (no longer set; was: make test)\n"}},
		{name: "overridden by a flag", file: command, args: []string{"--agent-command=claude"}},
		{name: "overridden by a variable", file: command, env: map[string]string{"RALPH_AGENT_COMMAND": "claude"}},
		{name: "partly overridden", file: both, args: []string{"--agent-command=claude"}, want: []string{"    task.check-command  make test\n"}},
		{name: "--config", file: both, args: []string{"--config=FILE"}},
		{name: "RALPH_CONFIG", file: both, env: map[string]string{"RALPH_CONFIG": "FILE"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			isolate(t)
			ws := t.TempDir()
			file := filepath.Join(ws, "ralph.yaml")
			replace := strings.NewReplacer("FILE", file, "DIR", ws)
			if tt.trusted != "" {
				writeFile(t, ws, "ralph.yaml", tt.trusted)
				_, err := TrustWorkspace(ws, time.Now())
				require.NoError(t, err)
			}
			writeFile(t, ws, "ralph.yaml", tt.file)
			for k, v := range tt.env {
				t.Setenv(k, replace.Replace(v))
			}

			cfg, err := load(t, ws, replaceEach(replace, tt.args)...)
			require.NoError(t, err, "Load refuses nothing: prompt and status read untrusted files")
			err = cfg.CheckWorkspaceTrusted()
			if len(tt.want) == 0 {
				require.NoError(t, err)
				return
			}
			var ue *UntrustedError
			require.ErrorAs(t, err, &ue)
			require.Equal(t, file, ue.File)
			for _, w := range tt.want {
				require.Contains(t, err.Error(), replace.Replace(w))
			}
		})
	}
}

// TestTrustFile trusts, lists and revokes workspaces: the file is JSON,
// readable by the user only, keyed by the workspace's real path.
func TestTrustFile(t *testing.T) {
	isolate(t)
	real := t.TempDir()
	writeFile(t, real, "ralph.yaml", "# ours\nagent:\n  command: claude --dangerously-skip-permissions\n  args: [--verbose]\n")
	link := filepath.Join(t.TempDir(), "link")
	require.NoError(t, os.Symlink(real, link))
	quiet := t.TempDir()
	writeFile(t, quiet, "ralph.yaml", "limits:\n  max-iterations: 3\n")

	now := time.Date(2025, 3, 4, 5, 6, 7, 8, time.UTC)
	w, err := TrustWorkspace(link, now)
	require.NoError(t, err)
	require.Equal(t, real, w.Dir, "the real path, not the link's")
	require.Equal(t, []RunSetting{{"agent.command", "claude --dangerously-skip-permissions"}, {"agent.args", "--verbose"}}, w.Settings)
	require.Equal(t, now.Truncate(time.Second), w.TrustedAt)
	require.Len(t, w.SHA256, 64)

	w, err = TrustWorkspace(quiet, now)
	require.NoError(t, err)
	require.Empty(t, w.Settings, "nothing that runs: nothing to trust")

	file, err := TrustFile()
	require.NoError(t, err)
	require.Equal(t, filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "durable-ralph", "trusted-workspaces.json"), file)
	info, err := os.Stat(file)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	var doc trustDoc
	require.NoError(t, json.Unmarshal(data, &doc))
	require.Contains(t, doc.About, "not of the whole file")
	require.Len(t, doc.Workspaces, 1)
	entries, err := TrustedWorkspaces()
	require.NoError(t, err)
	require.Equal(t, doc.Workspaces, entries)

	cfg, err := load(t, real)
	require.NoError(t, err)
	require.NoError(t, cfg.CheckWorkspaceTrusted(), "trusted through the link")

	_, err = TrustWorkspace(real, now.Add(time.Hour))
	require.NoError(t, err)
	entries, err = TrustedWorkspaces()
	require.NoError(t, err)
	require.Len(t, entries, 1, "trusting again replaces the entry")

	gone, found, err := RevokeWorkspace(link)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, real, gone.Dir)
	_, found, err = RevokeWorkspace(link)
	require.NoError(t, err)
	require.False(t, found)
	require.ErrorAs(t, cfg.CheckWorkspaceTrusted(), new(*UntrustedError))
	entries, err = TrustedWorkspaces()
	require.NoError(t, err)
	require.Empty(t, entries)
}

// TestTrustWorkspaceRefuses trusts workspaces whose ralph.yaml is
// missing or would not load.
func TestTrustWorkspaceRefuses(t *testing.T) {
	tests := []struct {
		name, file, want string
	}{
		{"no ralph.yaml", "", "has no ralph.yaml: nothing to trust"},
		{"unknown key", "agent:\n  comand: x\n", "unknown key agent.comand"},
		{"trusted key", "agent:\n  command: x\ndev:\n  ip: 0.0.0.0\n", "key dev.ip in"},
		{"not YAML", "agent: [\n", "read config file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := setup(t, "", tt.file, nil)
			_, err := TrustWorkspace(ws, time.Now())
			require.ErrorContains(t, err, tt.want)
			entries, err := TrustedWorkspaces()
			require.NoError(t, err)
			require.Empty(t, entries)
		})
	}
}

// TestIssueWorkReadsNoSettings holds what keeps an issue's branch from
// choosing commands: the queue's sessions get the settings the starter
// resolved from the clone (contract.QueueInput.Session), and the code that
// runs in an issue's work tree, workflows and activities, cannot read a
// ralph.yaml there because it does not link this package.
func TestIssueWorkReadsNoSettings(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	const module = "github.com/durable-ralph/ralph"
	for _, pkg := range []string{module + "/workflows", module + "/activities/..."} {
		out, err := exec.Command("go", "list", "-e", "-deps", pkg).CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.NotContains(t, strings.Fields(string(out)), module+"/config", "%s links config", pkg)
	}
}
