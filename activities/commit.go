package activities

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/git"
	"github.com/durable-ralph/ralph/internal/words"
)

// commitPlan is what finishCommit knows before it starts.
type commitPlan struct {
	// pending is the workspace's uncommitted paths, nil when unknown.
	pending *[]string
	// lookFirst looks for the iteration's commit before committing: an
	// earlier attempt may have made it.
	lookFirst bool
}

// finishCommit commits the iteration's pending changes when asked, once:
// the trailers identify the commit, so a retry finds it instead of
// committing again. Then it keeps the session's last commit reachable
// under refs/ralph.
func (a *Agent) finishCommit(ctx context.Context, repo *git.Repo, in contract.IterationInput, res contract.IterationResult, plan commitPlan) (contract.IterationResult, error) {
	if res.Halt != "" {
		// The work is not where the session's branch is: leave it for a
		// person to sort out rather than commit it somewhere.
		return res, nil
	}
	// A plan that is not valid stays uncommitted for the next planner;
	// work that changed a protected path is set aside, never committed.
	badPlan := in.RoleOf() == contract.RolePlanner && (res.Plan == nil || !res.Plan.Valid)
	if in.Git.AutoCommit && res.Commit == "" && !badPlan && res.NotCommitted == "" {
		var commit string
		if plan.lookFirst {
			var err error
			if commit, err = repo.FindCommit(ctx, in.Key(), in.Iteration); err != nil {
				return contract.IterationResult{}, fmt.Errorf("look for iteration commit: %w", err)
			}
		}
		if commit == "" {
			pending, err := pendingOf(ctx, repo, plan.pending)
			if err != nil {
				return contract.IterationResult{}, fmt.Errorf("git status: %w", err)
			}
			if pending, err = leaveOutMovedState(ctx, repo, pending, &res); err != nil {
				return contract.IterationResult{}, err
			}
			if len(pending) > 0 {
				commit, err = repo.CommitAll(ctx, commitSubject(in.Iteration, res), commitBody(res), in.Key(), in.Iteration,
					git.TrailerRole+": "+in.RoleOf())
				if err != nil && a.lastAttempt {
					// No retry is left: the iteration is reported, its
					// cost counted, its work left for the next one.
					return notCommitted(res, fmt.Sprintf("commit iteration %d: %v", in.Iteration, err)), nil
				}
				if err != nil {
					return contract.IterationResult{}, fmt.Errorf("commit iteration %d: %w", in.Iteration, err)
				}
			}
		}
		if commit != "" {
			// The recorded result stays the one from before the commit: a
			// retry finds the commit by its trailers (lookFirst).
			res.Commit = commit
			res.Head = commit
		}
	}
	if res.Head != "" {
		ref := sessionRef(in.Key())
		if !repo.RefIs(ref, res.Head) {
			if err := repo.SetRef(ctx, ref, res.Head); err != nil {
				return contract.IterationResult{}, fmt.Errorf("keep iteration %d's commit: %w", in.Iteration, err)
			}
		}
		res.Ref = ref
	}
	return res, nil
}

// leaveOutMovedState keeps Ralph's own records out of the commit when
// the agent moved its .ralph directory elsewhere in the work tree (where
// .git/info/exclude no longer hides it): a directory of pending that
// holds logs/<key>/iteration-N.prompt.md or .attempt-N.jsonl, as .ralph
// does, is excluded in its turn and said in res's warnings. It returns
// pending without it.
func leaveOutMovedState(ctx context.Context, repo *git.Repo, pending []string, res *contract.IterationResult) ([]string, error) {
	moved := map[string]bool{}
	for _, p := range pending {
		if d := movedStateDir(p); d != "" {
			moved[d] = true
		}
	}
	if len(moved) == 0 {
		return pending, nil
	}
	for _, d := range slices.Sorted(maps.Keys(moved)) {
		if err := repo.Exclude(ctx, "/"+d+"/"); err != nil {
			return nil, fmt.Errorf("exclude %s from git: %w", d, err)
		}
		res.Warnings = append(res.Warnings, fmt.Sprintf("the agent moved Ralph's %s directory to %s: its prompts and logs are not committed (%s/ added to .git/info/exclude)", contract.StateDir, d, d))
	}
	return slices.DeleteFunc(pending, func(p string) bool {
		for d := range moved {
			if strings.HasPrefix(p, d+"/") {
				return true
			}
		}
		return false
	}), nil
}

