package git_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/git"
)

// TestStateMatchesGit checks that one status reads HEAD, the branch and
// the pending paths as git's own commands name them.
func TestStateMatchesGit(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	write(t, r.Dir, "tracked.txt", "one\n")
	write(t, r.Dir, "gone.txt", "bye\n")
	write(t, r.Dir, "old name.txt", "moving\n")
	sh(t, r.Dir, "git", "add", ".")
	sh(t, r.Dir, "git", "commit", "-q", "-m", "more")

	st, err := r.State(ctx)
	require.NoError(t, err)
	require.Equal(t, strings.TrimSpace(sh(t, r.Dir, "git", "rev-parse", "HEAD")), st.Head)
	require.Equal(t, "main", st.Branch)
	require.Empty(t, st.Pending)

	write(t, r.Dir, "tracked.txt", "two\n")
	require.NoError(t, os.Remove(filepath.Join(r.Dir, "gone.txt")))
	sh(t, r.Dir, "git", "mv", "old name.txt", "new name.txt")
	write(t, r.Dir, "dir/with space/new.txt", "new\n")
	write(t, r.Dir, "staged.txt", "staged\n")
	sh(t, r.Dir, "git", "add", "staged.txt")
	st, err = r.State(ctx)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"tracked.txt", "gone.txt", "old name.txt", "new name.txt", "dir/with space/new.txt", "staged.txt"}, st.Pending)

	sh(t, r.Dir, "git", "checkout", "-q", "--detach")
	st, err = r.State(ctx)
	require.NoError(t, err)
	require.Empty(t, st.Branch)
	require.NotEmpty(t, st.Head)
}

// TestHeadReadFromFiles checks HEAD and the branch read without git
// against rev-parse: loose and packed refs, a detached HEAD, a linked
// work tree, and a repository with no commit yet.
func TestHeadReadFromFiles(t *testing.T) {
	ctx := context.Background()
	check := func(t *testing.T, r *git.Repo, branch string) {
		t.Helper()
		head, err := r.Head(ctx)
		require.NoError(t, err)
		require.Equal(t, strings.TrimSpace(sh(t, r.Dir, "git", "rev-parse", "HEAD")), head)
		b, err := r.Branch(ctx)
		require.NoError(t, err)
		require.Equal(t, branch, b)
	}
	tests := []struct {
		name   string
		setup  func(t *testing.T, r *git.Repo) *git.Repo
		branch string
	}{
		{"loose ref", func(t *testing.T, r *git.Repo) *git.Repo { return r }, "main"},
		{"packed ref", func(t *testing.T, r *git.Repo) *git.Repo {
			sh(t, r.Dir, "git", "pack-refs", "--all")
			_, err := os.Stat(filepath.Join(r.Dir, ".git", "refs", "heads", "main"))
			require.True(t, os.IsNotExist(err), "the ref must be packed for this case")
			return r
		}, "main"},
		{"detached", func(t *testing.T, r *git.Repo) *git.Repo {
			sh(t, r.Dir, "git", "checkout", "-q", "--detach")
			return r
		}, ""},
		{"linked work tree", func(t *testing.T, r *git.Repo) *git.Repo {
			dir := filepath.Join(t.TempDir(), "wt")
			sh(t, r.Dir, "git", "worktree", "add", "-q", "-b", "side", dir)
			write(t, dir, "side.txt", "side\n")
			sh(t, dir, "git", "add", ".")
			sh(t, dir, "git", "commit", "-q", "-m", "side")
			wt, err := git.Open(ctx, dir)
			require.NoError(t, err)
			return wt
		}, "side"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check(t, tt.setup(t, newRepo(t)), tt.branch)
		})
	}

	t.Run("no commit yet", func(t *testing.T) {
		dir := t.TempDir()
		sh(t, dir, "git", "init", "-q", "-b", "trunk")
		r, err := git.Open(ctx, dir)
		require.NoError(t, err)
		head, err := r.Head(ctx)
		require.NoError(t, err)
		require.Empty(t, head)
		b, err := r.Branch(ctx)
		require.NoError(t, err)
		require.Equal(t, "trunk", b)
	})
}

// TestFindCommitLooksAtHeadOnly checks that the iteration's commit is
// found at HEAD and its first parent, and that the search does not walk
// further (its cost must not grow with history).
func TestFindCommitLooksAtHeadOnly(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	commit := func(i int) string {
		write(t, r.Dir, "n.txt", strings.Repeat("x", i))
		c, err := r.CommitAll(ctx, "iteration", "", "s1", i)
		require.NoError(t, err)
		return c
	}
	c1, c2 := commit(1), commit(2)
	for _, tt := range []struct {
		iteration int
		want      string
	}{{2, c2}, {1, c1}, {3, ""}} {
		got, err := r.FindCommit(ctx, "s1", tt.iteration)
		require.NoError(t, err)
		require.Equal(t, tt.want, got, "iteration %d", tt.iteration)
	}
	got, err := r.FindCommit(ctx, "s2", 2)
	require.NoError(t, err)
	require.Empty(t, got, "another session's trailer")
	commit(3)
	got, err = r.FindCommit(ctx, "s1", 1)
	require.NoError(t, err)
	require.Empty(t, got, "two commits back is beyond where a retry looks")
}

