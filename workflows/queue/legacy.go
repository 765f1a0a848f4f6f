package queue

import (
	"slices"

	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/workflows/issue"
)

// versionIssueWorkflow is the change ID of working on each issue in an
// IssueWork workflow of its own, several at once (queue.parallel),
// instead of in the queue's run.
const versionIssueWorkflow = "issue-workflow"

// work works on issue is in this run, as queue runs recorded before
// IssueWork existed did (issue-workflow DefaultVersion): the queue is the
// issue's Owner.
func (q *queue) work(ctx workflow.Context, is contract.Issue) {
	w := &issue.Work{
		Owner: inline{q}, Settings: q.in.Settings, Session: q.in.Session, Preflight: q.st.Preflight, Run: q.st.Runs,
		QueueID: workflow.GetInfo(ctx).WorkflowExecution.ID, Host: q.host, Notes: &q.notes,
	}
	w.Do(ctx, is)
}

// inline is a queue as the Owner of the issue it works on itself.
type inline struct{ q *queue }

func (o inline) Event(ctx workflow.Context, issue int, text string) { o.q.event(ctx, issue, text) }

func (o inline) Show(ctx workflow.Context, cur *contract.CurrentIssue) {
	o.q.status.Current = cur
	o.q.setState(ctx, contract.StateWorking)
}

func (o inline) Ended(out contract.IssueOutcome) {
	o.q.record(out)
	o.q.status.Current = nil
}

func (o inline) Spent(ctx workflow.Context, cost float64, iterations int) {
	o.q.spend(ctx, cost)
	o.q.st.Totals.Iterations += iterations
}

func (o inline) Follows(number int) {
	if !slices.Contains(o.q.st.Following, number) {
		o.q.st.Following = append(o.q.st.Following, number)
	}
}

func (o inline) Guidance() []string                    { return o.q.st.Guidance }
func (o inline) Progress() *[]contract.SessionProgress { return &o.q.pending }
func (o inline) Drain(ctx workflow.Context)            { o.q.drain(ctx) }
