// Package issue holds the IssueWork workflow, which works on one GitHub
// issue of a queue from claim to pull request and starts the follower of
// that pull request, and Work, those steps themselves: IssueWork runs
// them for the queue, and so does a queue run recorded before IssueWork
// existed (GetVersion "issue-workflow"), which worked on its issue itself.
package issue

import (
	"cmp"
	"errors"
	"fmt"
	"strconv"

	enumspb "go.temporal.io/api/enums/v1"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/words"
	"github.com/durable-ralph/ralph/workflows/flow"
	"github.com/durable-ralph/ralph/workflows/notify"
	"github.com/durable-ralph/ralph/workflows/pull"
)

// Owner is the workflow an issue is worked on in, told what the work
// does: an IssueWork workflow, which tells its queue, or, in queue runs
// recorded before IssueWork existed, the queue itself.
type Owner interface {
	// Event adds a line to the issue's story.
	Event(ctx workflow.Context, issue int, text string)
	// Show shows cur as the issue being worked on, and the owner working.
	Show(ctx workflow.Context, cur *contract.CurrentIssue)
	// Ended takes what became of the issue.
	Ended(out contract.IssueOutcome)
	// Spent takes what the issue's session cost and how many iterations
	// it ran.
	Spent(ctx workflow.Context, cost float64, iterations int)
	// Follows takes that the issue's pull request is followed.
	Follows(number int)
	// Guidance is the queue's standing guidance for the issue's session.
	Guidance() []string
	// Progress holds the iteration reports of the issue's session that
	// arrived; Drain takes every signal that arrived into it.
	Progress() *[]contract.SessionProgress
	Drain(ctx workflow.Context)
}

// Work is one issue worked on from claim to pull request (or failure
// report) and the follower of its pull request started: its steps, and
// what became of it.
type Work struct {
	Owner Owner
	// Settings are the queue's, Session its template of the issue's
	// session, Preflight what its preflight found and Run the queue run
	// that took the issue.
	Settings  contract.QueueSettings
	Session   contract.SessionInput
	Preflight contract.PreflightResult
	Run       int
	// QueueID is the queue the issue's follower tells.
	QueueID string
	// Host routes the git activities to the clone's machine.
	Host  flow.Host
	Notes *notify.Notifier

	is  contract.Issue
	cur *contract.CurrentIssue
	out contract.IssueOutcome
}

// Do works on issue is. Failures of its steps end the issue as failed,
// never the queue. It returns what became of the issue.
func (w *Work) Do(ctx workflow.Context, is contract.Issue) contract.IssueOutcome {
	s := w.Settings
	w.is, w.cur = is, &contract.CurrentIssue{
		Number: is.Number, Title: is.Title, URL: is.URL, LabeledBy: is.LabeledBy, Asked: is.Instruction != "",
		SessionID: contract.IssueSessionID(w.Session.Host, s.Repo.Owner, s.Repo.Name, is.Number),
		Branch:    contract.IssueBranch(is.Number), StartedAt: workflow.Now(ctx), Phase: "claiming",
	}
	w.Owner.Show(ctx, w.cur)
	w.event(ctx, fmt.Sprintf("picked #%d %q (%s)", is.Number, words.Clip(is.Title, 60), is.By()))
	w.out = contract.IssueOutcome{Number: is.Number, Title: is.Title, SessionID: w.cur.SessionID, StartedAt: w.cur.StartedAt, Run: w.Run}
	w.steps(ctx)
	w.out.FinishedAt = workflow.Now(ctx)
	w.Owner.Ended(w.out)
	return w.out
}

// steps claims the issue, prepares its work tree, runs its session,
// pushes, opens the pull request and starts its follower; a step that
// fails ends them.
func (w *Work) steps(ctx workflow.Context) {
	s := w.Settings
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

// event adds a line to the issue's story.
func (w *Work) event(ctx workflow.Context, text string) {
	w.Owner.Event(ctx, w.is.Number, text)
}

// base is the branch the pull request goes to.
func (w *Work) base() string {
	return cmp.Or(w.Settings.BaseBranch, w.Preflight.DefaultBranch)
}

// versionFollowPull is the change ID of following the pull request after
// it is opened.
const versionFollowPull = "follow-pull"

// follow starts the follower of the issue's pull request: a workflow of
// its own (one ID per issue) that outlives this run of the queue, which
// goes on with the next issue. A follower of the issue that still runs
// (an earlier try's) is left to follow.
func (w *Work) follow(ctx workflow.Context, pr contract.Pull, wt contract.WorktreeResult, push contract.PushResult) {
	s, cur := w.Settings, w.cur
	id := contract.PullRequestID(cur.SessionID)
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:            id,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_ABANDON,
		TypedSearchAttributes: temporal.NewSearchAttributes(ChildAttributes(w.Settings, w.Session.Host, cur.Number)...),
		StaticSummary:         fmt.Sprintf("#%d pull request #%d", cur.Number, pr.Number),
	})
	in := contract.FollowInput{
		QueueID: w.QueueID, Repo: s.Repo, Issue: w.is, Pull: pr, Current: *cur,
		Base: w.base(), BaseRef: wt.BaseRef, Clone: s.Clone, Settings: s.Pull, PollInterval: s.PollInterval,
		Session: w.sessionInput(cur, wt), Self: w.Preflight.Login,
		CarryOver: &contract.FollowCarryOver{LastPushed: push.Head},
	}
	in.Current.Iterations = nil
	in.Current.Worktree = wt.Dir
	err := workflow.ExecuteChildWorkflow(cctx, pull.PullRequest, in).GetChildWorkflowExecution().Get(ctx, nil)
	var running *temporal.ChildWorkflowExecutionAlreadyStartedError
	switch {
	case err == nil:
		w.event(ctx, fmt.Sprintf("#%d: following pull request #%d until it is merged or closed (%s)", cur.Number, pr.Number, id))
	case errors.As(err, &running):
		w.event(ctx, fmt.Sprintf("#%d: pull request #%d is followed already (%s)", cur.Number, pr.Number, id))
	default:
		w.event(ctx, fmt.Sprintf("#%d: could not follow pull request #%d: %s", cur.Number, pr.Number, flow.RootMessage(err)))
		return
	}
	w.Owner.Follows(cur.Number)
}

