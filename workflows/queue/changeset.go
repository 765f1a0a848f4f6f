package queue

import (
	"errors"
	"fmt"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/words"
	"github.com/durable-ralph/ralph/workflows/flow"
)

// startChangeSet starts the ChangeSet of issue is, which names several
// repositories (its Repos): one member per repository, the queue's own
// worked on in the queue's clone, the others cloned by the worker of the
// queue's host, each with the queue's settings. The set takes the issue
// (its labels, its comment) and tells the queue its end as an issue work
// does. ok says it runs (an earlier start's that still runs counts).
func (q *queue) startChangeSet(ctx workflow.Context, is contract.Issue) (ok bool) {
	s := q.in.Settings
	name := setName(s.Repo, is.Number)
	id := contract.ChangeSetID(name)
	in := contract.ChangeSetInput{
		// The set reads the issue as its task once it runs.
		Spec:      contract.ChangeSetSpec{Name: name, Task: is.Title, Members: is.Repos},
		AutoMerge: s.Pull.AutoMerge,
		// The set reads its pull requests as often as the queue reads
		// its issues.
		PollInterval: s.PollInterval,
		MaxCostUSD:   q.in.Session.Limits.MaxCostUSD,
		Origin:       &contract.ChangeSetOrigin{QueueID: workflow.GetInfo(ctx).WorkflowExecution.ID, Repo: s.Repo, Issue: is, Label: s.Label, Self: q.st.Preflight.Login},
	}
	for _, m := range is.Repos {
		ms, sess := s, q.in.Session
		owner, repoName, _ := strings.Cut(m.Repo, "/")
		if !strings.EqualFold(m.Repo, s.Repo.FullName()) {
			ms.Repo.Owner, ms.Repo.Name, ms.Clone, ms.BaseBranch = owner, repoName, "", ""
			sess.Workspace = ""
		}
		in.Members = append(in.Members, contract.ChangeSetMemberInput{Settings: ms, Session: sess})
	}
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:            id,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		// It outlives this run of the queue, as an issue work does.
		ParentClosePolicy: enumspb.PARENT_CLOSE_POLICY_ABANDON,
		StaticSummary:     fmt.Sprintf("#%d %s, across %d repositories", is.Number, words.Clip(is.Title, 60), len(is.Repos)),
	})
	err := workflow.ExecuteChildWorkflow(cctx, contract.WorkflowChangeSet, in).GetChildWorkflowExecution().Get(ctx, nil)
	var running *temporal.ChildWorkflowExecutionAlreadyStartedError
	switch {
	case err == nil:
		q.event(ctx, is.Number, fmt.Sprintf("#%d spans %s: change set %s works on it", is.Number, reposText(is.Repos), name))
	case errors.As(err, &running):
		q.event(ctx, is.Number, fmt.Sprintf("#%d: its change set %s runs already: waiting for it", is.Number, name))
	default:
		q.event(ctx, is.Number, fmt.Sprintf("#%d: could not start its change set: %s", is.Number, flow.RootMessage(err)))
		return false
	}
	q.st.Working = append(q.st.Working, contract.CurrentIssue{
		Number: is.Number, Title: is.Title, URL: is.URL, LabeledBy: is.LabeledBy, Asked: is.Instruction != "",
		StartedAt: workflow.Now(ctx), Phase: "change set " + name, Workflow: id,
	})
	q.setState(ctx, contract.StateWorking)
	q.taken(ctx, is.Number)
	return true
}

// setName is the name of the change set of issue n of repo.
func setName(repo contract.Repo, n int) string {
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '-'
	}, fmt.Sprintf("%s-%s", repo.Owner, repo.Name))
	suffix := fmt.Sprintf("-%d", n)
	if len(name)+len(suffix) > 63 {
		name = name[:63-len(suffix)]
	}
	return name + suffix
}

// reposText names the repositories of members.
func reposText(members []contract.ChangeSetMember) string {
	names := make([]string, len(members))
	for i, m := range members {
		names[i] = m.Repo
	}
	return strings.Join(names, ", ")
}
