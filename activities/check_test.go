package activities_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/activities"
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
