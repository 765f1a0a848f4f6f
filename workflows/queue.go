package workflows

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/durable-ralph/ralph/internal/words"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/contract"
)

// Bounds of what a queue keeps and carries.
const (
	queueRecentLimit = 10
	queueEventLimit  = 50
	queueSkipLimit   = 20
	// queuePollsPerRun bounds the idle polls of one run: a queue idle for
	// weeks continues as new before its history grows large.
	queuePollsPerRun = 100
	// memoriesFile is the clone's learnings file shared by all issues.
	memoriesFile = ".ralph/memories.md"
)

// IssueQueue works through a repository's GitHub issues that carry the
// ready label, one issue per run: it picks the oldest issue a trusted
// person labelled, claims it, runs a child Session on it in a work tree
// of its own, pushes the branch, opens the pull request and reports on the
// issue; then it continues as new, so every issue starts from a fresh
// history. With nothing to do it sleeps on a timer for the poll interval
// (a poke signal wakes it).
func IssueQueue(ctx workflow.Context, in contract.QueueInput) (contract.QueueResult, error) {
	q, err := newQueue(ctx, in)
	if err != nil {
		return contract.QueueResult{}, err
	}
	return q.run(ctx)
}

type queue struct {
	in      contract.QueueInput
	logger  log.Logger
	status  contract.QueueStatus
	seq     int
	paused  bool
	stop    string
	poke    bool
	pending []contract.SessionProgress
	sig     queueSignals
	polls   int
	pre     contract.PreflightResult
	// host routes the git activities to the clone's machine.
	host host
	// beforeOffline is the state to go back to when the host is back.
	beforeOffline contract.State
}

type queueSignals struct {
	stop, pause, resume, guide, withdraw, poke, progress workflow.ReceiveChannel
}

func newQueue(ctx workflow.Context, in contract.QueueInput) (*queue, error) {
	if err := validateQueue(in); err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrTypeInvalidInput, nil)
	}
	info := workflow.GetInfo(ctx)
	q := &queue{in: in}
	q.host = host{id: in.Session.Host, timeout: in.Session.HostTimeout, offline: q.hostOffline}
	q.status = contract.QueueStatus{
		QueueID:   info.WorkflowExecution.ID,
		Repo:      in.Settings.Repo.FullName(),
		Clone:     in.Settings.Clone,
		Label:     in.Settings.Label,
		State:     contract.StateStarting,
		StartedAt: workflow.Now(ctx),
		Settings:  in.Settings,
	}
	if c := in.CarryOver; c != nil {
		q.status.StartedAt = c.StartedAt
		q.status.Totals = c.Totals
		q.status.Recent = c.Recent
		q.status.Guidance = c.Guidance
		q.status.Runs = c.Runs
		q.status.Events = c.Events
		q.status.Skipped = c.Skipped
		q.seq = c.EventSeq
		q.paused = c.Paused
		q.stop = c.Stop
		q.poke = c.Poke
		q.pre = c.Preflight
	}
	q.status.Runs++
	q.status.BaseBranch = q.base()
	q.logger = log.With(workflow.GetLogger(ctx), "queue", q.status.QueueID)
	if err := workflow.SetQueryHandlerWithOptions(ctx, contract.QueryStatus, func() (contract.QueueStatus, error) {
		st := q.status
		st.Paused, st.StopRequested = q.paused, q.stop != ""
		return st, nil
	}, workflow.QueryHandlerOptions{Description: "State, current issue, recent outcomes and totals of this issue queue"}); err != nil {
		return nil, fmt.Errorf("register %s query: %w", contract.QueryStatus, err)
	}
	ch := func(name, desc string) workflow.ReceiveChannel {
		return workflow.GetSignalChannelWithOptions(ctx, name, workflow.SignalChannelOptions{Description: desc})
	}
	q.sig = queueSignals{
		stop:     ch(contract.SignalStop, "Finish the current issue, then end the queue as stopped"),
		pause:    ch(contract.SignalPause, "Take no new issue until resumed (the current one finishes)"),
		resume:   ch(contract.SignalResume, "Take issues again"),
		guide:    ch(contract.SignalGuide, "Standing guidance for every later issue's prompt (a JSON string)"),
		withdraw: ch(contract.SignalWithdraw, "Withdraw standing guidance: its text, or its number from 1 (a JSON string)"),
		poke:     ch(contract.SignalPoke, "Look for ready issues now instead of at the next poll"),
		progress: ch(contract.SignalSessionProgress, "An iteration of the current issue's session (sent by the session)"),
	}
	workflow.Go(ctx, q.listen)
	return q, nil
}

