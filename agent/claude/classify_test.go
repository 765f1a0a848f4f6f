package claude

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the reset-time cases must not depend on the host's zoneinfo

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/agent/agenttest"
	"github.com/durable-ralph/ralph/contract"
)

func mustLoad(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	require.NoError(t, err)
	return loc
}

func TestClassify(t *testing.T) {
	london := mustLoad(t, "Europe/London")
	now := time.Date(2026, 11, 21, 14, 30, 0, 0, time.UTC)
	status1 := agenttest.ExitWith(t, 1)
	status2 := agenttest.ExitWith(t, 2)
	killed := agenttest.ExitWith(t, -1)

	// A diff that talks about rate limits and logins, in a tool call and
	// its result, and a model that talks about them too.
	diffTool := `{"type":"assistant","message":{"id":"msg_01Diff","type":"message","role":"assistant","model":"claude-opus-5-5","content":[{"type":"tool_use","id":"toolu_01Diff","name":"Edit","input":{"file_path":"/work/repo/limits.go","old_string":"// TODO","new_string":"// You've hit your limit · resets 7pm (Europe/London)\n// Claude AI usage limit reached|1763744400\nreturn errors.New(\"Invalid API key · Please run /login\")"}}]},"parent_tool_use_id":null,"session_id":"` + sessionID + `"}`
	diffResult := `{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_01Diff","type":"tool_result","content":"You've hit your limit · resets 7pm (Europe/London)\nrate_limit_error: 429 overloaded\nCredit balance is too low"}]},"parent_tool_use_id":null,"session_id":"` + sessionID + `","tool_use_result":{"stdout":"You've hit your limit · resets 7pm","stderr":"Please run /login"}}`
	diffText := `{"type":"assistant","message":{"id":"msg_01Talk","type":"message","role":"assistant","model":"claude-opus-5-5","content":[{"type":"text","text":"You've hit your limit handling: the client now retries on 429 overloaded and says Please run /login on 401."}]},"parent_tool_use_id":null,"session_id":"` + sessionID + `"}`
	diffSuccess := strings.Replace(lineSuccess, `US-001 is done.\n\n<promise>COMPLETE</promise>`, `Fixed rate limit handling: \"You've hit your limit\" now waits for the reset.`, 1)

	tests := []struct {
		name       string
		out        string
		exitErr    error
		stderr     string
		want       contract.Outcome
		resetsAt   time.Time
		reasonHas  []string
		reasonNone bool
	}{
		{
			name:       "success",
			out:        lines(lineInit, lineText, lineToolUse, lineToolResult, lineSecondTurn, lineSuccess),
			want:       contract.OutcomeSuccess,
			reasonNone: true,
		},
		{
			name:       "success despite a rejected rate limit on the way",
			out:        lines(lineInit, lineRateLimitRejected, lineText, lineSuccess),
			want:       contract.OutcomeSuccess,
			reasonNone: true,
		},
		{
			name:      "success result but a failed exit",
			out:       lines(lineInit, lineText, lineSuccess),
			exitErr:   status2,
			want:      contract.OutcomeAgentError,
			reasonHas: []string{"exited with status 2 after a successful result"},
		},
		{
			name:      "rejected rate limit event",
			out:       lines(lineInit, lineRateLimitRejected, lineUsageLimit, lineUsageLimitResult),
			exitErr:   status1,
			want:      contract.OutcomeRateLimited,
			resetsAt:  time.Unix(1763744400, 0),
			reasonHas: []string{"rate limited (five_hour): You've hit your 5-hour limit · resets 5pm (Europe/London)"},
		},
		{
			name:      "usage limit text without an event",
			out:       lines(lineInit, lineUsageLimit, lineUsageLimitResult),
			exitErr:   status1,
			want:      contract.OutcomeRateLimited,
			resetsAt:  time.Date(2026, 11, 21, 17, 0, 0, 0, london),
			reasonHas: []string{"You've hit your 5-hour limit", "resets at 2026-11-21T17:00:00Z"},
		},
		{
			name: "Claude Code 1.x usage limit in a plain result",
			out: lines(lineInit, strings.Replace(lineSuccess, `US-001 is done.\n\n<promise>COMPLETE</promise>`,
				`Claude AI usage limit reached|1763744400`, 1)),
			want:      contract.OutcomeRateLimited,
			resetsAt:  time.Unix(1763744400, 0),
			reasonHas: []string{"Claude AI usage limit reached"},
		},
		{
			name:     "Claude Code 2.0 limit on stderr",
			out:      lines(lineInit, lineText),
			exitErr:  status1,
			stderr:   "some warning\n5-hour limit reached ∙ resets 3pm\n",
			want:     contract.OutcomeRateLimited,
			resetsAt: time.Date(2026, 11, 21, 15, 0, 0, 0, time.UTC),
		},
		{
			name:      "API 429",
			out:       lines(lineInit, strings.NewReplacer("You've hit your 5-hour limit · resets 5pm (Europe/London)", "API Error: Request rejected (429) · this may be a temporary capacity issue.", `"api_error":"usage_limit_reached"`, `"api_error":"rate_limited"`).Replace(lineUsageLimit)),
			exitErr:   status1,
			want:      contract.OutcomeRateLimited,
			reasonHas: []string{"Request rejected (429)"},
		},
		{
			name:      "API overloaded",
			out:       lines(lineInit, strings.NewReplacer("Can't reach the API server — check your internet or DNS (ENOTFOUND)", "Repeated 529 Overloaded errors. The API is at capacity — this is usually temporary. Try again in a moment.", `,"api_error":"connection_failed"`, "").Replace(lineNoNetwork+"\n"+lineNoNetworkResult)),
			exitErr:   status1,
			want:      contract.OutcomeRateLimited,
			reasonHas: []string{"Repeated 529 Overloaded errors"},
		},
		{
			name:      "not logged in",
			out:       lines(lineInit, lineNotLoggedIn, lineNotLoggedInResult),
			exitErr:   status1,
			want:      contract.OutcomePermanent,
			reasonHas: []string{"Not logged in · Please run /login"},
		},
		{
			name:      "invalid API key",
			out:       lines(lineInit, strings.ReplaceAll(lineNotLoggedIn, "Not logged in · Please run /login", "Invalid API key · Fix external API key")),
			exitErr:   status1,
			want:      contract.OutcomePermanent,
			reasonHas: []string{"Invalid API key"},
		},
		{
			name:      "401 from older CLIs",
			out:       lines(lineInit, strings.Replace(lineNotLoggedInResult, "Not logged in · Please run /login", `API Error: 401 {\"type\":\"error\",\"error\":{\"type\":\"authentication_error\",\"message\":\"invalid x-api-key\"}}`, 1)),
			exitErr:   status1,
			want:      contract.OutcomePermanent,
			reasonHas: []string{"API Error: 401"},
		},
		{
			name:      "no credit",
			out:       lines(lineInit, strings.NewReplacer("Not logged in · Please run /login", "Credit balance is too low", "authentication_failed", "billing_error").Replace(lineNotLoggedIn+"\n"+lineNotLoggedInResult)),
			exitErr:   status1,
			want:      contract.OutcomePermanent,
			reasonHas: []string{"Credit balance is too low"},
		},
		{
			name:      "temporary authentication error",
			out:       lines(lineInit, strings.ReplaceAll(lineNotLoggedIn, "Not logged in · Please run /login", "Authentication error · This may be a temporary network issue, please try again")),
			exitErr:   status1,
			want:      contract.OutcomeAgentError,
			reasonHas: []string{"without a result event"},
		},
		{
			name:      "root without IS_SANDBOX",
			exitErr:   status1,
			stderr:    "--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons\n",
			want:      contract.OutcomePermanent,
			reasonHas: []string{"root/sudo"},
		},
		{
			name:      "stream-json without --verbose",
			exitErr:   status1,
			stderr:    "Error: When using --print, --output-format=stream-json requires --verbose\n",
			want:      contract.OutcomePermanent,
			reasonHas: []string{"requires --verbose"},
		},
		{
			name:      "unknown flag",
			exitErr:   status1,
			stderr:    "error: unknown option '--max-turnz'\n",
			want:      contract.OutcomePermanent,
			reasonHas: []string{"unknown option '--max-turnz'"},
		},
		{
			name:      "binary not found",
			exitErr:   fmt.Errorf("start agent: %w", exec.ErrNotFound),
			want:      contract.OutcomePermanent,
			reasonHas: []string{"could not be started"},
		},
		{
			name:      "no network",
			out:       lines(lineInit, lineAPIRetry, lineNoNetwork, lineNoNetworkResult),
			exitErr:   status1,
			want:      contract.OutcomeAgentError,
			reasonHas: []string{"agent reported an error: API Error: Can't reach the API server"},
		},
		{
			name:      "max turns",
			out:       lines(lineInit, lineToolUse, lineMaxTurns),
			exitErr:   status1,
			want:      contract.OutcomeAgentError,
			reasonHas: []string{"agent ended with error_max_turns: Reached maximum number of turns (3)"},
		},
		{
			name:      "resume of an unknown session",
			out:       lines(lineResumeNotFound),
			exitErr:   status1,
			stderr:    "No conversation found with session ID: 11111111-2222-4333-8444-999999999999\n",
			want:      contract.OutcomeAgentError,
			reasonHas: []string{"error_during_execution: No conversation found"},
		},
		{
			name:      "crash mid-stream",
			out:       lines(lineInit, lineText, lineToolUse),
			exitErr:   status2,
			stderr:    "TypeError: Cannot read properties of undefined\n    at main (cli.js:1:1)\n",
			want:      contract.OutcomeAgentError,
			reasonHas: []string{"agent exited with status 2 without a result event", `stderr: "at main (cli.js:1:1)"`},
		},
		{
			name:      "killed",
			out:       lines(lineInit, lineText),
			exitErr:   killed,
			want:      contract.OutcomeAgentError,
			reasonHas: []string{"agent was killed (signal: killed) without a result event"},
		},
		{
			name:      "clean exit without a result",
			out:       lines(lineInit, lineText, "oops"),
			want:      contract.OutcomeAgentError,
			reasonHas: []string{"agent exited without a result event (1 line was not stream-json)"},
		},
		{
			name:      "only garbage",
			out:       strings.Repeat("<html>502 Bad Gateway</html>\n", 12),
			exitErr:   status1,
			want:      contract.OutcomeAgentError,
			reasonHas: []string{`agent printed 12 lines that are not stream-json and no result and exited with status 1; first: "<html>502 Bad Gateway</html>"`},
		},
		{
			name:      "nothing at all",
			exitErr:   status2,
			stderr:    "Segmentation fault\n",
			want:      contract.OutcomeAgentError,
			reasonHas: []string{`agent exited with status 2 without printing anything; stderr: "Segmentation fault"`},
		},
		{
			name:       "a diff mentioning rate limits, in a successful run",
			out:        lines(lineInit, diffTool, diffResult, diffText, diffSuccess),
			want:       contract.OutcomeSuccess,
			reasonNone: true,
		},
		{
			name:      "a diff mentioning rate limits, in a failed run",
			out:       lines(lineInit, diffTool, diffResult, diffText),
			exitErr:   status1,
			want:      contract.OutcomeAgentError,
			reasonHas: []string{"agent exited with status 1 without a result event"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Classify(parse(t, tt.out), tt.exitErr, tt.stderr, now)
			require.Equal(t, tt.want, v.Outcome, v.Reason)
			require.True(t, tt.resetsAt.Equal(v.ResetsAt), "ResetsAt = %v, want %v", v.ResetsAt, tt.resetsAt)
			if tt.reasonNone {
				require.Empty(t, v.Reason)
			} else {
				require.NotEmpty(t, v.Reason)
			}
			require.NotContains(t, v.Reason, "\n")
			for _, s := range tt.reasonHas {
				require.Contains(t, v.Reason, s)
			}
		})
	}
}

