package activities_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/gittest"
	"github.com/durable-ralph/ralph/sandbox"
)

// script writes an executable shell script called name into a directory
// of its own and returns the directory.
func script(t *testing.T, name, body string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body), 0o755))
	return dir
}

// checkAgents runs the CheckAgents activity of ag for agents, with dir
// (if any) first on PATH.
func checkAgents(t *testing.T, ag *activities.Agent, dir string, agents ...contract.AgentSettings) (contract.AgentPreflightResult, error) {
	t.Helper()
	if dir != "" {
		t.Setenv("PATH", dir+":"+os.Getenv("PATH"))
	}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(ag)
	val, err := env.ExecuteActivity(ag.CheckAgents, contract.AgentPreflightInput{Host: "box", Agents: agents})
	var res contract.AgentPreflightResult
	if err == nil {
		require.NoError(t, val.Get(&res))
	}
	return res, err
}

// TestCheckAgents: the preflight finds each agent on the worker's PATH
// and asks it --version, bounded; what it cannot run fails for good,
// saying which agent of which backend, with how to install it.
func TestCheckAgents(t *testing.T) {
	tests := []struct {
		name    string
		bin     string
		body    string // the script called bin; "" for none
		backend string
		// errType is the error's type, "" for success; want is in its
		// message, fix in the fix its details give.
		errType, want, fix string
		version            string
	}{
		{name: "claude_answers", bin: "claude", body: "echo '2.1.329 (Claude Code)'\n", version: "2.1.329 (Claude Code)"},
		{name: "codex_missing", bin: "codex-not-installed", backend: "codex",
			errType: contract.ErrTypeAgentNotFound, want: `agent binary "codex-not-installed" (backend codex) not found on the PATH of host box's worker`,
			fix: "Codex: npm install -g @openai/codex"},
		{name: "gemini_missing", bin: "gemini-not-installed", backend: "gemini",
			errType: contract.ErrTypeAgentNotFound, want: "(backend gemini) not found", fix: "Gemini CLI: npm install -g @google/gemini-cli"},
		{name: "claude_missing", bin: "claude-not-installed",
			errType: contract.ErrTypeAgentNotFound, want: "(backend claude) not found", fix: "Claude Code: npm install -g @anthropic-ai/claude-code"},
		{name: "command_missing", bin: "my-agent-not-installed", backend: "command",
			errType: contract.ErrTypeAgentNotFound, want: "(backend command) not found", fix: "install my-agent-not-installed or fix agent.command"},
		{name: "version_fails_with_its_stderr", bin: "codex", backend: "codex", body: "echo 'node: version 18 is too old' >&2\nexit 3\n",
			errType: contract.ErrTypeAgentUnusable, want: "`codex --version` exited with status 3: node: version 18 is too old",
			fix: "npm install -g @openai/codex"},
		{name: "command_is_not_asked_its_version", bin: "my-agent", backend: "command", body: "exit 1\n"},
		{name: "version_hangs", bin: "gemini", backend: "gemini", body: "sleep 60\n",
			errType: contract.ErrTypeAgentUnusable, want: "did not answer `gemini --version` within 300ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := ""
			if tt.body != "" {
				dir = script(t, tt.bin, tt.body)
			}
			ag := &activities.Agent{Host: "box", PreflightTimeout: 300 * time.Millisecond}
			start := time.Now()
			res, err := checkAgents(t, ag, dir, contract.AgentSettings{Backend: tt.backend, Command: []string{tt.bin}})
			require.Less(t, time.Since(start), 10*time.Second, "bounded")
			if tt.errType == "" {
				require.NoError(t, err)
				require.Equal(t, "box", res.Host)
				require.Len(t, res.Agents, 1)
				require.Equal(t, filepath.Join(dir, tt.bin), res.Agents[0].Path)
				require.Equal(t, tt.version, res.Agents[0].Version)
				return
			}
			require.Error(t, err)
			appErr, ok := errorsAsApp(err)
			require.True(t, ok, "%v", err)
			require.Equal(t, tt.errType, appErr.Type())
			require.True(t, appErr.NonRetryable())
			require.Contains(t, appErr.Message(), tt.want)
			if tt.fix != "" {
				var p contract.AgentProblem
				require.NoError(t, appErr.Details(&p))
				require.Equal(t, tt.bin, p.Binary)
				require.Contains(t, activities.AgentFix(p.Backend, p.Binary), tt.fix)
			}
		})
	}
}

// TestCheckAgentsChecksEveryAgent: the first agent that cannot run fails
// the check, whatever role it is of.
func TestCheckAgentsChecksEveryAgent(t *testing.T) {
	dir := script(t, "claude", "echo 2.1.329\n")
	_, err := checkAgents(t, &activities.Agent{}, dir,
		contract.AgentSettings{Command: []string{"claude"}},
		contract.AgentSettings{Backend: "codex", Command: []string{"codex-not-installed"}})
	require.ErrorContains(t, err, `agent binary "codex-not-installed" (backend codex) not found on the worker's PATH`)
}

