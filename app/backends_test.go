package app

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/config"
)

// TestEveryConfiguredBackendRuns checks that the backends config accepts
// are the ones the activities run.
func TestEveryConfiguredBackendRuns(t *testing.T) {
	require.ElementsMatch(t, config.BackendNames(), activities.Backends())
	for _, name := range config.BackendNames() {
		b, err := activities.BackendOf(backendOf(name))
		require.NoError(t, err, name)
		require.Equal(t, name, b.Name())
	}
	_, err := activities.BackendOf("aider")
	require.ErrorContains(t, err, `unknown agent backend "aider" (want one of claude, codex, gemini, command)`)
}
