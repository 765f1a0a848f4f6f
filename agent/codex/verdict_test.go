package codex

import (
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/agent/agenttest"
	"github.com/durable-ralph/ralph/contract"
)

func TestVerdictSynthetic(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	completed := []string{
		`{"type":"thread.started","thread_id":"t"}`,
		`{"type":"turn.started"}`,
		`{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"I hit a rate limit in the docs: 429 Too Many Requests, usage limit reached."}}`,
		`{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"bash -lc 'cat log'","aggregated_output":"Error: 401 Unauthorized","exit_code":1,"status":"failed"}}`,
		`{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":0,"output_tokens":5}}`,
	}
	tests := []struct {
		name     string
		lines    []string
		exitErr  error
		stderr   string
		outcome  contract.Outcome
		reason   string
		resetsAt time.Time
	}{
		{
			name:    "success_whatever_the_model_says",
			lines:   completed,
			outcome: contract.OutcomeSuccess,
		},
		{
			name: "reconnects_then_success",
			lines: append([]string{
				`{"type":"error","message":"Reconnecting... 1/5 (exceeded retry limit, last status: 429 Too Many Requests)"}`,
			}, completed...),
			outcome: contract.OutcomeSuccess,
		},
		{
			name:    "not_found",
			exitErr: fmt.Errorf("exec: %q: %w", "codex", exec.ErrNotFound),
			outcome: contract.OutcomePermanent,
			reason:  "agent could not be started: exec: \"codex\": executable file not found in $PATH",
		},
		{
			name:    "model_text_is_not_read",
			lines:   completed[:4],
			exitErr: agenttest.ExitWith(t, 1),
			outcome: contract.OutcomeAgentError,
			reason:  "agent exited with status 1",
		},
		{
			name:    "exit_0_without_a_turn",
			lines:   completed[:2],
			outcome: contract.OutcomeAgentError,
			reason:  "agent exited with status 0 but completed no turn (was it stopped?)",
		},
		{
			name:    "completed_then_failed_exit",
			lines:   completed,
			exitErr: agenttest.ExitWith(t, 1),
			outcome: contract.OutcomeAgentError,
			reason:  "agent exited with status 1",
		},
		{
			name:    "config_error_on_stderr",
			exitErr: agenttest.ExitWith(t, 1),
			stderr:  "Error loading config.toml:\n/home/u/.codex/config.toml:1:19: unclosed array, expected `]`\n",
			outcome: contract.OutcomePermanent,
			reason:  "agent cannot run: Error loading config.toml:",
		},
		{
			name:    "untrusted_directory",
			exitErr: agenttest.ExitWith(t, 1),
			stderr:  "Not inside a trusted directory and --skip-git-repo-check was not specified.\n",
			outcome: contract.OutcomePermanent,
		},
		{
			name:    "invalid_value",
			exitErr: agenttest.ExitWith(t, 2),
			stderr:  "error: invalid value 'nope' for '--sandbox <SANDBOX_MODE>'\n  [possible values: read-only, workspace-write, danger-full-access]\n\nFor more information, try '--help'.\n",
			outcome: contract.OutcomePermanent,
			reason:  "agent rejected its command line: error: invalid value 'nope' for '--sandbox <SANDBOX_MODE>'",
		},
		{
			name: "failed_turn_decides",
			lines: []string{
				`{"type":"error","message":"Reconnecting... 1/5 (rate limit exceeded: slow down)"}`,
				`{"type":"turn.failed","error":{"message":"unexpected status 403 Forbidden: Country, region, or territory not supported"}}`,
			},
			exitErr: agenttest.ExitWith(t, 1),
			outcome: contract.OutcomePermanent,
			reason:  "agent cannot run: unexpected status 403 Forbidden",
		},
		{
			name:     "retry_in_minutes",
			lines:    []string{`{"type":"turn.failed","error":{"message":"rate limit exceeded: Please try again in 6m0s."}}`},
			exitErr:  agenttest.ExitWith(t, 1),
			outcome:  contract.OutcomeRateLimited,
			resetsAt: now.Add(6 * time.Minute),
		},
		{
			name:     "reset_tomorrow",
			lines:    []string{`{"type":"turn.failed","error":{"message":"You’ve hit your usage limit. Try again at 9:15 AM."}}`},
			exitErr:  agenttest.ExitWith(t, 1),
			outcome:  contract.OutcomeRateLimited,
			resetsAt: time.Date(2026, 11, 24, 9, 15, 0, 0, time.UTC),
		},
		{
			name:     "reset_pm",
			lines:    []string{`{"type":"turn.failed","error":{"message":"You’ve hit your usage limit. Try again at 12:30 PM."}}`},
			exitErr:  agenttest.ExitWith(t, 1),
			outcome:  contract.OutcomeRateLimited,
			resetsAt: time.Date(2026, 11, 23, 12, 30, 0, 0, time.UTC),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newParser()
			agenttest.Feed(t, p, tc.lines)
			v := p.Verdict(tc.exitErr, tc.stderr, now)
			require.Equal(t, tc.outcome, v.Outcome, v.Reason)
			require.Contains(t, v.Reason, tc.reason)
			require.Equal(t, tc.resetsAt, v.ResetsAt)
			require.False(t, p.ResumeFailed())
		})
	}
}

func TestResetsAt(t *testing.T) {
	loc := time.FixedZone("CET", 3600)
	now := time.Date(2026, 11, 23, 23, 50, 30, 0, loc)
	tests := []struct {
		text string
		want time.Time
	}{
		{"Please try again in 20s.", now.Add(20 * time.Second)},
		{"Please try again in 1.5s.", now.Add(1500 * time.Millisecond)},
		{"try again in 120ms", now.Add(120 * time.Millisecond)},
		{"try again in 2h10m5s", now.Add(2*time.Hour + 10*time.Minute + 5*time.Second)},
		{"Try again in 20 seconds", now.Add(20 * time.Second)},
		{"try again in 3 minutes", now.Add(3 * time.Minute)},
		{"try again at 11:50 PM.", time.Date(2026, 11, 23, 23, 50, 0, 0, loc)},
		{"try again at 11:40 PM.", time.Date(2026, 11, 24, 23, 40, 0, 0, loc)},
		{"try again at 12:05 AM.", time.Date(2026, 11, 24, 0, 5, 0, 0, loc)},
		{"try again at 0:05", time.Date(2026, 11, 24, 0, 5, 0, 0, loc)},
		{"try again at Dec 1st, 2026 4:04 PM.", time.Date(2026, 12, 1, 16, 4, 0, 0, loc)},
		{"try again at January 2nd, 2027 7:00 AM", time.Date(2027, 1, 2, 7, 0, 0, 0, loc)},
		{"try again later", time.Time{}},
		{"try again at 25:99", time.Time{}},
		{"try again at Foo 3rd, 2026 1:00 AM", time.Time{}},
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, resetsAt(tc.text, now), tc.text)
	}
}
