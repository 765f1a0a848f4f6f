package gemini

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/agent"
	"github.com/durable-ralph/ralph/contract"
)

// exitWith is the error of a process that exited with code, as
// exec.Cmd.Wait returns it; nil for 0.
func exitWith(t *testing.T, code int) error {
	t.Helper()
	if code == 0 {
		return nil
	}
	err := exec.Command("sh", "-c", fmt.Sprintf("exit %d", code)).Run()
	_, ok := errors.AsType[*exec.ExitError](err)
	require.True(t, ok, "sh -c 'exit %d': %v", code, err)
	return err
}

// recorded replays testdata/name and returns its parser, its recorded
// stderr and the error of its recorded exit status.
func recorded(t *testing.T, name string) (p *Parser, stderr string, exitErr error) {
	t.Helper()
	p, _ = replay(t, name, agent.Options{})
	code, err := os.ReadFile(filepath.Join("testdata", name+".exit"))
	require.NoError(t, err)
	n, err := strconv.Atoi(strings.TrimSpace(string(code)))
	require.NoError(t, err)
	errOut, err := os.ReadFile(filepath.Join("testdata", name+".stderr"))
	require.NoError(t, err)
	return p, string(errOut), exitWith(t, n)
}

func TestVerdictRecorded(t *testing.T) {
	now := time.Date(2026, 11, 23, 1, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		outcome contract.Outcome
		// reason is part of the wanted Reason.
		reason       string
		resetsAt     time.Time
		resumeFailed bool
	}{
		{name: "text", outcome: contract.OutcomeSuccess},
		{name: "tools", outcome: contract.OutcomeSuccess},
		{name: "tool_error", outcome: contract.OutcomeSuccess},
		{name: "cached", outcome: contract.OutcomeSuccess},
		{name: "resume", outcome: contract.OutcomeSuccess},
		{name: "api_500", outcome: contract.OutcomeAgentError, reason: `agent exited with status 244: [API Error: {"error":{"code":500,"message":"Internal error encountered."`},
		{name: "api_500_retried", outcome: contract.OutcomeAgentError, reason: "Internal error encountered."},
		{name: "api_400", outcome: contract.OutcomeAgentError, reason: "Request contains an invalid argument."},
		{name: "api_401", outcome: contract.OutcomePermanent, reason: "agent cannot run: [API Error: "},
		{name: "api_403", outcome: contract.OutcomePermanent, reason: "unregistered callers"},
		{name: "api_404", outcome: contract.OutcomePermanent, reason: "models/gemini-9-ultra is not found"},
		{name: "api_key_invalid", outcome: contract.OutcomePermanent, reason: "API key not valid"},
		{name: "api_503", outcome: contract.OutcomeRateLimited, reason: "agent was rate limited: [API Error: The model is overloaded. Please try again later.]"},
		{
			name:     "rate_limit",
			outcome:  contract.OutcomeRateLimited,
			reason:   "agent was rate limited: [API Error: You exceeded your current quota",
			resetsAt: now.Add(31 * time.Second),
		},
		{
			name:     "rate_limit_retried",
			outcome:  contract.OutcomeRateLimited,
			reason:   "You exceeded your current quota",
			resetsAt: now.Add(3 * time.Second),
		},
		{
			name:    "rate_limit_daily",
			outcome: contract.OutcomeRateLimited,
			reason:  "You have exhausted your daily quota on this model.",
			// Midnight in Pacific time, 8 hours behind UTC in November.
			resetsAt: time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC),
		},
		{name: "rate_limit_bare", outcome: contract.OutcomeRateLimited, reason: "agent was rate limited: [API Error: Resource has been exhausted (e.g. check quota).]"},
		{name: "rate_limit_zero", outcome: contract.OutcomePermanent, reason: "the API grants no quota for this model"},
		{name: "turn_limit", outcome: contract.OutcomeAgentError, reason: "agent reached its turn limit: Reached max session turns"},
		{name: "untrusted", outcome: contract.OutcomePermanent, reason: "agent cannot run (agent exited with status 55): Gemini CLI is not running in a trusted directory."},
		{name: "no_api_key", outcome: contract.OutcomePermanent, reason: "(agent exited with status 41): When using Gemini API, you must specify the GEMINI_API_KEY environment variable."},
		{name: "bad_flag", outcome: contract.OutcomePermanent, reason: "agent cannot run: Unknown arguments: such-flag, suchFlag"},
		{name: "killed", outcome: contract.OutcomeAgentError, reason: "agent exited with status 0 but printed no result"},
		{
			name:         "resume_unknown",
			outcome:      contract.OutcomeAgentError,
			reason:       `agent could not resume its session: Error resuming session: Invalid session identifier "0b3c3a52-1111-4222-8333-944444444444".`,
			resumeFailed: true,
		},
		{
			name:         "resume_no_sessions",
			outcome:      contract.OutcomeAgentError,
			reason:       "agent could not resume its session: Error resuming session: No previous sessions found for this project.",
			resumeFailed: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, stderr, exitErr := recorded(t, tc.name)
			v := p.Verdict(exitErr, stderr, now)
			require.Equal(t, tc.outcome, v.Outcome, v.Reason)
			if tc.outcome == contract.OutcomeSuccess {
				require.Empty(t, v.Reason)
			} else {
				require.Contains(t, v.Reason, tc.reason)
				require.LessOrEqual(t, len(v.Reason), maxReasonLen)
			}
			require.True(t, tc.resetsAt.Equal(v.ResetsAt), "ResetsAt %s, want %s", v.ResetsAt, tc.resetsAt)
			require.Equal(t, tc.resumeFailed, p.ResumeFailed())
		})
	}
}

