package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/activities/github"
	"github.com/durable-ralph/ralph/config"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/ralph"
	"github.com/durable-ralph/ralph/workflows"
)

func newQueueCmd() *cobra.Command {
	var follow, untilIdle bool
	cmd := &cobra.Command{
		Use:   "queue [DIR]",
		Short: "Start the GitHub issue queue of a clone, or attach to the one running",
		Long: "queue starts the issue queue of the repository whose clone is DIR (default: the current\n" +
			"directory); the repository comes from the clone's origin URL, or --repo owner/name. The queue\n" +
			"takes open issues labelled queue.label (default ralph-ready) by someone with write access, one\n" +
			"at a time, runs a session on each in .ralph/worktrees/issue-N on branch ralph/issue-N, pushes\n" +
			"it and opens a pull request. Its ID is ralph-queue-<owner>-<repo>; running queue again attaches.\n" +
			"The GitHub token is read by the worker from its own environment (github.token-env).\n" +
			"--follow prints one line per queue event; --until-idle ends the queue when no ready issue is left.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, clone, err := loadWithWorkspace(cmd, args)
			if err != nil {
				return err
			}
			in, err := queueInput(cmd.Context(), cfg, clone)
			if err != nil {
				return err
			}
			in.Settings.UntilIdle = untilIdle
			return runQueue(cmd.Context(), cfg, in, follow, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "print one line per queue event until the queue ends, then exit with its code")
	cmd.Flags().BoolVar(&untilIdle, "until-idle", false, "end the queue (complete, exit 0) when no ready issue is left, instead of polling")
	return cmd
}

// queueInput builds the queue's input for the clone in dir from cfg.
func queueInput(ctx context.Context, cfg config.Config, dir string) (contract.QueueInput, error) {
	sess, err := ralph.SessionInput(cfg, dir)
	if err != nil {
		return contract.QueueInput{}, err
	}
	clone := sess.Workspace
	if fi, err := os.Stat(clone); err != nil || !fi.IsDir() {
		return contract.QueueInput{}, fmt.Errorf("clone %s is not a directory", clone)
	}
	repo := cfg.GitHub.Repo
	if repo == "" {
		origin, err := originURL(ctx, clone)
		if err != nil {
			return contract.QueueInput{}, err
		}
		if repo = repoFromURL(origin); repo == "" {
			return contract.QueueInput{}, fmt.Errorf("cannot tell the GitHub repository from origin %q of %s: give it with --repo owner/name (github.repo)", origin, clone)
		}
	}
	owner, name, err := contract.ParseRepo(repo)
	if err != nil {
		return contract.QueueInput{}, fmt.Errorf("github.repo: %w", err)
	}
	return contract.QueueInput{
		Settings: contract.QueueSettings{
			Repo:         contract.Repo{Owner: owner, Name: name, APIURL: cfg.GitHub.APIURL, TokenEnv: cfg.GitHub.TokenEnv},
			Clone:        clone,
			Label:        cfg.Queue.Label,
			PollInterval: cfg.Queue.PollInterval,
			MaxIssues:    cfg.Queue.MaxIssues,
			MaxCostUSD:   cfg.Queue.MaxCostUSD,
			BaseBranch:   cfg.Queue.BaseBranch,
			Draft:        cfg.Queue.Draft,
		},
		Session: sess,
	}, nil
}

func originURL(ctx context.Context, dir string) (string, error) {
	out, err := exec.CommandContext(ctx, "git", "-C", dir, "remote", "get-url", "origin").Output()
	if err != nil {
		return "", fmt.Errorf("%s has no origin remote (is it a clone of the GitHub repository?); give the repository with --repo owner/name: %w", dir, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// githubURL matches the https and ssh forms of a repository URL:
// https://host/owner/name(.git), git@host:owner/name(.git),
// ssh://git@host(:port)/owner/name(.git).
var githubURL = regexp.MustCompile(`^(?:https?://[^/]+/|ssh://[^/]+/|[^@/\s]+@[^:/\s]+:)([^/\s]+)/([^/\s]+?)(?:\.git)?/?$`)

// repoFromURL is owner/name of a remote URL, or "" when it is not one of
// the forms GitHub uses.
func repoFromURL(u string) string {
	m := githubURL.FindStringSubmatch(strings.TrimSpace(u))
	if m == nil {
		return ""
	}
	return m[1] + "/" + m[2]
}

func runQueue(ctx context.Context, cfg config.Config, in contract.QueueInput, follow bool, stdout, stderr io.Writer) error {
	for _, n := range cfg.Notices() {
		fmt.Fprintln(stderr, n)
	}
	conn, startedServer, err := connect(ctx, cfg, stderr)
	if err != nil {
		return err
	}
	defer conn.close()
	if startedServer {
		w := ralph.NewWorker(conn.client, ralph.WorkerOptionsOf(cfg), ralph.NewAgent(cfg), ralph.NewGitHub(cfg))
		if err := w.Start(); err != nil {
			return fmt.Errorf("start worker: %w", err)
		}
		defer w.Stop()
		follow = true
		name, token := github.Token(os.Getenv, cfg.GitHub.TokenEnv)
		if token == "" {
			fmt.Fprintf(stderr, "warning: $%s is empty here, and this process is the worker: the queue will fail its preflight\n", name)
		}
	}
	s := in.Settings
	id := orLegacy(ctx, conn.client, contract.QueueWorkflowID(cfg.Worker.HostID, s.Repo.Owner, s.Repo.Name), contract.QueueWorkflowID("", s.Repo.Owner, s.Repo.Name), true)
	_, err = conn.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                cfg.TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		StaticSummary:            "Ralph issue queue of " + s.Repo.FullName(),
		StaticDetails:            fmt.Sprintf("Clone: `%s`; label `%s`", s.Clone, s.Label),
		TypedSearchAttributes: temporal.NewSearchAttributes(
			contract.SearchRalphRepo.ValueSet(s.Repo.FullName()), contract.SearchRalphHost.ValueSet(cfg.Worker.HostID)),
	}, workflows.IssueQueue, in)
	if err != nil {
		return fmt.Errorf("start queue %s: %w", id, err)
	}
	fmt.Fprintf(stdout, "Issue queue %s for %s (clone %s, label %q)\n", id, s.Repo.FullName(), s.Clone, s.Label)
	if u := conn.workflowURL(id); u != "" {
		fmt.Fprintf(stdout, "Temporal UI: %s\n", u)
	}
	if !follow {
		fmt.Fprintf(stdout, "Follow it with: %s   (or %s)\n", suggest("status", id), suggest("queue", "--follow", s.Clone))
		return nil
	}
	return followQueue(ctx, conn.client, id, stdout, startedServer)
}

func queryQueue(ctx context.Context, c client.Client, id string) (contract.QueueStatus, error) {
	v, err := c.QueryWorkflow(ctx, id, "", contract.QueryStatus)
	if err != nil {
		return contract.QueueStatus{}, fmt.Errorf("query status of %s: %w", id, err)
	}
	var st contract.QueueStatus
	if err := v.Get(&st); err != nil {
		return contract.QueueStatus{}, fmt.Errorf("decode status of %s: %w", id, err)
	}
	return st, nil
}

// followQueue prints the queue's events as they happen until the queue
// ends, through every continue-as-new, and returns its exit status.
func followQueue(ctx context.Context, c client.Client, id string, out io.Writer, ownsWorker bool) error {
	var res contract.QueueResult
	done := make(chan error, 1)
	// GetWorkflow with no run ID follows the chain of continue-as-new runs.
	go func() { done <- c.GetWorkflow(ctx, id, "").Get(ctx, &res) }()
	last := -1
	poll := func() {
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		st, err := queryQueue(qctx, c, id)
		if err != nil {
			return
		}
		if last < 0 && len(st.Events) > 0 {
			// Attaching: show the story so far (what the status keeps).
			last = st.Events[0].Seq - 1
		}
		for _, e := range st.Events {
			if e.Seq > last {
				fmt.Fprintf(out, "%s  %s\n", e.At.Local().Format(time.TimeOnly), e.Text)
				last = e.Seq
			}
		}
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case err := <-done:
			poll()
			return queueEnd(ctx, id, res, err, out, ownsWorker)
		case <-t.C:
			poll()
		}
	}
}

func queueEnd(ctx context.Context, id string, res contract.QueueResult, err error, out io.Writer, ownsWorker bool) error {
	if err != nil {
		return endedWithError(ctx, "queue", id, err, out, ownsWorker)
	}
	t := res.Totals
	fmt.Fprintf(out, "Queue %s ended: %s", id, res.Reason)
	if res.Message != "" {
		fmt.Fprintf(out, " (%s)", res.Message)
	}
	fmt.Fprintf(out, "\n%d issues done, %d failed, %d skipped; %d iterations, $%.4f\n", t.Done, t.Failed, t.Skipped, t.Iterations, t.CostUSD)
	if code := res.Reason.ExitCode(); code != 0 {
		return &exitError{code: code}
	}
	return nil
}

// queueTarget is the queue ID for --queue DIR: the clone's repository.
func queueTarget(cmd *cobra.Command, c client.Client, dir string) (string, error) {
	cfg, err := config.Load(cmd.Flags(), dir)
	if err != nil {
		return "", err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	in, err := queueInput(cmd.Context(), cfg, abs)
	if err != nil {
		return "", err
	}
	r := in.Settings.Repo
	return orLegacy(cmd.Context(), c, contract.QueueWorkflowID(cfg.Worker.HostID, r.Owner, r.Name), contract.QueueWorkflowID("", r.Owner, r.Name), false), nil
}

// isQueueID reports whether id names an issue queue.
func isQueueID(id string) bool { return strings.HasPrefix(id, "ralph-queue-") }

// queueStatus prints what a queue's status query knows, or the result of
// a queue that has ended.
func queueStatus(ctx context.Context, conn *connection, id, taskQueue string, started bool, out io.Writer) error {
	desc, err := conn.client.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return fmt.Errorf("queue %s: %w", id, err)
	}
	info := desc.GetWorkflowExecutionInfo()
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, qerr := queryQueue(qctx, conn.client, id)
	if qerr != nil {
		fmt.Fprintf(out, "Queue      %s\nExecution  %s\n", id, executionStatus(info.GetStatus()))
		if info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			return fmt.Errorf("%w (is a worker running for task queue %q?)", qerr, taskQueue)
		}
		var res contract.QueueResult
		if err := conn.client.GetWorkflow(ctx, id, "").Get(ctx, &res); err != nil {
			fmt.Fprintf(out, "Failure    %s\n", failureMessage(err))
			return nil
		}
		fmt.Fprintf(out, "Reason     %s (%s)\nTotals     %d done, %d failed, %d skipped, $%.4f\n",
			res.Reason, res.Message, res.Totals.Done, res.Totals.Failed, res.Totals.Skipped, res.Totals.CostUSD)
		return nil
	}
	url := conn.workflowURL(id)
	if started {
		url = ""
	}
	printQueueStatus(out, st, executionStatus(info.GetStatus()), url)
	return nil
}

