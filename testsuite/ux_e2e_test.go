package testsuite_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFinishedWorkspace: a task file that is already done ends the
// session complete at prepare without running the agent; run on the
// finished workspace says it starts a new session; --attach-only refuses
// to start one.
func TestFinishedWorkspace(t *testing.T) {
	done := strings.ReplaceAll(threeStoryPRD, `"passes": false`, `"passes": true`)
	r := newRepo(t, map[string]string{"prd.json": done, "progress.txt": ""})
	se := newStarterEnv(t, scenario(t, map[string]any{"auto": true}))

	code, out := starter(t, se, "run", "--dev", "--follow", r.Dir)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "ended: complete (prd.json is already complete (3 of 3 done): no iteration ran)")
	require.Empty(t, calls(t, se.env), "no agent ran")

	code, out = starter(t, se, "run", "--dev", "--attach-only", r.Dir)
	require.Equal(t, 1, code, out)
	require.Regexp(t, `starter: no session is running on `+r.Dir+` \(the last one ended completed at \d{4}-\d\d-\d\d \d\d:\d\d\); run without --attach-only to start a new one`, out)
	require.NotContains(t, out, "Started a new session")
	require.NotContains(t, out, "Started session")

	code, out = starter(t, se, "run", "--dev", "--follow", r.Dir)
	require.Equal(t, 0, code, out)
	require.Regexp(t, `Started a new session \(the last one on this workspace ended completed at [^)]+\) ralph-`, out)
}
