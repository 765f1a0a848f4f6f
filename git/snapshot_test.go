package git_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSnapshotRestore changes a work tree in every way a reviewer might
// (edit, delete, add, stage, commit) on top of uncommitted work that
// must survive, and puts it back.
func TestSnapshotRestore(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	dir := r.Dir
	write(t, dir, ".gitignore", "*.log\n")
	write(t, dir, "src/a.go", "package a\n")
	sh(t, dir, "git", "add", ".")
	sh(t, dir, "git", "commit", "-q", "-m", "base")
	// Uncommitted work of the executors: a modified file, a staged one,
	// an untracked one, and an ignored build output.
	write(t, dir, "README.md", "hello, edited but not committed\n")
	write(t, dir, "staged.txt", "staged\n")
	sh(t, dir, "git", "add", "staged.txt")
	write(t, dir, "notes/untracked.md", "draft\n")
	write(t, dir, "build.log", "old output\n")
	statusBefore := sh(t, dir, "git", "status", "--porcelain")

	snap, err := r.Snapshot(ctx)
	require.NoError(t, err)
	files, moved, err := r.Changed(ctx, snap)
	require.NoError(t, err)
	require.Empty(t, files)
	require.False(t, moved)

	// What a misbehaving reviewer does.
	write(t, dir, "src/a.go", "package a // fixed by the reviewer\n")
	require.NoError(t, os.Remove(filepath.Join(dir, "notes/untracked.md")))
	write(t, dir, "src/new.go", "package a\n")
	write(t, dir, "build.log", "new output\n")
	sh(t, dir, "git", "add", "-A")
	sh(t, dir, "git", "commit", "-q", "-m", "reviewer commit")
	write(t, dir, "README.md", "rewritten after the commit\n")

	files, moved, err = r.Changed(ctx, snap)
	require.NoError(t, err)
	require.True(t, moved)
	require.ElementsMatch(t, []string{"README.md", "notes/untracked.md", "src/a.go", "src/new.go"}, files, "ignored files do not count")

	require.NoError(t, r.Restore(ctx, snap))
	files, moved, err = r.Changed(ctx, snap)
	require.NoError(t, err)
	require.Empty(t, files)
	require.False(t, moved)
	require.Equal(t, snap.Head, sh(t, dir, "git", "rev-parse", "HEAD")[:len(snap.Head)])
	require.Equal(t, statusBefore, sh(t, dir, "git", "status", "--porcelain"), "the index and the untracked files are as they were")
	require.Equal(t, "hello, edited but not committed\n", read(t, dir, "README.md"))
	require.Equal(t, "package a\n", read(t, dir, "src/a.go"))
	require.Equal(t, "draft\n", read(t, dir, "notes/untracked.md"))
	require.NoFileExists(t, filepath.Join(dir, "src/new.go"))
	require.Equal(t, "new output\n", read(t, dir, "build.log"), "ignored files are the reviewer's to write")
}

func read(t *testing.T, dir, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name))
	require.NoError(t, err)
	return string(data)
}
