package contract

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLine checks the one iteration line of follow, status and the queue.
func TestLine(t *testing.T) {
	for _, tc := range []struct {
		it   IterationSummary
		want string
	}{
		{IterationSummary{Iteration: 1, Outcome: "success", CostUSD: 0.0125, Tokens: 1, FilesChanged: 1, Commit: "1122d1df0000", Story: "US-001 List widgets"},
			"iteration 1: success, $0.0125, 1 token, 1 file changed, commit 1122d1d [US-001 List widgets]"},
		{IterationSummary{Iteration: 4, Outcome: "success", Tokens: 20550, FilesChanged: 0, Claimed: true, Reason: "completion claimed but prd.json has 2 of 3 done"},
			"iteration 4: success, $0.0000, 20550 tokens, 0 files changed, no commit; completion claimed, not verified (completion claimed but prd.json has 2 of 3 done)"},
		{IterationSummary{Iteration: 5, Outcome: "success", Tokens: 2, FilesChanged: 3, Commit: "abc", Claimed: true, Verified: true},
			"iteration 5: success, $0.0000, 2 tokens, 3 files changed, commit abc; completion claimed and verified"},
		{IterationSummary{Iteration: 6, Role: RoleReviewer, Outcome: "success", CostNote: "cost unknown: no price", Verdict: VerdictFail},
			"iteration 6 (reviewer): success, cost unknown, 0 tokens, 0 files changed, no commit; verdict: fail"},
		{IterationSummary{Iteration: 3, Outcome: "agent_error", Tokens: 5, FilesChanged: 2, Reason: "changed protected path .github/workflows/ci.yml",
			NotCommitted: "changed protected path .github/workflows/ci.yml (patch: .ralph/protected/iteration-3.patch; allow with git.protected-paths: [])"},
			"iteration 3: agent_error, $0.0000, 5 tokens, 2 files changed, no commit; not committed: changed protected path .github/workflows/ci.yml (patch: .ralph/protected/iteration-3.patch; allow with git.protected-paths: [])"},
		{IterationSummary{Iteration: 7, Outcome: "timeout", FilesChanged: 1, Reason: "agent ran past 30m",
			NotCommitted: "changed protected path .github/workflows/ci.yml (patch: p)"},
			"iteration 7: timeout, $0.0000, 0 tokens, 1 file changed, no commit (agent ran past 30m); not committed: changed protected path .github/workflows/ci.yml (patch: p)"},
		{IterationSummary{Iteration: 8, Backend: "codex", Outcome: "success", CostUSD: 0.5, Tokens: 2, FilesChanged: 1, Commit: "abc", Story: "US-002"},
			"iteration 8 on codex (fallback): success, $0.5000, 2 tokens, 1 file changed, commit abc [US-002]"},
	} {
		require.Equal(t, tc.want, tc.it.Line())
	}
}

func TestEndState(t *testing.T) {
	tests := []struct {
		reason Reason
		want   State
	}{
		{ReasonComplete, StateCompleted},
		{ReasonStopped, StateStopped},
		{ReasonCancelled, StateStopped},
		{ReasonMaxIterations, StateLimited},
		{ReasonMaxRuntime, StateLimited},
		{ReasonMaxCost, StateLimited},
		{ReasonConsecutiveFailures, StateFailed},
		{ReasonNoProgress, StateFailed},
		{ReasonCheckpointTimeout, StateFailed},
		{ReasonTaskFileInvalid, StateFailed},
		{ReasonGitRewritten, StateFailed},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, tt.reason.EndState(), string(tt.reason))
	}
}

func TestAnswerSaidWho(t *testing.T) {
	tests := []struct {
		a         Answer
		said, who string
	}{
		{Answer{Approve: true, By: "alice", Via: "starter respond"}, "approved", "by alice through starter respond"},
		{Answer{Reject: true, Reason: "add tests"}, "rejected: add tests", "through a checkpoint signal"},
		{Answer{Answer: "use Postgres", Via: "Telegram"}, "answered: use Postgres", "through Telegram"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.said, tt.a.Said())
		require.Equal(t, tt.who, tt.a.Who())
	}
}
