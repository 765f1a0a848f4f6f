package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"go.temporal.io/sdk/client"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/app"
	"github.com/durable-ralph/ralph/config"
	"github.com/durable-ralph/ralph/contract"
)

// forkCommand is `starter fork`.
type forkCommand struct {
	base
	at     int
	name   string
	guide  string
	follow bool
	quiet  bool
}

func (s *forkCommand) flags(f *pflag.FlagSet) {
	f.IntVar(&s.at, "at", -1, "the iteration to fork at: the fork starts with the original's state and commit after it")
	f.StringVar(&s.name, "name", "", "the fork's work tree .ralph/worktrees/NAME and branch ralph/NAME (default: fork-N, with the model or backend given)")
	f.StringVar(&s.guide, "guide", "", "text for the fork's first prompt")
	f.BoolVarP(&s.follow, "follow", "f", false, "print the fork as it runs, until it ends")
	f.BoolVarP(&s.quiet, "quiet", "q", false, "with --follow: one line per iteration")
}

// forkChanges are the session flags a fork takes; it keeps every other
// setting of the original.
var forkChanges = []string{"model", "backend", "agent-command", "agent-arg", "max-turns", "max-iterations", "max-cost", "max-runtime"}

func (s *forkCommand) run(cctx *commandContext, args []string) error {
	if s.at < 1 {
		return errors.New("fork needs --at N: the iteration to fork at, from 1 (starter log SESSION lists them)")
	}
	if s.name != "" {
		if err := activities.ValidWorktreeName(s.name); err != nil {
			return fmt.Errorf("--name: %w", err)
		}
	}
	changed := config.ChangedFlags(s.cmd.Flags(), config.SessionFlags)
	if ignored := slices.DeleteFunc(slices.Clone(changed), func(f string) bool { return slices.Contains(forkChanges, strings.TrimPrefix(f, "--")) }); len(ignored) > 0 {
		fmt.Fprintf(cctx.stderr, "A fork keeps the original's settings but model, backend, agent command and limits: %s ignored.\n", strings.Join(ignored, ", "))
	}
	conn, tl, err := cctx.openTimeline(s.cmd, args, true)
	if err != nil {
		return err
	}
	defer conn.close()
	origID := tl.id
	in, err := s.input(cctx, conn, tl, conn.cfg)
	if err != nil {
		return err
	}
	id := contract.SessionWorkflowID(in.Host, in.Workspace)
	_, err = conn.client.ExecuteWorkflow(cctx, client.StartWorkflowOptions{
		ID:                    id,
		TaskQueue:             conn.cfg.TaskQueue,
		TypedSearchAttributes: app.SessionAttributes(in),
	}, "Session", in)
	if err != nil {
		return fmt.Errorf("start the fork %s: %w (another --name makes another fork)", id, err)
	}
	f := in.Fork.From
	fmt.Fprintf(cctx.stdout, "Forked %s at iteration %d: session %s on branch %s in %s, from %s.\n",
		origID, f.Iteration, id, in.Worktree.Branch(), in.Workspace, contract.ShortSHA(f.Commit))
	fmt.Fprintf(cctx.stdout, "It goes on at iteration %d with the original's state after %d ($%.4f spent); the original is untouched.\n",
		f.Iteration+1, f.Iteration, f.CostUSD)
	if !cctx.linkAndHint(conn, id, s.follow, "status", "") {
		return nil
	}
	view, _ := followView(s.quiet, false)
	return cctx.followSession(conn, id, view, true)
}