func validateQueue(in contract.QueueInput) error {
	var problems []string
	s := in.Settings
	if s.Repo.Owner == "" || s.Repo.Name == "" {
		problems = append(problems, "repository owner and name are required")
	}
	if s.Clone == "" || !filepath.IsAbs(s.Clone) {
		problems = append(problems, fmt.Sprintf("clone %q must be an absolute path", s.Clone))
	}
	if strings.TrimSpace(s.Label) == "" {
		problems = append(problems, "the ready label is empty")
	}
	if s.PollInterval < time.Second {
		problems = append(problems, "the poll interval must be at least 1s")
	}
	if s.MaxIssues < 0 || s.MaxCostUSD < 0 {
		problems = append(problems, "max issues and max cost must not be negative")
	}
	tmpl := in.Session
	tmpl.Workspace = s.Clone
	if err := validateInput(tmpl); err != nil {
		problems = append(problems, "session template: "+err.Error())
	}
	if len(problems) > 0 {
		return fmt.Errorf("invalid queue input: %s", strings.Join(problems, "; "))
	}
	return nil
}

// listen applies signals as they arrive (see session.listen).
func (q *queue) listen(ctx workflow.Context) {
	for {
		err := workflow.Await(ctx, func() bool {
			return q.sig.stop.Len()+q.sig.pause.Len()+q.sig.resume.Len()+q.sig.guide.Len()+
				q.sig.withdraw.Len()+q.sig.poke.Len()+q.sig.progress.Len() > 0
		})
		if err != nil {
			return
		}
		q.drain(ctx)
	}
}

// drain applies every signal that has arrived.
func (q *queue) drain(ctx workflow.Context) {
	for {
		got := false
		var stop contract.StopSignal
		for q.sig.stop.ReceiveAsync(&stop) {
			q.stop = "stop requested"
			if stop.Reason != "" {
				q.stop += ": " + stop.Reason
			}
			q.event(ctx, 0, q.stop+"; the queue ends after the current issue")
			stop, got = contract.StopSignal{}, true
		}
		for q.sig.pause.ReceiveAsync(nil) {
			if !q.paused {
				q.event(ctx, 0, "paused: no new issue until resumed")
			}
			q.paused, got = true, true
		}
		for q.sig.resume.ReceiveAsync(nil) {
			if q.paused {
				q.event(ctx, 0, "resumed")
			}
			q.paused, got = false, true
		}
		var text string
		for q.sig.guide.ReceiveAsync(&text) {
			if text = strings.TrimSpace(text); text != "" {
				q.status.Guidance = append(q.status.Guidance, text)
				q.event(ctx, 0, fmt.Sprintf("guidance %d added for every later issue: %s", len(q.status.Guidance), words.Clip(text, 80)))
			}
			text, got = "", true
		}
		for q.sig.withdraw.ReceiveAsync(&text) {
			q.withdraw(ctx, text)
			text, got = "", true
		}
		for q.sig.poke.ReceiveAsync(nil) {
			q.poke, got = true, true
		}
		var p contract.SessionProgress
		for q.sig.progress.ReceiveAsync(&p) {
			q.pending = append(q.pending, p)
			p, got = contract.SessionProgress{}, true
		}
		if !got {
			return
		}
	}
}

func (q *queue) withdraw(ctx workflow.Context, text string) {
	text = strings.TrimSpace(text)
	g := q.status.Guidance
	idx := -1
	if n, err := strconv.Atoi(text); err == nil && n >= 1 && n <= len(g) {
		idx = n - 1
	} else {
		for i, t := range g {
			if t == text {
				idx = i
			}
		}
	}
	if idx < 0 {
		q.logger.Warn("withdraw matched no guidance", "text", text)
		return
	}
	q.event(ctx, 0, "guidance withdrawn: "+words.Clip(g[idx], 80))
	q.status.Guidance = append(append([]string(nil), g[:idx]...), g[idx+1:]...)
}

// event adds a line to the queue's story.
func (q *queue) event(ctx workflow.Context, issue int, text string) {
	q.seq++
	q.status.Events = append(q.status.Events, contract.QueueEvent{Seq: q.seq, At: workflow.Now(ctx), Issue: issue, Text: text})
	if n := len(q.status.Events); n > queueEventLimit {
		q.status.Events = append([]contract.QueueEvent(nil), q.status.Events[n-queueEventLimit:]...)
	}
	q.logger.Info(text, "issue", issue)
}

