package claude

import (
	"github.com/durable-ralph/ralph/agent"
	"github.com/durable-ralph/ralph/contract"

	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

const sessionID = "407f6171-57b2-40cd-b369-04a6345f76fa"

func TestParserLine(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		want    Event
		wantErr bool
	}{
		{
			name: "init",
			line: lineInit,
			want: Event{Type: "system", Subtype: "init", SessionID: sessionID},
		},
		{
			name: "text block",
			line: lineText,
			want: Event{Type: "assistant", SessionID: sessionID, MessageID: "msg_01FxK8yKbWgq3oQ3u9cZr2tA", Text: "I'll implement US-001 now."},
		},
		{
			name: "thinking block",
			line: lineThinking,
			want: Event{Type: "assistant", SessionID: sessionID, MessageID: "msg_01FxK8yKbWgq3oQ3u9cZr2tA", Thinking: true},
		},
		{
			name: "tool use",
			line: lineToolUse,
			want: Event{
				Type: "assistant", SessionID: sessionID, MessageID: "msg_01FxK8yKbWgq3oQ3u9cZr2tA",
				ToolUses: 1, ToolName: "Write", ToolUseID: "toolu_01A09q90qw90lq917835lq9", ToolSubject: "/work/repo/story-US-001.txt",
			},
		},
		{
			name: "tool result",
			line: lineToolResult,
			want: Event{Type: "user", SessionID: sessionID, IsToolResult: true, ToolUseID: "toolu_01A09q90qw90lq917835lq9"},
		},
		{
			name: "failed tool call",
			line: lineToolError,
			want: Event{Type: "user", SessionID: sessionID, IsToolResult: true, ToolUseID: "toolu_01Bq3c8d7e6f5g4h3i2j1k0l", ToolError: true},
		},
		{
			name: "subagent tool use",
			line: lineSubagentTool,
			want: Event{
				Type: "assistant", SessionID: sessionID, MessageID: "msg_01Sub1aGeNt2tOoL3uSe4aBc", Subagent: true,
				ToolUses: 1, ToolName: "Grep", ToolUseID: "toolu_01SubAgentGrep000000000", ToolSubject: "widget",
			},
		},
		{
			name: "API error made up by Claude Code",
			line: lineNotLoggedIn,
			want: Event{
				Type: "assistant", SessionID: sessionID, MessageID: "cfa16a1d-2a79-47d3-8154-46aee9bfe26d",
				Text: "Not logged in · Please run /login", APIError: "authentication_failed",
			},
		},
		{
			name: "rate limit event",
			line: lineRateLimitRejected,
			want: Event{
				Type: "rate_limit_event", SessionID: sessionID,
				RateLimit: &RateLimit{Status: "rejected", Type: "five_hour", ResetsAt: time.Unix(1763744400, 0).UTC()},
			},
		},
		{
			name: "result",
			line: lineSuccess,
			want: Event{Type: "result", Subtype: "success", SessionID: sessionID, Text: "US-001 is done.\n\n<promise>COMPLETE</promise>"},
		},
		{
			name: "error result",
			line: lineMaxTurns,
			want: Event{Type: "result", Subtype: "error_max_turns", SessionID: sessionID, Text: "Reached maximum number of turns (3)", IsError: true},
		},
		{
			name: "unknown type",
			line: `{"type":"stream_event","event":{"type":"content_block_delta"},"session_id":"` + sessionID + `"}`,
			want: Event{Type: "stream_event", SessionID: sessionID},
		},
		{
			name: "field of an unexpected type",
			line: `{"type":"result","subtype":"success","is_error":false,"result":"done","usage":"lots","num_turns":"3","total_cost_usd":0.5}`,
			want: Event{Type: "result", Subtype: "success", Text: "done"},
		},
		{
			name: "user prompt as a plain string",
			line: `{"type":"user","message":{"role":"user","content":"Work on US-001"},"session_id":"` + sessionID + `"}`,
			want: Event{Type: "user", SessionID: sessionID},
		},
		{name: "blank", line: "  \r\n"},
		{name: "plain text", line: "Segmentation fault (core dumped)", wantErr: true},
		{name: "JSON array", line: `["type","result"]`, wantErr: true},
		{name: "JSON string", line: `"result"`, wantErr: true},
		{name: "no type", line: `{"subtype":"init","session_id":"x"}`, wantErr: true},
		{name: "type not a string", line: `{"type":7}`, wantErr: true},
		{name: "truncated object", line: `{"type":"assistant","message":{"content":[`, wantErr: true},
		{name: "object then garbage", line: `{"type":"result"} trailing`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewParser()
			got, err := p.Line([]byte(tt.line))
			if tt.wantErr {
				require.Error(t, err)
				require.True(t, errors.Is(err, ErrInvalidLine), err)
				require.Equal(t, 1, p.Summary().InvalidLines)
				require.Equal(t, 0, p.Summary().Events)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
			require.Equal(t, 0, p.Summary().InvalidLines)
		})
	}
}

