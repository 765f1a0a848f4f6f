package activities

import (
	"context"
	"fmt"
	"sync"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/git"
)

// TrailerRewound marks the commit of what a session's work tree held
// when it was rewound (the cancelled iteration's work, a person's edit):
// it names the iteration the session went back to.
const TrailerRewound = "Ralph-Rewound"

// RewindWorkspace puts a session's branch back at iteration
// in.Iteration's commit, for a rewind (Temporal reset the session to just
// after that iteration). An iteration of the session's earlier run that
// still runs on this worker is cancelled first, and waited for. Nothing
// is lost: what the work tree holds uncommitted is committed, and the
// branch's head is kept on in.Ref before the branch moves. Run again
// (a retry after the worker died), it finds the ref it made and only
// finishes the move.
func (a *Agent) RewindWorkspace(ctx context.Context, in contract.RewindInput) (contract.RewindResult, error) {
	defer HeartbeatWhile(ctx, gitHeartbeatInterval)()
	var res contract.RewindResult
	info := activity.GetInfo(ctx)
	res.Cancelled = running.cancel(in.WorkflowID, info.WorkflowExecution.RunID)
	unlock, err := lockSession(ctx, in.Key)
	if err != nil {
		return res, err
	}
	defer unlock()
	repo, err := a.openRepo(ctx, in.Workspace)
	if err != nil {
		return res, err
	}
	if c, err := repo.Resolve(ctx, in.Commit); err != nil || c == "" {
		return res, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("iteration %d's commit %s is not in %s: the rewind cannot put the branch back there", in.Iteration, short(in.Commit), in.Workspace),
			contract.ErrTypeInvalidWorkspace, err)
	}
	if branch, err := repo.Branch(ctx); err != nil {
		return res, err
	} else if in.Branch != "" && branch != in.Branch {
		if err := repo.Checkout(ctx, in.Branch); err != nil {
			return res, fmt.Errorf("check out the session's branch %s: %w", in.Branch, err)
		}
	}
	res.Ref = in.Ref
	if kept, _ := repo.Resolve(ctx, in.Ref); kept != "" {
		// An earlier attempt kept the head already.
		res.OldHead = kept
	} else if res.OldHead, res.Kept, err = keepHead(ctx, repo, in); err != nil {
		return res, err
	}
	if err := repo.ResetHard(ctx, in.Commit); err != nil {
		return res, fmt.Errorf("put %s back at iteration %d's commit %s: %w", in.Branch, in.Iteration, short(in.Commit), err)
	}
	return res, nil
}

// keepHead commits what the work tree holds, if anything, and points
// in.Ref at the head: what the rewind leaves behind.
func keepHead(ctx context.Context, repo *git.Repo, in contract.RewindInput) (head string, kept []string, err error) {
	dirty, err := repo.Status(ctx)
	if err != nil {
		return "", nil, err
	}
	if len(dirty) > 0 {
		if _, err := repo.Commit(ctx, fmt.Sprintf("ralph: work in the tree when the session was rewound to iteration %d", in.Iteration),
			"What the work tree held uncommitted (the cancelled iteration's work, or an edit) when the session went back; kept on "+in.Ref+".",
			fmt.Sprintf("%s: %d", TrailerRewound, in.Iteration)); err != nil {
			return "", nil, fmt.Errorf("commit the work tree before the rewind: %w", err)
		}
		kept = dirty
	}
	if head, err = repo.Head(ctx); err != nil {
		return "", nil, err
	}
	if err := repo.SetRef(ctx, in.Ref, head); err != nil {
		return "", nil, fmt.Errorf("keep %s on %s: %w", short(head), in.Ref, err)
	}
	return head, kept, nil
}

// running are the iterations that run in this process, by workflow ID: a
// rewind cancels the one of its session's earlier run (Temporal reset
// ended that run; its activity would see so only at its next heartbeat).
var running = &runningIterations{m: map[string]map[*runningIteration]bool{}}

type runningIterations struct {
	sync.Mutex
	m map[string]map[*runningIteration]bool
}

type runningIteration struct {
	runID  string
	cancel context.CancelFunc
}

// track records an iteration of the workflow run (id, runID) that cancel
// stops; the returned function forgets it.
func (r *runningIterations) track(id, runID string, cancel context.CancelFunc) (forget func()) {
	it := &runningIteration{runID: runID, cancel: cancel}
	r.Lock()
	defer r.Unlock()
	if r.m[id] == nil {
		r.m[id] = map[*runningIteration]bool{}
	}
	r.m[id][it] = true
	return func() {
		r.Lock()
		defer r.Unlock()
		delete(r.m[id], it)
		if len(r.m[id]) == 0 {
			delete(r.m, id)
		}
	}
}

// cancel cancels the iterations of workflow id that belong to a run other
// than runID, and reports whether there was one.
func (r *runningIterations) cancel(id, runID string) bool {
	r.Lock()
	defer r.Unlock()
	found := false
	for it := range r.m[id] {
		if it.runID != runID {
			it.cancel()
			found = true
		}
	}
	return found
}
