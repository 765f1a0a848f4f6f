package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/app"
	"github.com/durable-ralph/ralph/config"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/words"
)

// runCommand is `starter run`.
type runCommand struct {
	base
	follow, quiet, raw, attachOnly bool
	worktree                       string
}

func (s *runCommand) flags(f *pflag.FlagSet) {
	f.BoolVarP(&s.follow, "follow", "f", false, "print the session as it runs (each tool call and message of the agent, one line per iteration) until it ends, then exit with its code")
	f.BoolVarP(&s.quiet, "quiet", "q", false, "with --follow: one line per iteration, nothing of the running agent")
	f.BoolVar(&s.attachOnly, "attach-only", false, "attach to the session running on DIR; never start one")
	f.StringVar(&s.worktree, "worktree", "", "run the session in the git work tree .ralph/worktrees/NAME of the clone DIR, on branch ralph/NAME")
	f.BoolVar(&s.raw, "raw", false, "with --follow: print the agent's own output stream (when its log is on this machine)")
}

func (s *runCommand) run(cctx *commandContext, args []string) error {
	view, err := followView(s.quiet, s.raw)
	if err != nil {
		return err
	}
	load := loadToStart
	if s.attachOnly {
		// Attaching starts nothing: the session runs what it was
		// started with.
		load = loadWithWorkspace
	}
	cfg, workspace, err := load(s.cmd, args)
	if err != nil {
		return err
	}
	opts := runOptions{follow: s.follow, view: view, attachOnly: s.attachOnly, worktree: s.worktree,
		changed:       config.ChangedFlags(s.cmd.Flags(), config.SessionFlags),
		workerChanged: config.ChangedFlags(s.cmd.Flags(), config.WorkerFlags),
		hostHere:      hostIsHere(s.cmd.Flags(), cfg.Worker.HostID)}
	return cctx.runSession(cfg, workspace, opts)
}

// followView is the view --follow prints with -q (quiet) or --raw.
func followView(quiet, raw bool) (View, error) {
	switch {
	case quiet && raw:
		return ViewLive, errors.New("--quiet and --raw do not go together: choose one")
	case quiet:
		return ViewQuiet, nil
	case raw:
		return ViewRaw, nil
	}
	return ViewLive, nil
}

// loadWithWorkspace loads the configuration of the workspace named by args,
// by --workspace, or the current directory, reading its ralph.yaml.
func loadWithWorkspace(cmd *cobra.Command, args []string) (config.Config, string, error) {
	workspace := ""
	if len(args) > 0 {
		workspace = args[0]
	}
	cfg, err := config.Load(cmd.Flags(), workspace)
	if err != nil {
		return config.Config{}, "", err
	}
	if workspace == "" && cfg.Workspace != "" {
		workspace = cfg.Workspace
		if cfg, err = config.Load(cmd.Flags(), workspace); err != nil {
			return config.Config{}, "", err
		}
	}
	if workspace == "" {
		workspace = "."
	}
	return cfg, workspace, nil
}

// loadToStart is loadWithWorkspace for the commands that start agents
// (run, plan, queue): before anything starts, it refuses a workspace's
// ralph.yaml that sets commands the user has not trusted (starter trust).
func loadToStart(cmd *cobra.Command, args []string) (config.Config, string, error) {
	cfg, workspace, err := loadWithWorkspace(cmd, args)
	if err != nil {
		return config.Config{}, "", err
	}
	if err := cfg.CheckWorkspaceTrusted(); err != nil {
		return config.Config{}, "", err
	}
	return cfg, workspace, nil
}

// runOptions are how run was asked to start or attach.
type runOptions struct {
	follow bool
	view   View
	// changed are the session flags given on the command line.
	changed []string
	// workerChanged are the worker flags given on the command line
	// (--agent-env, …): only a worker this process runs reads them.
	workerChanged []string
	// attachOnly refuses to start a session.
	attachOnly bool
	// worktree names the work tree of the clone the session runs in.
	worktree string
	// plan makes the session plan its prd.json first (starter plan).
	plan *contract.PlanSettings
	// hostHere says the session's host is this machine (hostIsHere):
	// its workspace must be here, and is checked here.
	hostHere bool
}