func TestParserSummary(t *testing.T) {
	tests := []struct {
		name string
		out  string
		want Summary
	}{
		{
			name: "successful run",
			out: lines(lineInit, lineRateLimitAllowed, lineThinking, lineText, lineToolUse, lineToolResult,
				lineSubagentTool, lineSecondTurn, lineSuccess),
			want: Summary{
				SessionID: sessionID, Model: "claude-opus-5-5", CLIVersion: "2.1.329", CWD: "/work/repo",
				Lines: agent.Lines{Events: 9}, Turns: 2, ToolUses: 2, LastTool: "Grep", ToolResults: 1,
				LastText:  "US-001 is done.\n\n<promise>COMPLETE</promise>",
				HasResult: true, ResultSubtype: "success",
				ResultText:     "US-001 is done.\n\n<promise>COMPLETE</promise>",
				TerminalReason: "completed",
				CostUSD:        0.0125,
				Usage:          contract.Usage{InputTokens: 1200, OutputTokens: 350, CacheCreationInputTokens: 4000, CacheReadInputTokens: 15000},
				NumTurns:       3, DurationMS: 12034, DurationAPIMS: 10873,
				RateLimit: &RateLimit{Status: "allowed_warning", Type: "five_hour", ResetsAt: time.Unix(1763744400, 0).UTC()},
			},
		},
		{
			name: "max turns",
			out:  lines(lineInit, lineToolUse, lineToolError, lineMaxTurns),
			want: Summary{
				SessionID: sessionID, Model: "claude-opus-5-5", CLIVersion: "2.1.329", CWD: "/work/repo",
				Lines: agent.Lines{Events: 4}, Turns: 1, ToolUses: 1, LastTool: "Write", ToolResults: 1, ToolErrors: 1,
				HasResult: true, ResultSubtype: "error_max_turns", IsError: true,
				ResultText: "Reached maximum number of turns (3)", TerminalReason: "max_turns",
				CostUSD: 0.02, Usage: contract.Usage{InputTokens: 10, OutputTokens: 20},
				NumTurns: 3, DurationMS: 6000, DurationAPIMS: 5000, PermissionDenials: 1,
			},
		},
		{
			name: "not logged in",
			out:  lines(lineInit, lineNotLoggedIn, lineNotLoggedInResult),
			want: Summary{
				SessionID: sessionID, Model: "claude-opus-5-5", CLIVersion: "2.1.329", CWD: "/work/repo",
				Lines:    agent.Lines{Events: 3},
				APIError: "authentication_failed", APIErrorText: "Not logged in · Please run /login",
				HasResult: true, ResultSubtype: "success", IsError: true,
				ResultText: "Not logged in · Please run /login", TerminalReason: "api_error",
				NumTurns: 1, DurationMS: 217,
			},
		},
		{
			name: "no network",
			out:  lines(lineInit, lineAPIRetry, lineAPIRetry, lineNoNetwork, lineNoNetworkResult),
			want: Summary{
				SessionID: "d2862401-c305-4843-9b74-0446c57c082b", Model: "claude-opus-5-5", CLIVersion: "2.1.329", CWD: "/work/repo",
				Lines: agent.Lines{Events: 5}, APIRetries: 2,
				APIError: "server_error", APIErrorText: "API Error: Can't reach the API server — check your internet or DNS (ENOTFOUND)",
				HasResult: true, ResultSubtype: "success", IsError: true,
				ResultText:     "API Error: Can't reach the API server — check your internet or DNS (ENOTFOUND)",
				TerminalReason: "api_error", ResultAPIError: "connection_failed",
				NumTurns: 1, DurationMS: 181225,
			},
		},
		{
			name: "usage limit",
			out:  lines(lineInit, lineRateLimitRejected, lineUsageLimit, lineUsageLimitResult),
			want: Summary{
				SessionID: sessionID, Model: "claude-opus-5-5", CLIVersion: "2.1.329", CWD: "/work/repo",
				Lines:    agent.Lines{Events: 4},
				APIError: "rate_limit", APIErrorText: "You've hit your 5-hour limit · resets 5pm (Europe/London)",
				HasResult: true, ResultSubtype: "success", IsError: true,
				ResultText:     "You've hit your 5-hour limit · resets 5pm (Europe/London)",
				TerminalReason: "api_error", APIErrorStatus: 429, ResultAPIError: "usage_limit_reached",
				NumTurns: 1, DurationMS: 310,
				RateLimit: &RateLimit{Status: "rejected", Type: "five_hour", ResetsAt: time.Unix(1763744400, 0).UTC()},
			},
		},
		{
			name: "resume of an unknown session",
			out:  lines(lineResumeNotFound),
			want: Summary{
				SessionID: "11111111-2222-4333-8444-999999999999", Lines: agent.Lines{Events: 1},
				HasResult: true, ResultSubtype: "error_during_execution", IsError: true,
				ResultText: "No conversation found with session ID: 11111111-2222-4333-8444-999999999999",
			},
		},
		{
			name: "garbage between events",
			out: lines("", "Welcome to the fake shell", lineInit, "{not json", "",
				`{"type":"keep_alive"}`, "\x00\x01\x02", lineText),
			want: Summary{
				SessionID: sessionID, Model: "claude-opus-5-5", CLIVersion: "2.1.329", CWD: "/work/repo",
				Lines: agent.Lines{Events: 3, InvalidLines: 3, FirstInvalidLine: "Welcome to the fake shell", UnknownEvents: 1},
				Turns: 1, LastText: "I'll implement US-001 now.",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, parse(t, tt.out))
		})
	}
}

