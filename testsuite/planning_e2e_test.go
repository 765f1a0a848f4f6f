package testsuite_test

import (
	"context"
	"fmt"
	"regexp"
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

// TestIssueDependencies is issue 34's dependency run: three ready issues,
// #2 "Depends on #1", --parallel 2, polling every 5 minutes with the
// webhook on. #1 and #3 run at once; no agent sees #2 before #1's pull
// request is merged; the merge (a webhook to the follower, which tells
// the queue) starts #2 within seconds; the queue's story, status --queue,
// list and one comment on #2 say what it waits for.
func TestIssueDependencies(t *testing.T) {
	qr := newQueueRig(t, map[string]any{"auto": true, "sleep_ms": 1500})
	gh := qr.gh
	gh.SetPermission("alice", "write")
	qr.args = []string{"--dev", "--repo", "acme/app", "--github-api-url", gh.URL()}
	first := gh.AddIssue(fakegithub.IssueSpec{Title: "Add a greeting", Author: "alice", Labels: []string{"ralph-ready"}})
	second := gh.AddIssue(fakegithub.IssueSpec{Title: "Add a farewell", Body: fmt.Sprintf("Say goodbye.\n\nDepends on #%d", first), Author: "alice", Labels: []string{"ralph-ready"}})
	third := gh.AddIssue(fakegithub.IssueSpec{Title: "Add a shrug", Author: "alice", Labels: []string{"ralph-ready"}})

	env := append(append([]string(nil), qr.worker...), "RALPH_GITHUB_WEBHOOK_SECRET="+webhookSecret)
	w := startProc(t, env, bins.worker, "--dev", "--github-webhook-listen", "127.0.0.1:0")
	waitFor(t, time.Minute, "the worker", func() bool { return strings.Contains(w.Output(), "Worker polling") })
	m := regexp.MustCompile(`GitHub webhook:\s+(http://\S+)`).FindStringSubmatch(w.Output())
	require.NotNil(t, m, w.Output())
	gh.SetWebhook(m[1], webhookSecret)

	follow := qr.starter(t, "queue", "--follow", "--parallel", "2", "--poll-interval", "5m", qr.clone.Dir)
	prompted := func(title string) (time.Time, bool) {
		for _, c := range calls(t, qr.se.env) {
			if strings.Contains(c.Prompt, title) {
				return c.Time, true
			}
		}
		return time.Time{}, false
	}
	waitFor(t, 3*time.Minute, "pull requests for #1 and #3", func() bool { return len(gh.Pulls()) == 2 })
	heads := map[string]int{}
	for _, p := range gh.Pulls() {
		heads[p.Head] = p.Number
	}
	require.Contains(t, heads, contract.IssueBranch(first))
	require.Contains(t, heads, contract.IssueBranch(third))
	_, seen := prompted("Add a farewell")
	require.False(t, seen, "no agent sees #2 before #1's pull request is merged")

	// What #2 waits for, everywhere a person looks.
	waitFor(t, time.Minute, "the queue's story to say #2 waits", func() bool {
		return strings.Contains(follow.Output(), fmt.Sprintf("#%d waits for #%d", second, first))
	})
	status := qr.starter(t, "status", "--queue", qr.clone.Dir)
	require.Equal(t, 0, status.wait(t, time.Minute), status.Output())
	require.Contains(t, status.Output(), fmt.Sprintf("#%d Add a farewell: waits for #%d", second, first))
	list := startProc(t, qr.se.env, bins.starter, "list", "--dev")
	require.Equal(t, 0, list.wait(t, time.Minute), list.Output())
	require.Contains(t, list.Output(), "1 waiting")
	require.Contains(t, list.Output(), fmt.Sprintf("#%d waits for #%d", second, first))
	var waitComments int
	for _, c := range botComments(gh.Issue(second)) {
		if strings.Contains(c.Body, "does not take this issue yet") {
			waitComments++
			require.Contains(t, c.Body, fmt.Sprintf("it waits for #%d", first))
		}
	}
	require.Equal(t, 1, waitComments, "one comment on #2")

	// The merge of #1's pull request starts #2.
	merged := time.Now()
	require.NoError(t, gh.MergeByHuman(heads[contract.IssueBranch(first)], "alice"))
	waitFor(t, time.Minute, "#2's first agent run", func() bool { _, ok := prompted("Add a farewell"); return ok })
	at, _ := prompted("Add a farewell")
	took := at.Sub(merged)
	t.Logf("figure: blocker merged to the dependant's first agent run: %s", took.Round(10*time.Millisecond))
	require.Less(t, took, 15*time.Second)
	a1, _ := prompted("Add a greeting")
	a3, _ := prompted("Add a shrug")
	require.Less(t, a3.Sub(a1).Abs(), 10*time.Second, "#1 and #3 ran at once")

	waitFor(t, 3*time.Minute, "#2's pull request", func() bool { return len(gh.Pulls()) == 3 })
	stop := qr.starter(t, "stop", "--queue", qr.clone.Dir)
	require.Equal(t, 0, stop.wait(t, time.Minute), stop.Output())
	follow.wait(t, 3*time.Minute)
	c := qr.client(t)
	replayAs(t, c, contract.QueueWorkflowID(testHost, "acme", "app"), "queue")
	replayAs(t, c, contract.IssueWorkID(contract.IssueSessionID(testHost, "acme", "app", second)), "work")
}