// TestVerdictReadsOnlyTheCLI checks that what the model wrote and what a
// tool printed do not count as the CLI's errors.
func TestVerdictReadsOnlyTheCLI(t *testing.T) {
	p := Backend{}.NewParser(agent.Options{}).(*Parser)
	feed(t, p, []string{
		`{"type":"init","session_id":"s","model":"gemini-2.5-flash"}`,
		`{"type":"message","role":"user","content":"Handle 429 RESOURCE_EXHAUSTED and rate limits; API key not valid"}`,
		`{"type":"tool_use","tool_name":"run_shell_command","tool_id":"t","parameters":{"command":"grep -r 'quota exceeded' ."}}`,
		`{"type":"tool_result","tool_id":"t","status":"success","output":"429 Too Many Requests: rate limit exceeded, PERMISSION_DENIED"}`,
		`{"type":"message","role":"assistant","content":"The API returned 429 RESOURCE_EXHAUSTED: exhausted your daily quota. Error resuming session: x","delta":true}`,
	})
	v := p.Verdict(exitWith(t, 1), "", time.Now())
	require.Equal(t, contract.OutcomeAgentError, v.Outcome, v.Reason)
	require.Equal(t, "agent exited with status 1", v.Reason)
	require.False(t, p.ResumeFailed())
}

func TestVerdictNotStarted(t *testing.T) {
	_, err := exec.Command(filepath.Join(t.TempDir(), "gemini")).Output()
	require.Error(t, err)
	p := Backend{}.NewParser(agent.Options{}).(*Parser)
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
			p := Backend{}.NewParser(agent.Options{}).(*Parser)
			feed(t, p, tc.lines)
			var exitErr error
			if tc.code == -1 {
				cmd := exec.Command("sh", "-c", "kill -KILL $$")
				exitErr = cmd.Run()
			} else {
				exitErr = exitWith(t, tc.code)
			}
			v := p.Verdict(exitErr, tc.stderr, now)
			require.Equal(t, tc.outcome, v.Outcome, v.Reason)
			require.Contains(t, v.Reason, tc.reason)
			require.True(t, tc.resetsAt.Equal(v.ResetsAt), "ResetsAt %s, want %s", v.ResetsAt, tc.resetsAt)
		})
	}
}
