package queue_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/workflows/pull"
	"github.com/durable-ralph/ralph/workflows/queue"
)

// TestQueueAdoptsAPullRequest: with queue.adopt-prs, a writer's "@bot
// <instruction>" on a pull request Ralph did not open starts one round
// on its branch (the Adopted workflow, under the pull request's round
// ID, its work tree and an issue-mode session on it); one on a pull
// request from a fork, one whose head is the base and one on Ralph's own
// pull request are said once and start nothing. Without adopt-prs none
// is taken.
func TestQueueAdoptsAPullRequest(t *testing.T) {
	at := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	asked := contract.PickResult{ScannedTo: at.Add(time.Minute), Asked: []contract.Mention{
		{CommentID: 21, Number: 7, Title: "Add a flag", Author: "alice", Instruction: "rename the flag to --dry-run", PullRequest: true,
			Pull: &contract.MentionPull{Head: "feature/flag", Base: "main", Author: "bob", URL: "https://github.com/acme/app/pull/7", Body: "Adds a flag."}},
		{CommentID: 22, Number: 8, Author: "alice", Instruction: "tidy it", PullRequest: true, Pull: &contract.MentionPull{Head: "main", Base: "main", Fork: true, Author: "eve"}},
		{CommentID: 23, Number: 9, Author: "alice", Instruction: "tidy it", PullRequest: true, Pull: &contract.MentionPull{Head: "main", Base: "release", Author: "bob"}},
		{CommentID: 24, Number: 10, Author: "alice", Instruction: "also the docs", PullRequest: true, Pull: &contract.MentionPull{Head: "ralph/issue-3", Base: "main", Author: "ralph-bot"}},
	}}
	for _, tc := range []struct {
		name  string
		adopt bool
	}{{"adopt-prs", true}, {"adopt-prs off", false}} {
		t.Run(tc.name, func(t *testing.T) {
			env := newQueueEnv(t, completed, asked, contract.PickResult{ScannedTo: at.Add(time.Minute)})
			env.RegisterWorkflow(pull.Adopted)
			var rounds []contract.FollowInput
			var ids []string
			env.OnWorkflow(pull.Adopted, mock.Anything, mock.Anything).Return(func(ctx workflow.Context, in contract.FollowInput) (contract.FollowResult, error) {
				rounds = append(rounds, in)
				ids = append(ids, workflow.GetInfo(ctx).WorkflowExecution.ID)
				return contract.FollowResult{Reason: contract.ReasonComplete}, nil
			})
			in := queueInput()
			in.Settings.AdoptPRs = tc.adopt
			in.CarryOver = &contract.QueueCarryOver{StartedAt: at, Preflight: contract.PreflightResult{FullName: "acme/app", DefaultBranch: "main", Login: "ralph-bot"}}
			env.SetStartTime(at.Add(2 * time.Minute))
			env.ExecuteWorkflow(queue.IssueQueue, in)
			next := carried(t, env)
			require.Equal(t, []int64{21, 22, 23, 24}, next.CarryOver.Handled, "each comment once")
			require.Empty(t, env.children, "no issue's session")
			story := storyOf(next)
			require.Contains(t, story, "#8: @alice asked for work in a comment on a pull request from a fork: not taken (Ralph cannot push to its branch)")
			require.Contains(t, story, "#9: @alice asked for work in a comment on a pull request whose head is main: not taken (Ralph pushes to no base branch)")
			require.Contains(t, story, "#10: @alice asked for work in a comment on a pull request Ralph opened: its follower takes it as review feedback")
			if !tc.adopt {
				require.Empty(t, rounds)
				require.Contains(t, story, "#7: @alice asked for work in a comment on a pull request Ralph did not open: not taken (queue.adopt-prs is off)")
				return
			}
			require.Len(t, rounds, 1)
			r := rounds[0]
			require.Equal(t, []string{contract.AdoptedRoundID(in.Session.Host, "acme", "app", 7)}, ids)
			require.Equal(t, &contract.AdoptRequest{CommentID: 21, By: "alice", Instruction: "rename the flag to --dry-run", Round: 1, Author: "bob", Body: "Adds a flag."}, r.Adopt)
			require.Equal(t, "feature/flag", r.Current.Branch)
			require.Equal(t, contract.WorktreeDir(in.Settings.Clone, 7), r.Current.Worktree)
			require.Equal(t, r.Current.Worktree, r.Session.Workspace)
			require.Equal(t, string(contract.ModeIssue), r.Session.Task.Mode)
			require.Equal(t, 7, r.Session.Issue.Number, "its questions go to the pull request")
			require.Equal(t, "refs/remotes/origin/main", r.BaseRef)
			require.Equal(t, []int{7}, next.CarryOver.Adopted)
			require.Contains(t, story, "#7: @alice asked for round 1 on pull request #7 (branch feature/flag): rename the flag to --dry-run")
		})
	}
}

// storyOf is the queue's story carried to its next run, a line an event.
func storyOf(next contract.QueueInput) string {
	var story []string
	for _, e := range next.CarryOver.Events {
		story = append(story, e.Text)
	}
	return strings.Join(story, "\n")
}