// TestOpenNoticesANewRepositoryInside checks that a remembered top level
// is given up when a directory below it becomes a repository of its own.
func TestOpenNoticesANewRepositoryInside(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	sub := filepath.Join(r.Dir, "sub")
	require.NoError(t, os.MkdirAll(sub, 0o755))
	first, err := git.Open(ctx, sub)
	require.NoError(t, err)
	require.Equal(t, r.Dir, first.Dir)
	sh(t, sub, "git", "init", "-q")
	again, err := git.Open(ctx, sub)
	require.NoError(t, err)
	require.Equal(t, strings.TrimSpace(sh(t, sub, "git", "rev-parse", "--show-toplevel")), again.Dir)
}

// TestSetRefWritesWhatGitReads checks that a ref of Ralph's, written
// without git, is the ref git resolves: over a packed one, in a linked
// work tree's common directory, and that a held lock leaves the write to
// git, which says why it fails.
func TestSetRefWritesWhatGitReads(t *testing.T) {
	ctx := context.Background()
	const ref = "refs/ralph/s-1/last"
	tests := []struct {
		name  string
		setup func(t *testing.T, r *git.Repo) *git.Repo
	}{
		{"new ref", func(t *testing.T, r *git.Repo) *git.Repo { return r }},
		{"over a packed ref", func(t *testing.T, r *git.Repo) *git.Repo {
			sh(t, r.Dir, "git", "update-ref", ref, "HEAD")
			sh(t, r.Dir, "git", "pack-refs", "--all")
			return r
		}},
		{"linked work tree", func(t *testing.T, r *git.Repo) *git.Repo {
			dir := filepath.Join(t.TempDir(), "wt")
			sh(t, r.Dir, "git", "worktree", "add", "-q", "-b", "side", dir)
			wt, err := git.Open(ctx, dir)
			require.NoError(t, err)
			return wt
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.setup(t, newRepo(t))
			write(t, r.Dir, "next.txt", "next\n")
			commit, err := r.Commit(ctx, "next", "")
			require.NoError(t, err)
			require.NoError(t, r.SetRef(ctx, ref, commit))
			require.Equal(t, commit, strings.TrimSpace(sh(t, r.Dir, "git", "rev-parse", ref)))
			require.True(t, r.RefIs(ref, commit))
			require.Empty(t, sh(t, r.Dir, "git", "fsck", "--no-dangling", "--no-progress"), "git finds the refs sound")
		})
	}

	t.Run("lock held", func(t *testing.T) {
		r := newRepo(t)
		head, err := r.Head(ctx)
		require.NoError(t, err)
		lock := filepath.Join(r.Dir, ".git", "refs", "ralph", "s-1", "last.lock")
		write(t, r.Dir, ".git/refs/ralph/s-1/last.lock", "")
		held, err := os.Open(lock) // as a live git holds its lock
		require.NoError(t, err)
		defer held.Close()
		err = r.SetRef(ctx, ref, head)
		require.ErrorContains(t, err, "last.lock", "the error names the lock")
		_, statErr := os.Stat(lock)
		require.NoError(t, statErr, "another's lock is left alone")
		require.False(t, r.RefIs(ref, head))
	})

	t.Run("lock a dead git left", func(t *testing.T) {
		r := newRepo(t)
		head, err := r.Head(ctx)
		require.NoError(t, err)
		write(t, r.Dir, ".git/refs/ralph/s-1/last.lock", "")
		require.NoError(t, r.SetRef(ctx, ref, head), "a lock nobody holds is removed")
		require.True(t, r.RefIs(ref, head))
	})

	// git update-ref follows a directory of refs/ that is a symlink; an
	// agent could point it anywhere the worker may write.
	t.Run("a directory on the way leads out", func(t *testing.T) {
		r := newRepo(t)
		head, err := r.Head(ctx)
		require.NoError(t, err)
		outside := t.TempDir()
		require.NoError(t, os.MkdirAll(filepath.Join(r.Dir, ".git", "refs", "ralph"), 0o755))
		require.NoError(t, os.Symlink(outside, filepath.Join(r.Dir, ".git", "refs", "ralph", "s-1")))
		require.Error(t, r.SetRef(ctx, ref, head))
		entries, err := os.ReadDir(outside)
		require.NoError(t, err)
		require.Empty(t, entries, "nothing written out of the repository")
	})
}

// TestIterationCommitsMaintainEveryFew checks that an iteration's commit
// runs git's automatic maintenance only every MaintainEvery iterations,
// and other commits always.
func TestIterationCommitsMaintainEveryFew(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	trace := filepath.Join(t.TempDir(), "trace")
	t.Setenv("GIT_TRACE", trace)
	maintained := func(t *testing.T, commit func() error) bool {
		t.Helper()
		require.NoError(t, os.WriteFile(trace, nil, 0o600))
		require.NoError(t, commit())
		data, err := os.ReadFile(trace)
		require.NoError(t, err)
		require.Contains(t, string(data), "commit", "git traces its commands here")
		return strings.Contains(string(data), "maintenance run --auto")
	}
	for _, it := range []int{1, git.MaintainEvery - 1, git.MaintainEvery, 2 * git.MaintainEvery} {
		got := maintained(t, func() error {
			write(t, r.Dir, "n.txt", fmt.Sprint(it))
			_, err := r.CommitAll(ctx, "iteration", "", "s-1", it)
			return err
		})
		require.Equal(t, it%git.MaintainEvery == 0, got, "iteration %d", it)
	}
	require.True(t, maintained(t, func() error {
		write(t, r.Dir, "n.txt", "other")
		_, err := r.Commit(ctx, "other", "")
		return err
	}), "a commit that is not an iteration's")
}
