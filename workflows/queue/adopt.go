package queue

import (
	"errors"
	"fmt"
	"slices"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/words"
	"github.com/durable-ralph/ralph/workflows/flow"
	"github.com/durable-ralph/ralph/workflows/issue"
	"github.com/durable-ralph/ralph/workflows/pull"
)

// adoptedLimit bounds the rounds on pull requests a queue remembers.
const adoptedLimit = 200

// askedOnPull takes a writer's "@bot <instruction>" on a pull request:
// on one Ralph opened its follower takes it as review feedback; on
// another, queue.adopt-prs lets it start one round on its branch
// (pull.Adopted), unless its head is in a fork or is the base. done is
// false when a round asked earlier still runs there: the next look reads
// the comment again.
func (q *queue) askedOnPull(ctx workflow.Context, m contract.Mention, who string) (done bool) {
	p := m.Pull
	switch {
	case p == nil || p.Ralphs():
		q.event(ctx, m.Number, who+" on a pull request Ralph opened: its follower takes it as review feedback")
		return true
	case p.Fork:
		q.event(ctx, m.Number, who+" on a pull request from a fork: not taken (Ralph cannot push to its branch)")
		return true
	case p.Head == p.Base || p.Head == q.base():
		q.event(ctx, m.Number, fmt.Sprintf("%s on a pull request whose head is %s: not taken (Ralph pushes to no base branch)", who, p.Head))
		return true
	case !q.in.Settings.AdoptPRs:
		q.event(ctx, m.Number, who+" on a pull request Ralph did not open: not taken (queue.adopt-prs is off)")
		return true
	}
	return q.adopt(ctx, m)
}

// adopt starts the round m asks for on its pull request, under the
// pull request's round ID: one at a time on a pull request.
func (q *queue) adopt(ctx workflow.Context, m contract.Mention) (done bool) {
	s, p := q.in.Settings, m.Pull
	host := q.in.Session.Host
	n := q.adoptedRounds(m.Number) + 1
	sid := contract.IssueSessionID(host, s.Repo.Owner, s.Repo.Name, m.Number)
	dir := contract.WorktreeDir(s.Clone, m.Number)
	in := contract.FollowInput{
		Repo: s.Repo, Issue: contract.Issue{Number: m.Number, Title: m.Title, URL: p.URL, LabeledBy: m.Author},
		Pull:    contract.Pull{Number: m.Number, URL: p.URL},
		Current: contract.CurrentIssue{Number: m.Number, Title: m.Title, URL: p.URL, LabeledBy: m.Author, SessionID: sid, Branch: p.Head, Worktree: dir},
		Base:    p.Base, BaseRef: "refs/remotes/origin/" + p.Base, Clone: s.Clone, Settings: s.Pull, PollInterval: s.PollInterval,
		Session: issue.SessionFor(s, q.in.Session, q.st.Preflight.Login, q.st.Guidance, m.Number, m.Author, dir),
		Self:    q.st.Preflight.Login,
		Adopt:   &contract.AdoptRequest{CommentID: m.CommentID, By: m.Author, Instruction: m.Instruction, Round: n, Author: p.Author, Body: p.Body},
	}
	id := contract.AdoptedRoundID(host, s.Repo.Owner, s.Repo.Name, m.Number)
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:            id,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_ABANDON,
		TypedSearchAttributes: temporal.NewSearchAttributes(issue.ChildAttributes(s, host, m.Number)...),
		StaticSummary:         fmt.Sprintf("#%d round %d asked by @%s", m.Number, n, m.Author),
	})
	err := workflow.ExecuteChildWorkflow(cctx, pull.Adopted, in).GetChildWorkflowExecution().Get(ctx, nil)
	var running *temporal.ChildWorkflowExecutionAlreadyStartedError
	switch {
	case errors.As(err, &running):
		return false
	case err != nil:
		q.event(ctx, m.Number, fmt.Sprintf("#%d: could not start the round @%s asked for: %s", m.Number, m.Author, flow.RootMessage(err)))
		return true
	}
	q.st.Adopted = flow.AppendBounded(q.st.Adopted, m.Number, adoptedLimit)
	q.event(ctx, m.Number, fmt.Sprintf("#%d: @%s asked for round %d on pull request #%d (branch %s): %s (%s)",
		m.Number, m.Author, n, m.Number, p.Head, words.Clip(words.OneLine(m.Instruction), 80), id))
	return true
}

// adoptedRounds counts the rounds started on pull request n.
func (q *queue) adoptedRounds(n int) int {
	return len(slices.DeleteFunc(slices.Clone(q.st.Adopted), func(a int) bool { return a != n }))
}
