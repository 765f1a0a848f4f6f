package main

import (
	"context"
	"fmt"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/tasks"
)

// branchSwitch is the line that says a new session will switch its
// workspace to prd.json's branchName before the first iteration (the
// worker's PrepareWorkspace checks it out), or "" when it will not: no
// prd.json (yet) or no branchName, a work tree (which stays on its own
// branch), the branch already checked out, a detached HEAD, or a
// workspace this machine cannot read. It reads what the workspace holds now, as PrepareWorkspace
// will a moment later; the workflow decides nothing from it.
func branchSwitch(ctx context.Context, in contract.SessionInput) string {
	if in.Worktree != nil {
		return ""
	}
	mode := contract.Mode(in.Task.Mode)
	if mode == "" {
		var err error
		if mode, err = tasks.Detect(in.Workspace); err != nil {
			return ""
		}
	}
	if mode != contract.ModePRD {
		return ""
	}
	st, err := tasks.Load(in.Workspace, mode)
	if err != nil || st.BranchName == "" {
		return ""
	}
	cur, err := gitOutput(ctx, in.Workspace, "symbolic-ref", "--quiet", "--short", "HEAD")
	if err != nil || cur == st.BranchName {
		return ""
	}
	what := "branch " + st.BranchName
	if _, err := gitOutput(ctx, in.Workspace, "rev-parse", "--verify", "--quiet", "refs/heads/"+st.BranchName); err != nil {
		what = "a new branch " + st.BranchName
	}
	return fmt.Sprintf("Switching %s from branch %s to %s (prd.json's branchName)", in.Workspace, cur, what)
}