func TestParseResetsAt(t *testing.T) {
	london := mustLoad(t, "Europe/London")
	newYork := mustLoad(t, "America/New_York")
	cet := time.FixedZone("CET", 3600)
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

	tests := []struct {
		name string
		text string
		now  time.Time
		want time.Time // zero: not found
	}{
		{
			name: "later today in a zone",
			text: "You've hit your limit · resets 7pm (Europe/London)",
			want: time.Date(2026, 11, 21, 19, 0, 0, 0, london),
		},
		{
			name: "already past today",
			text: "You've hit your limit · resets 7:30am (Europe/London)",
			want: time.Date(2026, 11, 22, 7, 30, 0, 0, london),
		},
		{
			name: "this very minute",
			text: "resets 10am (UTC)",
			now:  now.Add(30 * time.Second),
			want: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC),
		},
		{
			name: "a minute ago means tomorrow",
			text: "resets 9:59am (UTC)",
			want: time.Date(2026, 11, 22, 9, 59, 0, 0, time.UTC),
		},
		{
			name: "another zone",
			text: "You've hit your 5-hour limit · resets 3pm (America/New_York) · progress saved",
			want: time.Date(2026, 11, 21, 15, 0, 0, 0, newYork),
		},
		{
			name: "zone day differs from UTC day",
			text: "resets 2am (America/New_York)",
			now:  time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC), // 22:00 on the 21st in New York
			want: time.Date(2026, 11, 22, 2, 0, 0, 0, newYork),
		},
		{
			name: "date this year",
			text: "You've hit your weekly limit · resets Dec 1, 3pm (UTC)",
			want: time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC),
		},
		{
			name: "date already past this year",
			text: "You've hit your weekly limit · resets Aug 8, 7pm (Europe/London)",
			want: time.Date(2027, 8, 8, 19, 0, 0, 0, london),
		},
		{
			name: "date with a year",
			text: "You've hit your org's monthly spend limit · resets Jan 2, 2027, 7am (UTC)",
			want: time.Date(2027, 1, 2, 7, 0, 0, 0, time.UTC),
		},
		{
			name: "no zone means now's zone",
			text: "5-hour limit reached ∙ resets 3pm",
			now:  now.In(cet),
			want: time.Date(2026, 11, 21, 15, 0, 0, 0, cet),
		},
		{
			name: "unknown zone means now's zone",
			text: "resets 3pm (Mars/Olympus_Mons)",
			want: time.Date(2026, 11, 21, 15, 0, 0, 0, time.UTC),
		},
		{
			name: "Claude Code 2.0 with a date",
			text: "Opus weekly limit reached ∙ resets Oct 9, 3pm",
			want: time.Date(2027, 10, 9, 15, 0, 0, 0, time.UTC),
		},
		{
			name: "epoch",
			text: "Claude AI usage limit reached|1763744400",
			want: time.Unix(1763744400, 0),
		},
		{name: "no reset", text: "You've hit your limit"},
		{name: "not an hour", text: "resets 13pm (UTC)"},
		{name: "not a month", text: "resets Foo 3, 3pm (UTC)"},
		{name: "empty", text: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := tt.now
			if n.IsZero() {
				n = now
			}
			got, ok := ParseResetsAt(tt.text, n)
			if tt.want.IsZero() {
				require.False(t, ok, "got %v", got)
				return
			}
			require.True(t, ok)
			require.True(t, tt.want.Equal(got), "got %v, want %v", got, tt.want)
		})
	}
}

func TestIsUsageLimitLooksAtTheStartOnly(t *testing.T) {
	tests := []struct {
		text string
		want bool
	}{
		{"You've hit your limit · resets 7pm (Europe/London)", true},
		{"  You've hit your session limit", true},
		{"API Error: You're out of usage credits · resets 3pm (UTC)", true},
		{"Your org is out of usage · add funds to continue", true},
		{"Claude AI usage limit reached|1763744400", true},
		{"5-hour limit reached ∙ resets 3pm", true},
		{"Weekly limit reached ∙ resets Oct 9, 3pm", true},
		{"Fixed the bug. You've hit your limit is now shown.", false},
		{"The tests check that limit reached errors retry; resets happen hourly", false},
		{"You've used 91% of your 5-hour limit · resets 3pm (UTC)", false},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, isUsageLimit(tt.text), tt.text)
	}
}
