package app_test

import (
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/app"
	"github.com/durable-ralph/ralph/config"
	"github.com/durable-ralph/ralph/contract"
)

func TestSessionInputCarriesEverySetting(t *testing.T) {
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	config.AddFlags(fs)
	require.NoError(t, fs.Parse([]string{
		"--agent-command", "my-claude --flag", "--model", "opus", "--max-turns", "7", "--agent-arg", "--x",
		"--reset-interrupted", "--mode", "prd", "--completion-promise", "DONE",
		"--max-iterations", "9", "--max-runtime", "2h", "--max-cost", "3.5",
		"--max-consecutive-failures", "4", "--max-no-progress", "5",
		"--iteration-timeout", "20m", "--heartbeat-timeout", "15s", "--iterations-per-run", "6", "--max-task-file-repairs", "4",
		"--auto-commit=false", "--allow-dirty",
		"--checkpoint-every", "2", "--confirm-complete", "--checkpoint-timeout", "1h", "--checkpoint-on-timeout", "stop",
		"--fallback", "codex", "--fallback", "gemini", "--fallback-after", "30m", "--sandbox", "required",
	}))
	dir := t.TempDir()
	cfg, err := config.Load(fs, dir)
	require.NoError(t, err)
	in, err := app.SessionInput(cfg, dir)
	require.NoError(t, err)

	require.Equal(t, []string{"my-claude", "--flag"}, in.Agent.Command)
	require.Equal(t, "opus", in.Agent.Model)
	require.Equal(t, 7, in.Agent.MaxTurns)
	require.Equal(t, []string{"--x"}, in.Agent.ExtraArgs)
	require.True(t, in.Agent.ResetInterrupted)
	require.Equal(t, "prd", in.Task.Mode)
	require.Equal(t, "DONE", in.Task.CompletionPromise)
	require.Equal(t, contract.Limits{
		MaxIterations: 9, MaxRuntime: 2 * time.Hour, MaxCostUSD: 3.5,
		MaxConsecutiveFailures: 4, MaxNoProgress: 5,
		IterationTimeout: 20 * time.Minute, HeartbeatTimeout: 15 * time.Second, IterationsPerRun: 6,
		MaxTaskFileRepairs: 4,
	}, in.Limits)
	require.False(t, in.Git.AutoCommit)
	require.True(t, in.Git.AllowDirty)
	require.Equal(t, contract.CheckpointSettings{Every: 2, BeforeComplete: true, Timeout: time.Hour, OnTimeout: "stop"}, in.Checkpoints)
	require.True(t, len(in.Workspace) > 0 && in.Workspace[0] == '/', "absolute workspace")

	// Each fallback runs its own CLI and default model, contained as the
	// executor is; the executor's turns and arguments are for its CLI.
	require.NotNil(t, in.Fallback)
	require.Equal(t, 30*time.Minute, in.Fallback.After)
	require.Len(t, in.Fallback.Agents, 2)
	for i, b := range []string{"codex", "gemini"} {
		a := in.Fallback.Agents[i]
		require.Equal(t, b, a.Backend)
		require.Equal(t, []string{b}, a.Command)
		require.Empty(t, a.Model)
		require.Zero(t, a.MaxTurns)
		require.Empty(t, a.ExtraArgs)
		require.Equal(t, "required", a.Sandbox.Mode)
	}
}

func TestClonesDir(t *testing.T) {
	for _, tt := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"XDG_DATA_HOME": "/data", "HOME": "/home/u"}, "/data/durable-ralph/clones"},
		{map[string]string{"HOME": "/home/u"}, "/home/u/.local/share/durable-ralph/clones"},
		{map[string]string{}, ""},
	} {
		require.Equal(t, tt.want, app.ClonesDir(func(k string) string { return tt.env[k] }))
	}
}
