package activities

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/git"
	"github.com/durable-ralph/ralph/tasks"
)

// createLog creates the raw stream log of one attempt, name, relative to
// the workspace ws (never out of it: tasks.Create), with the prompt as
// its first record (contract.LogPromptLine). When it cannot be written it returns
// io.Discard and the error, so the iteration still runs.
func createLog(ws, name, prompt string) (io.Writer, func(), error) {
	f, err := tasks.Create(ws, name)
	if err != nil {
		return io.Discard, func() {}, fmt.Errorf("agent log not saved: %w", err)
	}
	if _, err := f.Write(contract.LogPromptLine(prompt)); err != nil {
		f.Close()
		return io.Discard, func() {}, fmt.Errorf("agent log not saved: %w", err)
	}
	return f, func() { f.Close() }, nil
}

// resumePrompt continues an agent session whose worker died
// mid-iteration; saved is the commit Ralph made of what it left, if any.
func resumePrompt(saved string) string {
	p := "You were interrupted: the process running you stopped before you finished. " +
		"Continue the task from where you left off, following the instructions you were given at the start of this conversation. "
	if saved != "" {
		return p + fmt.Sprintf("Ralph committed the edits you had made as %s: check them first (git show %s).", contract.ShortSHA(saved), contract.ShortSHA(saved))
	}
	return p + "Check the working tree first (git status, git diff): some of your edits may already be on disk."
}

// interruptedNote tells a fresh agent what the dead attempt of its
// iteration left in the working tree, or committed as saved.
func interruptedNote(ctx context.Context, repo *git.Repo, startHead, saved string) (string, error) {
	if saved != "" {
		return fmt.Sprintf("An earlier attempt at this iteration was interrupted (the process running it stopped). Ralph committed the work it left as %s: "+
			"review it with git show %s, keep what is sound, fix or revert the rest with new commits, and finish the task.", contract.ShortSHA(saved), contract.ShortSHA(saved)), nil
	}
	files, err := changedFiles(ctx, repo, startHead)
	if err != nil {
		return "", err
	}
	if len(files) == 0 {
		return "An earlier attempt at this iteration was interrupted before it changed anything. Do the task from the start.", nil
	}
	files = firstFew(files, 30)
	return fmt.Sprintf("An earlier attempt at this iteration was interrupted (the process running it stopped). It left changes in: %s. "+
		"Review them with git status and git diff, keep what is sound, fix or revert the rest, and finish the task.", strings.Join(files, ", ")), nil
}

// commitInterrupted commits what a dead attempt of an executor's
// iteration left uncommitted as a commit of its own, named for the story
// that attempt worked on and marked interrupted (TrailerInterrupted).
// The retry, which may go on to finish another story, then gets a commit
// of its own: each story keeps its commit. The iteration starts again
// from that commit. Without auto-commit the work stays as it is.
func (a *Agent) commitInterrupted(ctx context.Context, it *iteration) error {
	saved, err := a.commitLeft(ctx, it, it.in.Iteration, it.prev,
		fmt.Sprintf("The worker running attempt %d of iteration %d stopped before the iteration ended. "+
			"This is the work that attempt left, committed before the iteration runs again.", max(it.prev.Attempt, 1), it.in.Iteration))
	if err != nil || saved == "" {
		return err
	}
	it.saved = saved
	it.progress.StartHead = saved
	return nil
}

// commitFailedWork commits, before an executor's iteration runs for the
// first time, what the iteration before it left uncommitted when it
// failed after its retries (its workers stopped or were killed, attempt
// after attempt, the last one perhaps after its agent had finished): as
// that iteration's interrupted work, named for the story its last
// attempt worked on. Without it, this iteration's agent would find that
// story done, go on to the next, and its commit would hold two stories.
// The agent is told what was committed.
func (a *Agent) commitFailedWork(ctx context.Context, it *iteration) error {
	in := it.in
	failed := in.Iteration - 1
	if !in.Git.AutoCommit || in.RoleOf() != contract.RoleExecutor ||
		!slices.ContainsFunc(in.Uncounted, func(u contract.UncountedRun) bool { return u.Iteration == failed }) {
		return nil
	}
	last := a.records().lastStart(in.Key(), failed, math.MaxInt)
	if last == nil {
		// Its worker kept no record: the story is the one HEAD's task
		// file has next, which its attempts worked on.
		var err error
		if last, err = it.progressAtHead(ctx, 0); err != nil || last == nil {
			return err
		}
	} else if last.Role != "" && last.Role != contract.RoleExecutor {
		return nil
	}
	saved, err := a.commitLeft(ctx, it, failed, last,
		fmt.Sprintf("Iteration %d failed after its retries: the workers running its attempts stopped before it ended. "+
			"This is the work its last attempt left, committed before iteration %d runs.", failed, in.Iteration))
	if err != nil || saved == "" {
		return err
	}
	it.in.Guidance = append([]string{fmt.Sprintf("Iteration %d failed after its retries (the processes running it stopped). "+
		"Ralph committed the work it left as %s: review it with git show %s, keep what is sound, and fix or revert the rest with new commits "+
		"before you go on with the task.", failed, contract.ShortSHA(saved), contract.ShortSHA(saved))}, it.in.Guidance...)
	return nil
}

// commitLeft commits what the work tree holds as the interrupted work of
// iteration n, whose attempt prev worked on a story (body says why), and
// returns the commit; "" when there was nothing to commit, the work
// touches a protected path, or auto-commit is off. An iteration that
// fails again and again on one story keeps one such commit.
func (a *Agent) commitLeft(ctx context.Context, it *iteration, n int, prev *contract.Progress, body string) (string, error) {
	in := it.in
	if !in.Git.AutoCommit || in.RoleOf() != contract.RoleExecutor {
		return "", nil
	}
	pending, err := it.repo.Status(ctx)
	if err != nil {
		return "", fmt.Errorf("git status: %w", err)
	}
	if len(pending) == 0 || len(git.Protected(in.Git.Protected(), pending)) > 0 {
		// Work on a protected path is never committed: it stays for the
		// iteration's end, which sets it aside (guardProtected).
		return "", nil
	}
	subject := fmt.Sprintf("ralph: iteration %d (interrupted)", n)
	if story := strings.TrimSpace(prev.StoryID + " " + prev.StoryTitle); story != "" {
		subject += ": " + story
	}
	trailers := []string{git.TrailerSession + ": " + in.Key(), fmt.Sprintf("%s: %d", git.TrailerInterrupted, n), git.TrailerRole + ": " + in.RoleOf()}
	commit := it.repo.Commit
	// What a later attempt left joins the commit an earlier attempt made
	// of the same story (another story gets its own).
	if again, err := it.repo.HeadHas(ctx, subject, trailers[0], trailers[1]); err != nil {
		return "", fmt.Errorf("look for the interrupted work of iteration %d: %w", n, err)
	} else if again {
		commit = it.repo.Amend
		body = fmt.Sprintf("The workers running attempts of iteration %d stopped before the iteration ended, the last of them attempt %d. "+
			"This is the work they left, committed before the work went on.", n, max(prev.Attempt, 1))
	}
	saved, err := commit(ctx, subject, body, trailers...)
	if err != nil {
		return "", fmt.Errorf("commit the interrupted work of iteration %d: %w", n, err)
	}
	return saved, nil
}