func (q *queue) base() string {
	if b := q.in.Settings.BaseBranch; b != "" {
		return b
	}
	return q.pre.DefaultBranch
}

// githubTimeout bounds one attempt of a GitHub activity: a few requests,
// spaced. A worker that dies mid-request is noticed that much later.
const githubTimeout = 30 * time.Second

func (q *queue) githubOptions(ctx workflow.Context, summary string) workflow.Context {
	timeout := githubTimeout
	if strings.HasPrefix(summary, "look for") {
		// Listing reads the events and permissions of every candidate.
		timeout = 5 * time.Minute
	}
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: timeout,
		Summary:             summary,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    2 * time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    5 * time.Minute,
			MaximumAttempts:    10,
			NonRetryableErrorTypes: []string{
				contract.ErrTypeGitHubNoToken, contract.ErrTypeGitHubUnauthorized, contract.ErrTypeGitHubForbidden,
				contract.ErrTypeGitHubNotFound, contract.ErrTypeGitHubInvalid, contract.ErrTypeGitHubPreflight,
			},
		},
	})
}

// gitOptions are the options of the queue's git activities on its clone.
func gitOptions(summary string) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		Summary:             summary,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    2 * time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    time.Minute,
			MaximumAttempts:    5,
			NonRetryableErrorTypes: []string{
				contract.ErrTypeInvalidWorkspace, contract.ErrTypePushRejected,
			},
		},
	}
}

func (q *queue) run(ctx workflow.Context) (contract.QueueResult, error) {
	if q.pre.DefaultBranch == "" {
		q.setState(ctx, contract.StateStarting)
		err := workflow.ExecuteActivity(q.githubOptions(ctx, "preflight: token and repository"), contract.ActivityPreflight, q.in.Settings.Repo).Get(ctx, &q.pre)
		if err != nil {
			return q.fail(ctx, "preflight", err)
		}
		q.status.BaseBranch = q.base()
		q.event(ctx, 0, fmt.Sprintf("queue of %s started: issues labelled %q, PRs to %s", q.status.Repo, q.in.Settings.Label, q.base()))
	}
	for {
		q.drain(ctx)
		s := q.in.Settings
		switch {
		case q.stop != "":
			return q.finish(ctx, contract.ReasonStopped, q.stop)
		case s.MaxIssues > 0 && q.status.Totals.Taken() >= s.MaxIssues:
			return q.finish(ctx, contract.ReasonMaxIterations, fmt.Sprintf("%d issues taken, the limit", q.status.Totals.Taken()))
		case s.MaxCostUSD > 0 && q.status.Totals.CostUSD >= s.MaxCostUSD:
			return q.finish(ctx, contract.ReasonMaxCost, fmt.Sprintf("the issues cost %.4f USD, the limit is %.2f USD", q.status.Totals.CostUSD, s.MaxCostUSD))
		}
		if q.paused {
			q.setState(ctx, contract.StatePaused)
			if err := workflow.Await(ctx, func() bool { return !q.paused || q.stop != "" }); err != nil {
				return q.cancelled(ctx, err)
			}
			continue
		}
		if q.polls >= queuePollsPerRun || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			return q.continueAsNew(ctx)
		}
		q.polls++
		q.poke = false
		var pick contract.PickResult
		err := workflow.ExecuteActivity(q.githubOptions(ctx, "look for ready issues"), contract.ActivityPickIssue,
			contract.PickInput{Repo: s.Repo, Label: s.Label}).Get(ctx, &pick)
		if err != nil {
			if isPermanent(err) || isGitHubPermanent(err) {
				return q.fail(ctx, "list issues", err)
			}
			// GitHub is down for longer than the retries: try again at
			// the next poll.
			q.event(ctx, 0, "could not list issues: "+rootMessage(err))
			pick = contract.PickResult{}
		}
		q.noteSkipped(ctx, pick.Skipped)
		if pick.Issue != nil {
			q.work(ctx, *pick.Issue)
			if ctx.Err() != nil {
				return q.cancelled(ctx, ctx.Err())
			}
			return q.continueAsNew(ctx)
		}
		if s.UntilIdle {
			return q.finish(ctx, contract.ReasonComplete, "no ready issue left")
		}
		next := workflow.Now(ctx).Add(s.PollInterval)
		if q.status.State != contract.StateIdle {
			q.event(ctx, 0, fmt.Sprintf("idle: no ready issue; looking again every %s (or on poke)", s.PollInterval))
		}
		q.status.NextPollAt = next
		q.setState(ctx, contract.StateIdle)
		if _, err := workflow.AwaitWithTimeout(ctx, s.PollInterval, func() bool {
			return q.poke || q.stop != "" || q.paused
		}); err != nil {
			return q.cancelled(ctx, err)
		}
		q.status.NextPollAt = time.Time{}
	}
}

