package git_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/git"
)

// TestAddedLines checks which lines a push of a branch would add: each
// commit's additions with their line numbers, a merge's own resolution,
// and nothing of what the excluded base already has.
func TestAddedLines(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	write(t, r.Dir, "app.go", "one\ntwo\nthree\n")
	sh(t, r.Dir, "git", "add", ".")
	sh(t, r.Dir, "git", "commit", "-q", "-m", "base")
	sh(t, r.Dir, "git", "branch", "base")
	sh(t, r.Dir, "git", "checkout", "-q", "-b", "work")

	write(t, r.Dir, "app.go", "one\ntwo and a half\nthree\nfour\n")
	write(t, r.Dir, "my dir/spaced name.txt", "spaced\n")
	write(t, r.Dir, "blob.bin", "\x00secret?\x00")
	sh(t, r.Dir, "git", "add", ".")
	sh(t, r.Dir, "git", "commit", "-q", "-m", "first")
	first := strings.TrimSpace(sh(t, r.Dir, "git", "rev-parse", "HEAD"))
	sh(t, r.Dir, "git", "rm", "-q", "my dir/spaced name.txt")
	sh(t, r.Dir, "git", "commit", "-q", "-m", "remove")

	// A side branch and the base both change app.go's first line; the
	// merge resolves it with a line of its own.
	sh(t, r.Dir, "git", "checkout", "-q", "-b", "side", "base")
	write(t, r.Dir, "app.go", "one from side\ntwo\nthree\n")
	sh(t, r.Dir, "git", "commit", "-q", "-am", "side")
	sh(t, r.Dir, "git", "checkout", "-q", "work")
	merging := exec.Command("git", "merge", "-q", "side")
	merging.Dir = r.Dir
	require.Error(t, merging.Run(), "the merge conflicts")
	write(t, r.Dir, "app.go", "one resolved\ntwo and a half\nthree\nfour\n")
	sh(t, r.Dir, "git", "add", "app.go")
	sh(t, r.Dir, "git", "commit", "-q", "--no-edit")
	merge := strings.TrimSpace(sh(t, r.Dir, "git", "rev-parse", "HEAD"))

	var got []git.AddedLine
	require.NoError(t, r.AddedLines(ctx, "work", []string{"base"}, func(l git.AddedLine) bool {
		got = append(got, l)
		return true
	}))
	var side []string
	for _, l := range got {
		if strings.Contains(l.Text, "from side") {
			side = append(side, l.Commit)
		}
	}
	require.Contains(t, got, git.AddedLine{Commit: first, File: "app.go", Line: 2, Text: "two and a half"})
	require.Contains(t, got, git.AddedLine{Commit: first, File: "app.go", Line: 4, Text: "four"})
	require.Contains(t, got, git.AddedLine{Commit: first, File: "my dir/spaced name.txt", Line: 1, Text: "spaced"})
	require.Contains(t, got, git.AddedLine{Commit: merge, File: "app.go", Line: 1, Text: "one resolved"})
	require.Len(t, side, 1, "the side branch's line counts once, in its own commit")
	for _, l := range got {
		require.NotEqual(t, "blob.bin", l.File, "binary files are not read")
		require.NotContains(t, []string{"one", "two", "three"}, l.Text, "the base's lines are not the push's")
	}

	var n int
	require.NoError(t, r.AddedLines(ctx, "work", []string{"base"}, func(git.AddedLine) bool { n++; return false }))
	require.Equal(t, 1, n, "fn returning false stops")
}