// hostIsHere reports whether the host ID of the sessions a command of fs
// starts, host, is this machine's: --host-id was not given (the ID is
// this machine's own, from its hostname, RALPH_WORKER_HOST_ID or its
// configuration files), or names this machine's hostname.
func hostIsHere(fs *pflag.FlagSet, host string) bool {
	if f := fs.Lookup("host-id"); f == nil || !f.Changed {
		return true
	}
	name, err := os.Hostname()
	return err == nil && name == host
}

// runSession starts (or attaches to) the session of workspace and, when
// asked or when this process is its worker, follows it to its end.
func (cctx *commandContext) runSession(cfg config.Config, workspace string, opts runOptions) error {
	in, err := cctx.sessionInput(cfg, workspace, opts)
	if err != nil {
		return err
	}
	conn, err := cctx.connectToRun(cfg)
	if err != nil {
		return err
	}
	defer conn.close()
	cctx.warnWorkerFlags(conn, "session", opts.workerChanged)
	if conn.started && cfg.Codec.Server != "" {
		stop, err := app.ServeCodec(cfg.Codec.Server, conn.codec)
		if err != nil {
			return err
		}
		defer stop()
	}
	id, attached, err := cctx.startSession(conn, in, opts)
	if err != nil {
		return err
	}
	if conn.started {
		// This process runs the session it started or attached to:
		// what becomes of the agents is that session's agent.sandbox.
		box := in.Agent.Sandbox
		if attached {
			if running, err := startInput[contract.SessionInput](cctx, conn, id); err == nil {
				box = running.Agent.Sandbox
			}
		}
		fmt.Fprintln(cctx.stderr, app.SessionSandboxNotice("this session", box))
	}
	if !cctx.linkAndHint(conn, id, opts.follow, "run", workspace) {
		return nil
	}
	return cctx.followSession(conn, id, opts.view, !attached)
}

// sessionInput is the input of the session run starts on workspace.
func (cctx *commandContext) sessionInput(cfg config.Config, workspace string, opts runOptions) (contract.SessionInput, error) {
	in, err := app.SessionInput(cfg, workspace)
	if err != nil {
		return in, err
	}
	in.Plan = opts.plan
	here := cfg.Dev.Enabled || opts.hostHere
	if opts.worktree != "" {
		return in, inWorktree(cctx, &in, opts.worktree, here)
	}
	if fi, err := os.Stat(in.Workspace); err != nil || !fi.IsDir() {
		if here {
			return in, fmt.Errorf("workspace %s is not a directory on this machine (host %s); for a workspace on another machine, give its --host-id", in.Workspace, in.Host)
		}
		fmt.Fprintf(cctx.stderr, "warning: workspace %s is not a directory here; it must exist on the worker of host %s\n", in.Workspace, in.Host)
	}
	return in, nil
}

