package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/app"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/sandbox"
)

// TestStatusShowsTheLastGuidance: status shows the last few guidance
// texts waiting for the next prompt, each on a line of its own, cut, and
// says how many more wait, not the whole pile (a user once had 262 KB).
func TestStatusShowsTheLastGuidance(t *testing.T) {
	var guidance []string
	for i := 1; i <= 40; i++ {
		guidance = append(guidance, fmt.Sprintf("text %d: %s", i, strings.Repeat("use the\nstandard library ", 500)))
	}
	var b bytes.Buffer
	printHistory(&b, contract.Status{Guidance: guidance})
	out := b.String()
	require.Less(t, len(out), 2000, out)
	require.NotContains(t, out, "text 35:")
	for i := 36; i <= 40; i++ {
		require.Contains(t, out, fmt.Sprintf("  - text %d: use the standard library", i))
	}
	require.Contains(t, out, "  and 35 more, sent before these (status -o json has them all)\n")
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		require.LessOrEqual(t, len(line), 2*100, line)
	}

	b.Reset()
	printHistory(&b, contract.Status{Guidance: []string{"short"}})
	require.Equal(t, "\nGuidance for the next iteration:\n  - short\n", b.String())
}

// TestCountsReadAsPeopleWriteThem: one of a thing is not "1 things", and
// money reads "$0.0125" wherever the starter prints it.
func TestCountsReadAsPeopleWriteThem(t *testing.T) {
	var out bytes.Buffer
	cctx := &commandContext{Context: context.Background(), stdout: &out}
	require.NoError(t, cctx.queueEnd("q", contract.QueueResult{Reason: contract.ReasonComplete, Totals: contract.QueueTotals{Done: 1, Iterations: 1, CostUSD: 0.0125}}, nil, false))
	require.Contains(t, out.String(), "\n1 issue done, 0 failed, 0 skipped; 1 iteration, $0.0125\n")

	out.Reset()
	require.NoError(t, cctx.sessionEnd("s", contract.SessionResult{Reason: contract.ReasonComplete, Iterations: 1,
		Totals: contract.Totals{CostUSD: 0.0125, Commits: 1, Usage: contract.Usage{InputTokens: 1}}}, nil, false))
	require.Contains(t, out.String(), "\n1 iteration, $0.0125, 1 token, 1 commit\n")

	out.Reset()
	printQueueStatus(&out, contract.QueueStatus{Totals: contract.QueueTotals{Done: 1, Iterations: 1, CostUSD: 0.0125},
		Settings: contract.QueueSettings{MaxIssues: 1}, Recent: []contract.IssueOutcome{{Number: 7, Title: "t", Iterations: 1, CostUSD: 0.0125}}}, "running", "")
	require.Contains(t, out.String(), "1 done, 0 failed, 0 skipped; 1 iteration, $0.0125")
	require.Contains(t, out.String(), "at most 1 issue\n")
	require.Contains(t, out.String(), "#7 t: , 1 iteration, $0.0125")

	out.Reset()
	printPullStatus(&out, contract.FollowStatus{Head: "abcdef1234", Checks: contract.ChecksSummary{Total: 1, Passed: 1},
		FollowCarryOver: contract.FollowCarryOver{Iterations: 1, CostUSD: 0.0125, Requests: 1}}, "running", "")
	require.Contains(t, out.String(), "1 check, 1 passed")
	require.Contains(t, out.String(), "1 iteration, $0.0125; 1 GitHub request")
}

// TestSandboxUnavailableSaysOneThing: a session that failed for want of
// the sandbox it requires says why in one sentence, with what to do;
// the whole chain of workflow and activity errors only with --verbose.
func TestSandboxUnavailableSaysOneThing(t *testing.T) {
	why := fmt.Errorf("%w: bwrap not found on PATH", sandbox.ErrUnavailable)
	cause := temporal.NewNonRetryableApplicationError(sandbox.Unavailable(why).Error(), contract.ErrTypeSandboxUnavailable, why)
	err := fmt.Errorf("session s failed: %w", temporal.NewApplicationErrorWithCause(
		"iteration 1 failed: activity error (type: RunIteration, scheduledEventID: 11): "+cause.Error(), "IterationFailed", cause))

	cctx := &commandContext{Context: context.Background()}
	msg := cctx.explain(err)
	require.Equal(t, sandbox.Unavailable(why).Error(), msg)
	require.Equal(t, 1, strings.Count(msg, "\n")+1, "one line")
	require.NotContains(t, msg, "activity error")

	cctx.verbose = true
	require.Contains(t, cctx.explain(err), "The whole error chain (--verbose):\nsession s failed: iteration 1 failed: activity error")

	// Refused before the start, by this machine: the same sentence's
	// kind, with the fix.
	cctx.verbose = false
	refused := app.NeedSandbox(contract.SandboxSettings{Mode: sandbox.ModeRequired}, func(contract.SandboxSettings) error { return why })
	require.Equal(t, "agent.sandbox is required, but agents cannot run contained on this machine: bwrap not found on PATH\n"+
		"Install bubblewrap and socat where the agents run (Debian/Ubuntu: sudo apt-get install bubblewrap socat; Fedora: sudo dnf install bubblewrap socat), "+
		"or give the session --sandbox auto (uncontained where agents cannot be contained) or --sandbox off.", cctx.explain(refused))
	require.NoError(t, app.NeedSandbox(contract.SandboxSettings{}, func(contract.SandboxSettings) error { return why }), "auto runs uncontained")
	require.NoError(t, app.NeedSandbox(contract.SandboxSettings{Mode: sandbox.ModeRequired}, func(contract.SandboxSettings) error { return nil }))
}

// TestQueueFollowSaysWhatItWaitsFor: queue --follow says when an issue's
// session waits for an answer (once per question) and when a pull
// request's head has no checks yet, which a repository without CI never
// gets (once per head).
func TestQueueFollowSaysWhatItWaitsFor(t *testing.T) {
	awaiting := execution(t, contract.WorkflowSession, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, map[string]any{
		contract.SearchRalphStatus: string(contract.StateAwaitingHuman)})
	c := &fakeClient{
		describe: func(string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
			return &workflowservice.DescribeWorkflowExecutionResponse{WorkflowExecutionInfo: awaiting}, nil
		},
		query: func(_ int, id, _ string) (any, error) {
			if strings.HasSuffix(id, "/pr") {
				return contract.FollowStatus{State: contract.StateWaitingForChecks, Head: "abcdef1234567"}, nil
			}
			return contract.Status{Pending: &contract.Checkpoint{ID: "cp-2", Type: "decision", Question: "Which parser?", Options: []string{"a", "b"}}}, nil
		},
	}
	var out bytes.Buffer
	cctx := &commandContext{Context: context.Background(), stdout: &out}
	conn := &connection{client: c}
	told := map[string]bool{}
	for range 2 {
		cctx.issueQuestion(cctx, conn, contract.CurrentIssue{Number: 7, SessionID: "ralph-issue-acme-app-7@box"}, told)
		cctx.followerEvents(cctx, conn, contract.Follower{Issue: 7, WorkflowID: "ralph-issue-acme-app-7@box/pr"}, map[string]int{}, told)
	}
	text := out.String()
	require.Equal(t, 1, strings.Count(text, "#7 waits for an answer: checkpoint cp-2 (decision): Which parser?\n"), text)
	require.Contains(t, text, "  options: a / b\n")
	require.Contains(t, text, "respond ralph-issue-acme-app-7@box --checkpoint cp-2 --answer")
	require.Equal(t, 1, strings.Count(text, "#7 pull request: no checks on abcdef1 yet"), text)
}
