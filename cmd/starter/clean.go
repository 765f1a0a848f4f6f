package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/git"
)

// cleanCommand is `starter clean`: it removes a work tree that run
// --worktree made.
type cleanCommand struct {
	base
	force bool
}

func (s *cleanCommand) flags(f *pflag.FlagSet) {
	f.BoolVar(&s.force, "force", false, "remove the work tree even with uncommitted changes, or when Temporal cannot be asked whether its session runs")
}

func (s *cleanCommand) run(cctx *commandContext, args []string) error {
	name := args[0]
	if err := activities.ValidWorktreeName(name); err != nil {
		return err
	}
	repo, err := git.Open(cctx, orDot(args[1:]))
	if err != nil {
		return fmt.Errorf("clean needs the clone the work tree is in: %w", err)
	}
	wt := contract.SessionWorktree{Clone: repo.Dir, Name: name}
	tree, err := git.Open(cctx, wt.Dir())
	if _, statErr := os.Stat(wt.Dir()); statErr != nil || err != nil || !sameDir(tree.Dir, wt.Dir()) {
		return fmt.Errorf("%s has no work tree %s (no %s); git worktree list shows the clone's work trees", repo.Dir, name, wt.Dir())
	}
	if err := s.checkEnded(cctx, wt); err != nil {
		return err
	}
	if pending, err := tree.Status(cctx); err != nil {
		return err
	} else if len(pending) > 0 && !s.force {
		return fmt.Errorf("the work tree %s has uncommitted changes (%s): commit or discard them, or clean --force", wt.Dir(), strings.Join(firstFew(pending, 5), ", "))
	}
	if err := repo.RemoveWorktree(cctx, wt.Dir(), s.force); err != nil {
		return fmt.Errorf("remove the work tree %s: %w", wt.Dir(), err)
	}
	fmt.Fprintf(cctx.stdout, "Removed the work tree %s. Its branch %s stays (git log %s; git branch -D %s deletes it).\n",
		wt.Dir(), wt.Branch(), wt.Branch(), wt.Branch())
	return nil
}

// checkEnded refuses a work tree whose session still runs, or, without
// --force, one of which Temporal cannot say.
func (s *cleanCommand) checkEnded(cctx *commandContext, wt contract.SessionWorktree) error {
	conn, err := cctx.dial(s.cmd)
	if err != nil {
		if !s.force {
			return fmt.Errorf("cannot tell whether a session still runs in %s: %w (--force removes it anyway)", wt.Dir(), err)
		}
		return nil
	}
	defer conn.close()
	id := sessionOf(cctx, conn.client, conn.cfg.Worker.HostID, wt.Dir(), false)
	if running, err := isRunning(cctx, conn, id); err != nil && !s.force {
		return fmt.Errorf("cannot tell whether session %s still runs: %w (--force removes the work tree anyway)", id, err)
	} else if running {
		return fmt.Errorf("session %s still runs in %s: stop it first (%s)", id, wt.Dir(), conn.suggest("stop", id))
	}
	return nil
}

// isRunning reports whether the workflow id runs; one that never existed
// does not.
func isRunning(cctx *commandContext, conn *connection, id string) (bool, error) {
	desc, err := conn.client.DescribeWorkflowExecution(cctx, id, "")
	if _, ok := errors.AsType[*serviceerror.NotFound](err); ok {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return desc.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, nil
}

// sameDir reports whether a and b are one directory.
func sameDir(a, b string) bool {
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}

// inWorktree makes in a session in the work tree name of the clone that
// in.Workspace is in.
func inWorktree(cctx *commandContext, in *contract.SessionInput, name string, local bool) error {
	if err := activities.ValidWorktreeName(name); err != nil {
		return err
	}
	clone := in.Workspace
	if repo, err := git.Open(cctx, clone); err == nil {
		clone = repo.Dir
		if pending, err := repo.Status(cctx); err == nil && len(pending) > 0 {
			wt := contract.SessionWorktree{Clone: clone, Name: name}
			if _, err := os.Stat(wt.Dir()); err != nil {
				fmt.Fprintf(cctx.stderr, "note: the work tree starts at the clone's HEAD; its uncommitted changes (%s) are not in it\n", strings.Join(firstFew(pending, 5), ", "))
			}
		}
	} else if local {
		return fmt.Errorf("--worktree needs a git clone: %w", err)
	}
	wt := contract.SessionWorktree{Clone: clone, Name: name}
	in.Workspace, in.Worktree = wt.Dir(), &wt
	return nil
}

// firstFew is the first n of list, and how many more there are.
func firstFew(list []string, n int) []string {
	if len(list) <= n {
		return list
	}
	return append(list[:n:n], fmt.Sprintf("and %d more", len(list)-n))
}
