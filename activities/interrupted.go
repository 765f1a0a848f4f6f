package activities

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/git"
	"github.com/durable-ralph/ralph/tasks"
)

// createLog saves the prompt and opens the raw stream log of one attempt
// under dir, relative to the workspace ws (never out of it: tasks.Create).
// When they cannot be written it returns io.Discard and the error, so the
// iteration still runs.
func createLog(ws, dir, promptName, logName, prompt string) (io.Writer, func(), error) {
	p, err := tasks.Create(ws, filepath.Join(dir, promptName))
	if err == nil {
		_, err = p.WriteString(prompt)
		if cerr := p.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return io.Discard, func() {}, fmt.Errorf("agent log not saved: %w", err)
	}
	f, err := tasks.Create(ws, filepath.Join(dir, logName))
	if err != nil {
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
