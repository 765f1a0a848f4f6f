package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTrust runs, in order, the command lines of a user who meets a
// workspace whose ralph.yaml sets commands: run, plan and queue refuse
// it and say how to trust it; trust says what it trusts; list and
// revoke show and forget it.
func TestTrust(t *testing.T) {
	userDir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", userDir)
	t.Setenv("RALPH_CONFIG", "")
	t.Setenv("RALPH_AGENT_COMMAND", "")
	t.Setenv("RALPH_TASK_CHECK_COMMAND", "")
	ws := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ws, "ralph.yaml"), []byte("agent:\n  command: ./agent.sh --fast\ntask:\n  check-command: make test\n"), 0o644))
	quiet := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(quiet, "ralph.yaml"), []byte("limits:\n  max-iterations: 3\n"), 0o644))
	empty := t.TempDir()
	file := filepath.Join(userDir, "durable-ralph", "trusted-workspaces.json")
	settings := "    agent.command       ./agent.sh --fast\n    task.check-command  make test\n"
	refused := []string{ws + "/ralph.yaml sets commands that run on this machine, and you have not trusted this workspace:\n" + settings, "    starter trust " + ws + "\n"}

	for _, step := range []struct {
		name    string
		args    []string
		code    int
		stdout  []string
		stderr  []string
		noWrite bool // the trust file is not there after the step
	}{
		{name: "run refuses", args: []string{"run", ws}, code: 1, stderr: refused, noWrite: true},
		{name: "plan refuses", args: []string{"plan", "an idea", ws}, code: 1, stderr: refused, noWrite: true},
		{name: "queue refuses", args: []string{"queue", ws}, code: 1, stderr: refused, noWrite: true},
		{name: "run with the command given refuses the check command", args: []string{"run", "--agent-command", "claude", ws}, code: 1,
			stderr: []string{"    task.check-command  make test\n"}, noWrite: true},
		{name: "list of none", args: []string{"trust", "--list"}, stdout: []string{"No trusted workspaces (" + file + ")\n"}, noWrite: true},
		{name: "trust without commands", args: []string{"trust", quiet}, stdout: []string{quiet + "/ralph.yaml sets no command: it needs no trust, and nothing was recorded\n"}, noWrite: true},
		{name: "trust without ralph.yaml", args: []string{"trust", empty}, code: 1, stderr: []string{"starter: " + empty + " has no ralph.yaml: nothing to trust\n"}, noWrite: true},
		{name: "trust", args: []string{"trust", ws}, stdout: []string{
			"Trusted " + ws + ": sessions started there may run what its ralph.yaml sets:\n" + settings +
				"Recorded in " + file + ". When ralph.yaml changes these values, starter asks again.\n",
		}},
		{name: "list", args: []string{"trust", "--list"}, stdout: []string{ws + " (trusted ", ")\n" + settings}},
		{name: "list and revoke", args: []string{"trust", "--list", "--revoke"}, code: 1, stderr: []string{"--list and --revoke do not go together"}},
		{name: "list with a directory", args: []string{"trust", "--list", ws}, code: 1, stderr: []string{"--list takes no directory"}},
		{name: "revoke", args: []string{"trust", "--revoke", ws}, stdout: []string{"No longer trusted: " + ws + "; its ralph.yaml's commands are refused until you trust it again\n"}},
		{name: "revoke again", args: []string{"trust", "--revoke", ws}, stdout: []string{ws + " was not trusted: nothing to revoke"}},
		{name: "list after revoke", args: []string{"trust", "--list"}, stdout: []string{"No trusted workspaces"}},
		{name: "run refuses again", args: []string{"run", ws}, code: 1, stderr: refused},
	} {
		t.Run(step.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, step.args...)
			require.Equal(t, step.code, code, "stdout: %s\nstderr: %s", stdout, stderr)
			for _, w := range step.stdout {
				require.Contains(t, stdout, w)
			}
			for _, w := range step.stderr {
				require.Contains(t, stderr, w)
			}
			if step.code != 0 {
				require.True(t, strings.HasPrefix(stderr, "starter: "), stderr)
			}
			_, err := os.Stat(file)
			require.Equal(t, step.noWrite, os.IsNotExist(err), "trust file after %v", step.args)
		})
	}
}