// noteSkipped records the labelled issues the queue will not take. Each
// is told once in the events, and listed in the status.
func (q *queue) noteSkipped(ctx workflow.Context, skipped []contract.Skipped) {
	known := map[int]string{}
	for _, s := range q.status.Skipped {
		known[s.Number] = s.Reason
	}
	for _, s := range skipped {
		if known[s.Number] != s.Reason {
			q.event(ctx, s.Number, fmt.Sprintf("skipped #%d %q: %s", s.Number, words.Clip(s.Title, 60), s.Reason))
			q.status.Totals.Skipped++
		}
	}
	// Issues skipped before that are not in this listing keep their
	// entry until the list is full.
	merged := append([]contract.Skipped(nil), skipped...)
	for _, s := range q.status.Skipped {
		found := false
		for _, n := range skipped {
			found = found || n.Number == s.Number
		}
		if !found {
			merged = append(merged, s)
		}
	}
	if len(merged) > queueSkipLimit {
		merged = merged[:queueSkipLimit]
	}
	q.status.Skipped = merged
}

func isGitHubPermanent(err error) bool {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		switch appErr.Type() {
		case contract.ErrTypeGitHubNoToken, contract.ErrTypeGitHubUnauthorized, contract.ErrTypeGitHubPreflight:
			return true
		}
	}
	return false
}

