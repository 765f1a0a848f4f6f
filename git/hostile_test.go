package git_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/git"
)

// evil is a program that records that it ran (and the secret-looking
// variables it saw) in a file, and passes its input through as a filter
// would.
func evil(t *testing.T) (program, ran string) {
	t.Helper()
	dir := t.TempDir()
	ran = filepath.Join(dir, "ran")
	program = filepath.Join(dir, "evil.sh")
	write(t, dir, "evil.sh", fmt.Sprintf("#!/bin/sh\necho \"ran $0 $* token=$GITHUB_TOKEN\" >> %s\ncat\n", ran))
	require.NoError(t, os.Chmod(program, 0o755))
	return program, ran
}

// worker runs what the worker runs on a workspace after an iteration:
// status, a snapshot, a commit, a look for the iteration's commit.
func worker(ctx context.Context, r *git.Repo) error {
	if _, err := r.State(ctx); err != nil {
		return err
	}
	if _, err := r.Snapshot(ctx); err != nil {
		return err
	}
	if _, err := r.CommitAll(ctx, "iteration", "", "s-1", 1); err != nil {
		return err
	}
	_, err := r.FindCommit(ctx, "s-1", 1)
	return err
}

// TestHostileRepositoryRunsNothing: what an agent can plant in its
// workspace and its git directory (all of it but the locked config and
// hooks) makes the worker's git run nothing of its: a .git/commondir
// leading to a copy with core.fsmonitor, a replaced .git, a symlinked
// .git, a config.worktree, a nested repository's filter driver, a
// husky-style hooks path in the work tree. Where the repository is no
// longer the one Ralph opened, the worker's git refuses and says so.
func TestHostileRepositoryRunsNothing(t *testing.T) {
	ctx := context.Background()
	t.Setenv("GITHUB_TOKEN", "ghp_worker_secret")
	tests := []struct {
		name string
		// plant is what the agent does, after the worker opened the
		// repository; refused says the worker's git then refuses.
		plant   func(t *testing.T, r *git.Repo, program string)
		refused bool
	}{
		{"commondir leads to a copy", func(t *testing.T, r *git.Repo, program string) {
			sh(t, r.Dir, "cp", "-a", ".git", ".ralph-evilgit")
			sh(t, r.Dir, "git", "config", "-f", ".ralph-evilgit/config", "core.fsmonitor", program)
			write(t, r.Dir, ".git/commondir", filepath.Join(r.Dir, ".ralph-evilgit")+"\n")
		}, true},
		{"replaced .git", func(t *testing.T, r *git.Repo, program string) {
			sh(t, r.Dir, "mv", ".git", ".git-orig")
			sh(t, r.Dir, "cp", "-a", ".git-orig", ".git")
			sh(t, r.Dir, "git", "config", "-f", ".git/config", "core.fsmonitor", program)
			sh(t, r.Dir, "git", "config", "-f", ".git/config", "filter.x.clean", program)
			write(t, r.Dir, ".gitattributes", "* filter=x\n")
		}, true},
		{"symlinked .git", func(t *testing.T, r *git.Repo, program string) {
			sh(t, r.Dir, "mv", ".git", ".git-orig")
			require.NoError(t, os.Symlink(".git-orig", filepath.Join(r.Dir, ".git")))
		}, true},
		{"config.worktree with a filter", func(t *testing.T, r *git.Repo, program string) {
			write(t, r.Dir, ".git/config.worktree", fmt.Sprintf("[filter \"x\"]\n\tclean = %s\n[core]\n\tfsmonitor = %s\n", program, program))
			write(t, r.Dir, ".gitattributes", "* filter=x\n")
		}, true},
		{"nested repository with a filter", func(t *testing.T, r *git.Repo, program string) {
			sub := nestedWithFilter(t, r.Dir, program)
			sh(t, sub, "git", "config", "core.fsmonitor", program)
			sh(t, r.Dir, "git", "add", "sub")
			write(t, sub, "s.txt", "changed\n")
		}, false},
		{"hooks and file system monitor named by the user's config, in the work tree", func(t *testing.T, r *git.Repo, program string) {
			// The user's own setting (husky); the agent writes the hooks.
			sh(t, r.Dir, "git", "config", "core.hooksPath", ".husky")
			sh(t, r.Dir, "git", "config", "core.fsmonitor", ".husky/monitor")
			for _, h := range []string{"pre-commit", "post-commit", "post-index-change", "reference-transaction", "post-checkout", "monitor"} {
				write(t, r.Dir, ".husky/"+h, "#!/bin/sh\nexec "+program+"\n")
				require.NoError(t, os.Chmod(filepath.Join(r.Dir, ".husky", h), 0o755))
			}
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			program, ran := evil(t)
			r := newRepo(t)
			tt.plant(t, r, program)
			write(t, r.Dir, "work.txt", "the agent's work\n")
			err := worker(ctx, r)
			if tt.refused {
				require.ErrorIs(t, err, git.ErrUnsafeRepository)
			} else {
				require.NoError(t, err)
			}
			_, statErr := os.Stat(ran)
			require.True(t, errors.Is(statErr, os.ErrNotExist), "the agent's program ran: %s", readIf(ran))
		})
	}
}

