package git_test

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/git"
)

// TestPinsKeepWhatASessionStartedWith: the layout a session starts with
// is what every later open must find, across workers (the record is a
// file); a replaced .git is refused and stays refused, for a new
// session too, until a person removes the record it names.
func TestPinsKeepWhatASessionStartedWith(t *testing.T) {
	ctx := context.Background()
	pins := git.Pins{Dir: t.TempDir()}
	r := newRepo(t)
	require.NoError(t, pins.Trust(r.Dir, r.Layout()))
	again, err := git.Open(ctx, r.Dir)
	require.NoError(t, err)
	require.NoError(t, pins.Verify(r.Dir, again.Layout()), "the same repository")

	sh(t, r.Dir, "mv", ".git", ".git-orig")
	sh(t, r.Dir, "cp", "-a", ".git-orig", ".git")
	replaced, err := git.Open(ctx, r.Dir)
	require.NoError(t, err, "a replaced .git looks like any repository")
	err = pins.Verify(r.Dir, replaced.Layout())
	require.ErrorIs(t, err, git.ErrUnsafeRepository)
	require.ErrorContains(t, err, ".git was replaced")
	require.ErrorContains(t, err, pins.Path(r.Dir), "the message names the record to remove")

	err = pins.Trust(r.Dir, replaced.Layout())
	require.ErrorIs(t, err, git.ErrUnsafeRepository, "a new session does not trust it either")
	require.ErrorContains(t, err, "in an earlier session")
	require.Error(t, (git.Pins{Dir: pins.Dir}).Verify(r.Dir, replaced.Layout()), "nor another worker")

	require.NoError(t, os.Remove(pins.Path(r.Dir)))
	require.NoError(t, pins.Trust(r.Dir, replaced.Layout()), "once a person removed the record")
	require.NoError(t, (git.Pins{}).Verify(r.Dir, replaced.Layout()), "pins without a directory keep nothing")
}