// input is the fork's input: the original's, on a work tree of the
// original's clone that starts at iteration s.at's commit, with the
// original's state after it and the settings given on the command line.
// An issue's fork is a plain session: its own branch, no pull request.
func (s *forkCommand) input(cctx *commandContext, conn *connection, tl *timeline, cfg config.Config) (contract.SessionInput, error) {
	if _, err := tl.finished(s.at); err != nil {
		return contract.SessionInput{}, err
	}
	state, err := tl.stateAfter(conn, s.at)
	if err != nil {
		return contract.SessionInput{}, err
	}
	commit, err := tl.commitOf(s.at, state)
	if err != nil {
		return contract.SessionInput{}, err
	}
	in := tl.input
	in.CarryOver, in.Plan, in.Issue, in.NotifyParent = nil, nil, nil, false
	in.Limits = state.Limits
	if err := s.apply(&in, cfg); err != nil {
		return in, err
	}
	clone := cloneOf(tl.input)
	name := s.name
	if name == "" {
		name = forkName(clone, s.at, in.Agent.Model, s.cmd.Flags().Changed("backend"), in.Agent.Backend)
	}
	in.Worktree = &contract.SessionWorktree{Clone: clone, Name: name, From: commit, Seed: tl.input.Workspace}
	in.Workspace = in.Worktree.Dir()
	in.Fork = &contract.Fork{
		From:     contract.ForkedFrom{Session: tl.id, Iteration: s.at, Commit: commit, CostUSD: state.Totals.CostUSD},
		State:    state,
		Guidance: s.guide,
	}
	if err := in.Validate(); err != nil {
		return in, err
	}
	return in, nil
}

// apply sets what the command line changes of the fork's settings.
func (s *forkCommand) apply(in *contract.SessionInput, cfg config.Config) error {
	fs := s.cmd.Flags()
	if !slices.ContainsFunc(forkChanges, fs.Changed) {
		return nil
	}
	given, err := app.SessionInput(cfg, in.Workspace)
	if err != nil {
		return err
	}
	if fs.Changed("backend") || fs.Changed("agent-command") {
		in.Agent.Backend, in.Agent.Command, in.Agent.Prices = given.Agent.Backend, given.Agent.Command, given.Agent.Prices
		if !fs.Changed("model") {
			in.Agent.Model = "" // the original's model is another backend's
		}
	}
	if fs.Changed("model") {
		in.Agent.Model = given.Agent.Model
	}
	if fs.Changed("agent-arg") {
		in.Agent.ExtraArgs = given.Agent.ExtraArgs
	}
	if fs.Changed("max-turns") {
		in.Agent.MaxTurns = given.Agent.MaxTurns
	}
	if fs.Changed("max-iterations") {
		in.Limits.MaxIterations = given.Limits.MaxIterations
	}
	if fs.Changed("max-cost") {
		in.Limits.MaxCostUSD = given.Limits.MaxCostUSD
	}
	if fs.Changed("max-runtime") {
		in.Limits.MaxRuntime = given.Limits.MaxRuntime
	}
	return nil
}

// cloneOf is the clone whose work tree a fork of a session on in gets:
// the clone of a work-tree session or of an issue's session
// (<clone>/.ralph/worktrees/<name>), else the session's workspace.
func cloneOf(in contract.SessionInput) string {
	if w := in.Worktree; w != nil {
		return w.Clone
	}
	ws := filepath.Clean(in.Workspace)
	if parent := filepath.Dir(ws); filepath.Base(parent) == "worktrees" && filepath.Base(filepath.Dir(parent)) == contract.StateDir {
		return filepath.Dir(filepath.Dir(parent))
	}
	return ws
}

var unsafeNameChars = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// forkName is the default name of a fork at n: fork-n, with the model
// (or a backend that was given) it runs on, and a number when a work
// tree of that name is there already.
func forkName(clone string, n int, model string, backendGiven bool, backend string) string {
	name := fmt.Sprintf("fork-%d", n)
	what := model
	if what == "" && backendGiven {
		what = backend
	}
	if what = strings.Trim(unsafeNameChars.ReplaceAllString(what, "-"), "-"); what != "" {
		name += "-" + what
	}
	name = name[:min(len(name), 56)]
	taken := func(name string) bool {
		_, err := os.Stat(contract.SessionWorktree{Clone: clone, Name: name}.Dir())
		return err == nil
	}
	if !taken(name) {
		return name
	}
	for i := 2; ; i++ {
		if c := fmt.Sprintf("%s-%d", name, i); !taken(c) {
			return c
		}
	}
}
