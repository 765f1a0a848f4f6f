package activities

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/git"
)

// PrepareRevert pushes the branch of a pull request that reverts a
// merged one, in the clone in.Clone (checked against its pin and locked):
// one commit on in.Base as origin has it now, undoing in.Commit, made
// without a work tree (git.RevertOnto). A retry finds the branch its
// earlier attempt pushed (its commit carries git.RevertTrailer) and keeps
// it. A change later commits rewrote is a RevertConflict, not retried.
func (a *Agent) PrepareRevert(ctx context.Context, in contract.RevertInput) (contract.RevertResult, error) {
	defer HeartbeatWhile(ctx, gitHeartbeatInterval)()
	repo, unlock, err := a.lockClone(ctx, in.Clone)
	if err != nil {
		return contract.RevertResult{}, err
	}
	defer unlock()
	cred, err := a.gitAuth(ctx, repo, in.TokenEnv)
	if err != nil {
		return contract.RevertResult{}, err
	}
	base, pushed := "refs/remotes/origin/"+in.Base, "refs/remotes/origin/"+in.Branch
	if err := repo.Fetch(ctx, cred, "origin", "+refs/heads/"+in.Base+":"+base); err != nil {
		return contract.RevertResult{}, fmt.Errorf("fetch %s: %w", in.Base, err)
	}
	if err := repo.Fetch(ctx, cred, "origin", "+refs/heads/"+in.Branch+":"+pushed); err != nil && !strings.Contains(err.Error(), "couldn't find remote ref") {
		return contract.RevertResult{}, fmt.Errorf("fetch %s: %w", in.Branch, err)
	}
	if tip, err := repo.Resolve(ctx, pushed); err == nil && tip != "" {
		if done, err := repo.IsRevertOf(ctx, tip, in.Commit); err != nil || done {
			return contract.RevertResult{Head: tip}, err
		}
	}
	onto, err := repo.Resolve(ctx, base)
	if err != nil || onto == "" {
		return contract.RevertResult{}, fmt.Errorf("origin's %s: %w", in.Base, err)
	}
	if on, err := repo.IsAncestor(ctx, in.Commit, onto); err != nil || !on {
		return contract.RevertResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("%s is not on origin's %s: nothing of it to revert there", contract.ShortSHA(in.Commit), in.Base), contract.ErrTypeInvalidInput, err)
	}
	rev, err := repo.RevertOnto(ctx, onto, in.Commit, in.Subject, in.Body, git.RevertTrailer(in.Commit))
	if errors.Is(err, git.ErrRevertConflict) {
		return contract.RevertResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("%s does not revert cleanly onto %s: later commits changed the same lines", contract.ShortSHA(in.Commit), in.Base), contract.ErrTypeRevertConflict, err)
	}
	if err != nil {
		return contract.RevertResult{}, err
	}
	if err := repo.SetRef(ctx, "refs/heads/"+in.Branch, rev); err != nil {
		return contract.RevertResult{}, err
	}
	if err := repo.Push(ctx, cred, "origin", in.Branch); err != nil {
		return contract.RevertResult{}, fmt.Errorf("push %s: %w", in.Branch, err)
	}
	return contract.RevertResult{Head: rev}, nil
}
