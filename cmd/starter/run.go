package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/config"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/git"
	"github.com/durable-ralph/ralph/internal/ralph"
	"github.com/durable-ralph/ralph/workflows"
)

func newRunCmd() *cobra.Command {
	var follow, quiet, raw, attachOnly bool
	var worktree string
	cmd := &cobra.Command{
		Use:   "run [DIR] [--worktree NAME]",
		Short: "Start the Ralph session for a workspace, or attach to the one running there",
		Long: "run starts a session for the workspace DIR (default: the current directory) and prints its\n" +
			"workflow ID and Temporal UI link. If a session is already running on DIR, run attaches to it;\n" +
			"if the last one has ended, run starts a new one with records of its own and says so\n" +
			"(--attach-only refuses to).\n" +
			"--follow prints what the agent does as it happens (a line per tool call and message, read\n" +
			"from the iteration's heartbeat, so it works from any machine), one line per iteration, and\n" +
			"exits with the session's termination code; -q keeps only the iteration lines.\n" +
			"With --dev and no server answering, run starts the embedded server and a worker in this\n" +
			"process for the life of the session (and so follows it); run it again to resume.\n" +
			"--worktree NAME runs the session in a git work tree of the clone DIR, .ralph/worktrees/NAME\n" +
			"on branch ralph/NAME (made from the clone's HEAD, or continued when it exists), with a\n" +
			"workflow ID of its own: several sessions work on one clone at once. The work tree stays\n" +
			"after the session for review; starter clean NAME removes it.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, workspace, err := loadWithWorkspace(cmd, args)
			if err != nil {
				return err
			}
			view := ViewLive
			switch {
			case quiet && raw:
				return errors.New("--quiet and --raw do not go together: choose one")
			case quiet:
				view = ViewQuiet
			case raw:
				view = ViewRaw
			}
			opts := runOptions{follow: follow, view: view, attachOnly: attachOnly, worktree: worktree, changed: config.ChangedFlags(cmd.Flags(), config.SessionFlags)}
			return runSession(cmd.Context(), cfg, workspace, opts, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "print the session as it runs (each tool call and message of the agent, one line per iteration) until it ends, then exit with its code")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "with --follow: one line per iteration, nothing of the running agent")
	cmd.Flags().BoolVar(&attachOnly, "attach-only", false, "attach to the session running on DIR; never start one")
	cmd.Flags().StringVar(&worktree, "worktree", "", "run the session in the git work tree .ralph/worktrees/NAME of the clone DIR, on branch ralph/NAME")
	cmd.Flags().BoolVar(&raw, "raw", false, "with --follow: print the agent's own output stream (when its log is on this machine)")
	return cmd
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

// runOptions are how run was asked to start or attach.
type runOptions struct {
	follow bool
	view   View
	// changed are the session flags given on the command line.
	changed []string
	// attachOnly refuses to start a session.
	attachOnly bool
	// worktree names the work tree of the clone the session runs in.
	worktree string
	// plan makes the session plan its prd.json first (starter plan).
	plan *contract.PlanSettings
}

func runSession(ctx context.Context, cfg config.Config, workspace string, opts runOptions, stdout, stderr io.Writer) error {
	follow := opts.follow
	in, err := ralph.SessionInput(cfg, workspace)
	if err != nil {
		return err
	}
	in.Plan = opts.plan
	if opts.worktree != "" {
		if err := inWorktree(ctx, &in, opts.worktree, cfg.Dev.Enabled, stderr); err != nil {
			return err
		}
	} else if fi, err := os.Stat(in.Workspace); err != nil || !fi.IsDir() {
		if cfg.Dev.Enabled {
			return fmt.Errorf("workspace %s is not a directory on this machine", in.Workspace)
		}
		fmt.Fprintf(stderr, "warning: workspace %s is not a directory here; it must exist on the worker\n", in.Workspace)
	}

	for _, n := range cfg.Notices() {
		fmt.Fprintln(stderr, n)
	}
	conn, startedServer, err := connect(ctx, cfg, stderr)
	if err != nil {
		return err
	}
	defer conn.close()
	if startedServer && cfg.Codec.Server != "" {
		stop, err := ralph.ServeCodec(cfg.Codec.Server, conn.codec)
		if err != nil {
			return err
		}
		defer stop()
	}
	if startedServer {
		// Nobody else serves this embedded server, so this process is the
		// worker too, for as long as the session runs.
		w := ralph.NewWorker(conn.client, ralph.WorkerOptionsOf(cfg), ralph.NewAgent(cfg), ralph.NewGitHub(cfg))
		if err := w.Start(); err != nil {
			return fmt.Errorf("start worker: %w", err)
		}
		defer w.Stop()
		follow = true
	}

	// A session from before hosts were part of IDs that still runs here
	// is attached to; a new one gets this host's ID.
	id := sessionOf(ctx, conn.client, in.Host, in.Workspace, true)
	check := func() error {
		if !cfg.Dev.Enabled {
			return nil // the worker may be on another machine, with another view of the workspace
		}
		return checkLocally(ctx, in, startedServer)
	}
	attached, previous, err := startOrAttach(ctx, conn.client, cfg.TaskQueue, id, in, opts.attachOnly, check)
	if err != nil {
		return err
	}
	if attached && in.Plan != nil {
		return fmt.Errorf("session %s already runs on %s: plan starts a session of its own; stop that one first (%s)", id, in.Workspace, suggest("stop", id))
	}
	verb := "Started session"
	switch {
	case attached:
		verb = "Attached to running session"
	case previous != "":
		verb = "Started a new session (the last one on this workspace ended " + previous + ")"
	}
	fmt.Fprintf(stdout, "%s %s for %s\n", verb, id, in.Workspace)
	if !startedServer {
		warnNoHostWorker(ctx, conn.client, cfg.TaskQueue, in.Host, stderr)
	}
	if attached && len(opts.changed) > 0 {
		if differ, err := settingsDiffer(ctx, conn, id, in); err == nil && differ {
			fmt.Fprintf(stderr, "The session is already running with its own settings: %s %s ignored.\n"+
				"Change its limits with: %s --max-iterations N --max-runtime D --max-cost USD\n",
				strings.Join(opts.changed, ", "), isOrAre(len(opts.changed)), suggest("set-limits", id))
		}
	}
	if u := conn.workflowURL(id); u != "" {
		fmt.Fprintf(stdout, "Temporal UI: %s\n", u)
	}
	if !follow {
		fmt.Fprintf(stdout, "Follow it with: %s   (or %s)\n", suggest("status", id), suggest("run", "--follow", workspace))
		return nil
	}
	return followSession(ctx, conn, id, opts.view, stdout, startedServer)
}

// startOrAttach starts the session unless one is already running with id.
// previous describes the last session of the workspace when it has ended
// (a new one then starts, with records of its own); with attachOnly no
// session is started.
func startOrAttach(ctx context.Context, c client.Client, taskQueue, id string, in contract.SessionInput, attachOnly bool, check func() error) (attached bool, previous string, err error) {
	desc, err := c.DescribeWorkflowExecution(ctx, id, "")
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
	case err != nil:
		return false, "", fmt.Errorf("describe session %s: %w", id, err)
	case desc.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		return true, "", nil
	default:
		info := desc.GetWorkflowExecutionInfo()
		state := attr(info.GetSearchAttributes().GetIndexedFields(), contract.SearchRalphStatus.GetName(), executionStatus(info.GetStatus()))
		previous = fmt.Sprintf("%s at %s", state, info.GetCloseTime().AsTime().Local().Format("2006-01-02 15:04"))
	}
	if attachOnly {
		if previous != "" {
			return false, previous, fmt.Errorf("no session is running on %s (the last one ended %s); run without --attach-only to start a new one", in.Workspace, previous)
		}
		return false, "", fmt.Errorf("no session is running on %s; run without --attach-only to start one", in.Workspace)
	}
	// What the session would fail on at once fails here, before it
	// leaves a failed session behind.
	if err := check(); err != nil {
		return false, previous, err
	}
	_, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:        id,
		TaskQueue: taskQueue,
		// A finished session may be started again on the same
		// workspace; a running one is attached to, never duplicated.
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		StaticSummary:            "Ralph session on " + workspaceName(in),
		StaticDetails:            "Workspace: `" + in.Workspace + "`" + onHost(in.Host),
		TypedSearchAttributes:    sessionAttributes(in),
	}, workflows.Session, in)
	if err != nil {
		return false, previous, fmt.Errorf("start session %s: %w", id, err)
	}
	return false, previous, nil
}

