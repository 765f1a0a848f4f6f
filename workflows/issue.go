package workflows

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/words"
)

// work runs one issue from claim to pull request (or failure report).
// Failures of its steps end the issue as failed, never the queue.
func (q *queue) work(ctx workflow.Context, is contract.Issue) {
	s := q.in.Settings
	w := &issueWork{q: q, is: is, cur: &contract.CurrentIssue{
		Number: is.Number, Title: is.Title, URL: is.URL, LabeledBy: is.LabeledBy,
		SessionID: contract.IssueSessionID(q.in.Session.Host, s.Repo.Owner, s.Repo.Name, is.Number),
		Branch:    contract.IssueBranch(is.Number), StartedAt: workflow.Now(ctx), Phase: "claiming",
	}}
	q.status.Current = w.cur
	q.setState(ctx, contract.StateWorking)
	q.event(ctx, is.Number, fmt.Sprintf("picked #%d %q (labelled by @%s)", is.Number, words.Clip(is.Title, 60), is.LabeledBy))
	w.out = contract.IssueOutcome{Number: is.Number, Title: is.Title, SessionID: w.cur.SessionID, StartedAt: w.cur.StartedAt, Run: q.st.Runs}
	defer func() {
		w.out.FinishedAt = workflow.Now(ctx)
		q.record(w.out)
		q.status.Current = nil
	}()
	if err := w.labels(ctx, contract.LabelWorking, s.Label, contract.LabelFailed, contract.LabelPROpen); err != nil {
		w.fail(ctx, "claim", err)
		return
	}
	text, wt, ok := w.prepare(ctx)
	if !ok {
		return
	}
	push, ok := w.runAndPush(ctx, wt)
	if !ok {
		return
	}
	pr, ok := w.openPull(ctx, text, push)
	if ok && s.Pull.Follow && workflow.GetVersion(ctx, versionFollowPull, workflow.DefaultVersion, 1) == 1 {
		w.follow(ctx, pr, wt, push)
	}
}

// versionFollowPull is the change ID of following the pull request after
// it is opened.
const versionFollowPull = "follow-pull"

// follow starts the follower of the issue's pull request: a workflow of
// its own (one ID per issue) that outlives this run of the queue, which
// goes on with the next issue. A follower of the issue that still runs
// (an earlier try's) is left to follow.
func (w *issueWork) follow(ctx workflow.Context, pr contract.Pull, wt contract.WorktreeResult, push contract.PushResult) {
	q, s, cur := w.q, w.q.in.Settings, w.cur
	id := contract.PullRequestID(cur.SessionID)
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:            id,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_ABANDON,
		TypedSearchAttributes: temporal.NewSearchAttributes(q.childAttributes(cur)...),
		StaticSummary:         fmt.Sprintf("#%d pull request #%d", cur.Number, pr.Number),
	})
	in := contract.FollowInput{
		QueueID: q.queueID(ctx), Repo: s.Repo, Issue: w.is, Pull: pr, Current: *cur,
		Base: q.base(), BaseRef: wt.BaseRef, Clone: s.Clone, Settings: s.Pull, PollInterval: s.PollInterval,
		Session: q.issueSession(cur, wt), Self: q.st.Preflight.Login,
		CarryOver: &contract.FollowCarryOver{LastPushed: push.Head},
	}
	in.Current.Iterations = nil
	in.Current.Worktree = wt.Dir
	err := workflow.ExecuteChildWorkflow(cctx, PullRequest, in).GetChildWorkflowExecution().Get(ctx, nil)
	var running *temporal.ChildWorkflowExecutionAlreadyStartedError
	switch {
	case err == nil:
		q.event(ctx, cur.Number, fmt.Sprintf("#%d: following pull request #%d until it is merged or closed (%s)", cur.Number, pr.Number, id))
	case errors.As(err, &running):
		q.event(ctx, cur.Number, fmt.Sprintf("#%d: pull request #%d is followed already (%s)", cur.Number, pr.Number, id))
	default:
		q.event(ctx, cur.Number, fmt.Sprintf("#%d: could not follow pull request #%d: %s", cur.Number, pr.Number, rootMessage(err)))
		return
	}
	if !slices.Contains(q.st.Following, cur.Number) {
		q.st.Following = append(q.st.Following, cur.Number)
	}
}

// issueWork is one issue as the queue works on it: its steps, and what
// became of it.
type issueWork struct {
	q   *queue
	is  contract.Issue
	cur *contract.CurrentIssue
	out contract.IssueOutcome
}

// fail ends the issue as failed at step.
func (w *issueWork) fail(ctx workflow.Context, step string, err error) {
	w.out.Reason = contract.ReasonFailed
	w.out.Message = step + ": " + rootMessage(err)
	w.q.event(ctx, w.is.Number, fmt.Sprintf("#%d failed: %s", w.is.Number, w.out.Message))
}

// labels adds label add to the issue and removes the others.
func (w *issueWork) labels(ctx workflow.Context, add string, remove ...string) error {
	return workflow.ExecuteActivity(githubOptions(ctx, fmt.Sprintf("labels of #%d: +%s", w.is.Number, add)), contract.ActivitySetLabels,
		contract.LabelsInput{Repo: w.q.in.Settings.Repo, Number: w.is.Number, Add: []string{add}, Remove: remove}).Get(ctx, nil)
}

