package activities_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/contract"
)

// roundRig is an issue's work tree pushed to a bare origin, and a
// person's clone of the same origin.
type roundRig struct {
	clone, origin, person string
	wt                    contract.WorktreeResult
	pushed                string
}

func newRoundRig(t *testing.T) *roundRig {
	t.Helper()
	seed := newRepo(t, map[string]string{"README.md": "hello\n", "app.txt": "one\ntwo\nthree\n"})
	r := &roundRig{origin: filepath.Join(t.TempDir(), "origin.git"), clone: filepath.Join(t.TempDir(), "clone"), person: filepath.Join(t.TempDir(), "person")}
	gitRun(t, seed, "clone", "-q", "--bare", seed, r.origin)
	for _, dir := range []string{r.clone, r.person} {
		gitRun(t, seed, "clone", "-q", r.origin, dir)
		gitRun(t, dir, "config", "user.email", "dev@example.com")
		gitRun(t, dir, "config", "user.name", "Dev")
	}
	r.wt = gitActivity[contract.WorktreeResult](t, "PrepareIssueWorktree", contract.WorktreeInput{
		Clone: r.clone, Number: 7, Branch: "ralph/issue-7", Base: "main", Issue: "# Fix it\n"})
	r.commit(t, r.wt.Dir, "app.txt", "one\ntwo\nthree\nfour\n", "ralph: add four")
	push := gitActivity[contract.PushResult](t, "PushBranch", contract.PushInput{Clone: r.clone, Branch: "ralph/issue-7", BaseRef: r.wt.BaseRef})
	require.True(t, push.Pushed)
	r.pushed = push.Head
	gitRun(t, r.person, "fetch", "-q", "origin")
	return r
}

func (r *roundRig) commit(t *testing.T, dir, file, content, msg string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644))
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "commit", "-q", "-m", msg)
}

// gitActivity runs the Agent's activity name with in and returns its
// result.
func gitActivity[R any](t *testing.T, name string, in any) R {
	t.Helper()
	res, err := tryActivity[R](t, name, in)
	require.NoError(t, err)
	return res
}

func tryActivity[R any](t *testing.T, name string, in any) (R, error) {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(&activities.Agent{})
	var res R
	val, err := env.ExecuteActivity(name, in)
	if err == nil {
		require.NoError(t, val.Get(&res))
	}
	return res, err
}

func (r *roundRig) round(update string) contract.RoundInput {
	return contract.RoundInput{Clone: r.clone, Worktree: r.wt.Dir, Branch: "ralph/issue-7", BaseRef: r.wt.BaseRef,
		Task: "# Failing checks\n\nlint failed\n", Update: update, LastPushed: r.pushed}
}

func head(t *testing.T, dir, rev string) string {
	t.Helper()
	return strings.TrimSpace(gitRun(t, dir, "rev-parse", rev))
}

// TestPrepareRoundTakesAPersonsCommits: a commit a person pushed to the
// branch is taken (a fast-forward), a branch a person rewrote after the
// last push is taken as it is, and the round's task is written.
func TestPrepareRoundTakesAPersonsCommits(t *testing.T) {
	t.Run("pushed on top", func(t *testing.T) {
		r := newRoundRig(t)
		gitRun(t, r.person, "checkout", "-q", "ralph/issue-7")
		r.commit(t, r.person, "NOTES.md", "by a person\n", "a person's note")
		gitRun(t, r.person, "push", "-q", "origin", "ralph/issue-7")

		prep := gitActivity[contract.RoundPrepared](t, "PrepareRound", r.round(""))
		require.Equal(t, 1, prep.Pulled)
		require.Equal(t, head(t, r.person, "HEAD"), prep.Head)
		require.FileExists(t, filepath.Join(r.wt.Dir, "NOTES.md"))
		task, err := os.ReadFile(filepath.Join(r.wt.Dir, contract.FeedbackFile))
		require.NoError(t, err)
		require.Equal(t, "# Failing checks\n\nlint failed\n", string(task))

		// A new try of the issue works on the issue, not the old round.
		gitActivity[contract.WorktreeResult](t, "PrepareIssueWorktree", contract.WorktreeInput{
			Clone: r.clone, Number: 7, Branch: "ralph/issue-7", Base: "main", Issue: "# Fix it\n"})
		require.NoFileExists(t, filepath.Join(r.wt.Dir, contract.FeedbackFile))
	})
	t.Run("deleted by a person", func(t *testing.T) {
		r := newRoundRig(t)
		gitRun(t, r.person, "push", "-q", "origin", "--delete", "ralph/issue-7")
		prep := gitActivity[contract.RoundPrepared](t, "PrepareRound", r.round(""))
		require.Zero(t, prep.Pulled)
		require.Equal(t, r.pushed, prep.Head, "the work tree keeps what was pushed")
		r.commit(t, r.wt.Dir, "app.txt", "one\ntwo\nthree\nfour\nfive\n", "ralph: five")
		push := gitActivity[contract.PushResult](t, "PushBranch", contract.PushInput{Clone: r.clone, Branch: "ralph/issue-7", BaseRef: r.wt.BaseRef})
		require.True(t, push.Pushed, "the push makes the branch again")
	})
	t.Run("rewritten by force", func(t *testing.T) {
		r := newRoundRig(t)
		gitRun(t, r.person, "checkout", "-q", "ralph/issue-7")
		gitRun(t, r.person, "reset", "-q", "--hard", "origin/main")
		r.commit(t, r.person, "app.txt", "one\ntwo\nthree\nfour, said better\n", "a person's rewrite")
		gitRun(t, r.person, "push", "-q", "--force", "origin", "ralph/issue-7")

		prep := gitActivity[contract.RoundPrepared](t, "PrepareRound", r.round(""))
		require.Equal(t, head(t, r.person, "HEAD"), prep.Head, "the person's branch wins")
		// The next push is a plain fast-forward of theirs.
		r.commit(t, r.wt.Dir, "app.txt", "one\ntwo\nthree\nfour, said better\nfive\n", "ralph: five")
		push := gitActivity[contract.PushResult](t, "PushBranch", contract.PushInput{Clone: r.clone, Branch: "ralph/issue-7", BaseRef: r.wt.BaseRef})
		require.True(t, push.Pushed)
	})
}