// startSession starts the session of in, or attaches to the one running,
// and says which; it warns of what keeps the session from running as
// asked.
func (cctx *commandContext) startSession(conn *connection, in contract.SessionInput, opts runOptions) (id string, attached bool, err error) {
	// A session from before hosts were part of IDs that still runs here
	// is attached to; a new one gets this host's ID.
	id = sessionOf(cctx, conn.client, in.Host, in.Workspace, true)
	check := func() error {
		hostHere := conn.started || opts.hostHere
		// A workspace on another machine is the worker's to check: this
		// machine may have another view of it, or none.
		if hostHere || app.WorkspaceExists(in) {
			if err := app.CheckStart(cctx, in, conn.started); err != nil {
				return err
			}
			if hostHere {
				if err := app.NeedSandbox(in.Agent.Sandbox, app.SandboxProblem); err != nil {
					return err
				}
			}
		}
		if conn.started {
			return nil // this process is the worker: checkLocally looked its agents up
		}
		var remote *contract.PrepareInput
		if !hostHere && !app.WorkspaceExists(in) && in.Worktree == nil {
			// The workspace is on the host's machine: its worker checks it.
			check := app.StartCheck(in)
			remote = &check
		}
		return cctx.preflight(conn, in.Host, app.AgentsOf(in), remote)
	}
	switching := branchSwitch(cctx, in) // before the worker switches
	attached, previous, err := startOrAttach(cctx, conn.client, conn.cfg.TaskQueue, id, in, opts.attachOnly, check)
	if err != nil {
		return "", false, err
	}
	if attached && in.Plan != nil {
		return "", false, fmt.Errorf("session %s already runs on %s: plan starts a session of its own; stop that one first (%s)", id, in.Workspace, conn.suggest("stop", id))
	}
	verb := "Started session"
	switch {
	case attached:
		verb = "Attached to running session"
	case previous != "":
		verb = "Started a new session (the last one on this workspace ended " + previous + ")"
	}
	fmt.Fprintf(cctx.stdout, "%s %s for %s\n", verb, id, in.Workspace)
	if switching != "" && !attached {
		fmt.Fprintln(cctx.stdout, switching)
	}
	if !conn.started {
		warnNoHostWorker(cctx, conn.client, conn.cfg.TaskQueue, in.Host, cctx.stderr)
	}
	if attached && len(opts.changed) > 0 {
		if differ, err := settingsDiffer(cctx, conn, id, in); err == nil && differ {
			fmt.Fprintf(cctx.stderr, "The session is already running with its own settings: %s %s ignored.\n"+
				"Change its limits with: %s --max-iterations N --max-runtime D --max-cost USD\n",
				strings.Join(opts.changed, ", "), words.Plural(len(opts.changed), "is", "are"), conn.suggest("set-limits", id))
		}
	}
	return id, attached, nil
}

// warnWorkerFlags says that the worker flags given (--agent-env,
// --max-agents, …) are ignored when another process is the worker of the
// workflow (kind: session or queue), as the session flags of a running
// session are: they configure only the worker the starter runs itself
// (conn.started), and the worker that runs it reads its own.
func (cctx *commandContext) warnWorkerFlags(conn *connection, kind string, flags []string) {
	if conn.started || len(flags) == 0 {
		return
	}
	n := len(flags)
	fmt.Fprintf(cctx.stderr, "The %s runs on a worker of its own: %s %s ignored (%s only when the starter is the worker itself: --dev, with no worker running).\n"+
		"Give %s to that worker instead: worker %s …   (or its RALPH_* variables or configuration file)\n",
		kind, strings.Join(flags, ", "), words.Plural(n, "is", "are"), words.Plural(n, "it applies", "they apply"),
		words.Plural(n, "it", "them"), strings.Join(flags, " … "))
}

// linkAndHint prints the Temporal UI link of the workflow id and, unless
// the command follows it (asked to, or as its worker), how to follow it:
// with status, or with the command sub on dir. It reports whether the
// command follows.
func (cctx *commandContext) linkAndHint(conn *connection, id string, follow bool, sub, dir string) bool {
	if u := conn.workflowURL(id); u != "" {
		fmt.Fprintf(cctx.stdout, "Temporal UI: %s\n", u)
	}
	if follow || conn.started {
		return true
	}
	fmt.Fprintf(cctx.stdout, "Follow it with: %s   (or %s)\n", conn.suggest("status", id), conn.suggest(sub, "--follow", dir))
	return false
}