// work runs one issue from claim to pull request (or failure report).
// Failures of its steps end the issue as failed, never the queue.
func (q *queue) work(ctx workflow.Context, is contract.Issue) {
	s := q.in.Settings
	cur := &contract.CurrentIssue{
		Number: is.Number, Title: is.Title, URL: is.URL, LabeledBy: is.LabeledBy,
		SessionID: contract.IssueSessionID(q.in.Session.Host, s.Repo.Owner, s.Repo.Name, is.Number),
		Branch:    contract.IssueBranch(is.Number), StartedAt: workflow.Now(ctx), Phase: "claiming",
	}
	q.status.Current = cur
	q.setState(ctx, contract.StateWorking)
	q.event(ctx, is.Number, fmt.Sprintf("picked #%d %q (labelled by @%s)", is.Number, words.Clip(is.Title, 60), is.LabeledBy))
	out := contract.IssueOutcome{Number: is.Number, Title: is.Title, SessionID: cur.SessionID, StartedAt: cur.StartedAt, Run: q.status.Runs}
	defer func() {
		out.FinishedAt = workflow.Now(ctx)
		q.record(out)
		q.status.Current = nil
	}()

	fail := func(step string, err error) {
		out.Reason = contract.ReasonFailed
		out.Message = step + ": " + rootMessage(err)
		q.event(ctx, is.Number, fmt.Sprintf("#%d failed: %s", is.Number, out.Message))
	}
	labels := func(add string, remove ...string) error {
		return workflow.ExecuteActivity(q.githubOptions(ctx, fmt.Sprintf("labels of #%d: +%s", is.Number, add)), contract.ActivitySetLabels,
			contract.LabelsInput{Repo: s.Repo, Number: is.Number, Add: []string{add}, Remove: remove}).Get(ctx, nil)
	}
	if err := labels(contract.LabelWorking, s.Label, contract.LabelFailed, contract.LabelPROpen); err != nil {
		fail("claim", err)
		return
	}
	comment := func(result string) {
		err := workflow.ExecuteActivity(q.githubOptions(ctx, fmt.Sprintf("progress comment on #%d", is.Number)), contract.ActivityComment,
			contract.CommentInput{Repo: s.Repo, Number: is.Number, Body: q.commentBody(cur, result)}).Get(ctx, nil)
		if err != nil {
			q.event(ctx, is.Number, fmt.Sprintf("#%d: could not update the progress comment: %s", is.Number, rootMessage(err)))
		}
	}
	finalLabels := func(ok bool) {
		add := contract.LabelFailed
		if ok {
			add = contract.LabelPROpen
		}
		if err := labels(add, contract.LabelWorking); err != nil {
			q.event(ctx, is.Number, fmt.Sprintf("#%d: could not set the final labels: %s", is.Number, rootMessage(err)))
		}
	}

	cur.Phase = "reading"
	var text contract.IssueText
	if err := workflow.ExecuteActivity(q.githubOptions(ctx, fmt.Sprintf("read #%d", is.Number)), contract.ActivityReadIssue,
		contract.ReadInput{Repo: s.Repo, Number: is.Number}).Get(ctx, &text); err != nil {
		fail("read the issue", err)
		comment("Failed before starting: " + out.Message)
		finalLabels(false)
		return
	}
	comment("")

	cur.Phase = "preparing"
	var wt contract.WorktreeResult
	if err := q.host.execute(ctx, gitOptions(fmt.Sprintf("work tree of #%d", is.Number)), &wt, contract.ActivityPrepareIssueWorktree, contract.WorktreeInput{
		Clone: s.Clone, Number: is.Number, Branch: cur.Branch, Base: q.base(), Issue: text.Markdown, TokenEnv: s.Repo.TokenEnv,
	}); err != nil {
		fail("prepare the work tree", err)
		comment("Failed before starting: " + out.Message)
		finalLabels(false)
		return
	}
	cur.Worktree = wt.Dir
	if wt.Continued {
		q.event(ctx, is.Number, fmt.Sprintf("#%d: continuing branch %s from an earlier try", is.Number, cur.Branch))
	}

	cur.Phase = "running"
	res, err := q.runSession(ctx, cur, wt, comment)
	out.Iterations, out.CostUSD, out.Commits = res.Iterations, res.Totals.CostUSD, res.Totals.Commits
	out.Reason, out.Message = res.Reason, res.Message
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		fail("session", err)
	}
	q.status.Totals.CostUSD += res.Totals.CostUSD
	q.status.Totals.Iterations += res.Iterations

	cur.Phase = "pushing"
	var push contract.PushResult
	if err := q.host.execute(ctx, gitOptions("push "+cur.Branch), &push, contract.ActivityPushBranch, contract.PushInput{
		Clone: s.Clone, Branch: cur.Branch, BaseRef: wt.BaseRef, TokenEnv: s.Repo.TokenEnv,
	}); err != nil {
		if out.Reason == contract.ReasonComplete {
			fail("push", err)
		} else {
			q.event(ctx, is.Number, fmt.Sprintf("#%d: could not push %s: %s", is.Number, cur.Branch, rootMessage(err)))
		}
	}
	out.Pushed = push.Pushed
	if push.Pushed {
		q.event(ctx, is.Number, fmt.Sprintf("#%d: pushed %s (%d commits)", is.Number, cur.Branch, push.Commits))
	}
	if out.Reason != contract.ReasonComplete {
		q.event(ctx, is.Number, fmt.Sprintf("#%d failed: %s", is.Number, q.failureText(out)))
		comment(q.failureComment(out, cur, push))
		finalLabels(false)
		return
	}
	if push.Commits == 0 {
		out.Reason, out.Message = contract.ReasonFailed, "the session ended complete without a commit: nothing to open a pull request for"
		q.event(ctx, is.Number, fmt.Sprintf("#%d failed: %s", is.Number, out.Message))
		comment(q.failureComment(out, cur, push))
		finalLabels(false)
		return
	}

	cur.Phase = "opening the pull request"
	var pr contract.Pull
	if err := workflow.ExecuteActivity(q.githubOptions(ctx, "pull request for #"+strconv.Itoa(is.Number)), contract.ActivityOpenPull, contract.PullInput{
		Repo: s.Repo, Number: is.Number, Head: cur.Branch, Base: q.base(), Draft: s.Draft,
		Title: fmt.Sprintf("%s (#%d)", text.Title, is.Number),
		Body:  q.pullBody(is, out, push),
	}).Get(ctx, &pr); err != nil {
		fail("open the pull request", err)
		comment(q.failureComment(out, cur, push))
		finalLabels(false)
		return
	}
	out.PR, out.PRURL = pr.Number, pr.URL
	verb := "opened"
	if !pr.Created {
		verb = "updated"
	}
	q.event(ctx, is.Number, fmt.Sprintf("#%d: pull request #%d %s: %s", is.Number, pr.Number, verb, pr.URL))
	comment(fmt.Sprintf("Done: pull request #%d (%s), %d iterations, %d commits, %.4f USD.", pr.Number, pr.URL, out.Iterations, push.Commits, out.CostUSD))
	finalLabels(true)
}