func errorsAsApp(err error) (*temporal.ApplicationError, bool) {
	var appErr *temporal.ApplicationError
	ok := errors.As(err, &appErr)
	return appErr, ok
}

// TestInstallHints: each backend says how to install its own CLI.
func TestInstallHints(t *testing.T) {
	tests := []struct {
		backend, bin, hint, fix string
	}{
		{"", "claude", "Claude Code: npm install -g @anthropic-ai/claude-code",
			"Install the agent where the worker runs (Claude Code: npm install -g @anthropic-ai/claude-code), or name another with --agent-command."},
		{"claude", "claude", "Claude Code: npm install -g @anthropic-ai/claude-code", ""},
		{"codex", "codex", "Codex: npm install -g @openai/codex",
			"Install the agent where the worker runs (Codex: npm install -g @openai/codex), or name another with --agent-command."},
		{"gemini", "gemini", "Gemini CLI: npm install -g @google/gemini-cli", ""},
		{"command", "aider", "install aider or fix agent.command",
			"Install the agent where the worker runs (install aider or fix agent.command, --agent-command)."},
	}
	for _, tt := range tests {
		t.Run(tt.bin+"_"+tt.backend, func(t *testing.T) {
			require.Equal(t, tt.hint, activities.InstallHint(tt.backend, tt.bin))
			if tt.fix != "" {
				require.Equal(t, tt.fix, activities.AgentFix(tt.backend, tt.bin))
			}
		})
	}
}

// TestPreflightRunsTheBinaryContained: a wrapper on the worker's PATH
// that acts on --version (writes the user's shell start-up file and a
// file beside the worker's) does so inside the sandbox the session
// asks for: nothing of it reaches the host, and its version is still
// read. A session that requires a sandbox the worker cannot give fails
// the preflight, for good, saying so.
func TestPreflightRunsTheBinaryContained(t *testing.T) {
	if os.Getenv("CI") == "" {
		if _, err := sandbox.Find(); err != nil {
			t.Skip(err)
		}
	}
	home, outside := t.TempDir(), filepath.Join(t.TempDir(), "pwned")
	t.Setenv("HOME", home)
	dir := script(t, "claude", fmt.Sprintf("echo pwned >> \"$HOME/.bashrc\"; echo pwned > %s; echo '2.1.329 (Claude Code)'\n", outside))
	res, err := checkAgents(t, &activities.Agent{Host: "box"}, dir,
		contract.AgentSettings{Command: []string{"claude"}, Sandbox: contract.SandboxSettings{Mode: sandbox.ModeRequired}})
	require.NoError(t, err)
	require.Equal(t, "2.1.329 (Claude Code)", res.Agents[0].Version)
	require.NoFileExists(t, filepath.Join(home, ".bashrc"), "the wrapper's write stayed in the sandbox")
	require.NoFileExists(t, outside)
}

// TestPreflightChecksTheWorkspaceOnItsHost: a preflight given the
// workspace (one the starter cannot see) checks it on the worker of its
// host as the session's start would, and fails for good, saying why.
func TestPreflightChecksTheWorkspaceOnItsHost(t *testing.T) {
	dir := script(t, "claude", "echo '2.1.329 (Claude Code)'\n")
	bad := gittest.NewRepo(t, map[string]string{"prd.json": strings.Replace(prd, "ralph/widgets", "ralph/two words", 1)})
	tests := []struct {
		name, workspace, errType, want string
	}{
		{"no task file", gittest.NewRepo(t, map[string]string{"README.md": "x"}), contract.ErrTypeInvalidTaskFile, "no task file"},
		{"not a git repository", t.TempDir(), contract.ErrTypeInvalidWorkspace, "not a git repository"},
		{"invalid branchName", bad, contract.ErrTypeInvalidTaskFile, `branchName "ralph/two words" is not a git branch name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("PATH", dir+":"+os.Getenv("PATH"))
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestActivityEnvironment()
			ag := &activities.Agent{Host: "box"}
			env.RegisterActivity(ag)
			_, err := env.ExecuteActivity(ag.CheckAgents, contract.AgentPreflightInput{Host: "box",
				Agents: []contract.AgentSettings{{Command: []string{"claude"}}}, Workspace: &contract.PrepareInput{Workspace: tt.workspace}})
			appErr, ok := errorsAsApp(err)
			require.True(t, ok, "%v", err)
			require.Equal(t, tt.errType, appErr.Type())
			require.True(t, appErr.NonRetryable())
			require.Contains(t, appErr.Message(), tt.want)
		})
	}
}
