package testsuite_test

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestHarnessIgnoresTheUsersRalphEnv: the RALPH_* variables of the test
// process's own environment (a user's shell that exports RALPH_DEV_PORT
// runs make test) reach no process the harness starts; those get the
// harness's settings and the test's own, nothing else.
func TestHarnessIgnoresTheUsersRalphEnv(t *testing.T) {
	t.Setenv("RALPH_DEV_PORT", "1")
	t.Setenv("RALPH_WORKER_HOST_ID", "the-users-laptop")
	p := startProc(t, []string{"RALPH_DEV_UI_PORT=8999"}, "sh", "-c",
		`echo "port=${RALPH_DEV_PORT-unset} host=${RALPH_WORKER_HOST_ID-unset} ui=$RALPH_DEV_UI_PORT rw=$RALPH_AGENT_SANDBOX_RW"`)
	require.Equal(t, 0, p.wait(t, time.Minute), p.Output())
	require.Equal(t, "port=unset host=unset ui=8999 rw="+bins.dir+"\n", p.Output())
	_, set := os.LookupEnv("RALPH_AGENT_SANDBOX_RW")
	require.False(t, set, "the harness's settings go to its processes, not to the tests' own")
}
