package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/activities/github"
	"github.com/durable-ralph/ralph/app"
	"github.com/durable-ralph/ralph/config"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/words"
	"github.com/durable-ralph/ralph/sandbox"
	"github.com/durable-ralph/ralph/workflows/queue"
)

// queueCommand is `starter queue`: it starts the issue queue of a clone,
// or attaches to the one running.
type queueCommand struct {
	base
	follow, untilIdle bool
}

func (s *queueCommand) flags(f *pflag.FlagSet) {
	f.BoolVarP(&s.follow, "follow", "f", false, "print one line per queue event until the queue ends, then exit with its code")
	f.BoolVar(&s.untilIdle, "until-idle", false, "end the queue (complete, exit 0) when no ready issue is left, instead of polling")
}

func (s *queueCommand) run(cctx *commandContext, args []string) error {
	cfg, clone, err := loadToStart(s.cmd, args)
	if err != nil {
		return err
	}
	in, err := queueInput(cctx, cfg, clone)
	if err != nil {
		return err
	}
	in.Settings.UntilIdle = s.untilIdle
	return cctx.runQueue(cfg, in, s.follow, config.ChangedFlags(s.cmd.Flags(), config.WorkerFlags), hostIsHere(s.cmd.Flags(), cfg.Worker.HostID))
}

// queueInput builds the queue's input for the clone in dir from cfg.
func queueInput(ctx context.Context, cfg config.Config, dir string) (contract.QueueInput, error) {
	sess, err := issueSession(cfg, dir)
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
	settings, err := queueSettings(cfg, repo, clone)
	if err != nil {
		return contract.QueueInput{}, err
	}
	return contract.QueueInput{Settings: settings, Session: sess}, nil
}

// issueSession is the template of the sessions of issues in the clone
// dir, from cfg.
func issueSession(cfg config.Config, dir string) (contract.SessionInput, error) {
	if cfg.Agent.Sandbox == "" {
		// Issue text is untrusted: an issue's agent runs contained or
		// not at all, unless agent.sandbox says otherwise.
		cfg.Agent.Sandbox = sandbox.ModeRequired
	}
	sess, err := app.SessionInput(cfg, dir)
	if err != nil {
		return contract.SessionInput{}, err
	}
	if sess.Limits.OnLimit == "" {
		// Nobody watches an issue's session: at a limit it asks on the
		// issue (and in chat) rather than throwing the work away.
		sess.Limits.OnLimit = contract.OnLimitAsk
	}
	return sess, nil
}

// queueSettings are the queue settings cfg gives the repository repo
// (owner/name) whose clone is clone.
func queueSettings(cfg config.Config, repo, clone string) (contract.QueueSettings, error) {
	owner, name, err := contract.ParseRepo(repo)
	if err != nil {
		return contract.QueueSettings{}, fmt.Errorf("github.repo: %w", err)
	}
	return contract.QueueSettings{
		Repo:          contract.Repo{Owner: owner, Name: name, APIURL: cfg.GitHub.APIURL, TokenEnv: cfg.GitHub.TokenEnv},
		Clone:         clone,
		Label:         cfg.Queue.Label,
		PollInterval:  cfg.Queue.PollInterval,
		MaxIssues:     cfg.Queue.MaxIssues,
		Parallel:      cfg.Queue.Parallel,
		MaxCostUSD:    cfg.Queue.MaxCostUSD,
		MaxCostPerDay: cfg.Queue.MaxCostPerDay,
		BaseBranch:    cfg.Queue.BaseBranch,
		Draft:         cfg.Queue.Draft,
		Pull:          cfg.Queue.PullSettings(),
		AdoptPRs:      cfg.Queue.AdoptPRs,
	}, nil
}