// movedStateDir is the directory a path of Ralph's logs lies in when it
// is not .ralph ("" otherwise): D for D/logs/KEY/iteration-0007.prompt.md.
func movedStateDir(p string) string {
	parts := strings.Split(p, "/")
	n := len(parts)
	if n < 4 || parts[n-3] != "logs" || !stateLogName.MatchString(parts[n-1]) {
		return ""
	}
	dir := strings.Join(parts[:n-3], "/")
	if dir == contract.StateDir || strings.HasSuffix(dir, "/"+contract.StateDir) {
		return ""
	}
	return dir
}

// stateLogName is the name of a prompt or stream Ralph saves.
var stateLogName = regexp.MustCompile(`^iteration-[0-9]{4,}\.(prompt\.md|attempt-[0-9]+\.jsonl)$`)

// notCommitted is res of an iteration whose work could not be
// committed (why): it failed, and the next iteration finds its work
// uncommitted.
func notCommitted(res contract.IterationResult, why string) contract.IterationResult {
	res.NotCommitted = why
	if res.Outcome == contract.OutcomeSuccess {
		res.Outcome, res.Reason = contract.OutcomeAgentError, why
	}
	res.CompletionClaimed = false
	return res
}

// pendingOf is known when it is not nil, and git status's paths
// otherwise.
func pendingOf(ctx context.Context, repo *git.Repo, known *[]string) ([]string, error) {
	if known != nil {
		return *known, nil
	}
	return repo.Status(ctx)
}

// sessionRef is the one ref that keeps a session's last commit
// reachable: iterations only move history forward (guardHistory), so
// every earlier iteration's commit is reachable from it too.
func sessionRef(key string) string {
	return fmt.Sprintf("refs/ralph/%s/last", refName(key))
}

// iterationRef names the refs that keep one iteration's commits, such
// as its start commit when it rewrote history.
func iterationRef(key string, iteration int) string {
	return fmt.Sprintf("refs/ralph/%s/%d", refName(key), iteration)
}

var refUnsafe = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// refName turns a key into one valid component of a ref name.
func refName(key string) string {
	return strings.Trim(refUnsafe.ReplaceAllString(key, "-"), "-")
}