// checkLocally checks, on this machine, what the session's first
// activity would: the workspace (activities.CheckWorkspace) and, when this
// process is the worker, the agent's binary. A work tree that is not made
// yet is checked in its clone, whose HEAD it will start from.
func checkLocally(ctx context.Context, in contract.SessionInput, isWorker bool) error {
	check := contract.PrepareInput{Workspace: in.Workspace, Task: in.Task, Git: in.Git, Planning: in.Plan != nil}
	if wt := in.Worktree; wt != nil {
		if _, err := os.Stat(wt.Dir()); err != nil {
			check.Workspace, check.Git.AllowDirty = wt.Clone, true
		}
	}
	if _, err := activities.CheckWorkspace(ctx, check); err != nil {
		return err
	}
	if isWorker && len(in.Agent.Command) > 0 {
		if _, err := exec.LookPath(in.Agent.Command[0]); err != nil {
			return temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("agent binary %q not found on PATH", in.Agent.Command[0]), contract.ErrTypeAgentNotFound, nil)
		}
	}
	return nil
}

// settingsDiffer reports whether the running session id was started with
// settings other than in's.
func settingsDiffer(ctx context.Context, conn *connection, id string, in contract.SessionInput) (bool, error) {
	it := conn.client.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	if !it.HasNext() {
		return false, fmt.Errorf("session %s has no history", id)
	}
	e, err := it.Next()
	if err != nil {
		return false, err
	}
	var running contract.SessionInput
	if err := conn.dataConverter.FromPayloads(e.GetWorkflowExecutionStartedEventAttributes().GetInput(), &running); err != nil {
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

func isOrAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

// followSession prints the session as it runs (see follower) until it
// ends and returns its exit status.
func followSession(ctx context.Context, conn *connection, id string, view View, out io.Writer, ownsWorker bool) error {
	var res contract.SessionResult
	done := make(chan error, 1)
	go func() { done <- conn.client.GetWorkflow(ctx, id, "").Get(ctx, &res) }()

	f := newFollower(conn.client, conn.dataConverter, id, out, view)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case err := <-done:
			f.poll(context.WithoutCancel(ctx))
			return sessionEnd(ctx, id, res, err, out, ownsWorker)
		case <-t.C:
			f.poll(ctx)
		}
	}
}