// startInput is the input the latest run of the workflow id started
// with (T: contract.SessionInput, contract.QueueInput).
func startInput[T any](ctx context.Context, conn *connection, id string) (T, error) {
	var in T
	it := conn.client.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	if !it.HasNext() {
		return in, fmt.Errorf("workflow %s has no history", id)
	}
	e, err := it.Next()
	if err != nil {
		return in, fmt.Errorf("read the start of %s: %w", id, err)
	}
	if err := conn.dataConverter.FromPayloads(e.GetWorkflowExecutionStartedEventAttributes().GetInput(), &in); err != nil {
		return in, fmt.Errorf("decode the input of %s: %w", id, err)
	}
	return in, nil
}

// settingsDiffer reports whether the running session id was started with
// settings other than in's.
func settingsDiffer(ctx context.Context, conn *connection, id string, in contract.SessionInput) (bool, error) {
	running, err := startInput[contract.SessionInput](ctx, conn, id)
	if err != nil {
		return false, err
	}
	running.CarryOver, in.CarryOver = nil, nil
	a, err := json.Marshal(running)
	if err != nil {
		return false, err
	}
	b, err := json.Marshal(in)
	if err != nil {
		return false, err
	}
	return string(a) != string(b), nil
}

// followSession prints the session as it runs (see follower) until it
// ends and returns its exit status. A session this command started
// (fresh) is printed from its first iteration, however many ran before
// the first poll; one it attached to from its last few.
func (cctx *commandContext) followSession(conn *connection, id string, view View, fresh bool) error {
	var res contract.SessionResult
	done := make(chan error, 1)
	go func() { done <- conn.await(cctx, id, &res) }()

	f := newFollower(conn, id, cctx.stdout, view)
	f.fresh = fresh
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case err := <-done:
			f.poll(context.WithoutCancel(cctx))
			return cctx.sessionEnd(id, res, err, conn.started)
		case <-t.C:
			f.poll(cctx)
		}
	}
}

// sessionEnd says how the session id ended and returns its exit status.
func (cctx *commandContext) sessionEnd(id string, res contract.SessionResult, err error, ownsWorker bool) error {
	if err != nil {
		return cctx.endedWithError("session", id, err, ownsWorker)
	}
	out := cctx.stdout
	verb := "ended"
	if res.Reason.ExitCode() == 2 {
		verb = "stopped by limit"
	}
	fmt.Fprintf(out, "Session %s %s: %s", id, verb, res.Reason)
	if res.Message != "" {
		fmt.Fprintf(out, " (%s)", res.Message)
	}
	fmt.Fprintf(out, "\n%s, %s, %s, %s\n",
		words.Count(res.Iterations, "iteration"), words.Dollars(res.Totals.CostUSD), words.Count(int(res.Totals.Usage.Total()), "token"), words.Count(res.Totals.Commits, "commit"))
	if code := res.Reason.ExitCode(); code != 0 {
		return &exitError{code: code}
	}
	return nil
}

// endedWithError reports a workflow (a session or a queue: kind) whose
// wait ended with err: this command interrupted, the workflow cancelled or
// failed.
func (cctx *commandContext) endedWithError(kind, id string, err error, ownsWorker bool) error {
	out := cctx.stdout
	if cctx.Err() != nil {
		if ownsWorker {
			fmt.Fprintf(out, "Interrupted: the %s is saved; run the same command again to resume it.\n"+
				"Waiting up to %s for the running agent to stop (Ctrl-C again to stop at once)...\n", kind, app.WorkerStopTimeout)
		} else {
			fmt.Fprintf(out, "Detached: %s %s keeps running on its worker.\n", kind, id)
		}
		return &exitError{code: 130}
	}
	if _, ok := errors.AsType[*temporal.CanceledError](err); ok {
		fmt.Fprintf(out, "%s%s %s ended: %s\n", strings.ToUpper(kind[:1]), kind[1:], id, contract.ReasonCancelled)
		return &exitError{code: contract.ReasonCancelled.ExitCode()}
	}
	return &exitError{code: 1, err: fmt.Errorf("%s %s failed: %s", kind, id, cctx.explain(err))}
}