// TestPrepareRoundBringsTheBaseIn merges (or rebases on) a base that
// moved; a conflict is left in a merge in progress for the agent, and
// preparing again finds the same conflict.
func TestPrepareRoundBringsTheBaseIn(t *testing.T) {
	tests := []struct {
		name, update string
		conflict     bool
		rebased      bool
	}{
		{name: "merge", update: contract.UpdateByMerge},
		{name: "rebase", update: contract.UpdateByRebase, rebased: true},
		{name: "merge conflict", update: contract.UpdateByMerge, conflict: true},
		{name: "rebase conflict falls back to merge", update: contract.UpdateByRebase, conflict: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRoundRig(t)
			content := "one\ntwo\nthree\n"
			file := "OTHER.md"
			if tt.conflict {
				file, content = "app.txt", "one\ntwo\nthree\nFOUR, on main\n"
			}
			r.commit(t, r.person, file, content, "main moves on")
			gitRun(t, r.person, "push", "-q", "origin", "main")

			prep := gitActivity[contract.RoundPrepared](t, "PrepareRound", r.round(tt.update))
			require.Equal(t, tt.rebased, prep.Rebased)
			if !tt.conflict {
				require.Empty(t, prep.Conflicts)
				out := gitRun(t, r.wt.Dir, "merge-base", "--is-ancestor", "refs/remotes/origin/main", "HEAD")
				require.Empty(t, out, "main is in the branch")
				if tt.rebased {
					require.Equal(t, r.pushed, prep.Remote, "the lease is what origin had")
				}
				return
			}
			require.Equal(t, []string{"app.txt"}, prep.Conflicts)
			require.FileExists(t, filepath.Join(r.wt.Dir, ".git"))
			again := gitActivity[contract.RoundPrepared](t, "PrepareRound", r.round(tt.update))
			require.Equal(t, []string{"app.txt"}, again.Conflicts, "a retry finds the merge in progress")
		})
	}
}

// TestPushBranchWithLease: a rebased branch is pushed by force while
// origin is still where the lease says, and refused once a person pushed.
func TestPushBranchWithLease(t *testing.T) {
	t.Run("origin where the lease says", func(t *testing.T) {
		r := newRoundRig(t)
		r.commit(t, r.person, "OTHER.md", "x\n", "main moves on")
		gitRun(t, r.person, "push", "-q", "origin", "main")
		prep := gitActivity[contract.RoundPrepared](t, "PrepareRound", r.round(contract.UpdateByRebase))
		require.True(t, prep.Rebased)
		push := gitActivity[contract.PushResult](t, "PushBranch", contract.PushInput{Clone: r.clone, Branch: "ralph/issue-7", BaseRef: r.wt.BaseRef, Lease: prep.Remote})
		require.True(t, push.Pushed)
		require.Equal(t, head(t, r.wt.Dir, "HEAD"), strings.Fields(gitRun(t, r.person, "ls-remote", "origin", "refs/heads/ralph/issue-7"))[0])
	})
	r := newRoundRig(t)
	r.commit(t, r.person, "OTHER.md", "x\n", "main moves on")
	gitRun(t, r.person, "push", "-q", "origin", "main")
	prep := gitActivity[contract.RoundPrepared](t, "PrepareRound", r.round(contract.UpdateByRebase))
	require.True(t, prep.Rebased)

	// A person pushes to the branch after the rebase: the lease fails.
	gitRun(t, r.person, "fetch", "-q", "origin")
	gitRun(t, r.person, "checkout", "-q", "ralph/issue-7")
	r.commit(t, r.person, "NOTES.md", "mine\n", "a person's note")
	gitRun(t, r.person, "push", "-q", "origin", "ralph/issue-7")
	_, err := tryActivity[contract.PushResult](t, "PushBranch", contract.PushInput{Clone: r.clone, Branch: "ralph/issue-7", BaseRef: r.wt.BaseRef, Lease: prep.Remote})
	require.Error(t, err, "the person's commit is never overwritten")
	require.Equal(t, head(t, r.person, "HEAD"), strings.Fields(gitRun(t, r.person, "ls-remote", "origin", "refs/heads/ralph/issue-7"))[0])
}

// TestIssueWorktreesAtOnce: several issues' work trees made at once on
// one clone (queue.parallel) all succeed, each fetching the same base:
// the clone's lock makes the second fetch wait instead of failing on
// git's ref lock.
func TestIssueWorktreesAtOnce(t *testing.T) {
	r := newRoundRig(t)
	const n = 6
	errs := make(chan error, n)
	for i := range n {
		go func() {
			_, err := tryActivity[contract.WorktreeResult](t, "PrepareIssueWorktree", contract.WorktreeInput{
				Clone: r.clone, Number: 20 + i, Branch: contract.IssueBranch(20 + i), Base: "main", Issue: "# At once\n"})
			errs <- err
		}()
	}
	for range n {
		require.NoError(t, <-errs)
	}
	for i := range n {
		require.DirExists(t, contract.WorktreeDir(r.clone, 20+i))
	}
}
