package activities

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/git"
	"github.com/durable-ralph/ralph/internal/words"
	"github.com/durable-ralph/ralph/tasks"
)

// WorkspaceCheck is what CheckWorkspace found.
type WorkspaceCheck struct {
	repo    *git.Repo
	Mode    contract.Mode
	Promise string
	State   tasks.State
	// UncommittedTaskFile is the task file when it is the workspace's only
	// uncommitted change: a task file written just before the first run.
	UncommittedTaskFile string
}

// CheckWorkspace checks what a session needs of its workspace, changing
// nothing: a git work tree, clean unless allowed (the task file alone may
// be uncommitted), with a readable task file. PrepareWorkspace runs it on
// the worker; the starter runs it before it starts a session on a
// workspace of its own machine, so that a bad workspace is one clear
// error rather than a failed session.
func CheckWorkspace(ctx context.Context, in contract.PrepareInput) (WorkspaceCheck, error) {
	repo, err := openWorkspace(ctx, in.Workspace)
	if err != nil {
		return WorkspaceCheck{}, err
	}
	check := WorkspaceCheck{repo: repo}
	mode, promise, modeErr := resolveTask(in.Workspace, in.Task)
	if in.Planning {
		mode, promise, modeErr = contract.ModePRD, tasks.DefaultPromise(contract.ModePRD), nil
		if m := in.Task.Mode; m != "" && m != string(contract.ModePRD) {
			modeErr = temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("a session that plans writes prd.json, but task.mode is %s", m), contract.ErrTypeInvalidTaskFile, nil)
		}
	}
	if !in.Git.AllowDirty {
		all, err := repo.Status(ctx)
		if err != nil {
			return WorkspaceCheck{}, fmt.Errorf("git status: %w", err)
		}
		var dirty []string
		for _, p := range all {
			if p != contract.StateDir+"/" && !strings.HasPrefix(p, contract.StateDir+"/") {
				dirty = append(dirty, p)
			}
		}
		switch {
		case len(dirty) == 1 && modeErr == nil && dirty[0] == mode.File():
			check.UncommittedTaskFile = dirty[0]
		case len(dirty) > 0:
			shown := dirty
			if len(shown) > 5 {
				shown = append(shown[:5:5], fmt.Sprintf("and %d more", len(dirty)-5))
			}
			return WorkspaceCheck{}, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("workspace %s has uncommitted changes (%s): commit or stash them, or allow a dirty tree (--allow-dirty)",
					in.Workspace, strings.Join(shown, ", ")), contract.ErrTypeDirtyWorkspace, nil)
		}
	}
	if modeErr != nil {
		return WorkspaceCheck{}, modeErr
	}
	st, err := tasks.Load(in.Workspace, mode)
	if err != nil && !in.Planning {
		return WorkspaceCheck{}, invalidTaskFile(err)
	}
	if _, err := tasks.LoadInstructions(in.Workspace, in.Task.InstructionsFile); err != nil {
		return WorkspaceCheck{}, invalidTaskFile(err)
	}
	check.Mode, check.Promise, check.State = mode, promise, st
	return check, nil
}

// CheckStart is what must hold of a workspace before a session starts
// there: CheckWorkspace, and prd.json's branchName a name git takes for
// a branch (a session in a work tree stays on its own branch). The
// starter runs it on a workspace of its machine, the preflight on the
// worker of the workspace's host.
func CheckStart(ctx context.Context, in contract.PrepareInput) error {
	found, err := CheckWorkspace(ctx, in)
	if err != nil {
		return err
	}
	if name := found.State.BranchName; name != "" && in.Worktree == nil {
		if err := tasks.CheckBranchName(name); err != nil {
			return temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("%s: branchName %q is not a git branch name: %v", contract.PRDFile, name, err), contract.ErrTypeInvalidTaskFile, nil)
		}
	}
	return nil
}

// PrepareWorkspace checks the workspace once at the start of a session
// (CheckWorkspace); prd.json's branchName is checked out, and a task file
// that is the only uncommitted change is committed, saying so. A session
// in a work tree (in.Worktree) makes it first and stays on its branch,
// whatever branchName says: two work trees cannot share a branch.
func (a *Agent) PrepareWorkspace(ctx context.Context, in contract.PrepareInput) (contract.PrepareResult, error) {
	defer HeartbeatWhile(ctx, gitHeartbeatInterval)()
	if in.Worktree != nil {
		if err := a.prepareWorktree(ctx, *in.Worktree, in.Workspace); err != nil {
			return contract.PrepareResult{}, err
		}
	}
	check, err := CheckWorkspace(ctx, in)
	if err != nil {
		return contract.PrepareResult{}, a.unsafeRepo(in.Workspace, err)
	}
	repo, st := check.repo, check.State
	if err := a.trustRepo(in.Workspace, repo); err != nil {
		return contract.PrepareResult{}, err
	}
	if err := excludeState(ctx, repo, in.Workspace); err != nil {
		return contract.PrepareResult{}, err
	}
	if st.BranchName != "" && in.Worktree == nil {
		if err := repo.Checkout(ctx, st.BranchName); err != nil {
			return contract.PrepareResult{}, fmt.Errorf("check out branch %s from prd.json: %w", st.BranchName, err)
		}
	}
	if f := check.UncommittedTaskFile; f != "" && in.Git.AutoCommit {
		if _, err := repo.CommitAll(ctx, "ralph: add the task file "+f,
			f+" was not committed when the session started: Ralph commits it before the first iteration.",
			in.SessionID, 0); err != nil {
			return contract.PrepareResult{}, fmt.Errorf("commit the task file %s: %w", f, err)
		}
	}
	branch, err := repo.Branch(ctx)
	if err != nil {
		return contract.PrepareResult{}, err
	}
	head, err := repo.Head(ctx)
	if err != nil {
		return contract.PrepareResult{}, err
	}
	return contract.PrepareResult{
		Mode:              string(check.Mode),
		CompletionPromise: check.Promise,
		Branch:            branch,
		Head:              head,
		Task:              taskState(st),
		Repo:              repo.RepoName(ctx),
	}, nil
}

