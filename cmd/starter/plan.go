package main

import (
	"errors"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/durable-ralph/ralph/config"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/tasks"
)

func newPlanCmd() *cobra.Command {
	var from, worktree string
	var yes, follow bool
	cmd := &cobra.Command{
		Use:   `plan ("IDEA" | --from FILE) [DIR]`,
		Short: "Plan prd.json from an idea with a planner agent, then run the session on it",
		Long: "plan starts a session on DIR (default: the current directory) that first runs the planner: an\n" +
			"agent that turns IDEA (or the text of --from FILE) into prd.json user stories, or extends the\n" +
			"prd.json there is. Ralph checks the file (valid prd.json; every story with a priority and\n" +
			"acceptance criteria that include \"" + tasks.TypecheckCriterion + "\") and sends the planner back with the error,\n" +
			"at most " + strconv.Itoa(contract.MaxPlanTries) + " tries. Then the session waits at a human-verify checkpoint that shows the\n" +
			"stories (status, the Temporal UI, --follow): approve to start the work, or reject with a reason\n" +
			"for the planner to revise the plan. --yes skips the checkpoint. After that the session is a\n" +
			"normal run, with the roles and limits configured for it.",
		Args: cobra.RangeArgs(0, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var idea string
			switch {
			case from != "" && len(args) == 2:
				return errors.New(`give the idea either as an argument or with --from FILE, not both`)
			case from != "":
				text, err := tasks.LoadIdea(from)
				if err != nil {
					return err
				}
				idea = text
			case len(args) == 0:
				return errors.New(`plan needs an idea: starter plan "what to build" [DIR], or --from FILE`)
			default:
				idea, args = args[0], args[1:]
			}
			if strings.TrimSpace(idea) == "" {
				return errors.New("the idea is empty")
			}
			if len(args) > 1 {
				return errors.New("plan takes one directory")
			}
			cfg, workspace, err := loadWithWorkspace(cmd, args)
			if err != nil {
				return err
			}
			opts := runOptions{
				follow:   follow,
				view:     ViewLive,
				worktree: worktree,
				plan:     &contract.PlanSettings{Idea: idea, Yes: yes},
				changed:  config.ChangedFlags(cmd.Flags(), config.SessionFlags),
			}
			return runSession(cmd.Context(), cfg, workspace, opts, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "read the idea from FILE (a spec, notes, an issue) instead of the argument")
	cmd.Flags().BoolVar(&yes, "yes", false, "take the plan without the human-verify checkpoint")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "print the session as it runs, the plan and its checkpoint too, until it ends")
	cmd.Flags().StringVar(&worktree, "worktree", "", "plan and run in the git work tree .ralph/worktrees/NAME of the clone DIR, on branch ralph/NAME")
	return cmd
}
