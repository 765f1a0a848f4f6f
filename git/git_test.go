package git_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/git"
)

// newRepo makes a repository with one commit holding README.md.
func newRepo(t *testing.T) *git.Repo {
	t.Helper()
	dir := t.TempDir()
	sh(t, dir, "git", "init", "-q", "-b", "main")
	sh(t, dir, "git", "config", "user.email", "dev@example.com")
	sh(t, dir, "git", "config", "user.name", "Dev")
	write(t, dir, "README.md", "hello\n")
	sh(t, dir, "git", "add", ".")
	sh(t, dir, "git", "commit", "-q", "-m", "init")
	r, err := git.Open(context.Background(), dir)
	require.NoError(t, err)
	return r
}

func sh(t *testing.T, dir string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s %v: %s", name, args, out)
	return string(out)
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
}

func TestOpenNotARepository(t *testing.T) {
	_, err := git.Open(context.Background(), t.TempDir())
	require.True(t, errors.Is(err, git.ErrNotRepository), "got %v", err)
}

func TestHeadOfEmptyRepository(t *testing.T) {
	dir := t.TempDir()
	sh(t, dir, "git", "init", "-q")
	r, err := git.Open(context.Background(), dir)
	require.NoError(t, err)
	head, err := r.Head(context.Background())
	require.NoError(t, err)
	require.Empty(t, head)
	n, err := r.CountCommits(context.Background(), "")
	require.NoError(t, err)
	require.Zero(t, n)
}

func TestStatusExcludeAndCommit(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	start, err := r.Head(ctx)
	require.NoError(t, err)

	write(t, r.Dir, ".ralph/logs/x.jsonl", "{}\n")
	write(t, r.Dir, "src/new file.go", "package src\n")
	write(t, r.Dir, "README.md", "changed\n")
	require.NoError(t, r.Exclude(ctx, "/.ralph/"))
	require.NoError(t, r.Exclude(ctx, "/.ralph/"), "a second exclude is a no-op")
	exclude, err := os.ReadFile(filepath.Join(r.Dir, ".git", "info", "exclude"))
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(string(exclude), "/.ralph/"))

	status, err := r.Status(ctx)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"README.md", "src/new file.go"}, status)

	found, err := r.FindCommit(ctx, "ralph-app-1234", 3)
	require.NoError(t, err)
	require.Empty(t, found)

	commit, err := r.CommitAll(ctx, "ralph: iteration 3: US-002 Add login", "Outcome: success", "ralph-app-1234", 3)
	require.NoError(t, err)
	require.Len(t, commit, 40)
	msg := sh(t, r.Dir, "git", "log", "-1", "--format=%B")
	require.Contains(t, msg, "ralph: iteration 3: US-002 Add login")
	require.Contains(t, msg, "Ralph-Session: ralph-app-1234\nRalph-Iteration: 3")
	trailers := sh(t, r.Dir, "git", "log", "-1", "--format=%(trailers:key=Ralph-Iteration,valueonly)")
	require.Equal(t, "3", strings.TrimSpace(trailers), "git itself parses the trailers")

	for _, tc := range []struct {
		session   string
		iteration int
		want      string
	}{
		{"ralph-app-1234", 3, commit},
		{"ralph-app-1234", 33, ""},
		{"ralph-app-123", 3, ""},
		{"ralph.app.1234", 3, ""},
	} {
		got, err := r.FindCommit(ctx, tc.session, tc.iteration)
		require.NoError(t, err)
		require.Equal(t, tc.want, got, "FindCommit(%q, %d)", tc.session, tc.iteration)
	}

	n, err := r.CountCommits(ctx, start)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	changed, err := r.ChangedSince(ctx, start)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"README.md", "src/new file.go"}, changed)
	status, err = r.Status(ctx)
	require.NoError(t, err)
	require.Empty(t, status, ".ralph/ is excluded, everything else committed")
}

func TestCommitWithoutIdentity(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	t.Setenv("HOME", t.TempDir())
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	sh(t, dir, "git", "init", "-q")
	r, err := git.Open(ctx, dir)
	require.NoError(t, err)
	write(t, dir, "a.txt", "a\n")
	commit, err := r.CommitAll(ctx, "first", "", "s", 1)
	require.NoError(t, err)
	require.NotEmpty(t, commit)
	require.Equal(t, "Ralph <ralph@localhost>", strings.TrimSpace(sh(t, dir, "git", "log", "-1", "--format=%an <%ae>")))
}

func TestCheckout(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	require.NoError(t, r.Checkout(ctx, "ralph/feature"))
	b, err := r.Branch(ctx)
	require.NoError(t, err)
	require.Equal(t, "ralph/feature", b)

	sh(t, r.Dir, "git", "checkout", "-q", "main")
	require.NoError(t, r.Checkout(ctx, "ralph/feature"), "an existing branch is checked out")
	b, err = r.Branch(ctx)
	require.NoError(t, err)
	require.Equal(t, "ralph/feature", b)

	require.ErrorContains(t, r.Checkout(ctx, "bad..name"), "invalid branch name")
}

func TestRepoName(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	require.Equal(t, filepath.Base(r.Dir), r.RepoName(ctx))
	for _, tc := range []struct{ url, want string }{
		{"git@github.com:acme/widgets.git", "acme/widgets"},
		{"https://github.com/acme/widgets", "acme/widgets"},
		{"https://github.com/acme/widgets.git/", "acme/widgets"},
	} {
		sh(t, r.Dir, "git", "remote", "add", "origin", tc.url)
		require.Equal(t, tc.want, r.RepoName(ctx), tc.url)
		sh(t, r.Dir, "git", "remote", "remove", "origin")
	}
}
