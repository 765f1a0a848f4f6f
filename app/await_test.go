package app

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/temporal"

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
