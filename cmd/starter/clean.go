package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/git"
)

func newCleanCmd() *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "clean NAME [DIR]",
		Short: "Remove the work tree NAME that run --worktree NAME made in the clone DIR",
		Long: "clean removes the git work tree .ralph/worktrees/NAME of the clone DIR (default: the\n" +
			"current directory) once its session has ended. Its branch ralph/NAME stays, with every\n" +
			"commit of the session. A work tree whose session still runs is refused; so is one with\n" +
			"uncommitted changes, unless --force.",
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			name := args[0]
			if err := activities.ValidWorktreeName(name); err != nil {
				return err
			}
			repo, err := git.Open(ctx, orDot(args[1:]))
			if err != nil {
				return fmt.Errorf("clean needs the clone the work tree is in: %w", err)
			}
			wt := contract.SessionWorktree{Clone: repo.Dir, Name: name}
			tree, err := git.Open(ctx, wt.Dir())
			if _, statErr := os.Stat(wt.Dir()); statErr != nil || err != nil || !sameDir(tree.Dir, wt.Dir()) {
				return fmt.Errorf("%s has no work tree %s (no %s); git worktree list shows the clone's work trees", repo.Dir, name, wt.Dir())
			}

			cfg, conn, _, err := dial(cmd)
			if err != nil {
				if !force {
					return fmt.Errorf("cannot tell whether a session still runs in %s: %w (--force removes it anyway)", wt.Dir(), err)
				}
			} else {
				defer conn.close()
				id := sessionOf(ctx, conn.client, cfg.Worker.HostID, wt.Dir(), false)
				if running, err := isRunning(ctx, conn, id); err != nil && !force {
					return fmt.Errorf("cannot tell whether session %s still runs: %w (--force removes the work tree anyway)", id, err)
				} else if running {
					return fmt.Errorf("session %s still runs in %s: stop it first (%s)", id, wt.Dir(), suggest("stop", id))
				}
			}

			if pending, err := tree.Status(ctx); err != nil {
				return err
			} else if len(pending) > 0 && !force {
				return fmt.Errorf("the work tree %s has uncommitted changes (%s): commit or discard them, or clean --force", wt.Dir(), strings.Join(firstFew(pending, 5), ", "))
			}
			if err := repo.RemoveWorktree(ctx, wt.Dir(), force); err != nil {
				return fmt.Errorf("remove the work tree %s: %w", wt.Dir(), err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Removed the work tree %s. Its branch %s stays (git log %s; git branch -D %s deletes it).\n",
				wt.Dir(), wt.Branch(), wt.Branch(), wt.Branch())
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "remove the work tree even with uncommitted changes, or when Temporal cannot be asked whether its session runs")
	return cmd
}

// isRunning reports whether the workflow id runs; one that never existed
// does not.
func isRunning(ctx context.Context, conn *connection, id string) (bool, error) {
	desc, err := conn.client.DescribeWorkflowExecution(ctx, id, "")
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
