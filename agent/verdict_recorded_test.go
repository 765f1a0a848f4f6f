package agent_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/durable-ralph/ralph/agent"
	"github.com/durable-ralph/ralph/agent/agenttest"
	"github.com/durable-ralph/ralph/agent/codex"
	"github.com/durable-ralph/ralph/agent/gemini"
	"github.com/durable-ralph/ralph/contract"
)

// TestVerdictRecorded checks the verdicts of the runs of each backend's
// CLI recorded in its testdata.
func TestVerdictRecorded(t *testing.T) {
	tests := []struct {
		backend agent.Backend
		// now is the time of the verdicts.
		now  time.Time
		runs []agenttest.Verdict
	}{
		{codex.Backend{}, codexNow, codexRuns},
		{gemini.Backend{}, geminiNow, geminiRuns},
	}
	for _, tc := range tests {
		t.Run(tc.backend.Name(), func(t *testing.T) {
			agenttest.CheckRecorded(t, tc.backend, filepath.Join(tc.backend.Name(), "testdata"), tc.now, tc.runs)
		})
	}
}

// codexNow is the time of the verdicts of codexRuns: the runs were
// recorded on 2026-11-23 around 01:23 UTC, with TZ=UTC.
var codexNow = time.Date(2026, 11, 23, 1, 23, 0, 0, time.UTC)

// codexRuns are the verdicts of the runs recorded in codex/testdata.
var codexRuns = []agenttest.Verdict{
	{Name: "text", Outcome: contract.OutcomeSuccess},
	{Name: "shell", Outcome: contract.OutcomeSuccess},
	{Name: "patch", Outcome: contract.OutcomeSuccess},
	{Name: "cached", Outcome: contract.OutcomeSuccess},
	{Name: "resume_first", Outcome: contract.OutcomeSuccess},
	{Name: "resume", Outcome: contract.OutcomeSuccess},
	{Name: "garbage", Outcome: contract.OutcomeSuccess},
	// The error item about the model's metadata is a warning.
	{Name: "unknown_model", Outcome: contract.OutcomeSuccess},
	{
		Name: "resume_missing", Outcome: contract.OutcomeAgentError, ResumeFailed: true,
		Reason: "agent could not resume its session: Error: thread/resume: thread/resume failed: no rollout found for thread id 01a205eb-d8ca-79c1-8c81-7ada326ad680",
	},
	{Name: "bad_flag", Outcome: contract.OutcomePermanent, Reason: "agent rejected its command line: error: unexpected argument '--bogus-flag' found"},
	{Name: "api_500", Outcome: contract.OutcomeAgentError, Reason: "agent's turn failed: We’re currently experiencing high demand"},
	{Name: "api_500_retried", Outcome: contract.OutcomeAgentError, Reason: "agent's turn failed: We’re currently experiencing high demand"},
	{Name: "api_400", Outcome: contract.OutcomeAgentError, Reason: `agent's turn failed: {"error":{"message":"Invalid value for 'input': expected a list."`},
	{Name: "api_401", Outcome: contract.OutcomePermanent, Reason: "agent cannot run: unexpected status 401 Unauthorized: Incorrect API key provided"},
	{Name: "missing_key", Outcome: contract.OutcomePermanent, Reason: "agent cannot run: Missing environment variable: `RESPONSESAPI_KEY`."},
	{Name: "rate_limit_429", Outcome: contract.OutcomeRateLimited, Reason: "agent was rate limited: exceeded retry limit, last status: 429 Too Many Requests"},
	{Name: "rate_limit_429_retried", Outcome: contract.OutcomeRateLimited, Reason: "429 Too Many Requests"},
	{
		Name: "rate_limit_failed", Outcome: contract.OutcomeRateLimited, Reason: "rate limit exceeded: Rate limit reached for gpt-5",
		ResetsAt: codexNow.Add(11054 * time.Millisecond),
	},
	{
		Name: "usage_limit", Outcome: contract.OutcomeRateLimited, Reason: "agent was rate limited: You’ve hit your usage limit.",
		ResetsAt: time.Date(2026, 11, 23, 2, 53, 0, 0, time.UTC),
	},
	{
		Name: "usage_limit_days", Outcome: contract.OutcomeRateLimited, Reason: "You’ve hit your usage limit.",
		ResetsAt: time.Date(2026, 11, 26, 4, 23, 0, 0, time.UTC),
	},
	{Name: "usage_limit_later", Outcome: contract.OutcomeRateLimited, Reason: "You’ve hit your usage limit. Try again later."},
	{Name: "quota", Outcome: contract.OutcomePermanent, Reason: "agent cannot run: Quota exceeded. Check your plan and billing details."},
	{Name: "model_not_found", Outcome: contract.OutcomePermanent, Reason: "The model `gpt-nope` does not exist or you do not have access to it."},
	{Name: "overloaded", Outcome: contract.OutcomeRateLimited, Reason: "Selected model is at capacity."},
	{Name: "context_window", Outcome: contract.OutcomeAgentError, Reason: "agent's turn failed: Codex ran out of room in the model's context window."},
	{Name: "plan_without_codex", Outcome: contract.OutcomePermanent, Reason: "To use Codex with your ChatGPT plan, upgrade to Plus"},
	{Name: "cut_off", Outcome: contract.OutcomeAgentError, Reason: "agent's turn failed: stream disconnected before completion"},
	{Name: "killed", Outcome: contract.OutcomeAgentError, Reason: "agent was killed (signal: killed)"},
}