// fail ends the issue as failed at step.
func (w *Work) fail(ctx workflow.Context, step string, err error) {
	w.out.Reason = contract.ReasonFailed
	w.out.Message = step + ": " + flow.RootMessage(err)
	w.event(ctx, fmt.Sprintf("#%d failed: %s", w.is.Number, w.out.Message))
}

// labels adds label add to the issue and removes the others.
func (w *Work) labels(ctx workflow.Context, add string, remove ...string) error {
	return workflow.ExecuteActivity(flow.GitHubOptions(ctx, fmt.Sprintf("labels of #%d: +%s", w.is.Number, add)), contract.ActivitySetLabels,
		contract.LabelsInput{Repo: w.Settings.Repo, Number: w.is.Number, Add: []string{add}, Remove: remove}).Get(ctx, nil)
}

// comment writes the issue's progress comment, with result when the
// issue is done.
func (w *Work) comment(ctx workflow.Context, result string) {
	err := workflow.ExecuteActivity(flow.GitHubOptions(ctx, fmt.Sprintf("progress comment on #%d", w.is.Number)), contract.ActivityComment,
		contract.CommentInput{Repo: w.Settings.Repo, Number: w.is.Number, Body: commentBody(w.cur, result), Self: w.Preflight.Login}).Get(ctx, nil)
	if err != nil {
		w.event(ctx, fmt.Sprintf("#%d: could not update the progress comment: %s", w.is.Number, flow.RootMessage(err)))
	}
}

// finalLabels labels the issue as done with a pull request (ok) or
// failed.
func (w *Work) finalLabels(ctx workflow.Context, ok bool) {
	add := contract.LabelFailed
	if ok {
		add = contract.LabelPROpen
	}
	if err := w.labels(ctx, add, contract.LabelWorking); err != nil {
		w.event(ctx, fmt.Sprintf("#%d: could not set the final labels: %s", w.is.Number, flow.RootMessage(err)))
	}
}

// giveUp reports the failed issue: the comment says result, the labels
// say failed.
func (w *Work) giveUp(ctx workflow.Context, result string) {
	w.comment(ctx, result)
	w.finalLabels(ctx, false)
	w.Notes.Send(ctx, contract.NotifyFailed, fmt.Sprintf("#%d %q failed: %s", w.is.Number, words.Clip(w.is.Title, 80), failureText(w.out)), nil, nil)
}

// prepare reads the issue and makes its work tree.
func (w *Work) prepare(ctx workflow.Context) (contract.IssueText, contract.WorktreeResult, bool) {
	s, is := w.Settings, w.is
	w.cur.Phase = "reading"
	var text contract.IssueText
	if err := workflow.ExecuteActivity(flow.GitHubOptions(ctx, fmt.Sprintf("read #%d", is.Number)), contract.ActivityReadIssue,
		contract.ReadInput{Repo: s.Repo, Number: is.Number}).Get(ctx, &text); err != nil {
		w.fail(ctx, "read the issue", err)
		w.giveUp(ctx, "Failed before starting: "+w.out.Message)
		return text, contract.WorktreeResult{}, false
	}
	w.comment(ctx, "")

	w.cur.Phase = "preparing"
	var wt contract.WorktreeResult
	if err := w.Host.Execute(ctx, flow.GitOptions(fmt.Sprintf("work tree of #%d", is.Number)), &wt, contract.ActivityPrepareIssueWorktree, contract.WorktreeInput{
		Clone: s.Clone, Number: is.Number, Branch: w.cur.Branch, Base: w.base(), Issue: text.Markdown, TokenEnv: s.Repo.TokenEnv,
	}); err != nil {
		w.fail(ctx, "prepare the work tree", err)
		w.giveUp(ctx, "Failed before starting: "+w.out.Message)
		return text, wt, false
	}
	w.cur.Worktree = wt.Dir
	if wt.Continued {
		w.event(ctx, fmt.Sprintf("#%d: continuing branch %s from an earlier try", is.Number, w.cur.Branch))
	}
	return text, wt, true
}

