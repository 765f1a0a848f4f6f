package workflows

import (
	"errors"
	"fmt"
	"slices"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/words"
)

// versionIssueWorkflow is the change ID of working on each issue in an
// IssueWork workflow of its own, several at once (queue.parallel),
// instead of in the queue's run.
const versionIssueWorkflow = "issue-workflow"

// workingCheckInterval is how often a queue that waits for its issues
// asks whether their workflows still run.
const workingCheckInterval = time.Minute

// IssueWork works on one issue of a queue, from claim to pull request (or
// failure report), and starts the follower of its pull request: the steps
// a queue run took itself before issues were worked on at once. It tells
// its queue each line of the issue's story (SignalIssueEvent) and what
// became of the issue (SignalIssueEnded), and returns that too. Its ID is
// IssueWorkID: one per issue.
func IssueWork(ctx workflow.Context, in contract.IssueWorkInput) (contract.IssueEnded, error) {
	q, err := newQueue(ctx, contract.QueueInput{Settings: in.Settings, Session: in.Session, CarryOver: &contract.QueueCarryOver{
		Preflight: in.Preflight, Guidance: in.Guidance, Runs: in.Run - 1, StartedAt: workflow.Now(ctx),
	}})
	if err != nil {
		return contract.IssueEnded{}, err
	}
	q.parent = in.QueueID
	q.notes.session = fmt.Sprintf("%s#%d", in.Settings.Repo.FullName(), in.Issue.Number)
	q.work(ctx, in.Issue)
	end := contract.IssueEnded{Outcome: q.st.Recent[len(q.st.Recent)-1], Following: slices.Contains(q.st.Following, in.Issue.Number)}
	if in.QueueID != "" {
		// A cancelled issue tells its queue too: its slot is free.
		dctx, _ := workflow.NewDisconnectedContext(ctx)
		if err := workflow.SignalExternalWorkflow(dctx, in.QueueID, "", contract.SignalIssueEnded, end).Get(dctx, nil); err != nil {
			q.logger.Warn("could not tell the queue the issue's end", "error", err)
		}
	}
	if ctx.Err() != nil {
		return end, ctx.Err()
	}
	return end, nil
}

// tellQueue sends the queue of an IssueWork workflow a line of the
// issue's story. The signal is not waited for.
func (q *queue) tellQueue(ctx workflow.Context, issue int, text string) {
	if q.parent == "" {
		return
	}
	ev := contract.IssueEvent{Issue: issue, Text: text}
	if c := q.status.Current; c != nil {
		ev.Current = *c
		ev.Current.Iterations = slices.Clone(c.Iterations)
	}
	workflow.SignalExternalWorkflow(ctx, q.parent, "", contract.SignalIssueEvent, ev)
}

// queueID is the ID of the queue the issue's follower tells.
func (q *queue) queueID(ctx workflow.Context) string {
	if q.parent != "" {
		return q.parent
	}
	return workflow.GetInfo(ctx).WorkflowExecution.ID
}

// startIssue starts the IssueWork workflow of issue is; ok says it runs
// (an earlier start's that still runs counts).
func (q *queue) startIssue(ctx workflow.Context, is contract.Issue) (ok bool) {
	s := q.in.Settings
	cur := contract.CurrentIssue{
		Number: is.Number, Title: is.Title, URL: is.URL, LabeledBy: is.LabeledBy,
		SessionID: contract.IssueSessionID(q.in.Session.Host, s.Repo.Owner, s.Repo.Name, is.Number),
		Branch:    contract.IssueBranch(is.Number), StartedAt: workflow.Now(ctx), Phase: "starting",
	}
	id := contract.IssueWorkID(cur.SessionID)
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:            id,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		// It outlives this run of the queue, which continues as new when
		// another issue ends.
		ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_ABANDON,
		TypedSearchAttributes: temporal.NewSearchAttributes(q.childAttributes(&cur)...),
		StaticSummary:         fmt.Sprintf("#%d %s", is.Number, words.Clip(is.Title, 60)),
	})
	in := contract.IssueWorkInput{
		QueueID: workflow.GetInfo(ctx).WorkflowExecution.ID, Settings: s, Session: q.in.Session, Issue: is,
		Preflight: q.st.Preflight, Guidance: slices.Clone(q.st.Guidance), Run: q.st.Runs,
	}
	err := workflow.ExecuteChildWorkflow(cctx, IssueWork, in).GetChildWorkflowExecution().Get(ctx, nil)
	var running *temporal.ChildWorkflowExecutionAlreadyStartedError
	switch {
	case err == nil:
	case errors.As(err, &running):
		q.event(ctx, is.Number, fmt.Sprintf("#%d is being worked on already (%s): waiting for it", is.Number, id))
	default:
		q.event(ctx, is.Number, fmt.Sprintf("#%d: could not start its work: %s", is.Number, rootMessage(err)))
		return false
	}
	q.st.Working = append(q.st.Working, cur)
	q.setState(ctx, contract.StateWorking)
	return true
}

