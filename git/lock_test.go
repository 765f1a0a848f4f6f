package git_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/git"
)

// TestLockIsSharedByWorkTrees: the lock taken through a work tree keeps
// the clone's waiting, and is free again once released; a wait ends with
// its context.
func TestLockIsSharedByWorkTrees(t *testing.T) {
	ctx := context.Background()
	clone := newRepo(t)
	wtDir := t.TempDir() + "/wt"
	require.NoError(t, clone.AddWorktree(ctx, wtDir, "side", "HEAD", true))
	wt, err := git.Open(ctx, wtDir)
	require.NoError(t, err)

	unlock, err := wt.Lock(ctx)
	require.NoError(t, err)

	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err = clone.Lock(short)
	require.ErrorIs(t, err, context.DeadlineExceeded, "the clone waits while its work tree holds the lock")

	var mu sync.Mutex
	var order []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		u, err := clone.Lock(ctx)
		if err != nil {
			t.Error(err)
			return
		}
		mu.Lock()
		order = append(order, "clone")
		mu.Unlock()
		u()
	}()
	time.Sleep(50 * time.Millisecond)
	mu.Lock()
	order = append(order, "released")
	mu.Unlock()
	unlock()
	<-done
	require.Equal(t, []string{"released", "clone"}, order)
}
