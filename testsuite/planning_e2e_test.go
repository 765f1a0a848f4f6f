package testsuite_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/testsuite/fakegithub"
)

// TestOnLimitAskWaitsForAPerson is issue 34's limit that waits: a
// four-story session at $0.0125 an iteration with --max-cost 0.02
// --on-limit ask waits as awaiting_human with a question that names the
// cost limit; set-limits --max-cost 0.10 lets it finish every story.
func TestOnLimitAskWaitsForAPerson(t *testing.T) {
	r := newRepo(t, map[string]string{"prd.json": fourStoryPRD, "progress.txt": ""})
	se := newStarterEnv(t, scenario(t, map[string]any{"auto": true, "claim_last": true}))
	startDevWorker(t, se)
	id := sessionIDOf(r.Dir)

	code, out := starter(t, se, "run", "--dev", "--max-cost", "0.02", "--on-limit", "ask", r.Dir)
	require.Equal(t, 0, code, out)
	waitForStarter(t, se, "the limit question", id, "list", "--dev", "--status", "awaiting_human")
	code, out = starter(t, se, "status", "--dev", r.Dir)
	require.Equal(t, 0, code, out)
	require.Regexp(t, `State\s+awaiting_human`, out)
	require.Contains(t, out, "cp-2-limit")
	require.Contains(t, out, "reached its cost limit: cost $0.0250 reached the limit of $0.02")
	require.Contains(t, out, "Spent so far: 2 iterations, $0.0250")
	require.Len(t, callsIn(t, se, r.Dir), 2, "no agent runs past the limit")

	// A wrong answer is refused before it reaches the session; a raise
	// lets it go on.
	code, out = starter(t, se, "set-limits", "--dev", r.Dir, "--max-cost", "0.01")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "below the $0.0250 already spent")
	code, out = starter(t, se, "set-limits", "--dev", r.Dir, "--max-cost", "0.10")
	require.Equal(t, 0, code, out)
	code, out = starter(t, se, "run", "--dev", "--follow", r.Dir)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "ended: complete")
	require.Len(t, r.ralphCommits(), 4, "every story")
	code, out = starter(t, se, "status", "--dev", r.Dir)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "cp-2-limit")
	require.Contains(t, out, "limits raised")
	replayFrom(t, se, id)

	// With on-limit end (run's default) the same limit ends the session.
	r2 := newRepo(t, map[string]string{"prd.json": fourStoryPRD, "progress.txt": ""})
	code, out = starter(t, se, "run", "--dev", "--follow", "--max-cost", "0.02", r2.Dir)
	require.Equal(t, 2, code, out)
	require.Contains(t, out, "stopped by limit: max_cost")
	require.Len(t, r2.ralphCommits(), 2)
}

// TestQueueDailyBudgetParks: a queue whose first issue spent its daily
// budget parks in budget_wait, says why in its story, and takes the next
// issue as soon as set-limits raises the budget (not at midnight UTC).
func TestQueueDailyBudgetParks(t *testing.T) {
	qr := newQueueRig(t)
	gh := qr.gh
	gh.SetPermission("alice", "write")
	first := gh.AddIssue(fakegithub.IssueSpec{Title: "Add a greeting", Author: "alice", Labels: []string{"ralph-ready"}})
	qr.startWorker(t)
	start := qr.starter(t, "queue", "--queue-max-cost-per-day", "0.01", "--poll-interval", "1h", qr.clone.Dir)
	require.Equal(t, 0, start.wait(t, time.Minute), start.Output())
	qid := contract.QueueWorkflowID(testHost, "acme", "app")

	var st string
	waitFor(t, 2*time.Minute, "the queue parked by its budget", func() bool {
		p := qr.starter(t, "status", "--queue", qr.clone.Dir)
		p.wait(t, time.Minute)
		st = p.Output()
		return strings.Contains(st, "budget_wait")
	})
	require.Contains(t, st, "queue.max-cost-per-day is $0.01: no new issue before")
	require.Len(t, gh.Pulls(), 1, "#%d's pull request", first)

	second := gh.AddIssue(fakegithub.IssueSpec{Title: "Add a farewell", Author: "alice", Labels: []string{"ralph-ready"}})
	p := qr.starter(t, "set-limits", "--queue", qr.clone.Dir, "--max-cost-per-day", "1")
	require.Equal(t, 0, p.wait(t, time.Minute), p.Output())
	require.Contains(t, p.Output(), "max cost per day $1.00")
	waitFor(t, 2*time.Minute, "the second issue's pull request", func() bool { return len(gh.Pulls()) == 2 })
	require.Equal(t, contract.IssueBranch(second), gh.Pulls()[1].Head)

	stop := qr.starter(t, "stop", "--queue", qr.clone.Dir)
	require.Equal(t, 0, stop.wait(t, time.Minute), stop.Output())
	c := qr.client(t)
	waitFor(t, time.Minute, "the queue to end", func() bool {
		d, err := c.DescribeWorkflowExecution(context.Background(), qid, "")
		return err == nil && d.GetWorkflowExecutionInfo().GetCloseTime() != nil
	})
	replayAs(t, c, qid, "queue")
}