// issueEvent takes a line of an issue's story into the queue's, and the
// issue as it is now into the working list.
func (q *queue) issueEvent(ctx workflow.Context, ev contract.IssueEvent) {
	for i := range q.st.Working {
		if q.st.Working[i].Number == ev.Issue && ev.Current.Number == ev.Issue {
			q.st.Working = slices.Clone(q.st.Working)
			q.st.Working[i] = ev.Current
		}
	}
	if ev.Text != "" {
		q.event(ctx, ev.Issue, ev.Text)
	}
}

// issueEnded takes what became of an issue into the totals and frees its
// slot.
func (q *queue) issueEnded(ctx workflow.Context, end contract.IssueEnded) {
	out := end.Outcome
	q.st.Working = slices.DeleteFunc(slices.Clone(q.st.Working), func(c contract.CurrentIssue) bool { return c.Number == out.Number })
	q.record(out)
	q.spend(ctx, out.CostUSD)
	q.st.Totals.Iterations += out.Iterations
	if end.Following && !slices.Contains(q.st.Following, out.Number) {
		q.st.Following = append(q.st.Following, out.Number)
	}
	q.ended++
}

// workingNumbers are the numbers of the issues being worked on.
func (q *queue) workingNumbers() []int {
	var n []int
	for _, c := range q.st.Working {
		n = append(n, c.Number)
	}
	return n
}

// awaitWorking waits, working, until cond holds. Every
// workingCheckInterval it frees the slots of issues whose workflows
// ended without telling the queue (checkWorking).
func (q *queue) awaitWorking(ctx workflow.Context, cond func() bool) error {
	q.setState(ctx, contract.StateWorking)
	for !cond() {
		ok, err := workflow.AwaitWithTimeout(ctx, workingCheckInterval, cond)
		if err != nil {
			return err
		}
		if !ok {
			q.checkWorking(ctx)
		}
	}
	return nil
}

// checkWorking asks which issues' workflows still run, at most once per
// workingCheckInterval, and ends those that do not (a person terminated
// one) as failed.
func (q *queue) checkWorking(ctx workflow.Context) {
	now := workflow.Now(ctx)
	if now.Sub(q.checkedAt) < workingCheckInterval {
		return
	}
	q.checkedAt = now
	var ids, running []string
	for _, c := range q.st.Working {
		ids = append(ids, contract.IssueWorkID(c.SessionID))
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		Summary:             "which issues' workflows still run",
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
	})
	if err := workflow.ExecuteActivity(actx, contract.ActivityStillRunning, ids).Get(ctx, &running); err != nil {
		q.logger.Warn("could not ask which issues' workflows run", "error", err)
		return
	}
	// An end told just before its workflow closed is taken first.
	q.drain(ctx)
	for _, c := range slices.Clone(q.st.Working) {
		if slices.Contains(running, contract.IssueWorkID(c.SessionID)) {
			continue
		}
		msg := fmt.Sprintf("its workflow %s ended without telling the queue (terminated?)", contract.IssueWorkID(c.SessionID))
		iterations := 0
		if n := len(c.Iterations); n > 0 {
			iterations = c.Iterations[n-1].Iteration
		}
		q.event(ctx, c.Number, fmt.Sprintf("#%d failed: %s", c.Number, msg))
		q.issueEnded(ctx, contract.IssueEnded{Outcome: contract.IssueOutcome{
			Number: c.Number, Title: c.Title, SessionID: c.SessionID, Reason: contract.ReasonFailed, Message: msg,
			StartedAt: c.StartedAt, FinishedAt: now, Iterations: iterations, Run: q.st.Runs,
		}})
	}
}
