package main

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/internal/testkit"
)

// TestReadmeConfigTableFlags: every flag the configuration table of docs/configuration.md
// says worker takes ("worker", or "every command"), worker takes; the
// others it refuses, as the table says nothing of them for worker.
func TestReadmeConfigTableFlags(t *testing.T) {
	rows, err := testkit.ConfigTable("../../docs/configuration.md")
	require.NoError(t, err)
	require.NotEmpty(t, rows)
	flags := newRootCmd().Flags()
	for _, r := range rows {
		takes := r.Every || slices.Contains(r.Commands, "worker")
		require.Equal(t, takes, flags.Lookup(r.Flag) != nil, "worker takes --%s (%s): %v, as the configuration table (docs/configuration.md) says", r.Flag, r.Key, takes)
	}
}
