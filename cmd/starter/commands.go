package main

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/durable-ralph/ralph/config"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/version"
	"github.com/durable-ralph/ralph/tasks"
)

// command is a leaf command of the starter: a struct that holds the
// command's own flags and does its work once cobra has parsed them.
type command interface {
	run(cctx *commandContext, args []string) error
}

// flagger is a command with flags of its own, bound to its fields.
type flagger interface {
	flags(f *pflag.FlagSet)
}

// base is what the commands that read the settings flags (config.Load),
// or ask which flags were given, embed: their cobra command.
type base struct {
	cmd *cobra.Command
}

func (b *base) setCommand(cmd *cobra.Command) { b.cmd = cmd }

// holder is a command that keeps its cobra command (embeds base).
type holder interface {
	setCommand(cmd *cobra.Command)
}

// spec is one command of the table: what help says of it, the groups of
// settings (package config) whose flags it takes, and its struct.
type spec struct {
	use, short, long string
	args             cobra.PositionalArgs
	groups           config.Group
	cmd              command
}

// Flag groups of the settings in package config, by what a command does.
const (
	// dialFlags are the settings of every command that dials Temporal.
	dialFlags = config.ConnectionFlags
	// promptFlags are those of prompt, which dials only to find a session.
	promptFlags = config.SessionFlags | config.ConnectionFlags
	// sessionFlags are those of the commands that start sessions.
	sessionFlags = config.SessionFlags | config.ConnectionFlags | config.WorkerFlags
	// queueFlags are those of the command that starts a queue.
	queueFlags = sessionFlags | config.QueueFlags | config.GitHubFlags
)

