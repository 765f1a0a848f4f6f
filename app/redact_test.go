package app

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/contract"
)

// TestPermanentSurfacesANonRetryableCause: an activity error that wraps
// a non-retryable one (fmt.Errorf("build prompt: %w", …)) reaches
// Temporal non-retryable, with the inner error's type and details; other
// errors are left as they are.
func TestPermanentSurfacesANonRetryableCause(t *testing.T) {
	inner := temporal.NewNonRetryableApplicationError("prd.json:4:58: invalid character", contract.ErrTypeInvalidTaskFile, nil,
		contract.AgentProblem{Binary: "x"})
	wrapped := fmt.Errorf("build prompt: %w", inner)

	got := permanent(wrapped)
	var top *temporal.ApplicationError
	require.True(t, errors.As(got, &top))
	require.Same(t, top, got, "the outermost error is the application error")
	require.True(t, top.NonRetryable())
	require.Equal(t, contract.ErrTypeInvalidTaskFile, top.Type())
	require.Equal(t, "build prompt: prd.json:4:58: invalid character", top.Message())
	var p contract.AgentProblem
	var cause *temporal.ApplicationError
	require.True(t, errors.As(top.Unwrap(), &cause))
	require.NoError(t, cause.Details(&p))
	require.Equal(t, "x", p.Binary)

	require.Same(t, inner, permanent(inner), "already outermost")
	retryable := fmt.Errorf("git status: %w", errors.New("index.lock"))
	require.Equal(t, retryable, permanent(retryable))
	require.NoError(t, permanent(nil))
}