func printQueueStatus(out io.Writer, st contract.QueueStatus, execStatus, url string) {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	row := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s\t%s\n", k, fmt.Sprintf(format, args...)) }
	row("Queue", "%s", st.QueueID)
	row("Repository", "%s (clone %s)", st.Repo, st.Clone)
	state := string(st.State)
	if st.Reason != "" {
		state += " (" + string(st.Reason) + ")"
	}
	if st.StopRequested && st.Reason == "" {
		state += ", stop requested"
	}
	if st.Paused && st.State != contract.StatePaused {
		state += ", pause requested"
	}
	row("State", "%s; execution %s", state, execStatus)
	if st.Message != "" {
		row("Message", "%s", st.Message)
	}
	row("Issues", "labelled %q, pull requests to %s", st.Label, st.BaseBranch)
	t := st.Totals
	row("Totals", "%d done, %d failed, %d skipped; %d iterations, $%.4f", t.Done, t.Failed, t.Skipped, t.Iterations, t.CostUSD)
	s := st.Settings
	limits := fmt.Sprintf("poll every %s", s.PollInterval)
	if s.MaxIssues > 0 {
		limits += fmt.Sprintf(", at most %d issues", s.MaxIssues)
	}
	if s.MaxCostUSD > 0 {
		limits += fmt.Sprintf(", at most $%.2f", s.MaxCostUSD)
	}
	if s.UntilIdle {
		limits += ", ends when idle"
	}
	row("Limits", "%s", limits)
	if !st.NextPollAt.IsZero() {
		row("Next poll", "%s (starter poke %s looks now)", st.NextPollAt.Local().Format(time.DateTime), st.QueueID)
	}
	row("Runs", "%d (one per issue, continue-as-new)", st.Runs)
	if url != "" {
		row("UI", "%s", url)
	}
	tw.Flush()
	if c := st.Current; c != nil {
		fmt.Fprintf(out, "\nWorking on #%d %s (%s, for %s)\n", c.Number, c.Title, c.Phase, time.Since(c.StartedAt).Round(time.Second))
		fmt.Fprintf(out, "  session %s, branch %s\n", c.SessionID, c.Branch)
		if c.Worktree != "" {
			fmt.Fprintf(out, "  work tree %s\n", c.Worktree)
		}
		for _, it := range c.Iterations {
			fmt.Fprintln(out, "  "+it.Line())
		}
	}
	if len(st.Guidance) > 0 {
		fmt.Fprintln(out, "\nStanding guidance for every later issue (withdraw with: starter guide --withdraw N):")
		for i, g := range st.Guidance {
			fmt.Fprintf(out, "  %d. %s\n", i+1, g)
		}
	}
	if len(st.Recent) > 0 {
		fmt.Fprintln(out, "\nRecent issues:")
		for _, o := range st.Recent {
			line := fmt.Sprintf("  #%d %s: %s, %d iterations, $%.4f", o.Number, o.Title, o.Reason, o.Iterations, o.CostUSD)
			if o.PR != 0 {
				line += fmt.Sprintf(", PR #%d %s", o.PR, o.PRURL)
			} else if o.Message != "" {
				line += " (" + o.Message + ")"
			}
			fmt.Fprintln(out, line)
		}
	}
	if len(st.Skipped) > 0 {
		fmt.Fprintln(out, "\nSkipped (not taken, not commented on):")
		for _, s := range st.Skipped {
			fmt.Fprintf(out, "  #%d %s: %s\n", s.Number, s.Title, s.Reason)
		}
	}
}
