package main

import (
	"errors"
	"strings"

	"github.com/spf13/pflag"

	"github.com/durable-ralph/ralph/config"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/tasks"
)

// planCommand is `starter plan`.
type planCommand struct {
	base
	from, worktree string
	yes, follow    bool
}

func (s *planCommand) flags(f *pflag.FlagSet) {
	f.StringVar(&s.from, "from", "", "read the idea from FILE (a spec, notes, an issue) instead of the argument")
	f.BoolVar(&s.yes, "yes", false, "take the plan without the human-verify checkpoint")
	f.BoolVarP(&s.follow, "follow", "f", false, "print the session as it runs, the plan and its checkpoint too, until it ends")
	f.StringVar(&s.worktree, "worktree", "", "plan and run in the git work tree .ralph/worktrees/NAME of the clone DIR, on branch ralph/NAME")
}

func (s *planCommand) run(cctx *commandContext, args []string) error {
	idea, args, err := s.idea(args)
	if err != nil {
		return err
	}
	cfg, workspace, err := loadToStart(s.cmd, args)
	if err != nil {
		return err
	}
	opts := runOptions{
		follow:        s.follow,
		view:          ViewLive,
		worktree:      s.worktree,
		plan:          &contract.PlanSettings{Idea: idea, Yes: s.yes},
		changed:       config.ChangedFlags(s.cmd.Flags(), config.SessionFlags),
		workerChanged: config.ChangedFlags(s.cmd.Flags(), config.WorkerFlags),
		hostHere:      hostIsHere(s.cmd.Flags(), cfg.Worker.HostID),
	}
	return cctx.runSession(cfg, workspace, opts)
}

// idea is the idea to plan, from args or --from FILE, and the rest of
// args: the directory.
func (s *planCommand) idea(args []string) (idea string, rest []string, err error) {
	switch {
	case s.from != "" && len(args) == 2:
		return "", nil, errors.New(`give the idea either as an argument or with --from FILE, not both`)
	case s.from != "":
		if idea, err = tasks.LoadIdea(s.from); err != nil {
			return "", nil, err
		}
	case len(args) == 0:
		return "", nil, errors.New(`plan needs an idea: starter plan "what to build" [DIR], or --from FILE`)
	default:
		idea, args = args[0], args[1:]
	}
	if strings.TrimSpace(idea) == "" {
		return "", nil, errors.New("the idea is empty")
	}
	if len(args) > 1 {
		return "", nil, errors.New("plan takes one directory")
	}
	return idea, args, nil
}
