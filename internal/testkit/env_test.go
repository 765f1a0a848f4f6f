package testkit

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEnvironLeavesRalphOut: a child's environment has none of this
// process's RALPH_* variables, only those the test gives it; ClearRalphEnv
// unsets them here.
func TestEnvironLeavesRalphOut(t *testing.T) {
	t.Setenv("RALPH_DEV_PORT", "1")
	t.Setenv("NOT_RALPH_X", "kept")
	env := Environ("RALPH_TASK_QUEUE=tests")
	require.NotContains(t, env, "RALPH_DEV_PORT=1")
	require.Contains(t, env, "NOT_RALPH_X=kept")
	require.Equal(t, "RALPH_TASK_QUEUE=tests", env[len(env)-1])

	t.Setenv("RALPH_SOAK_SEED", "7")
	ClearRalphEnv()
	_, set := os.LookupEnv("RALPH_DEV_PORT")
	require.False(t, set)
	require.Equal(t, "7", os.Getenv("RALPH_SOAK_SEED"), "the tests' own knobs stay")
	require.Equal(t, []string{"RALPH_SOAK_SEED=7"}, slices.DeleteFunc(os.Environ(), func(kv string) bool { return !strings.HasPrefix(kv, "RALPH_") }))
	require.NotContains(t, Environ(), "RALPH_SOAK_SEED=7", "no child needs them")
}
