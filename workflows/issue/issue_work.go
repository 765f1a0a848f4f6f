package issue

import (
	"cmp"
	"fmt"
	"slices"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/words"
	"github.com/durable-ralph/ralph/workflows/flow"
	"github.com/durable-ralph/ralph/workflows/notify"
)

// IssueWork works on one issue of a queue, from claim to pull request (or
// failure report), and starts the follower of its pull request: the steps
// a queue run took itself before issues were worked on at once. It tells
// its queue each line of the issue's story (SignalIssueEvent) and what
// became of the issue (SignalIssueEnded), and returns that too. Its ID is
// IssueWorkID: one per issue.
func IssueWork(ctx workflow.Context, in contract.IssueWorkInput) (contract.IssueEnded, error) {
	if err := Validate(in.Settings, in.Session); err != nil {
		return contract.IssueEnded{}, temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrTypeInvalidInput, nil)
	}
	iw, err := newIssueWork(ctx, in)
	if err != nil {
		return contract.IssueEnded{}, err
	}
	end := contract.IssueEnded{Outcome: iw.work.Do(ctx, in.Issue), Following: iw.following}
	if in.QueueID != "" {
		// A cancelled issue tells its queue too: its slot is free.
		dctx, _ := workflow.NewDisconnectedContext(ctx)
		if err := workflow.SignalExternalWorkflow(dctx, in.QueueID, "", contract.SignalIssueEnded, end).Get(dctx, nil); err != nil {
			iw.logger.Warn("could not tell the queue the issue's end", "error", err)
		}
	}
	if ctx.Err() != nil {
		return end, ctx.Err()
	}
	return end, nil
}

// issueWork is an IssueWork workflow run: the Owner of its issue's Work,
// which tells its queue each line of the issue's story.
type issueWork struct {
	in     contract.IssueWorkInput
	logger log.Logger
	work   *Work
	// cur is the issue as it is worked on (nil before and after), state
	// the run's state and beforeOffline the state to go back to when the
	// host is back.
	cur                  *contract.CurrentIssue
	state, beforeOffline contract.State
	following            bool
	// progress delivers the iteration reports of the issue's session,
	// taken into pending.
	progress workflow.ReceiveChannel
	pending  []contract.SessionProgress
}

func newIssueWork(ctx workflow.Context, in contract.IssueWorkInput) (*issueWork, error) {
	info := workflow.GetInfo(ctx)
	iw := &issueWork{in: in, state: contract.StateStarting}
	iw.logger = log.With(workflow.GetLogger(ctx), "queue", info.WorkflowExecution.ID)
	iw.work = &Work{
		Owner: iw, Settings: in.Settings, Session: in.Session, Preflight: in.Preflight, Run: in.Run,
		QueueID: cmp.Or(in.QueueID, info.WorkflowExecution.ID),
		Host:    flow.Host{ID: in.Session.Host, Timeout: in.Session.HostTimeout, Offline: iw.hostOffline},
		Notes:   &notify.Notifier{Session: fmt.Sprintf("%s#%d", in.Settings.Repo.FullName(), in.Issue.Number), Logger: iw.logger},
	}
	if err := workflow.SetQueryHandlerWithOptions(ctx, contract.QueryStatus, func() (contract.CurrentIssue, error) {
		if iw.cur == nil {
			return contract.CurrentIssue{Number: in.Issue.Number, Title: in.Issue.Title, URL: in.Issue.URL, Phase: string(iw.state)}, nil
		}
		return *iw.cur, nil
	}, workflow.QueryHandlerOptions{Description: "The issue as it is worked on: its phase, session, branch and last iterations"}); err != nil {
		return nil, fmt.Errorf("register %s query: %w", contract.QueryStatus, err)
	}
	iw.progress = workflow.GetSignalChannelWithOptions(ctx, contract.SignalSessionProgress,
		workflow.SignalChannelOptions{Description: "An iteration of the issue's session (sent by the session)"})
	workflow.Go(ctx, func(ctx workflow.Context) {
		for workflow.Await(ctx, func() bool { return iw.progress.Len() > 0 }) == nil {
			iw.Drain(ctx)
		}
	})
	return iw, nil
}

// Event tells the queue a line of the issue's story and the issue as it
// is now. The signal is not waited for.
func (iw *issueWork) Event(ctx workflow.Context, issue int, text string) {
	iw.logger.Info(text, "issue", issue)
	if iw.in.QueueID == "" {
		return
	}
	ev := contract.IssueEvent{Issue: issue, Text: text}
	if c := iw.cur; c != nil {
		ev.Current = *c
		ev.Current.Iterations = slices.Clone(c.Iterations)
	}
	workflow.SignalExternalWorkflow(ctx, iw.in.QueueID, "", contract.SignalIssueEvent, ev)
}

// Show takes cur as the issue worked on.
func (iw *issueWork) Show(ctx workflow.Context, cur *contract.CurrentIssue) {
	iw.cur = cur
	iw.setState(ctx, contract.StateWorking)
}

// Ended lets the issue go: what became of it is Do's result.
func (iw *issueWork) Ended(contract.IssueOutcome) { iw.cur = nil }

// Spent counts nothing: the queue counts the cost of the issue it is
// told ended.
func (iw *issueWork) Spent(workflow.Context, float64, int) {}

// Follows notes that the issue's pull request is followed.
func (iw *issueWork) Follows(int) { iw.following = true }

// Guidance is the queue's standing guidance when it took the issue.
func (iw *issueWork) Guidance() []string { return iw.in.Guidance }

// Progress holds the session's reports that arrived.
func (iw *issueWork) Progress() *[]contract.SessionProgress { return &iw.pending }

// Drain takes the session's reports that arrived.
func (iw *issueWork) Drain(workflow.Context) {
	var p contract.SessionProgress
	for iw.progress.ReceiveAsync(&p) {
		iw.pending = append(iw.pending, p)
		p = contract.SessionProgress{}
	}
}

// hostOffline shows the issue waiting for its clone's host (off) or back
// to what it did before.
func (iw *issueWork) hostOffline(ctx workflow.Context, off bool) {
	if off {
		iw.beforeOffline = iw.state
		iw.Event(ctx, 0, fmt.Sprintf("host %s is offline: waiting for its worker", iw.in.Session.Host))
		iw.setState(ctx, contract.StateHostOffline)
		return
	}
	iw.Event(ctx, 0, fmt.Sprintf("host %s is back", iw.in.Session.Host))
	iw.setState(ctx, iw.beforeOffline)
}

// setState shows the run in state st: in its search attributes (as a
// queue's, with the repository) and the details the Temporal UI shows.
func (iw *issueWork) setState(ctx workflow.Context, st contract.State) {
	if iw.state != st {
		iw.state = st
		if err := workflow.UpsertTypedSearchAttributes(ctx, flow.SearchStatus.ValueSet(string(st)),
			flow.SearchRepo.ValueSet(iw.in.Settings.Repo.FullName())); err != nil {
			iw.logger.Warn("upsert search attributes", "error", err)
		}
	}
	is := iw.in.Issue
	details := fmt.Sprintf("**Ralph issue #%d** %s of `%s`: **%s**", is.Number, words.Clip(is.Title, 80), iw.in.Settings.Repo.FullName(), st)
	if c := iw.cur; c != nil {
		details += fmt.Sprintf(" (%s), session `%s` on branch `%s`", c.Phase, c.SessionID, c.Branch)
	}
	workflow.SetCurrentDetails(ctx, details)
}