// comment writes the issue's progress comment, with result when the
// issue is done.
func (w *issueWork) comment(ctx workflow.Context, result string) {
	err := workflow.ExecuteActivity(githubOptions(ctx, fmt.Sprintf("progress comment on #%d", w.is.Number)), contract.ActivityComment,
		contract.CommentInput{Repo: w.q.in.Settings.Repo, Number: w.is.Number, Body: w.q.commentBody(w.cur, result)}).Get(ctx, nil)
	if err != nil {
		w.q.event(ctx, w.is.Number, fmt.Sprintf("#%d: could not update the progress comment: %s", w.is.Number, rootMessage(err)))
	}
}

// finalLabels labels the issue as done with a pull request (ok) or
// failed.
func (w *issueWork) finalLabels(ctx workflow.Context, ok bool) {
	add := contract.LabelFailed
	if ok {
		add = contract.LabelPROpen
	}
	if err := w.labels(ctx, add, contract.LabelWorking); err != nil {
		w.q.event(ctx, w.is.Number, fmt.Sprintf("#%d: could not set the final labels: %s", w.is.Number, rootMessage(err)))
	}
}

// giveUp reports the failed issue: the comment says result, the labels
// say failed.
func (w *issueWork) giveUp(ctx workflow.Context, result string) {
	w.comment(ctx, result)
	w.finalLabels(ctx, false)
	w.q.notes.send(ctx, contract.NotifyFailed, fmt.Sprintf("#%d %q failed: %s", w.is.Number, words.Clip(w.is.Title, 80), w.q.failureText(w.out)), nil, nil)
}

// prepare reads the issue and makes its work tree.
func (w *issueWork) prepare(ctx workflow.Context) (contract.IssueText, contract.WorktreeResult, bool) {
	s, is := w.q.in.Settings, w.is
	w.cur.Phase = "reading"
	var text contract.IssueText
	if err := workflow.ExecuteActivity(githubOptions(ctx, fmt.Sprintf("read #%d", is.Number)), contract.ActivityReadIssue,
		contract.ReadInput{Repo: s.Repo, Number: is.Number}).Get(ctx, &text); err != nil {
		w.fail(ctx, "read the issue", err)
		w.giveUp(ctx, "Failed before starting: "+w.out.Message)
		return text, contract.WorktreeResult{}, false
	}
	w.comment(ctx, "")

	w.cur.Phase = "preparing"
	var wt contract.WorktreeResult
	if err := w.q.host.execute(ctx, gitOptions(fmt.Sprintf("work tree of #%d", is.Number)), &wt, contract.ActivityPrepareIssueWorktree, contract.WorktreeInput{
		Clone: s.Clone, Number: is.Number, Branch: w.cur.Branch, Base: w.q.base(), Issue: text.Markdown, TokenEnv: s.Repo.TokenEnv,
	}); err != nil {
		w.fail(ctx, "prepare the work tree", err)
		w.giveUp(ctx, "Failed before starting: "+w.out.Message)
		return text, wt, false
	}
	w.cur.Worktree = wt.Dir
	if wt.Continued {
		w.q.event(ctx, is.Number, fmt.Sprintf("#%d: continuing branch %s from an earlier try", is.Number, w.cur.Branch))
	}
	return text, wt, true
}

// runAndPush runs the issue's session and pushes its branch; ok says a
// complete session's commits are pushed, ready for a pull request.
func (w *issueWork) runAndPush(ctx workflow.Context, wt contract.WorktreeResult) (contract.PushResult, bool) {
	q, s, is, cur := w.q, w.q.in.Settings, w.is, w.cur
	cur.Phase = "running"
	res, err := q.runSession(ctx, cur, wt, func(result string) { w.comment(ctx, result) })
	w.out.Iterations, w.out.CostUSD, w.out.Commits = res.Iterations, res.Totals.CostUSD, res.Totals.Commits
	w.out.Reason, w.out.Message = res.Reason, res.Message
	if err != nil {
		if ctx.Err() != nil {
			return contract.PushResult{}, false
		}
		w.fail(ctx, "session", err)
	}
	q.spend(ctx, res.Totals.CostUSD)
	q.st.Totals.Iterations += res.Iterations

	cur.Phase = "pushing"
	var push contract.PushResult
	if err := q.host.execute(ctx, gitOptions("push "+cur.Branch), &push, contract.ActivityPushBranch, contract.PushInput{
		Clone: s.Clone, Branch: cur.Branch, BaseRef: wt.BaseRef, TokenEnv: s.Repo.TokenEnv,
	}); err != nil {
		switch {
		case w.out.Reason == contract.ReasonComplete:
			w.fail(ctx, "push", err)
		case isSecretInPush(err):
			// Whatever the session's end, the issue's comment says where
			// the secret is that kept the branch home.
			ended := q.failureText(w.out)
			w.fail(ctx, "push", err)
			w.out.Message += " (the session had ended " + ended + ")"
		default:
			q.event(ctx, is.Number, fmt.Sprintf("#%d: could not push %s: %s", is.Number, cur.Branch, rootMessage(err)))
		}
	}
	w.out.Pushed = push.Pushed
	if push.Pushed {
		q.event(ctx, is.Number, fmt.Sprintf("#%d: pushed %s (%s)", is.Number, cur.Branch, words.Count(push.Commits, "commit")))
	}
	if w.out.Reason != contract.ReasonComplete {
		q.event(ctx, is.Number, fmt.Sprintf("#%d failed: %s", is.Number, q.failureText(w.out)))
		w.giveUp(ctx, q.failureComment(w.out, cur, push))
		return push, false
	}
	if push.Commits == 0 {
		w.out.Reason, w.out.Message = contract.ReasonFailed, "the session ended complete without a commit: nothing to open a pull request for"
		q.event(ctx, is.Number, fmt.Sprintf("#%d failed: %s", is.Number, w.out.Message))
		w.giveUp(ctx, q.failureComment(w.out, cur, push))
		return push, false
	}
	return push, true
}

