package app

import (
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDeadHere(t *testing.T) {
	host, err := os.Hostname()
	require.NoError(t, err)
	gone := exec.Command("true")
	require.NoError(t, gone.Run())
	for _, tc := range []struct {
		name     string
		identity string
		dead     bool
	}{
		{"this_process", fmt.Sprintf("%d@%s@", os.Getpid(), host), false},
		{"a_starter_that_ended", fmt.Sprintf("%d@%s%s", gone.Process.Pid, host, starterIdentitySuffix), true},
		{"a_worker_that_ended", fmt.Sprintf("%d@%s@ralph", gone.Process.Pid, host), true},
		{"another_machine", fmt.Sprintf("%d@elsewhere@", gone.Process.Pid), false},
		{"not_ours", "my-worker", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.dead, deadHere(tc.identity))
		})
	}
	require.Contains(t, StarterWorkerIdentity(), fmt.Sprintf("%d@%s", os.Getpid(), host))
}