// runQueue starts (or attaches to) the queue of in and follows it when
// asked or when this process is its worker. workerFlags are the worker
// flags given on the command line; hostHere says the queue's host is
// this machine (hostIsHere).
func (cctx *commandContext) runQueue(cfg config.Config, in contract.QueueInput, follow bool, workerFlags []string, hostHere bool) error {
	conn, err := cctx.connectToRun(cfg)
	if err != nil {
		return err
	}
	defer conn.close()
	if err := needToken(conn); err != nil {
		return err
	}
	cctx.warnWorkerFlags(conn, "queue", workerFlags)
	s := in.Settings
	id := orLegacy(cctx, conn.client, contract.QueueWorkflowID(cfg.Worker.HostID, s.Repo.Owner, s.Repo.Name), contract.QueueWorkflowID("", s.Repo.Owner, s.Repo.Name), true)
	if err := cctx.queuePreflight(conn, id, in.Session, hostHere); err != nil {
		return err
	}
	_, err = conn.client.ExecuteWorkflow(cctx, client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                cfg.TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		StaticSummary:            "Ralph issue queue of " + s.Repo.FullName(),
		StaticDetails:            fmt.Sprintf("Clone: `%s`; label `%s`", s.Clone, s.Label),
		TypedSearchAttributes: temporal.NewSearchAttributes(
			temporal.NewSearchAttributeKeyKeyword(contract.SearchRalphRepo).ValueSet(s.Repo.FullName()), temporal.NewSearchAttributeKeyKeyword(contract.SearchRalphHost).ValueSet(cfg.Worker.HostID)),
	}, queue.IssueQueue, in)
	if err != nil {
		return fmt.Errorf("start queue %s: %w", id, err)
	}
	fmt.Fprintf(cctx.stdout, "Issue queue %s for %s (clone %s, label %q)\n", id, s.Repo.FullName(), s.Clone, s.Label)
	if conn.started {
		// The issues' sessions run with the queue's agent.sandbox (of the
		// queue that runs, if it was running already).
		box := in.Session.Agent.Sandbox
		if running, err := startInput[contract.QueueInput](cctx, conn, id); err == nil {
			box = running.Session.Agent.Sandbox
		}
		fmt.Fprintln(cctx.stderr, app.SessionSandboxNotice("this queue's sessions", box))
	}
	if !cctx.linkAndHint(conn, id, follow, "queue", s.Clone) {
		return nil
	}
	return cctx.followQueue(conn, id)
}

// queuePreflight checks the agents of the sessions of the queue id on
// the worker of their host before the queue starts (preflight), and, on
// this machine (this process is the worker, or hostHere), that a sandbox
// the sessions require is here; a queue that runs already is attached to
// as it is.
func (cctx *commandContext) queuePreflight(conn *connection, id string, sess contract.SessionInput, hostHere bool) error {
	desc, err := conn.client.DescribeWorkflowExecution(cctx, id, "")
	if err == nil && desc.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return nil
	}
	if conn.started || hostHere {
		if err := app.NeedSandbox(sess.Agent.Sandbox, app.SandboxProblem); err != nil {
			return err
		}
	}
	if conn.started {
		return app.LookAgents(app.AgentsOf(sess))
	}
	return cctx.preflight(conn, sess.Host, app.AgentsOf(sess), nil)
}

// needToken refuses to start a queue whose worker is this process when
// it has no GitHub token nor app: the queue would fail its preflight at
// once. Another worker reads its own environment, which the preflight
// checks.
func needToken(conn *connection) error {
	if !conn.started || conn.cfg.GitHub.TokenFile != "" || conn.cfg.GitHub.UsesApp() {
		// Another worker's token its preflight checks; Load read the
		// file, and the app's key.
		return nil
	}
	name, token := github.Token(os.Getenv, conn.cfg.GitHub.TokenEnv)
	if token != "" {
		return nil
	}
	if name == "GITHUB_TOKEN" {
		name = "GITHUB_TOKEN (or GH_TOKEN)"
	}
	return fmt.Errorf("no GitHub token: set %s in this environment, or give a file holding it with --github-token-file: this process is the queue's worker, and the queue reads issues and opens pull requests with it", name)
}

// followQueue prints the queue's events as they happen until the queue
// ends, through every continue-as-new, and returns its exit status.
func (cctx *commandContext) followQueue(conn *connection, id string) error {
	var res contract.QueueResult
	done := make(chan error, 1)
	// GetWorkflow with no run ID follows the chain of continue-as-new runs.
	go func() { done <- conn.await(cctx, id, &res) }()
	last := -1
	followers := map[string]int{} // follower ID -> last event shown
	told := map[string]bool{}     // the waits said: questions, heads without checks
	poll := func() {
		qctx, cancel := context.WithTimeout(cctx, 5*time.Second)
		defer cancel()
		st, err := query[contract.QueueStatus](qctx, conn.client, nil, id)
		if err != nil {
			return
		}
		if last < 0 && len(st.Events) > 0 {
			// Attaching: show the story so far (what the status keeps).
			last = st.Events[0].Seq - 1
		}
		for _, e := range st.Events {
			if e.Seq > last {
				fmt.Fprintf(cctx.stdout, "%s  %s\n", e.At.Local().Format(time.TimeOnly), e.Text)
				last = e.Seq
			}
		}
		working := st.Working
		if c := st.Current; c != nil {
			working = append(working, *c)
		}
		for _, c := range working {
			cctx.issueQuestion(qctx, conn, c, told)
		}
		for _, f := range st.Followers {
			cctx.followerEvents(qctx, conn, f, followers, told)
		}
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case err := <-done:
			poll()
			return cctx.queueEnd(id, res, err, conn.started)
		case <-t.C:
			poll()
		}
	}
}

