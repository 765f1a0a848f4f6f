package activities_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/sandbox"
)

// A completion claim is checked by task.check-command: a failing check
// is reported with its output for the next prompt, a passing one is
// recorded.
func TestCheckCommandJudgesTheCompletionClaim(t *testing.T) {
	tests := []struct {
		name   string
		check  string
		passed bool
		exit   int
	}{
		{"failing", `echo "FAIL: TestWidgets"; exit 3`, false, 3},
		{"passing", `test -f prd.json`, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := newRepo(t, map[string]string{"prd.json": prd})
			env, _ := scenarioEnv(t, map[string]any{"claim": true})
			in := iterationInput(dir, 1)
			in.Task.CheckCommand = tt.check
			res, _, err := runActivity(t, &activities.Agent{Env: env}, in)
			require.NoError(t, err)
			require.True(t, res.CompletionClaimed)
			require.NotNil(t, res.Check)
			require.Equal(t, tt.passed, res.Check.Passed)
			require.Equal(t, tt.exit, res.Check.ExitCode)
			if !tt.passed {
				require.Contains(t, res.Check.Output, "FAIL: TestWidgets")
				require.Len(t, res.Notices, 1)
				require.True(t, strings.Contains(res.Notices[0], "FAIL: TestWidgets") && strings.Contains(res.Notices[0], "exit status 3"), res.Notices[0])
			} else {
				require.Empty(t, res.Notices)
			}
		})
	}
}

// The check runs what the agent wrote, so it is contained as the agent
// is: the user's files are not there. Without a sandbox they are, which
// shows the check could tell.
func TestCheckCommandRunsInTheSandbox(t *testing.T) {
	if _, err := sandbox.Find(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI installs bubblewrap: %v", err)
		}
		t.Skip(err)
	}
	home := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".ssh"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".ssh", "id_ed25519"), []byte("KEY"), 0o600))
	t.Setenv("HOME", home)
	for _, tt := range []struct {
		mode   string
		passed bool
	}{{sandbox.ModeRequired, true}, {sandbox.ModeOff, false}} {
		t.Run(tt.mode, func(t *testing.T) {
			dir := newRepo(t, map[string]string{"prd.json": prd})
			env, _ := scenarioEnv(t, map[string]any{"claim": true})
			in := iterationInput(dir, 1)
			in.Agent.Sandbox.Mode = tt.mode
			in.Agent.Sandbox.Network = sandbox.NetNone
			in.Task.CheckCommand = `! cat "$HOME/.ssh/id_ed25519"`
			res, _, err := runActivity(t, &activities.Agent{Env: env}, in)
			require.NoError(t, err)
			require.NotNil(t, res.Check)
			require.Equal(t, tt.passed, res.Check.Passed, res.Check.Output)
		})
	}
}