// guardHistory checks what the agent did to git: HEAD must still be on
// the session's branch, with the commit the iteration started from among
// its ancestors. A branch left for a detached HEAD or another branch that
// holds the work is moved to the work; a history rewound (git reset
// --hard HEAD~1, a checkout of an older commit) is put back where the
// work was. Both are told to the next iteration. A history that went
// another way than the work (a rebase, an amended commit) halts the
// session, the old line kept under refs/ralph.
func (a *Agent) guardHistory(ctx context.Context, repo *git.Repo, in contract.IterationInput, start string, res *contract.IterationResult) error {
	if start == "" {
		return nil
	}
	head, branch, err := repo.Where(ctx)
	if err != nil {
		return err
	}
	want := in.Branch
	if want == "" {
		// A session that started on a detached HEAD has no branch to
		// keep; only its history is checked.
		want = branch
	}
	where := "detached HEAD"
	if branch != "" {
		where = "branch " + branch
	}
	if head == "" {
		return a.restore(ctx, repo, in, want, start, fmt.Sprintf("the iteration left HEAD on %s, which has no commit", where), res)
	}
	forward := head == start // no process when the agent did not commit
	if !forward {
		if forward, err = repo.IsAncestor(ctx, start, head); err != nil {
			return fmt.Errorf("check history: %w", err)
		}
	}
	switch {
	case forward && branch == want:
		return nil
	case forward:
		// The work is at HEAD, on the wrong branch or none: bring the
		// session's branch to it.
		if want == "" {
			return nil
		}
		tip, err := repo.Resolve(ctx, "refs/heads/"+want)
		if err != nil {
			return fmt.Errorf("check history: %w", err)
		}
		if tip != "" {
			ff, err := repo.IsAncestor(ctx, tip, head)
			if err != nil {
				return fmt.Errorf("check history: %w", err)
			}
			if !ff {
				// Moving the branch would drop its own commits.
				res.Halt = fmt.Sprintf("iteration %d ended on %s at %s, which does not contain the tip %s of the session's branch %s; "+
					"both are kept. Check out %s where the work should go on and start the session again", in.Iteration, where, short(head), short(tip), want, want)
				return nil
			}
		}
		if err := repo.BranchAt(ctx, want, head); err != nil {
			res.Halt = fmt.Sprintf("the agent left branch %s for %s at %s and Ralph could not move %s there: %v", want, where, short(head), want, err)
			return nil
		}
		res.Notices = append(res.Notices, fmt.Sprintf(
			"The last iteration left branch `%s` (HEAD was on %s at %s). Ralph moved `%s` to that commit and checked it out again. Work on `%s` only: do not check out other branches or commits.",
			want, where, short(head), want, want))
		return nil
	}
	back, err := repo.IsAncestor(ctx, head, start)
	if err != nil {
		return fmt.Errorf("check history: %w", err)
	}
	if back {
		return a.restore(ctx, repo, in, want, start, fmt.Sprintf("the iteration moved HEAD back from %s to %s (%s), dropping commits from the history", short(start), short(head), where), res)
	}
	keep := iterationRef(in.Key(), in.Iteration) + "-start"
	if err := repo.SetRef(ctx, keep, start); err != nil {
		return fmt.Errorf("keep the iteration's start commit: %w", err)
	}
	res.Halt = fmt.Sprintf("iteration %d rewrote git history: the commit it started from, %s, is no longer an ancestor of HEAD %s (%s); "+
		"both are kept (%s and HEAD). Choose the line to keep, check out %s on it, and start the session again",
		in.Iteration, short(start), short(head), where, keep, words.Or(want, "the session's branch"))
	return nil
}

// restore puts branch back at start after the agent rewound history,
// keeping the agent's uncommitted changes, and tells the next iteration.
func (a *Agent) restore(ctx context.Context, repo *git.Repo, in contract.IterationInput, branch, start, what string, res *contract.IterationResult) error {
	var err error
	if branch != "" {
		err = repo.BranchAt(ctx, branch, start)
	} else {
		err = repo.Detach(ctx, start)
	}
	if err != nil {
		keep := iterationRef(in.Key(), in.Iteration) + "-start"
		if rerr := repo.SetRef(ctx, keep, start); rerr != nil {
			return fmt.Errorf("keep the iteration's start commit: %w", rerr)
		}
		res.Halt = fmt.Sprintf("iteration %d: %s, and Ralph could not put %s back at %s (kept as %s): %v", in.Iteration, what, words.Or(branch, "HEAD"), short(start), keep, err)
		return nil
	}
	res.Notices = append(res.Notices, fmt.Sprintf(
		"The last iteration rewrote git: %s. Ralph put `%s` back at %s, so that no committed work is lost. Never reset, rebase, amend or check out other commits: fix mistakes with new commits on top.",
		what, words.Or(branch, "HEAD"), short(start)))
	return nil
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

func commitSubject(iteration int, res contract.IterationResult) string {
	s := fmt.Sprintf("ralph: iteration %d", iteration)
	if res.Plan != nil {
		return fmt.Sprintf("%s: plan %s (%d stories)", s, contract.PRDFile, len(res.Plan.Stories))
	}
	if res.StoryID != "" || res.StoryTitle != "" {
		s += ": " + strings.TrimSpace(res.StoryID+" "+res.StoryTitle)
	}
	return s
}

func commitBody(res contract.IterationResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Outcome: %s", res.Outcome)
	if res.Reason != "" {
		fmt.Fprintf(&b, " (%s)", res.Reason)
	}
	if res.Task.Total > 0 {
		fmt.Fprintf(&b, "\nTasks: %d of %d done in %s", res.Task.Done, res.Task.Total, res.Task.File)
	}
	return b.String()
}