// runAndPush runs the issue's session and pushes its branch; ok says a
// complete session's commits are pushed, ready for a pull request.
func (w *Work) runAndPush(ctx workflow.Context, wt contract.WorktreeResult) (contract.PushResult, bool) {
	s, is, cur := w.Settings, w.is, w.cur
	cur.Phase = "running"
	res, err := w.runSession(ctx, wt)
	w.out.Iterations, w.out.CostUSD, w.out.Commits = res.Iterations, res.Totals.CostUSD, res.Totals.Commits
	w.out.Reason, w.out.Message = res.Reason, res.Message
	if err != nil {
		if ctx.Err() != nil {
			return contract.PushResult{}, false
		}
		w.fail(ctx, "session", err)
	}
	w.Owner.Spent(ctx, res.Totals.CostUSD, res.Iterations)

	cur.Phase = "pushing"
	var push contract.PushResult
	if err := w.Host.Execute(ctx, flow.GitOptions("push "+cur.Branch), &push, contract.ActivityPushBranch, contract.PushInput{
		Clone: s.Clone, Branch: cur.Branch, BaseRef: wt.BaseRef, TokenEnv: s.Repo.TokenEnv,
	}); err != nil {
		switch {
		case w.out.Reason == contract.ReasonComplete:
			w.fail(ctx, "push", err)
		case isSecretInPush(err):
			// Whatever the session's end, the issue's comment says where
			// the secret is that kept the branch home.
			ended := failureText(w.out)
			w.fail(ctx, "push", err)
			w.out.Message += " (the session had ended " + ended + ")"
		default:
			w.event(ctx, fmt.Sprintf("#%d: could not push %s: %s", is.Number, cur.Branch, flow.RootMessage(err)))
		}
	}
	w.out.Pushed = push.Pushed
	w.out.Head, w.out.Log, w.out.Change, w.out.ChangeCut = push.Head, push.Log, push.Change, push.Truncated
	if push.Pushed {
		w.event(ctx, fmt.Sprintf("#%d: pushed %s (%s)", is.Number, cur.Branch, words.Count(push.Commits, "commit")))
	}
	if w.out.Reason != contract.ReasonComplete {
		w.event(ctx, fmt.Sprintf("#%d failed: %s", is.Number, failureText(w.out)))
		w.giveUp(ctx, w.failureComment(w.out, cur, push))
		return push, false
	}
	if push.Commits == 0 {
		w.out.Reason, w.out.Message = contract.ReasonFailed, "the session ended complete without a commit: nothing to open a pull request for"
		w.event(ctx, fmt.Sprintf("#%d failed: %s", is.Number, w.out.Message))
		w.giveUp(ctx, w.failureComment(w.out, cur, push))
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
func (w *Work) openPull(ctx workflow.Context, text contract.IssueText, push contract.PushResult) (pr contract.Pull, ok bool) {
	s, is := w.Settings, w.is
	w.cur.Phase = "opening the pull request"
	if err := workflow.ExecuteActivity(flow.GitHubOptions(ctx, "pull request for #"+strconv.Itoa(is.Number)), contract.ActivityOpenPull, contract.PullInput{
		Repo: s.Repo, Number: is.Number, Head: w.cur.Branch, Base: w.base(), Draft: s.Draft,
		Title: fmt.Sprintf("%s (#%d)", text.Title, is.Number),
		Body:  pullBody(is, w.out, push),
	}).Get(ctx, &pr); err != nil {
		w.fail(ctx, "open the pull request", err)
		w.giveUp(ctx, w.failureComment(w.out, w.cur, push))
		return pr, false
	}
	w.out.PR, w.out.PRURL = pr.Number, pr.URL
	verb := "opened"
	if !pr.Created {
		verb = "updated"
	}
	w.event(ctx, fmt.Sprintf("#%d: pull request #%d %s: %s", is.Number, pr.Number, verb, pr.URL))
	w.Notes.SendNote(ctx, contract.Notification{Event: contract.NotifyPR, URL: pr.URL,
		Text:    fmt.Sprintf("pull request #%d %s for %q", pr.Number, verb, words.Clip(text.Title, 80)),
		Details: []string{fmt.Sprintf("%s, %d commits, %.4f USD", words.Count(w.out.Iterations, "iteration"), push.Commits, w.out.CostUSD)},
	}, nil)
	w.comment(ctx, fmt.Sprintf("Done: pull request #%d (%s), %d iterations, %d commits, %.4f USD.", pr.Number, pr.URL, w.out.Iterations, push.Commits, w.out.CostUSD))
	w.finalLabels(ctx, true)
	return pr, true
}