// geminiNow is the time of the verdicts of geminiRuns.
var geminiNow = time.Date(2026, 11, 23, 1, 0, 0, 0, time.UTC)

// geminiRuns are the verdicts of the runs recorded in gemini/testdata.
var geminiRuns = []agenttest.Verdict{
	{Name: "text", Outcome: contract.OutcomeSuccess},
	{Name: "tools", Outcome: contract.OutcomeSuccess},
	{Name: "tool_error", Outcome: contract.OutcomeSuccess},
	{Name: "cached", Outcome: contract.OutcomeSuccess},
	{Name: "resume", Outcome: contract.OutcomeSuccess},
	{Name: "api_500", Outcome: contract.OutcomeAgentError, Reason: `agent exited with status 244: [API Error: {"error":{"code":500,"message":"Internal error encountered."`},
	{Name: "api_500_retried", Outcome: contract.OutcomeAgentError, Reason: "Internal error encountered."},
	{Name: "api_400", Outcome: contract.OutcomeAgentError, Reason: "Request contains an invalid argument."},
	{Name: "api_401", Outcome: contract.OutcomePermanent, Reason: "agent cannot run: [API Error: "},
	{Name: "api_403", Outcome: contract.OutcomePermanent, Reason: "unregistered callers"},
	{Name: "api_404", Outcome: contract.OutcomePermanent, Reason: "models/gemini-9-ultra is not found"},
	{Name: "api_key_invalid", Outcome: contract.OutcomePermanent, Reason: "API key not valid"},
	{Name: "api_503", Outcome: contract.OutcomeRateLimited, Reason: "agent was rate limited: [API Error: The model is overloaded. Please try again later.]"},
	{
		Name:     "rate_limit",
		Outcome:  contract.OutcomeRateLimited,
		Reason:   "agent was rate limited: [API Error: You exceeded your current quota",
		ResetsAt: geminiNow.Add(31 * time.Second),
	},
	{
		Name:     "rate_limit_retried",
		Outcome:  contract.OutcomeRateLimited,
		Reason:   "You exceeded your current quota",
		ResetsAt: geminiNow.Add(3 * time.Second),
	},
	{
		Name:    "rate_limit_daily",
		Outcome: contract.OutcomeRateLimited,
		Reason:  "You have exhausted your daily quota on this model.",
		// Midnight in Pacific time, 8 hours behind UTC in November.
		ResetsAt: time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC),
	},
	{Name: "rate_limit_bare", Outcome: contract.OutcomeRateLimited, Reason: "agent was rate limited: [API Error: Resource has been exhausted (e.g. check quota).]"},
	{Name: "rate_limit_zero", Outcome: contract.OutcomePermanent, Reason: "the API grants no quota for this model"},
	{Name: "turn_limit", Outcome: contract.OutcomeAgentError, Reason: "agent reached its turn limit: Reached max session turns"},
	{Name: "untrusted", Outcome: contract.OutcomePermanent, Reason: "agent cannot run (agent exited with status 55): Gemini CLI is not running in a trusted directory."},
	{Name: "no_api_key", Outcome: contract.OutcomePermanent, Reason: "(agent exited with status 41): When using Gemini API, you must specify the GEMINI_API_KEY environment variable."},
	{Name: "bad_flag", Outcome: contract.OutcomePermanent, Reason: "agent cannot run: Unknown arguments: such-flag, suchFlag"},
	{Name: "killed", Outcome: contract.OutcomeAgentError, Reason: "agent exited with status 0 but printed no result"},
	{
		Name:         "resume_unknown",
		Outcome:      contract.OutcomeAgentError,
		Reason:       `agent could not resume its session: Error resuming session: Invalid session identifier "0b3c3a52-1111-4222-8333-944444444444".`,
		ResumeFailed: true,
	},
	{
		Name:         "resume_no_sessions",
		Outcome:      contract.OutcomeAgentError,
		Reason:       "agent could not resume its session: Error resuming session: No previous sessions found for this project.",
		ResumeFailed: true,
	},
}
