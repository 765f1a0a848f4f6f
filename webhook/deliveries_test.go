package webhook

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// record claims id in d and records it as having had an effect.
func record(t *testing.T, d *deliveries, id string) {
	t.Helper()
	done, dup, err := d.claim(context.Background(), id)
	require.NoError(t, err)
	require.False(t, dup, id)
	require.NoError(t, done(true))
}

func seen(t *testing.T, d *deliveries, id string) bool {
	t.Helper()
	done, dup, err := d.claim(context.Background(), id)
	require.NoError(t, err)
	if !dup {
		require.NoError(t, done(false))
	}
	return dup
}

func lines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return strings.Fields(string(data))
}

func TestDeliveriesCompaction(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", DeliveriesFileName)
	d, err := openDeliveries(path, 3)
	require.NoError(t, err)
	for i := range 6 {
		record(t, d, fmt.Sprintf("d%d", i))
	}
	require.Len(t, lines(t, path), 6, "twice keep: not compacted yet")
	record(t, d, "d6")
	require.Equal(t, []string{"d4", "d5", "d6"}, lines(t, path), "compacted to the last keep")
	record(t, d, "d7")
	require.Equal(t, []string{"d4", "d5", "d6", "d7"}, lines(t, path))
	for _, id := range []string{"d5", "d6", "d7"} {
		require.True(t, seen(t, d, id), id)
	}
	require.False(t, seen(t, d, "d4"), "forgotten beyond keep")
	require.NoError(t, d.close())

	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	// Reopened, it remembers the last keep of the file.
	d, err = openDeliveries(path, 3)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.close()) })
	require.True(t, seen(t, d, "d7"))
	require.True(t, seen(t, d, "d5"))
	require.False(t, seen(t, d, "d3"))
}

func TestDeliveriesTornLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), DeliveriesFileName)
	require.NoError(t, os.WriteFile(path, []byte("a1\nnot one!\nb2\nc3-cut-sh"), 0o644))
	d, err := openDeliveries(path, 10)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.close()) })
	require.Equal(t, []string{"a1", "b2"}, lines(t, path), "rewritten without what is not an ID")
	require.True(t, seen(t, d, "b2"))
	require.False(t, seen(t, d, "c3-cut-sh"))
	record(t, d, "c3")
	require.Equal(t, []string{"a1", "b2", "c3"}, lines(t, path))
	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
}