// newRootCmd is the starter's command tree, every command wired to cctx.
func newRootCmd(cctx *commandContext) *cobra.Command {
	root := &cobra.Command{
		Use:           "starter",
		Short:         "Run and watch Durable Ralph sessions",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.Version = version.Read().String()
	root.SetVersionTemplate("starter {{.Version}}\n")
	root.PersistentFlags().BoolVarP(&cctx.verbose, "verbose", "v", false, "print a failure's whole chain of workflow and activity errors, not only its cause")
	root.SetOut(cctx.stdout)
	root.SetErr(cctx.stderr)
	root.SetFlagErrorFunc(flagError)
	root.SetUsageFunc(usage)
	for _, s := range commands() {
		root.AddCommand(s.build(cctx))
	}
	root.AddCommand(newDevCmd(cctx))
	root.AddCommand(newScheduleCmd(cctx))
	root.AddCommand(newChangeSetCmd(cctx))
	return root
}

// flagError rewords pflag's error for a flag value of the wrong type
// (`invalid argument "abc" for "--max-iterations" flag: strconv.ParseInt:
// parsing "abc": invalid syntax`) to name the flag and what it takes, and
// adds to an unknown flag the flags of cmd it may be a typo of, as cobra
// does for a command. Other errors, and flags with values of their own
// (-o), keep their words.
func flagError(cmd *cobra.Command, err error) error {
	if ne, ok := errors.AsType[*pflag.NotExistError](err); ok {
		if names := flagSuggestions(cmd, ne.GetSpecifiedName()); len(names) > 0 {
			return fmt.Errorf("%w\n\nDid you mean this?\n\t%s", err, strings.Join(names, "\n\t"))
		}
		return err
	}
	ive, ok := errors.AsType[*pflag.InvalidValueError](err)
	if !ok {
		return err
	}
	want := map[string]string{
		"int":      "a whole number, such as 10",
		"int64":    "a whole number, such as 10",
		"uint":     "a whole number of 0 or more, such as 10",
		"float64":  "a number, such as 2.5",
		"duration": "a duration, such as 90s, 30m or 4h",
		"bool":     "true or false",
	}[ive.GetFlag().Value.Type()]
	if want == "" {
		return err
	}
	return fmt.Errorf("invalid --%s %q: must be %s", ive.GetFlag().Name, ive.GetValue(), want)
}

// build makes the cobra command of s and wires it to cctx: cobra parses
// the flags into the command's struct, then its run does the work
// (temporalio/cli wires every generated command so).
func (s spec) build(cctx *commandContext) *cobra.Command {
	cmd := &cobra.Command{Use: s.use, Short: s.short, Long: s.long, Args: s.args}
	if h, ok := s.cmd.(holder); ok {
		h.setCommand(cmd)
	}
	if f, ok := s.cmd.(flagger); ok {
		f.flags(cmd.Flags())
	}
	if s.groups != 0 {
		config.AddFlagGroups(cmd.Flags(), s.groups)
	}
	cmd.RunE = func(_ *cobra.Command, args []string) error { return s.cmd.run(cctx, args) }
	return cmd
}

// commands is the starter's command line, each time new.
func commands() []spec {
	return slices.Concat(startCommands(), []spec{trustSpec()}, controlCommands(), timeTravelCommands(), signalCommands())
}

// trustSpec is the command that trusts the commands a workspace's
// ralph.yaml sets (package config's CheckWorkspaceTrusted).
func trustSpec() spec {
	return spec{
		use:   "trust [DIR] | --list | --revoke DIR",
		short: "Trust the commands the ralph.yaml of a workspace sets, so that sessions there may run them",
		long: `A workspace's ralph.yaml comes with the repository, which may not be yours, so run, plan and
queue refuse one that sets values that run on this machine (agent.command, agent.args,
task.check-command, roles.reviewer.command, roles.planner.command) until you trust them.
trust prints those values of DIR (default: the current directory) and records them, with the
workspace's real path, in trusted-workspaces.json beside the user config file. The record is
of the values, not of the file: a comment or another key may change; a changed value is
refused again. A file you name with --config or RALPH_CONFIG is your own and needs no trust.
--list shows the trusted workspaces; --revoke DIR forgets one.`,
		args: cobra.MaximumNArgs(1),
		cmd:  &trustCommand{},
	}
}

// startCommands are the commands that set up and start sessions and
// queues.
func startCommands() []spec {
	return []spec{{
		use:   "init [DIR]",
		short: "Set a repository up for Ralph: a commented ralph.yaml and, when there is no task file, an example prd.json",
		long: `init writes a commented ralph.yaml into the git repository DIR (default: the current directory)
and, when DIR has no task file, an example prd.json with two small stories, then commits what
it wrote (--no-commit prints what to commit instead). Files that exist are left alone.`,
		args: cobra.MaximumNArgs(1),
		cmd:  &initCommand{},
	}, {
		use:   "run [DIR] [--worktree NAME]",
		short: "Start the Ralph session for a workspace, or attach to the one running there",
		long: `run starts a session for the workspace DIR (default: the current directory) and prints its
workflow ID and Temporal UI link. If a session is already running on DIR, run attaches to it;
if the last one has ended, run starts a new one with records of its own and says so
(--attach-only refuses to).
--follow prints what the agent does as it happens (a line per tool call and message, read
from the iteration's heartbeat, so it works from any machine), one line per iteration, and
exits with the session's termination code; -q keeps only the iteration lines.
With --dev and no dev server running, run starts one in the background (it outlives run;
starter dev stop stops it). When no worker runs for this host on the dev server, run is the
worker for the life of the session (and so follows it); run it again to resume.
--worktree NAME runs the session in a git work tree of the clone DIR, .ralph/worktrees/NAME
on branch ralph/NAME (made from the clone's HEAD, or continued when it exists), with a
workflow ID of its own: several sessions work on one clone at once. The work tree stays
after the session for review; starter clean NAME removes it.`,
		args:   cobra.MaximumNArgs(1),
		groups: sessionFlags,
		cmd:    &runCommand{},
	}, {
		use:   `plan ("IDEA" | --from FILE) [DIR]`,
		short: "Plan prd.json from an idea with a planner agent, then run the session on it",
		long: `plan starts a session on DIR (default: the current directory) that first runs the planner: an
agent that turns IDEA (or the text of --from FILE) into prd.json user stories, or extends the
prd.json there is. Ralph checks the file (valid prd.json; every story with a priority and
acceptance criteria that include "` + tasks.TypecheckCriterion + `") and sends the planner back with the error,
at most ` + strconv.Itoa(contract.MaxPlanTries) + ` tries. Then the session waits at a human-verify checkpoint that shows the
stories (status, the Temporal UI, --follow): approve to start the work, or reject with a reason
for the planner to revise the plan. --yes skips the checkpoint. After that the session is a
normal run, with the roles and limits configured for it.`,
		args:   cobra.RangeArgs(0, 2),
		groups: sessionFlags,
		cmd:    &planCommand{},
	}, {
		use:   "prompt [DIR]",
		short: "Print the prompt the next iteration on a workspace would get, without running anything",
		long: `prompt builds the prompt of the next iteration on the workspace DIR (default: the current
directory) from its task file, ralph.yaml and the flags, exactly as an iteration would, and
prints it. When a session runs on DIR and its server answers, the prompt is that of its next
iteration, with the guidance waiting for it; otherwise that of a new session's first.`,
		args:   cobra.MaximumNArgs(1),
		groups: promptFlags,
		cmd:    &promptCommand{},
	}, {
		use:   "queue [DIR]",
		short: "Start the GitHub issue queue of a clone, or attach to the one running",
		long: `queue starts the issue queue of the repository whose clone is DIR (default: the current
directory); the repository comes from the clone's origin URL, or --repo owner/name. The queue
takes open issues labelled queue.label (default ralph-ready) by someone with write access, one
at a time, runs a session on each in .ralph/worktrees/issue-N on branch ralph/issue-N, pushes
it and opens a pull request. Its ID is ralph-queue-<owner>-<repo>; running queue again attaches.
The worker reads the GitHub token from a file of its own (--github-token-file, best: a variable
stays readable in the shell that exported it) or else from its environment (github.token-env).
--follow prints one line per queue event; --until-idle ends the queue when no ready issue is left.`,
		args:   cobra.MaximumNArgs(1),
		groups: queueFlags,
		cmd:    &queueCommand{},
	}}
}

// controlCommands are the commands that watch and steer sessions (and
// queues).
func controlCommands() []spec {
	return []spec{{
		use:   "clean NAME [DIR]",
		short: "Remove the work tree NAME that run --worktree NAME made in the clone DIR",
		long: `clean removes the git work tree .ralph/worktrees/NAME of the clone DIR (default: the
current directory) once its session has ended. Its branch ralph/NAME stays, with every
commit of the session. A work tree whose session still runs is refused; so is one with
uncommitted changes, unless --force.`,
		args:   cobra.RangeArgs(1, 2),
		groups: dialFlags,
		cmd:    &cleanCommand{},
	}, {
		use:    "status [DIR|ID]",
		short:  "Show everything a session's status query knows",
		args:   cobra.MaximumNArgs(1),
		groups: dialFlags,
		cmd:    &statusCommand{},
	}, {
		use:    "list",
		short:  "List sessions, issue queues and issue sessions with their state",
		args:   cobra.NoArgs,
		groups: dialFlags,
		cmd:    &listCommand{},
	}, {
		use:    "stop [DIR|ID]",
		short:  "Let the current iteration (a queue: issue) finish, then end as stopped",
		args:   cobra.MaximumNArgs(1),
		groups: dialFlags,
		cmd:    &stopCommand{},
	}, {
		use:   "respond [DIR|ID] (--approve | --reject [--reason TEXT] | --answer TEXT) [--checkpoint CP]",
		short: "Answer the checkpoint a session is waiting on",
		long: `respond answers the pending checkpoint of a session through the respond update, which the
session validates: an answer to a checkpoint that is not pending is refused. --checkpoint names
the checkpoint you mean (as status shows it); without it, the pending one is answered and named.`,
		args:   cobra.MaximumNArgs(1),
		groups: dialFlags,
		cmd:    &respondCommand{},
	}, {
		use:   "guide [DIR|ID] TEXT",
		short: "Add guidance to the next iteration's prompt (a queue: to every later issue's)",
		long: `guide sends text to a session's next prompt. Sent to an issue queue (its ID or --queue DIR),
the text is a standing rule for every later issue until withdrawn with --withdraw TEXT|N
(N is its number in status).`,
		args:   cobra.RangeArgs(1, 2),
		groups: dialFlags,
		cmd:    &guideCommand{},
	}, {
		use:   "set-limits [DIR|ID] [--max-iterations N] [--max-runtime D] [--max-cost USD] | --queue DIR [--max-cost USD] [--max-cost-per-day USD]",
		short: "Change a running session's limits, or a queue's cost limits",
		long: `set-limits changes max iterations, runtime or cost of a running session through the set-limits
update. Only the flags given change; a limit below what the session already used is refused.
A session waiting at a limit (limits.on-limit ask) goes on once the limit it reached is raised.
With --queue DIR it changes the queue's cost limits; a queue parked by its daily budget
(budget_wait) takes issues again once the budget is above what today cost.`,
		args:   cobra.MaximumNArgs(1),
		groups: dialFlags,
		cmd:    &setLimitsCommand{},
	}, {
		use:   "versions",
		short: "Say which changes of the workflow code still have open runs that started before them",
		long: `versions lists each change of the workflow code that runs started before it replay on a
branch of their own (GetVersion), with the day it shipped and the open Ralph workflow runs
that started before that day. A change with none can have its old branch removed: see
"Changing the workflow safely" in docs/durability.md.`,
		args:   cobra.NoArgs,
		groups: dialFlags,
		cmd:    &versionsCommand{},
	}}
}

// timeTravelCommands read a session's iterations back, rewind it and
// fork it.
func timeTravelCommands() []spec {
	return []spec{{
		use:   "log [DIR|ID] [--iteration N [--attempt K]]",
		short: "Show what each iteration of a session was given and did",
		long: `log lists the iterations of a session, one line each. With --iteration N it shows that
iteration: its result and commit, and for every attempt (a crashed or timed-out one too) the
prompt (what changed since the iteration before; --full-prompt for all of it) and what the
agent did, as the live view shows it. The logs are in the workspace's .ralph/logs; for a
session on another machine, log says where. -o json prints the same for scripts.`,
		args:   cobra.MaximumNArgs(1),
		groups: dialFlags,
		cmd:    &logCommand{},
	}, {
		use:   "rewind [DIR|ID] --to N [--follow]",
		short: "Take a session back to just after iteration N, and run on from there",
		long: `rewind resets the session with Temporal's reset to the workflow task that started iteration
N+1: its state (iteration, limits used, cost, guidance, answers) is what it was after N. Its
branch goes back to iteration N's commit; the commits it leaves (and the work of an iteration
that was running, which is cancelled) stay on refs/ralph/rewound/<session>/<k>. The cost of the
iterations left behind is counted apart (status: Abandoned). An ended session runs again.
A work tree with uncommitted changes is refused unless --keep-changes (they go onto the ref);
so is an issue's session whose pull request was merged.`,
		args:   cobra.MaximumNArgs(1),
		groups: dialFlags | config.WorkerFlags,
		cmd:    &rewindCommand{},
	}, {
		use:   "fork [DIR|ID] --at N [--model M] [--backend B] [--guide TEXT] [--name NAME] [--follow]",
		short: "Start a new session from iteration N of another, on a branch of its own",
		long: `fork starts a new session that begins where iteration N of the original left off: on a new
branch ralph/NAME in the work tree .ralph/worktrees/NAME of the original's clone, made at
iteration N's commit, with the original's state after N (iterations, cost, guidance, answers).
The iterations before N are not run again. --model, --backend, --agent-command and the limits
change what the fork runs; every other setting is the original's. The original runs on,
untouched. A fork of an issue's session is a plain session: no pull request.`,
		args:   cobra.MaximumNArgs(1),
		groups: sessionFlags,
		cmd:    &forkCommand{},
	}, {
		use:    "compare A B",
		short:  "Two sessions side by side from the iteration they share (a fork and its original)",
		args:   cobra.ExactArgs(2),
		groups: dialFlags,
		cmd:    &compareCommand{},
	}}
}

// signalCommands send a signal without payload to a session or queue.
func signalCommands() []spec {
	var specs []spec
	for _, sig := range []struct{ name, short, done string }{
		{contract.SignalPause, "Pause a session before its next iteration", "paused before the next iteration"},
		{contract.SignalResume, "Resume a paused session", "resumed"},
		{contract.SignalPoke, "Make an idle issue queue look for ready issues now", "looks for ready issues now"},
	} {
		specs = append(specs, spec{
			use:    sig.name + " [DIR|ID]",
			short:  sig.short,
			args:   cobra.MaximumNArgs(1),
			groups: dialFlags,
			cmd:    &signalCommand{signal: sig.name, done: sig.done},
		})
	}
	return specs
}
