package queue

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/words"
	"github.com/durable-ralph/ralph/workflows/flow"
	"github.com/durable-ralph/ralph/workflows/issue"
)

// workingCheckInterval is how often a queue that waits for its issues
// asks whether their workflows still run.
const workingCheckInterval = time.Minute

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
		TypedSearchAttributes: temporal.NewSearchAttributes(issue.ChildAttributes(s, q.in.Session.Host, cur.Number)...),
		StaticSummary:         fmt.Sprintf("#%d %s", is.Number, words.Clip(is.Title, 60)),
	})
	guidance := slices.Clone(q.st.Guidance)
	if is.Instruction != "" {
		// The comment's author may write to the repository; its text is
		// theirs, as the issue's is.
		guidance = append(guidance, fmt.Sprintf("@%s asked for this work in a comment on the issue: %s", is.LabeledBy, is.Instruction))
	}
	in := contract.IssueWorkInput{
		QueueID: workflow.GetInfo(ctx).WorkflowExecution.ID, Settings: s, Session: q.in.Session, Issue: is,
		Preflight: q.st.Preflight, Guidance: guidance, Run: q.st.Runs,
	}
	err := workflow.ExecuteChildWorkflow(cctx, issue.IssueWork, in).GetChildWorkflowExecution().Get(ctx, nil)
	var running *temporal.ChildWorkflowExecutionAlreadyStartedError
	switch {
	case err == nil:
	case errors.As(err, &running):
		q.event(ctx, is.Number, fmt.Sprintf("#%d is being worked on already (%s): waiting for it", is.Number, id))
	default:
		q.event(ctx, is.Number, fmt.Sprintf("#%d: could not start its work: %s", is.Number, flow.RootMessage(err)))
		return false
	}
	q.st.Working = append(q.st.Working, cur)
	q.setState(ctx, contract.StateWorking)
	q.taken(ctx, is.Number)
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
		if out.ChangeSet != "" {
			// The set follows its pull requests and says their end.
			q.st.Sets = maps.Clone(q.st.Sets)
			if q.st.Sets == nil {
				q.st.Sets = map[int]string{}
			}
			q.st.Sets[out.Number] = contract.ChangeSetID(out.ChangeSet)
		}
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
		ids = append(ids, c.WorkID())
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
		if slices.Contains(running, c.WorkID()) {
			continue
		}
		msg := fmt.Sprintf("its workflow %s ended without telling the queue (terminated?)", c.WorkID())
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
