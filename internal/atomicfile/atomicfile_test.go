package atomicfile_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/internal/atomicfile"
)

func TestWriteFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "f.json")
	require.NoError(t, atomicfile.WriteFile(path, []byte("one"), 0o600))
	require.NoError(t, atomicfile.WriteFile(path, []byte("two"), 0o600))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "two", string(data))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left")

	require.Error(t, atomicfile.WriteFile(filepath.Join(path, "under-a-file"), nil, 0o600))
}

func TestReplace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.json")
	require.NoError(t, atomicfile.Replace(path, []byte("a"), 0o640))
	require.NoError(t, atomicfile.Replace(path, []byte("b"), 0o640))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "b", string(data))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o640), fi.Mode().Perm())
}
