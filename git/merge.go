package git

import (
	"context"
	"errors"
	"os"
	"path/filepath"
)

// Merging reports whether a merge is in progress: MERGE_HEAD exists (a
// merge that stopped on conflicts, left for an agent to resolve).
func (r *Repo) Merging(ctx context.Context) bool {
	_, err := os.Stat(filepath.Join(r.layout.GitDir, "MERGE_HEAD"))
	return err == nil
}

// Conflicts are the paths a merge left unmerged.
func (r *Repo) Conflicts(ctx context.Context) ([]string, error) {
	out, err := r.git(ctx, "diff", "--name-only", "--diff-filter=U")
	if err != nil {
		return nil, err
	}
	return nonEmptyLines(out), nil
}

// Merge merges ref into the current branch (a fast-forward when it can).
// Conflicts are not an error: the merge is left in progress and the
// unmerged paths returned, for someone to resolve and commit.
func (r *Repo) Merge(ctx context.Context, ref, message string) (conflicts []string, err error) {
	_, err = r.git(ctx, append(r.identity(ctx), "merge", "--no-edit", "-m", message, ref)...)
	if err == nil {
		return nil, nil
	}
	if !r.Merging(ctx) {
		return nil, err
	}
	conflicts, cerr := r.Conflicts(ctx)
	if cerr != nil {
		return nil, errors.Join(err, cerr)
	}
	return conflicts, nil
}

// FastForward moves the current branch to ref, which must have it as an
// ancestor.
func (r *Repo) FastForward(ctx context.Context, ref string) error {
	_, err := r.git(ctx, "merge", "--ff-only", "--quiet", ref)
	return err
}

// Rebase replays the current branch's commits onto upstream. On a
// conflict it aborts, leaves the branch as it was and returns false.
func (r *Repo) Rebase(ctx context.Context, upstream string) (bool, error) {
	_, err := r.git(ctx, append(r.identity(ctx), "rebase", "--quiet", upstream)...)
	if err == nil {
		return true, nil
	}
	if _, aerr := r.git(ctx, "rebase", "--abort"); aerr != nil {
		return false, errors.Join(err, aerr)
	}
	return false, nil
}

// PushWithLease pushes branch to remote by force, but only while the
// remote's branch is still at expect (what this clone last saw there):
// a commit someone pushed since is never overwritten.
func (r *Repo) PushWithLease(ctx context.Context, cred *Credential, remote, branch, expect string) error {
	ref := "refs/heads/" + branch
	_, err := r.withCredential(ctx, cred, "push", "--quiet", "--porcelain", "--no-recurse-submodules", "--receive-pack=git-receive-pack",
		"--force-with-lease="+ref+":"+expect, remote, ref+":"+ref)
	return err
}