func TestParserOversized(t *testing.T) {
	p := NewParser()
	p.Oversized()
	_, err := p.Line([]byte(lineInit))
	require.NoError(t, err)
	s := p.Summary()
	require.Equal(t, 1, s.OversizedLines)
	require.Equal(t, 1, s.Events)
	require.Equal(t, 0, s.InvalidLines)
}

func TestParserBoundsTexts(t *testing.T) {
	long := "BEGIN " + strings.Repeat("é", 100_000) + " <promise>COMPLETE</promise>"
	text := strings.Replace(lineSecondTurn, `US-001 is done.\n\n<promise>COMPLETE</promise>`, long, 1)
	result := strings.Replace(lineSuccess, `US-001 is done.\n\n<promise>COMPLETE</promise>`, long, 1)
	garbage := strings.Repeat("x", 1<<20)

	p := NewParser()
	for _, l := range []string{text, result, garbage} {
		_, _ = p.Line([]byte(l))
	}
	s := p.Summary()
	for name, got := range map[string]string{"LastText": s.LastText, "ResultText": s.ResultText} {
		require.LessOrEqual(t, len(got), MaxTextLen, name)
		require.True(t, utf8.ValidString(got), name)
		require.True(t, strings.HasPrefix(got, "BEGIN "), name)
		require.True(t, strings.HasSuffix(got, " <promise>COMPLETE</promise>"), name)
	}
	require.LessOrEqual(t, len(s.FirstInvalidLine), maxExcerptLen)
}

func TestClip(t *testing.T) {
	tests := []struct {
		s    string
		max  int
		want string
	}{
		{s: "short", max: 20, want: "short"},
		{s: "0123456789abcdefghijklmnopqrstuvwxyz", max: 25, want: "0123456789 … qrstuvwxyz"},
		{s: strings.Repeat("é", 30), max: 25, want: strings.Repeat("é", 5) + " … " + strings.Repeat("é", 5)},
	}
	for _, tt := range tests {
		got := clipMiddle(tt.s, tt.max)
		require.Equal(t, tt.want, got)
		require.LessOrEqual(t, len(got), tt.max)
	}
}

func FuzzParserLine(f *testing.F) {
	for _, l := range []string{
		lineInit, lineAPIRetry, lineText, lineThinking, lineToolUse, lineToolResult, lineToolError,
		lineSubagentTool, lineSuccess, lineMaxTurns, lineNotLoggedIn, lineNotLoggedInResult,
		lineResumeNotFound, lineRateLimitRejected, lineUsageLimit, lineUsageLimitResult,
		"", "garbage", `{"type":null}`, `{"type":"result","result":null,"errors":[1,{}]}`,
		`{"type":"assistant","message":{"content":[{"type":"text","text":7}]}}`,
		`{"type":"rate_limit_event","rate_limit_info":{"resetsAt":1e300}}`,
	} {
		f.Add([]byte(l))
	}
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, line []byte) {
		p := NewParser()
		ev, err := p.Line(line)
		s := p.Summary()
		if err != nil {
			require.ErrorIs(t, err, ErrInvalidLine)
			require.Equal(t, Event{}, ev)
			require.Equal(t, 1, s.InvalidLines)
		}
		require.LessOrEqual(t, s.Events+s.InvalidLines, 1)
		require.LessOrEqual(t, len(s.LastText), MaxTextLen)
		require.LessOrEqual(t, len(s.ResultText), MaxTextLen)
		require.LessOrEqual(t, len(ev.Text), MaxTextLen)
		v := Classify(s, nil, string(line), now)
		require.NotEmpty(t, v.Outcome)
		require.NotContains(t, v.Reason, "\n")
	})
}

func BenchmarkParserLine(b *testing.B) {
	big := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB of tool output
	for _, bm := range []struct{ name, line string }{
		{"text", lineText},
		{"tool_result_1MiB", strings.Replace(lineToolResult, `"content":"File created successfully at: /work/repo/story-US-001.txt"`, `"content":"`+big+`"`, 1)},
		{"result", lineSuccess},
	} {
		b.Run(bm.name, func(b *testing.B) {
			line := []byte(bm.line)
			p := NewParser()
			b.SetBytes(int64(len(line)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Line(line); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
