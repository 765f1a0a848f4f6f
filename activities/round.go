package activities

import (
	"context"
	"fmt"
	"strings"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/git"
	"github.com/durable-ralph/ralph/tasks"
)

// PrepareRound readies an issue's work tree for a round of its pull
// request (a fix of failing checks, an answer to a review, the base
// brought in): the branch takes what origin has of it (a person's
// commits are built upon, never overwritten), the base is merged or
// rebased in when asked, and the round's task is written to
// contract.FeedbackFile. A merge that conflicts is left in progress for
// the round's agent to resolve; a rebase that conflicts is given up for a
// merge. Running it again finds what the first run did.
func (a *Agent) PrepareRound(ctx context.Context, in contract.RoundInput) (contract.RoundPrepared, error) {
	defer HeartbeatWhile(ctx, gitHeartbeatInterval)()
	clone, unlock, err := a.lockClone(ctx, in.Clone)
	if err != nil {
		return contract.RoundPrepared{}, err
	}
	defer unlock()
	wt, err := a.openRepo(ctx, in.Worktree)
	if err != nil {
		return contract.RoundPrepared{}, err
	}
	cred, err := a.gitAuth(ctx, clone, in.TokenEnv)
	if err != nil {
		return contract.RoundPrepared{}, err
	}
	remote := "refs/remotes/origin/" + in.Branch
	if err := clone.Fetch(ctx, cred, "origin", "+"+baseHead(in.BaseRef)+":"+in.BaseRef); err != nil {
		return contract.RoundPrepared{}, fmt.Errorf("fetch %s from origin: %w", in.BaseRef, err)
	}
	// A branch a person deleted on origin is pushed again after the
	// round; its stale remote ref is then at what was last pushed.
	_ = clone.Fetch(ctx, cred, "origin", "+refs/heads/"+in.Branch+":"+remote)
	var out contract.RoundPrepared
	if wt.Merging(ctx) {
		// An earlier attempt merged already: its conflicts are the
		// round's to resolve.
		if out.Conflicts, err = wt.Conflicts(ctx); err != nil {
			return out, err
		}
	} else {
		if out.Pulled, err = takeRemote(ctx, wt, remote, in.LastPushed); err != nil {
			return out, fmt.Errorf("take origin's %s: %w", in.Branch, err)
		}
		if out.Conflicts, out.Rebased, err = update(ctx, wt, in); err != nil {
			return out, err
		}
	}
	if out.Head, err = wt.Head(ctx); err != nil {
		return out, err
	}
	out.Remote, _ = clone.Resolve(ctx, remote)
	if err := tasks.WriteFile(wt.Dir, contract.FeedbackFile, []byte(in.Task)); err != nil {
		return out, fmt.Errorf("write the round's task: %w", err)
	}
	return out, nil
}

// baseHead is the branch ref on origin of a remote-tracking ref
// (refs/remotes/origin/main → refs/heads/main).
func baseHead(baseRef string) string {
	if name, ok := strings.CutPrefix(baseRef, "refs/remotes/origin/"); ok {
		return "refs/heads/" + name
	}
	return baseRef
}

// takeRemote brings origin's branch (remote) into the work tree's
// branch and returns how many of its commits were new here. Origin ahead
// is a fast-forward; origin rewritten by a person (the branch no longer
// holds what was last pushed, and nothing here is unpushed) is taken as
// it is; both moved is a merge.
func takeRemote(ctx context.Context, wt *git.Repo, remote, lastPushed string) (int, error) {
	if !wt.HasRef(ctx, remote) {
		return 0, nil // the branch is gone on origin: the next push makes it again
	}
	head, err := wt.Head(ctx)
	if err != nil {
		return 0, err
	}
	theirs, err := wt.Resolve(ctx, remote)
	if err != nil || theirs == head {
		return 0, err
	}
	if ours, err := wt.IsAncestor(ctx, theirs, head); err != nil || ours {
		return 0, err // nothing of origin's is new here
	}
	n, err := wt.CountCommitsBetween(ctx, head, theirs)
	if err != nil {
		return 0, err
	}
	behind, err := wt.IsAncestor(ctx, head, theirs)
	switch {
	case err != nil:
		return 0, err
	case behind:
		return n, wt.FastForward(ctx, theirs)
	case head == lastPushed:
		// A person rewrote the branch after our last push: theirs wins.
		return n, wt.ResetHard(ctx, theirs)
	}
	conflicts, err := wt.Merge(ctx, theirs, "Merge origin's branch (a person's commits)")
	if err == nil && len(conflicts) > 0 {
		err = fmt.Errorf("merging origin's branch conflicts in %v: resolve it by hand", conflicts)
	}
	return n, err
}

// update brings the base in as in.Update says.
func update(ctx context.Context, wt *git.Repo, in contract.RoundInput) (conflicts []string, rebased bool, err error) {
	switch in.Update {
	case "":
		return nil, false, nil
	case contract.UpdateByRebase:
		ok, err := wt.Rebase(ctx, in.BaseRef)
		if err != nil || ok {
			return nil, ok, err
		}
		// Conflicts: a merge leaves them for the agent, a rebase could
		// not.
	}
	conflicts, err = wt.Merge(ctx, in.BaseRef, "Merge "+strings.TrimPrefix(baseHead(in.BaseRef), "refs/heads/")+" into "+in.Branch)
	if err != nil {
		return nil, false, fmt.Errorf("merge %s: %w", in.BaseRef, err)
	}
	return conflicts, false, nil
}