// runSession runs the issue's child session and relays its iterations to
// the progress comment.
func (q *queue) runSession(ctx workflow.Context, cur *contract.CurrentIssue, wt contract.WorktreeResult, comment func(string)) (contract.SessionResult, error) {
	s := q.in.Settings
	in := q.in.Session
	in.Workspace = wt.Dir
	in.Repo = s.Repo.FullName()
	in.CarryOver = nil
	in.NotifyParent = true
	in.Git.AllowDirty = true // the work tree is Ralph's own: leftovers are an earlier attempt's work
	in.Task = contract.TaskSettings{
		Mode:         string(contract.ModeIssue),
		CheckCommand: q.in.Session.Task.CheckCommand,
		MemoriesFile: filepath.Join(s.Clone, memoriesFile),
		Rules:        append([]string(nil), q.status.Guidance...),
	}
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:            cur.SessionID,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		// Stopping the queue lets the issue finish; terminating it
		// cancels the issue's session, which kills its agent.
		ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_REQUEST_CANCEL,
		TypedSearchAttributes: temporal.NewSearchAttributes(q.childAttributes(cur)...),
		StaticSummary:         fmt.Sprintf("#%d %s", cur.Number, words.Clip(cur.Title, 60)),
	})
	child := workflow.ExecuteChildWorkflow(cctx, Session, in)
	var fut workflow.Future = child
	if err := child.GetChildWorkflowExecution().Get(ctx, nil); err != nil {
		var running *temporal.ChildWorkflowExecutionAlreadyStartedError
		if !errors.As(err, &running) || workflow.GetVersion(ctx, versionAttachSession, workflow.DefaultVersion, 1) < 1 {
			return contract.SessionResult{}, fmt.Errorf("start the session %s: %w", cur.SessionID, err)
		}
		// An earlier start of this issue is still running (a queue that
		// was terminated or reset while it worked): wait for that one
		// rather than run the issue twice.
		q.event(ctx, cur.Number, fmt.Sprintf("#%d: session %s is already running: attached to it", cur.Number, cur.SessionID))
		fut = workflow.ExecuteActivity(awaitOptions(ctx, cur.SessionID), contract.ActivityAwaitSession, cur.SessionID)
	} else {
		q.event(ctx, cur.Number, fmt.Sprintf("#%d: session %s started on %s", cur.Number, cur.SessionID, cur.Branch))
	}

	var res contract.SessionResult
	var err error
	done := false
	workflow.Go(ctx, func(gctx workflow.Context) {
		err = fut.Get(gctx, &res)
		done = true
	})
	for {
		if aerr := workflow.Await(ctx, func() bool { return done || len(q.pending) > 0 }); aerr != nil {
			return res, aerr
		}
		if len(q.pending) > 0 {
			q.takeProgress(ctx, cur)
			comment("")
			continue
		}
		break
	}
	q.drain(ctx)
	// The session's last report may arrive after its result: the result
	// carries the last iteration too.
	if res.Last != nil {
		seen := false
		for _, p := range q.pending {
			seen = seen || p.Iteration.Iteration == res.Last.Iteration
		}
		for _, it := range cur.Iterations {
			seen = seen || it.Iteration == res.Last.Iteration
		}
		if !seen {
			q.pending = append(q.pending, contract.SessionProgress{SessionID: cur.SessionID, Iteration: *res.Last})
		}
	}
	q.takeProgress(ctx, cur)
	return res, err
}

// versionAttachSession is the change ID of attaching to an issue's
// session that is already running instead of failing the issue.
const versionAttachSession = "attach-running-session"

// awaitOptions are the activity options of AwaitSession: it lasts as long
// as the session, heartbeating, and a new attempt simply waits again.
func awaitOptions(ctx workflow.Context, id string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 24 * time.Hour,
		HeartbeatTimeout:    time.Minute,
		WaitForCancellation: true,
		Summary:             "wait for the running session " + id,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        time.Minute,
			NonRetryableErrorTypes: []string{contract.ErrTypeSessionEnded},
		},
	})
}

// takeProgress folds the session's iteration reports into the current
// issue.
func (q *queue) takeProgress(ctx workflow.Context, cur *contract.CurrentIssue) {
	for _, p := range q.pending {
		if p.SessionID != cur.SessionID {
			continue
		}
		it := p.Iteration
		cur.Iterations = append(cur.Iterations, it)
		if n := len(cur.Iterations); n > recentLimit {
			cur.Iterations = append([]contract.IterationSummary(nil), cur.Iterations[n-recentLimit:]...)
		}
		q.event(ctx, cur.Number, fmt.Sprintf("#%d %s", cur.Number, it.Line()))
	}
	q.pending = nil
}

