package activities

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSessionLockIsExclusiveAndForgotten: a second attempt of a session
// waits for the first, one that gives up leaves the lock as it was, and
// the key is forgotten once nobody holds or awaits it.
func TestSessionLockIsExclusiveAndForgotten(t *testing.T) {
	const key = "test-session-lock"
	known := func() bool {
		sessionLocks.Lock()
		defer sessionLocks.Unlock()
		_, ok := sessionLocks.m[key]
		return ok
	}
	unlock, err := lockSession(context.Background(), key)
	require.NoError(t, err)
	require.True(t, known())

	// One that gives up while the first holds the lock.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = lockSession(ctx, key)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.True(t, known(), "the holder's lock stays")

	// One that waits, and gets it when the first lets go.
	got := make(chan func(), 1)
	go func() {
		u, err := lockSession(context.Background(), key)
		if err == nil {
			got <- u
		}
	}()
	select {
	case <-got:
		t.Fatal("a second attempt took the lock while the first held it")
	case <-time.After(20 * time.Millisecond):
	}
	unlock()
	var second func()
	select {
	case second = <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting attempt did not get the lock")
	}
	require.True(t, known())
	second()
	require.False(t, known(), "a lock nobody holds or awaits is forgotten")
}
