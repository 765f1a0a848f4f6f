package main

import (
	"context"
	"io"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/gittest"
)

// TestScheduledInput: a schedule's command is read as the command itself
// reads it: run's session input (named for the schedule, under the
// session's usual ID), queue's input with --until-idle as given.
func TestScheduledInput(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	dir := gittest.NewRepo(t, map[string]string{"prd.json": onePRD("ralph/widgets")})
	out, err := exec.Command("git", "-C", dir, "remote", "add", "origin", "https://github.com/acme/app.git").CombinedOutput()
	require.NoError(t, err, string(out))
	cctx := &commandContext{Context: context.Background(), stdout: io.Discard, stderr: io.Discard}

	in, _, err := scheduledInput(cctx, "nightly", []string{"run", dir, "--max-cost", "5", "--host-id", "box"})
	require.NoError(t, err)
	require.NotNil(t, in.Session)
	require.Nil(t, in.Queue)
	require.Equal(t, "nightly", in.Session.Scheduled)
	require.InDelta(t, 5.0, in.Session.Limits.MaxCostUSD, 1e-9)
	require.Equal(t, contract.SessionWorkflowID("box", in.Session.Workspace), in.WorkflowID)
	require.Contains(t, in.Keywords, contract.Keyword{Name: contract.SearchRalphHost, Value: "box"})

	for _, tc := range []struct {
		flag string
		want bool
	}{{"--until-idle", true}, {"--until-idle=false", false}} {
		in, _, err = scheduledInput(cctx, "issues", []string{"queue", dir, tc.flag, "--host-id", "box"})
		require.NoError(t, err)
		require.NotNil(t, in.Queue)
		require.Equal(t, tc.want, in.Queue.Settings.UntilIdle, tc.flag)
		require.Equal(t, contract.QueueWorkflowID("box", "acme", "app"), in.WorkflowID)
		require.Contains(t, in.Keywords, contract.Keyword{Name: contract.SearchRalphRepo, Value: "acme/app"})
	}

	_, _, err = scheduledInput(cctx, "x", []string{"run", dir, "--follow"})
	require.ErrorContains(t, err, "--follow does not apply to a scheduled run")
	_, _, err = scheduledInput(cctx, "x", []string{"status", dir})
	require.ErrorContains(t, err, `a schedule runs run or queue, not "status"`)
}