func (q *queue) commentBody(cur *contract.CurrentIssue, result string) string {
	var b strings.Builder
	b.WriteString(fmt.Sprintf("**Durable Ralph** is working on this issue on branch `%s` (session `%s`, labelled by @%s).\n", cur.Branch, cur.SessionID, cur.LabeledBy))
	if len(cur.Iterations) > 0 {
		b.WriteString("\n")
		for _, it := range cur.Iterations {
			b.WriteString(fmt.Sprintf("- %s\n", it.Line()))
		}
	}
	if result != "" {
		b.WriteString(fmt.Sprintf("\n%s\n", result))
	}
	return b.String()
}

func (q *queue) failureText(out contract.IssueOutcome) string {
	text := string(out.Reason)
	if out.Message != "" {
		text += ": " + out.Message
	}
	return text
}

func (q *queue) failureComment(out contract.IssueOutcome, cur *contract.CurrentIssue, push contract.PushResult) string {
	var b strings.Builder
	b.WriteString(fmt.Sprintf("Not resolved: the session ended **%s**", out.Reason))
	if out.Message != "" {
		b.WriteString(fmt.Sprintf(" (%s)", out.Message))
	}
	b.WriteString(".")
	if n := len(cur.Iterations); n > 0 {
		b.WriteString(fmt.Sprintf(" Last iteration: %s.", cur.Iterations[n-1].Line()))
	}
	if push.Pushed {
		b.WriteString(fmt.Sprintf(" The branch `%s` is pushed with %d commits.", cur.Branch, push.Commits))
	}
	b.WriteString(fmt.Sprintf(" No pull request was opened. Add the `%s` label again to retry on the same branch.", q.in.Settings.Label))
	return b.String()
}

func (q *queue) pullBody(is contract.Issue, out contract.IssueOutcome, push contract.PushResult) string {
	var b strings.Builder
	b.WriteString(fmt.Sprintf("Closes #%d\n\n", is.Number))
	b.WriteString(fmt.Sprintf("Opened by Durable Ralph: session `%s`, %d iterations, %d commits, %.4f USD.\n", out.SessionID, out.Iterations, push.Commits, out.CostUSD))
	if out.Message != "" {
		b.WriteString(fmt.Sprintf("\n%s.\n", out.Message))
	}
	if len(push.Log) > 0 {
		b.WriteString("\nCommits:\n\n")
		for _, l := range push.Log {
			b.WriteString(fmt.Sprintf("- %s\n", l))
		}
	}
	return b.String()
}

// record adds an issue's outcome to the totals and the recent list.
func (q *queue) record(out contract.IssueOutcome) {
	if out.Succeeded() {
		q.status.Totals.Done++
	} else {
		q.status.Totals.Failed++
	}
	q.status.Recent = append(q.status.Recent, out)
	if n := len(q.status.Recent); n > queueRecentLimit {
		q.status.Recent = append([]contract.IssueOutcome(nil), q.status.Recent[n-queueRecentLimit:]...)
	}
}

func (q *queue) continueAsNew(ctx workflow.Context) (contract.QueueResult, error) {
	q.drain(ctx)
	if q.stop != "" {
		return q.finish(ctx, contract.ReasonStopped, q.stop)
	}
	next := q.in
	next.CarryOver = &contract.QueueCarryOver{
		StartedAt: q.status.StartedAt,
		Totals:    q.status.Totals,
		Recent:    q.status.Recent,
		Guidance:  q.status.Guidance,
		Runs:      q.status.Runs,
		Paused:    q.paused,
		Preflight: q.pre,
		Events:    q.status.Events,
		EventSeq:  q.seq,
		Skipped:   q.status.Skipped,
		Poke:      q.poke,
	}
	return contract.QueueResult{}, workflow.NewContinueAsNewError(ctx, IssueQueue, next)
}

func (q *queue) finish(ctx workflow.Context, reason contract.Reason, msg string) (contract.QueueResult, error) {
	q.status.Reason, q.status.Message = reason, msg
	q.status.EndedAt = workflow.Now(ctx)
	q.event(ctx, 0, fmt.Sprintf("queue ended %s: %s", reason, msg))
	if reason == contract.ReasonStopped {
		q.setState(ctx, contract.StateStopped)
	} else {
		q.setState(ctx, contract.StateCompleted)
	}
	return contract.QueueResult{Reason: reason, Message: msg, Totals: q.status.Totals, Recent: q.status.Recent}, nil
}