// excludeState keeps Ralph's directory in the workspace out of git. The
// pattern is anchored at the repository's top level, which is the
// workspace's parent when the workspace is a subdirectory.
func excludeState(ctx context.Context, repo *git.Repo, workspace string) error {
	pattern := "/" + contract.StateDir + "/"
	dir := workspace
	if resolved, err := filepath.EvalSymlinks(dir); err == nil {
		dir = resolved
	}
	top := repo.Dir
	if resolved, err := filepath.EvalSymlinks(top); err == nil {
		top = resolved
	}
	if rel, err := filepath.Rel(top, dir); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
		pattern = "/" + filepath.ToSlash(rel) + pattern
	}
	if err := repo.Exclude(ctx, pattern); err != nil {
		return fmt.Errorf("exclude %s from git: %w", contract.StateDir, err)
	}
	return nil
}

// restoreLinkedTaskFile puts the task file back as the iteration found
// it when the agent made it a symbolic link: Ralph reads no task file
// out of the workspace, and commits none that leads out of it (a
// person's checkout would open what it names). The next prompt says so.
func restoreLinkedTaskFile(ctx context.Context, it *iteration, res *contract.IterationResult) error {
	name := it.mode.File()
	if name == "" || strings.HasPrefix(name, contract.StateDir+"/") {
		return nil
	}
	path := filepath.Join(it.in.Workspace, filepath.FromSlash(name))
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode()&os.ModeSymlink == 0 {
		return nil
	}
	target, _ := os.Readlink(path)
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("remove the task file the agent made a symbolic link: %w", err)
	}
	rel, err := filepath.Rel(it.repo.Dir, path)
	if err != nil {
		return fmt.Errorf("restore the task file: %w", err)
	}
	msg := fmt.Sprintf("the agent made %s a symbolic link (to %s): Ralph put it back as the iteration found it", name, words.Cut(target, 200))
	if err := it.repo.RestoreFile(ctx, it.progress.StartHead, filepath.ToSlash(rel)); err != nil {
		// The iteration's start had none: the link is gone, and the
		// task file with it.
		msg = fmt.Sprintf("the agent made %s a symbolic link (to %s): Ralph removed it", name, words.Cut(target, 200))
	}
	res.Warnings = append(res.Warnings, msg)
	res.Notices = append(res.Notices, "Ralph put "+name+" back as the last iteration found it: that iteration made it a symbolic link. "+
		"The task file must be a file of the workspace: update it in place.")
	return nil
}

// openWorkspace checks that the workspace exists and is a git work tree.
func openWorkspace(ctx context.Context, dir string) (*git.Repo, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("workspace %s is not accessible: %v", dir, err), contract.ErrTypeInvalidWorkspace, err)
	}
	if !fi.IsDir() {
		return nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("workspace %s is not a directory", dir), contract.ErrTypeInvalidWorkspace, nil)
	}
	repo, err := git.Open(ctx, dir)
	if errors.Is(err, git.ErrNotRepository) {
		return nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("workspace %s is not a git repository (run git init there first)", dir), contract.ErrTypeInvalidWorkspace, err)
	}
	return repo, err
}

func resolveTask(dir string, t contract.TaskSettings) (contract.Mode, string, error) {
	var mode contract.Mode
	var err error
	if t.Mode != "" {
		mode, err = tasks.ParseMode(t.Mode)
	} else {
		mode, err = tasks.Detect(dir)
	}
	if err != nil {
		return "", "", invalidTaskFile(err)
	}
	promise := t.CompletionPromise
	if promise == "" {
		promise = tasks.DefaultPromise(mode)
	}
	return mode, promise, nil
}

func invalidTaskFile(err error) error {
	return temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrTypeInvalidTaskFile, err)
}

func taskState(st tasks.State) contract.TaskState {
	ts := contract.TaskState{
		Mode:       string(st.Mode),
		File:       st.File,
		Total:      st.Total,
		Done:       st.Done,
		Complete:   st.Complete,
		Verifiable: st.Verifiable,
	}
	if next, ok := st.Next(); ok {
		ts.CurrentID, ts.CurrentTitle = next.ID, next.Title
	}
	return ts
}

// workedOn names the story or task an iteration finished, or else the
// one it was asked to do (id, title).
func workedOn(before, after tasks.State, id, title string) (string, string) {
	was := map[string]bool{}
	for _, it := range before.Items {
		was[it.ID+"\x00"+it.Title] = it.Done
	}
	for _, it := range after.Items {
		if it.Done && !was[it.ID+"\x00"+it.Title] {
			return it.ID, it.Title
		}
	}
	return id, title
}
