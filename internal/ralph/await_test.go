package ralph

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/config"
	"github.com/durable-ralph/ralph/contract"
)

func TestSessionWaitError(t *testing.T) {
	for _, tc := range []struct {
		name      string
		err       error
		final     bool
		wantInMsg string
	}{
		{"gone", serviceerror.NewNotFound("workflow not found"), true, "no longer exists"},
		{"server unreachable", errors.New("connection refused"), false, "connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := sessionWaitError("ralph-acme-app-issue-1", tc.err)
			require.ErrorContains(t, err, tc.wantInMsg)
			require.ErrorContains(t, err, "ralph-acme-app-issue-1")
			var appErr *temporal.ApplicationError
			if !tc.final {
				require.False(t, errors.As(err, &appErr), "retried: %v", err)
				return
			}
			require.ErrorAs(t, err, &appErr)
			require.True(t, appErr.NonRetryable())
			require.Equal(t, contract.ErrTypeSessionEnded, appErr.Type())
		})
	}
}

func TestDevUIURL(t *testing.T) {
	dir := t.TempDir()
	cfg := config.DevConfig{StateDir: dir, IP: "127.0.0.1", UIPort: 8233}
	require.Equal(t, "http://127.0.0.1:8233", DevUIURL(cfg), "no server wrote its address: the settings")
	require.NoError(t, os.WriteFile(filepath.Join(dir, uiURLFile), []byte("http://127.0.0.1:9999\n"), 0o644))
	require.Equal(t, "http://127.0.0.1:9999", DevUIURL(cfg), "the UI the server serves")
	require.NoError(t, os.Remove(filepath.Join(dir, uiURLFile)))
	cfg.UIPort = 0
	require.Empty(t, DevUIURL(cfg))
}