// followerEvents prints the events of the follower f of an issue's pull
// request after the last one shown (seen, by follower ID), and, once per
// head (told), that the head has no checks yet: the follower waits
// (workflows' noChecksGrace) for checks that a repository without CI
// never gets, silent, before it goes on to the merge.
func (cctx *commandContext) followerEvents(ctx context.Context, conn *connection, f contract.Follower, seen map[string]int, told map[string]bool) {
	st, err := query[contract.FollowStatus](ctx, conn.client, nil, f.WorkflowID)
	if err != nil {
		return
	}
	for _, e := range st.Events {
		if e.Seq > seen[f.WorkflowID] {
			fmt.Fprintf(cctx.stdout, "%s  #%d pull request: %s\n", e.At.Local().Format(time.TimeOnly), f.Issue, e.Text)
			seen[f.WorkflowID] = e.Seq
		}
	}
	if key := f.WorkflowID + "@" + st.Head; st.State == contract.StateWaitingForChecks && st.Head != "" && st.Checks.Total == 0 && !told[key] {
		told[key] = true
		fmt.Fprintf(cctx.stdout, "%s  #%d pull request: no checks on %s yet; it waits about a minute for them (a repository without CI gets none), then goes on\n",
			time.Now().Format(time.TimeOnly), f.Issue, contract.ShortSHA(st.Head))
	}
}

// issueQuestion says, once per checkpoint (told), that the session of
// the issue c waits for an answer: the question, and how to answer it.
// The session's search attributes say when it waits; only then is its
// status asked.
func (cctx *commandContext) issueQuestion(ctx context.Context, conn *connection, c contract.CurrentIssue, told map[string]bool) {
	if c.SessionID == "" {
		return
	}
	desc, err := conn.client.DescribeWorkflowExecution(ctx, c.SessionID, "")
	if err != nil || desc.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING ||
		attr(desc.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields(), contract.SearchRalphStatus, "") != string(contract.StateAwaitingHuman) {
		return
	}
	st, err := query[contract.Status](ctx, conn.client, nil, c.SessionID)
	cp := st.Pending
	if err != nil || cp == nil || told[c.SessionID+"/"+cp.ID] {
		return
	}
	told[c.SessionID+"/"+cp.ID] = true
	fmt.Fprintf(cctx.stdout, "%s  #%d waits for an answer: checkpoint %s (%s): %s\n",
		time.Now().Format(time.TimeOnly), c.Number, cp.ID, cp.Type, words.Clip(cp.Question, 200))
	if len(cp.Options) > 0 {
		fmt.Fprintf(cctx.stdout, "  options: %s\n", strings.Join(cp.Options, " / "))
	}
	fmt.Fprintf(cctx.stdout, "  answer on the issue, or: %s --answer \"...\"\n", conn.suggest("respond", c.SessionID, "--checkpoint", cp.ID))
}

// queueEnd says how the queue id ended and returns its exit status.
func (cctx *commandContext) queueEnd(id string, res contract.QueueResult, err error, ownsWorker bool) error {
	if err != nil {
		return cctx.endedWithError("queue", id, err, ownsWorker)
	}
	out := cctx.stdout
	t := res.Totals
	fmt.Fprintf(out, "Queue %s ended: %s", id, res.Reason)
	if res.Message != "" {
		fmt.Fprintf(out, " (%s)", res.Message)
	}
	fmt.Fprintf(out, "\n%s done, %d failed, %d skipped; %s, %s\n", words.Count(t.Done, "issue"), t.Failed, t.Skipped, words.Count(t.Iterations, "iteration"), words.Dollars(t.CostUSD))
	if code := res.Reason.ExitCode(); code != 0 {
		return &exitError{code: code}
	}
	return nil
}

// queueTarget is the queue ID for --queue DIR: the clone's repository.
func queueTarget(ctx context.Context, cmd *cobra.Command, c client.Client, dir string) (string, error) {
	cfg, err := config.Load(cmd.Flags(), dir)
	if err != nil {
		return "", err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	in, err := queueInput(ctx, cfg, abs)
	if err != nil {
		return "", err
	}
	r := in.Settings.Repo
	return orLegacy(ctx, c, contract.QueueWorkflowID(cfg.Worker.HostID, r.Owner, r.Name), contract.QueueWorkflowID("", r.Owner, r.Name), false), nil
}

// isQueueID reports whether id names an issue queue.
func isQueueID(id string) bool { return strings.HasPrefix(id, "ralph-queue-") }