func sessionEnd(ctx context.Context, id string, res contract.SessionResult, err error, out io.Writer, ownsWorker bool) error {
	if err != nil {
		return endedWithError(ctx, "session", id, err, out, ownsWorker)
	}
	verb := "ended"
	if res.Reason.ExitCode() == 2 {
		verb = "stopped by limit"
	}
	fmt.Fprintf(out, "Session %s %s: %s", id, verb, res.Reason)
	if res.Message != "" {
		fmt.Fprintf(out, " (%s)", res.Message)
	}
	fmt.Fprintf(out, "\n%s, $%.4f, %s, %s\n",
		plural(res.Iterations, "iteration"), res.Totals.CostUSD, plural(int(res.Totals.Usage.Total()), "token"), plural(res.Totals.Commits, "commit"))
	if code := res.Reason.ExitCode(); code != 0 {
		return &exitError{code: code}
	}
	return nil
}

// endedWithError reports a workflow (a session or a queue: kind) whose
// wait ended with err: this command interrupted, the workflow cancelled or
// failed.
func endedWithError(ctx context.Context, kind, id string, err error, out io.Writer, ownsWorker bool) error {
	if ctx.Err() != nil {
		if ownsWorker {
			fmt.Fprintf(out, "Interrupted: the %s is saved; run the same command again to resume it.\n"+
				"Waiting up to %s for the running agent to stop (Ctrl-C again to stop at once)...\n", kind, ralph.WorkerStopTimeout)
		} else {
			fmt.Fprintf(out, "Detached: %s %s keeps running on its worker.\n", kind, id)
		}
		return &exitError{code: 130}
	}
	var canceled *temporal.CanceledError
	if errors.As(err, &canceled) {
		fmt.Fprintf(out, "%s%s %s ended: %s\n", strings.ToUpper(kind[:1]), kind[1:], id, contract.ReasonCancelled)
		return &exitError{code: contract.ReasonCancelled.ExitCode()}
	}
	return &exitError{code: 1, err: fmt.Errorf("%s %s failed: %s", kind, id, failureMessage(err))}
}

// failureMessage is what to print of a workflow's failure (explain).
func failureMessage(err error) string { return explain(err) }

// plural is n and what, in the plural unless n is 1.
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// onHost is the host part of a session's static details.
func onHost(host string) string {
	if host == "" {
		return ""
	}
	return " on host `" + host + "`"
}

// sessionAttributes are the search attributes a session starts with: its
// host, so that it is found by host before its first activity runs.
func sessionAttributes(in contract.SessionInput) temporal.SearchAttributes {
	if in.Host == "" {
		return temporal.SearchAttributes{}
	}
	return temporal.NewSearchAttributes(contract.SearchRalphHost.ValueSet(in.Host))
}

// inWorktree makes in a session in the work tree name of the clone that
// in.Workspace is in.
func inWorktree(ctx context.Context, in *contract.SessionInput, name string, local bool, stderr io.Writer) error {
	if err := activities.ValidWorktreeName(name); err != nil {
		return err
	}
	clone := in.Workspace
	if repo, err := git.Open(ctx, clone); err == nil {
		clone = repo.Dir
		if pending, err := repo.Status(ctx); err == nil && len(pending) > 0 {
			wt := contract.SessionWorktree{Clone: clone, Name: name}
			if _, err := os.Stat(wt.Dir()); err != nil {
				fmt.Fprintf(stderr, "note: the work tree starts at the clone's HEAD; its uncommitted changes (%s) are not in it\n", strings.Join(firstFew(pending, 5), ", "))
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

// workspaceName names in's workspace for a person: its directory, or the
// work tree and its clone.
func workspaceName(in contract.SessionInput) string {
	if wt := in.Worktree; wt != nil {
		return fmt.Sprintf("%s (work tree %s, branch %s)", filepath.Base(wt.Clone), wt.Name, wt.Branch())
	}
	return filepath.Base(in.Workspace)
}
