package testsuite_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/testsuite/fakegithub"
)

// TestIssueQueueInParallel: with --parallel 2 two ready issues are worked
// on at once, each by its IssueWork workflow, in its own work tree and
// session; the third waits for a free slot. The worker is killed with
// SIGKILL while two issues run: nothing is lost or doubled, each issue
// gets one session and one pull request, and the queue, started with
// --until-idle, ends complete in a fresh run after each issue.
func TestIssueQueueInParallel(t *testing.T) {
	qr := newQueueRig(t, map[string]any{"auto": true, "sleep_ms": 2500})
	gh := qr.gh
	gh.SetPermission("alice", "write")
	titles := []string{"Add a greeting", "Add a farewell", "Add a shrug"}
	var issues []int
	for _, title := range titles {
		issues = append(issues, gh.AddIssue(fakegithub.IssueSpec{Title: title, Author: "alice", Labels: []string{"ralph-ready"}}))
	}
	w := qr.startWorker(t)
	follow := qr.starter(t, "queue", "--follow", "--parallel", "2", "--until-idle", "--poll-interval", "1h", qr.clone.Dir)

	// Two at once, as status shows.
	var st string
	waitFor(t, 2*time.Minute, "two issues worked on at once", func() bool {
		status := qr.starter(t, "status", "--queue", qr.clone.Dir)
		status.wait(t, time.Minute)
		st = status.Output()
		return strings.Contains(st, fmt.Sprintf("Working on #%d", issues[0])) && strings.Contains(st, fmt.Sprintf("Working on #%d", issues[1]))
	})
	require.Contains(t, st, "2 issues at once; 2 worked on now")
	require.NotContains(t, st, fmt.Sprintf("Working on #%d", issues[2]), "the third waits for a slot")

	// Kill the worker while both run; a new one goes on.
	waitFor(t, time.Minute, "both issues' agents", func() bool {
		var a, b bool
		for _, c := range calls(t, qr.se.env) {
			a = a || strings.Contains(c.Prompt, titles[0])
			b = b || strings.Contains(c.Prompt, titles[1])
		}
		return a && b
	})
	qr.killWorker(t, w)

	require.Equal(t, 0, follow.wait(t, 5*time.Minute), follow.Output())
	fo := follow.Output()
	require.Contains(t, fo, "ended complete: no ready issue left")

	pulls := gh.Pulls()
	require.Len(t, pulls, 3, "one pull request per issue")
	heads := map[string]bool{}
	for _, pr := range pulls {
		heads[pr.Head] = true
	}
	for _, n := range issues {
		require.True(t, heads[contract.IssueBranch(n)], "#%d's pull request", n)
		require.Contains(t, gh.Issue(n).Labels, contract.LabelPROpen)
		require.Len(t, botComments(gh.Issue(n)), 1, "one progress comment on #%d", n)
	}

	// The first two overlapped: the second's first agent started before
	// the first's last one.
	first := map[string][2]time.Time{}
	for _, c := range calls(t, qr.se.env) {
		for _, title := range titles {
			if strings.Contains(c.Prompt, title) {
				span := first[title]
				if span[0].IsZero() {
					span[0] = c.Time
				}
				span[1] = c.Time
				first[title] = span
			}
		}
	}
	require.True(t, first[titles[1]][0].Before(first[titles[0]][1]), "#%d and #%d ran at once: %v", issues[0], issues[1], first)

	c := qr.client(t)
	qid := contract.QueueWorkflowID(testHost, "acme", "app")
	require.GreaterOrEqual(t, len(workflowRuns(t, c, qid)), 4, "a fresh queue run after each issue's end")
	for _, n := range issues {
		sid := contract.IssueSessionID(testHost, "acme", "app", n)
		require.Len(t, workflowRuns(t, c, sid), 1, "one session of #%d", n)
		desc, err := c.DescribeWorkflowExecution(context.Background(), sid, "")
		require.NoError(t, err)
		require.Equal(t, contract.IssueWorkID(sid), desc.GetWorkflowExecutionInfo().GetParentExecution().GetWorkflowId())
		work, err := c.DescribeWorkflowExecution(context.Background(), contract.IssueWorkID(sid), "")
		require.NoError(t, err)
		require.Equal(t, qid, work.GetWorkflowExecutionInfo().GetParentExecution().GetWorkflowId())
		replayAs(t, c, contract.IssueWorkID(sid), fmt.Sprintf("work-%d", n))
	}
	replayAs(t, c, qid, "queue")

	status := qr.starter(t, "status", "--queue", qr.clone.Dir)
	require.Equal(t, 0, status.wait(t, time.Minute), status.Output())
	require.Contains(t, status.Output(), "3 done, 0 failed")
}
