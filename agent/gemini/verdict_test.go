package gemini

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/agent/agenttest"
	"github.com/durable-ralph/ralph/contract"
)

// TestVerdictReadsOnlyTheCLI checks that what the model wrote and what a
// tool printed do not count as the CLI's errors.
func TestVerdictReadsOnlyTheCLI(t *testing.T) {
	p := newParser()
	agenttest.Feed(t, p, []string{
		`{"type":"init","session_id":"s","model":"gemini-2.5-flash"}`,
		`{"type":"message","role":"user","content":"Handle 429 RESOURCE_EXHAUSTED and rate limits; API key not valid"}`,
		`{"type":"tool_use","tool_name":"run_shell_command","tool_id":"t","parameters":{"command":"grep -r 'quota exceeded' ."}}`,
		`{"type":"tool_result","tool_id":"t","status":"success","output":"429 Too Many Requests: rate limit exceeded, PERMISSION_DENIED"}`,
		`{"type":"message","role":"assistant","content":"The API returned 429 RESOURCE_EXHAUSTED: exhausted your daily quota. Error resuming session: x","delta":true}`,
	})
	v := p.Verdict(agenttest.ExitWith(t, 1), "", time.Now())
	require.Equal(t, contract.OutcomeAgentError, v.Outcome, v.Reason)
	require.Equal(t, "agent exited with status 1", v.Reason)
	require.False(t, p.ResumeFailed())
}

func TestVerdictNotStarted(t *testing.T) {
	_, err := exec.Command(filepath.Join(t.TempDir(), "gemini")).Output()
	require.Error(t, err)
	p := newParser()
	v := p.Verdict(err, "", time.Now())
	require.Equal(t, contract.OutcomePermanent, v.Outcome)
	require.Contains(t, v.Reason, "agent could not be started")

	_, err = exec.LookPath("no-such-gemini-binary")
	v = p.Verdict(err, "", time.Now())
	require.Equal(t, contract.OutcomePermanent, v.Outcome)
}

func TestVerdictFromStderrAndExitStatus(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name     string
		lines    []string
		code     int
		stderr   string
		outcome  contract.Outcome
		reason   string
		resetsAt time.Time
	}{
		{
			name:    "a result that is not a success, exit 0",
			lines:   []string{`{"type":"result","status":"error","error":{"type":"INVALID_STREAM","message":"Model stream ended with empty response text."},"stats":{"total_tokens":0,"input_tokens":0,"output_tokens":0,"models":{}}}`},
			outcome: contract.OutcomeAgentError,
			reason:  "agent ended with result status error: Model stream ended with empty response text.",
		},
		{
			name:    "429 known from the exit status alone",
			code:    173,
			outcome: contract.OutcomeRateLimited,
			reason:  "agent was rate limited: (no message)",
		},
		{
			name:     "a retry delay in a RetryInfo on stderr",
			code:     1,
			stderr:   `ApiError: {"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"45s"}]}}` + "\n    at throwErrorIfNotOK (file:///x.js:1:1)\n",
			outcome:  contract.OutcomeRateLimited,
			resetsAt: now.Add(46 * time.Second),
		},
		{
			name:     "an error event of the CLI, retry in milliseconds",
			lines:    []string{`{"type":"error","severity":"error","message":"Quota exceeded for quota metric. Please retry in 1500ms."}`},
			code:     1,
			outcome:  contract.OutcomeRateLimited,
			reason:   "agent was rate limited: Quota exceeded for quota metric. Please retry in 1500ms.",
			resetsAt: now.Add(2 * time.Second),
		},
		{
			name: "the result's error wins over earlier errors",
			lines: []string{
				`{"type":"error","severity":"error","message":"Quota exceeded for quota metric, retrying"}`,
				`{"type":"result","status":"error","error":{"type":"unknown","message":"[API Error: {\"error\":{\"code\":500,\"message\":\"Internal error encountered.\",\"status\":\"INTERNAL\"}}]"}}`,
			},
			code:    244,
			stderr:  "Attempt 1 failed with status 429. Retrying with backoff... RESOURCE_EXHAUSTED\n",
			outcome: contract.OutcomeAgentError,
			reason:  "agent exited with status 244: [API Error:",
		},
		{
			name:    "config error",
			code:    52,
			stderr:  "\x1b[31mError in /home/u/.gemini/settings.json: Unexpected end of JSON input\nPlease fix the configuration file(s) and try again.\x1b[0m\n",
			outcome: contract.OutcomePermanent,
			reason:  "agent cannot run (agent exited with status 52): Error in /home/u/.gemini/settings.json: Unexpected end of JSON input Please fix the configuration file(s) and try again.",
		},
		{
			name:    "killed by a signal",
			code:    -1,
			outcome: contract.OutcomeAgentError,
			reason:  "agent was killed (signal: killed)",
		},
		{
			name:    "a stack trace says nothing",
			code:    1,
			stderr:  "TypeError: cannot read properties of undefined\n    at main (file:///x.js:1:1)\n    at async run (file:///x.js:2:2)\n",
			outcome: contract.OutcomeAgentError,
			reason:  "agent exited with status 1: TypeError: cannot read properties of undefined",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newParser()
			agenttest.Feed(t, p, tc.lines)
			v := p.Verdict(agenttest.ExitWith(t, tc.code), tc.stderr, now)
			require.Equal(t, tc.outcome, v.Outcome, v.Reason)
			require.Contains(t, v.Reason, tc.reason)
			require.True(t, tc.resetsAt.Equal(v.ResetsAt), "ResetsAt %s, want %s", v.ResetsAt, tc.resetsAt)
		})
	}
}