func readIf(p string) string {
	data, _ := os.ReadFile(p)
	return string(data)
}

// TestOpenRefusesAnUnsafeLayout: a repository whose .git Ralph cannot
// trust is refused at once, saying why.
func TestOpenRefusesAnUnsafeLayout(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		plant func(t *testing.T, dir string)
		want  string
	}{
		{"commondir in a repository's own git directory", func(t *testing.T, dir string) {
			write(t, dir, ".git/commondir", "/tmp/elsewhere\n")
		}, "commondir exists"},
		{"symlinked .git", func(t *testing.T, dir string) {
			sh(t, dir, "mv", ".git", "real-git")
			require.NoError(t, os.Symlink("real-git", filepath.Join(dir, ".git")))
		}, "is a symbolic link"},
		{"include of a file in the git directory", func(t *testing.T, dir string) {
			sh(t, dir, "git", "config", "include.path", "extra.cfg")
		}, "includes extra.cfg"},
		{"a .git file naming a directory outside worktrees/", func(t *testing.T, dir string) {
			other := t.TempDir()
			sh(t, other, "git", "init", "-q")
			write(t, other, ".git/commondir", ".\n")
			sh(t, dir, "rm", "-rf", ".git")
			write(t, dir, ".git", "gitdir: "+filepath.Join(other, ".git")+"\n")
		}, "is not one of"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRepo(t)
			tt.plant(t, r.Dir)
			_, err := git.Open(ctx, r.Dir)
			require.ErrorIs(t, err, git.ErrUnsafeRepository)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

// TestLinkedWorkTreeRedirected: a linked work tree's .git file, or the
// commondir of its git directory, changed to lead elsewhere, is refused.
func TestLinkedWorkTreeRedirected(t *testing.T) {
	ctx := context.Background()
	for _, change := range []string{"gitdir", "commondir"} {
		t.Run(change, func(t *testing.T) {
			main := newRepo(t)
			wtDir := filepath.Join(t.TempDir(), "wt")
			sh(t, main.Dir, "git", "worktree", "add", "-q", "-b", "wt", wtDir)
			wt, err := git.Open(ctx, wtDir)
			require.NoError(t, err)
			require.Equal(t, filepath.Join(main.Dir, ".git"), wt.Layout().CommonDir)
			evilCopy := filepath.Join(t.TempDir(), "evil")
			sh(t, main.Dir, "cp", "-a", ".git", evilCopy)
			switch change {
			case "gitdir":
				write(t, wtDir, ".git", "gitdir: "+filepath.Join(evilCopy, "worktrees", "wt")+"\n")
			case "commondir":
				write(t, main.Dir, ".git/worktrees/wt/commondir", evilCopy+"\n")
			}
			_, err = wt.State(ctx)
			require.ErrorIs(t, err, git.ErrUnsafeRepository)
		})
	}
}

// TestGitGetsNoSecret: what git starts, a filter of the user's own
// configuration here (as git-lfs is), gets the worker's environment
// without its tokens, and a PATH without the work tree.
func TestGitGetsNoSecret(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	dump := filepath.Join(t.TempDir(), "env")
	sh(t, r.Dir, "git", "config", "filter.dump.clean", "env > "+dump+"; cat")
	write(t, r.Dir, ".gitattributes", "*.txt filter=dump\n")
	t.Setenv("GITHUB_TOKEN", "ghp_worker_secret")
	t.Setenv("RALPH_TELEGRAM_TOKEN", "123:telegram")
	t.Setenv("PATH", filepath.Join(r.Dir, "bin")+":./node_modules/.bin:"+os.Getenv("PATH"))
	write(t, r.Dir, "a.txt", "a\n")
	_, err := r.Commit(ctx, "a", "")
	require.NoError(t, err)
	env := readIf(dump)
	require.Contains(t, env, "GIT_DIR="+filepath.Join(r.Dir, ".git"), "the filter ran")
	require.NotContains(t, env, "ghp_worker_secret")
	require.NotContains(t, env, "123:telegram")
	require.NotContains(t, env, filepath.Join(r.Dir, "bin"))
	require.NotContains(t, env, "node_modules")
}

// TestReplaceRefsDoNotFoolTheWorker: a refs/replace the agent made
// (which would show the pre-push secret scan other content than the
// push sends) does not change what the worker's git reads.
func TestReplaceRefsDoNotFoolTheWorker(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	head := strings.TrimSpace(sh(t, r.Dir, "git", "rev-parse", "HEAD"))
	write(t, r.Dir, "other.txt", "x\n")
	sh(t, r.Dir, "git", "add", "other.txt")
	sh(t, r.Dir, "git", "commit", "-qm", "other")
	other := strings.TrimSpace(sh(t, r.Dir, "git", "rev-parse", "HEAD"))
	sh(t, r.Dir, "git", "reset", "-q", "--hard", head)
	sh(t, r.Dir, "git", "replace", head, other)
	require.Equal(t, "x\n", sh(t, r.Dir, "git", "show", "HEAD:other.txt"), "plain git is fooled")
	_, err := r.FileAt(ctx, head, "other.txt")
	require.Error(t, err, "the worker reads the real commit")

	// A grafts file that hides a commit's parent: the worker still walks
	// to it.
	sh(t, r.Dir, "git", "replace", "-d", head)
	write(t, r.Dir, "b.txt", "b\n")
	sh(t, r.Dir, "git", "add", "b.txt")
	sh(t, r.Dir, "git", "commit", "-qm", "b")
	top := strings.TrimSpace(sh(t, r.Dir, "git", "rev-parse", "HEAD"))
	write(t, r.Dir, ".git/info/grafts", top+"\n")
	n, err := r.CountCommits(ctx, "")
	require.NoError(t, err)
	require.Equal(t, 2, n, "the grafts are not the worker's")
}

// TestRemoveWorktreeRunsNothingOfIt: removing a work tree whose nested
// repository has a filter of the agent's runs nothing of it (git's own
// check of the work tree's changes would run git status in there).
func TestRemoveWorktreeRunsNothingOfIt(t *testing.T) {
	ctx := context.Background()
	program, ran := evil(t)
	main := newRepo(t)
	wtDir := filepath.Join(t.TempDir(), "wt")
	sh(t, main.Dir, "git", "worktree", "add", "-q", "-b", "wt", wtDir)
	sub := nestedWithFilter(t, wtDir, program)
	sh(t, wtDir, "git", "add", "sub")
	sh(t, wtDir, "git", "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "sub")
	write(t, sub, "s.txt", "changed\n")
	require.NoError(t, main.RemoveWorktree(ctx, wtDir, false))
	_, err := os.Stat(ran)
	require.True(t, os.IsNotExist(err), "the agent's program ran: %s", readIf(ran))
	_, err = os.Stat(wtDir)
	require.True(t, os.IsNotExist(err), "the work tree is gone")
}

// nestedWithFilter makes dir/sub a repository of one commit whose .txt
// files go through the clean filter program, and returns its path.
func nestedWithFilter(t *testing.T, dir, program string) string {
	t.Helper()
	sub := filepath.Join(dir, "sub")
	require.NoError(t, os.MkdirAll(sub, 0o755))
	sh(t, sub, "git", "init", "-q")
	write(t, sub, "s.txt", "s\n")
	write(t, sub, ".gitattributes", "*.txt filter=x\n")
	sh(t, sub, "git", "add", ".")
	sh(t, sub, "git", "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "s")
	sh(t, sub, "git", "config", "filter.x.clean", program)
	return sub
}
