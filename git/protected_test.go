package git_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/git"
)

func TestMatchPath(t *testing.T) {
	tests := []struct {
		pattern, path string
		want          bool
	}{
		{".github/workflows/**", ".github/workflows/ci.yml", true},
		{".github/workflows/**", ".github/workflows/sub/deep.yaml", true},
		{".github/workflows/**", ".github/workflows", true}, // a file or link in its place
		{".github/workflows/**", ".github/dependabot.yml", false},
		{".github/workflows/**", "docs/.github/workflows/ci.yml", false},
		{".github/workflows/**", ".github/workflows-old/ci.yml", false},
		{".github/workflows/*.yml", ".github/workflows/ci.yml", true},
		{".github/workflows/*.yml", ".github/workflows/ci.yaml", false},
		{".github/workflows/*.yml", ".github/workflows/sub/ci.yml", false}, // * stays within one name
		{"**/*.pem", "key.pem", true},
		{"**/*.pem", "a/b/c/key.pem", true},
		{"**/*.pem", "a/b/key.pem.txt", false},
		{"**/secrets/**", "app/secrets/x/y", true},
		{"**/secrets/**", "secrets", true},
		{"deploy", "deploy/prod.yml", true}, // a directory covers what it holds
		{"deploy", "deployment/prod.yml", false},
		{"deploy/", "deploy/prod.yml", true},
		{"./Makefile", "Makefile", true},
		{"/Makefile", "Makefile", true},
		{"Makefile", "src/Makefile", false},
		{"*", "anything", true},
		{"*", "a/b", true}, // a covers a/b
		{"a*b*c", "aXbYc", true},
		{"a*b*c", "aXbY", false},
		{"a*c", "abcbc", true},
		{"**", "x/y", true},
		{"a/**/b", "a/b", true},
		{"a/**/b", "a/x/y/b", true},
		{"a/**/**/b", "a/x/b", true},
		{"a/**/b", "a/x/c", false},
		{"", "anything", false},
		{"x", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.pattern+" "+tt.path, func(t *testing.T) {
			require.Equal(t, tt.want, git.MatchPath(tt.pattern, tt.path))
		})
	}
}

func TestProtected(t *testing.T) {
	paths := []string{"main.go", ".github/workflows/ci.yml", "deploy/prod.yml", ".github/CODEOWNERS"}
	require.Equal(t, []string{".github/workflows/ci.yml", "deploy/prod.yml"}, git.Protected([]string{".github/workflows/**", "deploy/**"}, paths))
	require.Empty(t, git.Protected(nil, paths))
	require.Empty(t, git.Protected([]string{".github/workflows/**"}, nil))
}

// TestSetAside sets aside what an agent did on top of start, in the
// working tree and in its own commits, and checks that the workspace is
// back at start and that the patch brings the work back.
func TestSetAside(t *testing.T) {
	tests := []struct {
		name   string
		commit bool // the agent commits part of its work
	}{
		{name: "uncommitted"},
		{name: "agent committed", commit: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			r := newRepo(t)
			write(t, r.Dir, ".gitignore", "*.log\n")
			write(t, r.Dir, "old.txt", "old\n")
			write(t, r.Dir, "bin.dat", "\x00\x01\x02")
			sh(t, r.Dir, "git", "add", ".")
			sh(t, r.Dir, "git", "commit", "-q", "-m", "base")
			start, err := r.Head(ctx)
			require.NoError(t, err)
			write(t, r.Dir, "build.log", "ignored, stays\n")
			write(t, r.Dir, ".ralph/state/x.json", "{}\n")
			require.NoError(t, r.Exclude(ctx, ".ralph/"))

			write(t, r.Dir, ".github/workflows/ci.yml", "on: push\n")
			write(t, r.Dir, "README.md", "changed\n")
			write(t, r.Dir, "bin.dat", "\x00\x09\x02\x03")
			sh(t, r.Dir, "git", "mv", "old.txt", "renamed.txt")
			if tt.commit {
				sh(t, r.Dir, "git", "add", "-A")
				sh(t, r.Dir, "git", "commit", "-q", "-m", "agent")
				write(t, r.Dir, "after.txt", "after the commit\n")
			}
			want := files(t, r.Dir)

			patch := filepath.Join(r.Dir, ".ralph", "protected", "iteration-3.patch")
			require.NoError(t, r.SetAside(ctx, start, patch))

			head, err := r.Head(ctx)
			require.NoError(t, err)
			require.Equal(t, start, head, "HEAD is back at the start")
			branch, err := r.Branch(ctx)
			require.NoError(t, err)
			require.Equal(t, "main", branch)
			pending, err := r.Status(ctx)
			require.NoError(t, err)
			require.Empty(t, pending, "nothing left over")
			require.NoFileExists(t, filepath.Join(r.Dir, ".github/workflows/ci.yml"))
			require.FileExists(t, filepath.Join(r.Dir, "build.log"), "ignored files stay")
			require.FileExists(t, filepath.Join(r.Dir, ".ralph/state/x.json"), ".ralph stays")

			sh(t, r.Dir, "git", "apply", "--index", patch)
			require.Equal(t, want, files(t, r.Dir), "the patch restores the work")
		})
	}
}

func TestSetAsideWithoutStartCommit(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	sh(t, dir, "git", "init", "-q", "-b", "main")
	sh(t, dir, "git", "config", "user.email", "dev@example.com")
	sh(t, dir, "git", "config", "user.name", "Dev")
	r, err := git.Open(ctx, dir)
	require.NoError(t, err)
	write(t, dir, ".github/workflows/ci.yml", "on: push\n")
	sh(t, dir, "git", "add", "-A")
	sh(t, dir, "git", "commit", "-q", "-m", "agent")
	write(t, dir, "new.txt", "new\n")
	want := files(t, dir)

	patch := filepath.Join(t.TempDir(), "iteration-1.patch")
	require.NoError(t, r.SetAside(ctx, "", patch))
	head, err := r.Head(ctx)
	require.NoError(t, err)
	require.Empty(t, head, "the branch the agent made is gone")
	require.Empty(t, files(t, dir))

	sh(t, dir, "git", "apply", patch)
	require.Equal(t, want, files(t, dir))
}

// files maps the files of dir, outside .git and .ralph and not ignored
// (*.log), to their content.
func files(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() && (rel == ".git" || rel == ".ralph") {
			return filepath.SkipDir
		}
		if d.IsDir() || filepath.Ext(rel) == ".log" {
			return nil
		}
		data, err := os.ReadFile(p)
		out[filepath.ToSlash(rel)] = string(data)
		return err
	})
	require.NoError(t, err)
	return out
}