func (q *queue) fail(ctx workflow.Context, step string, err error) (contract.QueueResult, error) {
	if temporal.IsCanceledError(err) {
		return q.cancelled(ctx, err)
	}
	msg := step + ": " + rootMessage(err)
	q.status.Message = msg
	q.status.EndedAt = workflow.Now(ctx)
	q.event(ctx, 0, "queue failed: "+msg)
	q.setState(ctx, contract.StateFailed)
	return contract.QueueResult{}, temporal.NewNonRetryableApplicationError(msg, contract.ErrTypeQueueFailed, err)
}

func (q *queue) cancelled(ctx workflow.Context, err error) (contract.QueueResult, error) {
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	q.status.Reason = contract.ReasonCancelled
	q.status.EndedAt = workflow.Now(ctx)
	q.setState(dctx, contract.StateStopped)
	return contract.QueueResult{}, err
}

// childAttributes are the search attributes an issue's session starts with.
func (q *queue) childAttributes(cur *contract.CurrentIssue) []temporal.SearchAttributeUpdate {
	attrs := []temporal.SearchAttributeUpdate{contract.SearchRalphRepo.
		ValueSet(q.in.Settings.Repo.FullName()), contract.SearchRalphIssue.
		ValueSet(int64(cur.Number)),
	}
	if h := q.in.Session.Host; h != "" {
		attrs = append(attrs, contract.SearchRalphHost.ValueSet(h))
	}
	return attrs
}

// hostOffline shows the queue waiting for its clone's host (off) or back
// to what it did before.
func (q *queue) hostOffline(ctx workflow.Context, off bool) {
	if off {
		q.beforeOffline = q.status.State
		q.event(ctx, 0, fmt.Sprintf("host %s is offline: waiting for its worker", q.in.Session.Host))
		q.setState(ctx, contract.StateHostOffline)
		return
	}
	q.event(ctx, 0, fmt.Sprintf("host %s is back", q.in.Session.Host))
	q.setState(ctx, q.beforeOffline)
}

func (q *queue) setState(ctx workflow.Context, st contract.State) {
	changed := q.status.State != st
	q.status.State = st
	if changed {
		if err := workflow.UpsertTypedSearchAttributes(ctx, contract.SearchRalphStatus.
			ValueSet(string(st)), contract.SearchRalphRepo.ValueSet(q.status.Repo)); err != nil {
			q.logger.Warn("upsert search attributes", "error", err)
		}
	}
	workflow.SetCurrentDetails(ctx, q.details())
}

func (q *queue) details() string {
	st := q.status
	var b strings.Builder
	b.WriteString(fmt.Sprintf("**Ralph issue queue** of `%s`: **%s**", st.Repo, st.State))
	if st.Reason != "" {
		b.WriteString(fmt.Sprintf(" (%s)", st.Reason))
	}
	t := st.Totals
	b.WriteString(fmt.Sprintf("\n\nIssues labelled `%s` → PRs to `%s`. Done %d, failed %d, skipped %d; %d iterations, cost %.4f USD", st.Label, st.BaseBranch, t.Done, t.Failed, t.Skipped, t.Iterations, t.CostUSD))
	if c := st.Current; c != nil {
		b.WriteString(fmt.Sprintf("\n\n**Working on #%d** %s (%s), session `%s`", c.Number, c.Title, c.Phase, c.SessionID))
	}
	if st.State == contract.StateIdle && !st.NextPollAt.IsZero() {
		b.WriteString(fmt.Sprintf("\n\nIdle until %s; send the `%s` signal to look now.", st.NextPollAt.UTC().Format(time.RFC3339), contract.SignalPoke))
	}
	if len(st.Recent) > 0 {
		b.WriteString("\n\nRecent:")
		for _, o := range st.Recent {
			b.WriteString(fmt.Sprintf("\n- #%d %s: %s", o.Number, words.Clip(o.Title, 60), o.Reason))
			if o.PR != 0 {
				b.WriteString(fmt.Sprintf(", PR #%d", o.PR))
			}
		}
	}
	if len(st.Skipped) > 0 {
		b.WriteString("\n\nSkipped:")
		for _, s := range st.Skipped {
			b.WriteString(fmt.Sprintf("\n- #%d: %s", s.Number, s.Reason))
		}
	}
	return b.String()
}
