package git_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/git"
)

// TestRevertOnto: a merged change (a merge commit, or a squash) is undone
// by a commit on the branch as it is now, later work kept, without the
// work tree or index changing; a change that later commits rewrote does
// not revert cleanly and says so.
func TestRevertOnto(t *testing.T) {
	ctx := context.Background()
	for _, merge := range []string{"merge commit", "squash"} {
		t.Run(merge, func(t *testing.T) {
			r := newRepo(t)
			dir := r.Dir
			sh(t, dir, "git", "checkout", "-q", "-b", "feature")
			write(t, dir, "greeting.go", "package api\n\nconst Greeting = \"hello\"\n")
			write(t, dir, "README.md", "hello\n\nGET /greeting\n")
			sh(t, dir, "git", "add", ".")
			sh(t, dir, "git", "commit", "-q", "-m", "Add GET /greeting")
			sh(t, dir, "git", "checkout", "-q", "main")
			if merge == "squash" {
				sh(t, dir, "git", "merge", "-q", "--squash", "feature")
				sh(t, dir, "git", "commit", "-q", "-m", "Add GET /greeting (#2)")
			} else {
				sh(t, dir, "git", "merge", "-q", "--no-ff", "-m", "Merge pull request #2", "feature")
			}
			merged, err := r.Head(ctx)
			require.NoError(t, err)
			write(t, dir, "later.txt", "later work\n")
			sh(t, dir, "git", "add", ".")
			sh(t, dir, "git", "commit", "-q", "-m", "later work")
			onto, err := r.Head(ctx)
			require.NoError(t, err)
			write(t, dir, "dirty.txt", "uncommitted\n")

			rev, err := r.RevertOnto(ctx, onto, merged, "Revert \"Add GET /greeting\"", "The change set rolled back.", "Reverts: "+merged)
			require.NoError(t, err)
			require.Equal(t, onto, strings.TrimSpace(sh(t, dir, "git", "rev-parse", rev+"^")), "on the branch as it is")
			files := sh(t, dir, "git", "ls-tree", "--name-only", rev)
			require.NotContains(t, files, "greeting.go")
			require.Contains(t, files, "later.txt", "later work stays")
			require.Equal(t, "hello\n", sh(t, dir, "git", "show", rev+":README.md"))
			require.Contains(t, sh(t, dir, "git", "log", "-1", "--format=%B", rev), "Reverts: "+merged)
			head, err := r.Head(ctx)
			require.NoError(t, err)
			require.Equal(t, onto, head, "the branch does not move")
			require.Equal(t, "?? dirty.txt\n", sh(t, dir, "git", "status", "--porcelain"), "work tree and index untouched")
		})
	}

	r := newRepo(t)
	dir := r.Dir
	write(t, dir, "README.md", "hello\nworld\n")
	sh(t, dir, "git", "commit", "-q", "-am", "world")
	changed, err := r.Head(ctx)
	require.NoError(t, err)
	write(t, dir, "README.md", "hello\nplanet\n")
	sh(t, dir, "git", "commit", "-q", "-am", "planet")
	onto, err := r.Head(ctx)
	require.NoError(t, err)
	_, err = r.RevertOnto(ctx, onto, changed, "Revert world", "")
	require.True(t, errors.Is(err, git.ErrRevertConflict), "got %v", err)
}

// TestChange: what a branch changed reads as files with their counts,
// then the patch, cut at a line when it is too long.
func TestChange(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	base, err := r.Head(ctx)
	require.NoError(t, err)
	write(t, r.Dir, "greeting.go", "package api\n\nconst Greeting = \"hello\"\n")
	sh(t, r.Dir, "git", "add", ".")
	sh(t, r.Dir, "git", "commit", "-q", "-m", "greet")
	head, err := r.Head(ctx)
	require.NoError(t, err)

	change, cut, err := r.Change(ctx, base, head, 4096)
	require.NoError(t, err)
	require.False(t, cut)
	require.Contains(t, change, " greeting.go | 3 +++\n")
	require.Contains(t, change, "+const Greeting = \"hello\"\n")

	short, cut, err := r.Change(ctx, base, head, 60)
	require.NoError(t, err)
	require.True(t, cut)
	require.LessOrEqual(t, len(short), 60)
	require.True(t, strings.HasSuffix(short, "\n"), "cut at a line: %q", short)
}