// isSecretInPush reports a push that PushBranch refused because it would
// publish a secret. No history recorded before the error type existed
// holds one, so the branch on it needs no version.
func isSecretInPush(err error) bool {
	var appErr *temporal.ApplicationError
	return errors.As(err, &appErr) && appErr.Type() == contract.ErrTypeSecretInPush
}

// openPull opens (or updates) the issue's pull request; ok says it is
// open.
func (w *issueWork) openPull(ctx workflow.Context, text contract.IssueText, push contract.PushResult) (pr contract.Pull, ok bool) {
	q, s, is := w.q, w.q.in.Settings, w.is
	w.cur.Phase = "opening the pull request"
	if err := workflow.ExecuteActivity(githubOptions(ctx, "pull request for #"+strconv.Itoa(is.Number)), contract.ActivityOpenPull, contract.PullInput{
		Repo: s.Repo, Number: is.Number, Head: w.cur.Branch, Base: q.base(), Draft: s.Draft,
		Title: fmt.Sprintf("%s (#%d)", text.Title, is.Number),
		Body:  q.pullBody(is, w.out, push),
	}).Get(ctx, &pr); err != nil {
		w.fail(ctx, "open the pull request", err)
		w.giveUp(ctx, q.failureComment(w.out, w.cur, push))
		return pr, false
	}
	w.out.PR, w.out.PRURL = pr.Number, pr.URL
	verb := "opened"
	if !pr.Created {
		verb = "updated"
	}
	q.event(ctx, is.Number, fmt.Sprintf("#%d: pull request #%d %s: %s", is.Number, pr.Number, verb, pr.URL))
	q.notes.sendNote(ctx, contract.Notification{Event: contract.NotifyPR, URL: pr.URL,
		Text:    fmt.Sprintf("pull request #%d %s for %q", pr.Number, verb, words.Clip(text.Title, 80)),
		Details: []string{fmt.Sprintf("%s, %d commits, %.4f USD", words.Count(w.out.Iterations, "iteration"), push.Commits, w.out.CostUSD)},
	}, nil)
	w.comment(ctx, fmt.Sprintf("Done: pull request #%d (%s), %d iterations, %d commits, %.4f USD.", pr.Number, pr.URL, w.out.Iterations, push.Commits, w.out.CostUSD))
	w.finalLabels(ctx, true)
	return pr, true
}

// runSession runs the issue's child session and relays its iterations to
// the progress comment.
func (q *queue) runSession(ctx workflow.Context, cur *contract.CurrentIssue, wt contract.WorktreeResult, comment func(string)) (contract.SessionResult, error) {
	// The session's settings, commands included, are those queue resolved
	// from the clone (and its trust) when the queue started: nothing reads
	// a ralph.yaml of the issue's branch (config's
	// TestIssueWorkReadsNoSettings holds that).
	in := q.issueSession(cur, wt)
	in.NotifyParent = true
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

// issueSession is the input of a session on the work tree wt of issue
// cur: the queue's template, in issue mode, asking its checkpoints on the
// issue.
func (q *queue) issueSession(cur *contract.CurrentIssue, wt contract.WorktreeResult) contract.SessionInput {
	s := q.in.Settings
	in := q.in.Session
	in.Workspace = wt.Dir
	in.Repo = s.Repo.FullName()
	in.CarryOver = nil
	in.Git.AllowDirty = true // the work tree is Ralph's own: leftovers are an earlier attempt's work
	in.Issue = &contract.IssueLink{Repo: s.Repo, Number: cur.Number, LabeledBy: cur.LabeledBy,
		Self: q.st.Preflight.Login, PollInterval: s.PollInterval}
	in.Task = contract.TaskSettings{
		Mode:         string(contract.ModeIssue),
		CheckCommand: q.in.Session.Task.CheckCommand,
		MemoriesFile: filepath.Join(s.Clone, memoriesFile),
		Rules:        append([]string(nil), q.st.Guidance...),
	}
	return in
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
