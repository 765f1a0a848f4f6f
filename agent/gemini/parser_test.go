package gemini

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/agent"
	"github.com/durable-ralph/ralph/agent/agenttest"
	"github.com/durable-ralph/ralph/contract"
)

func TestParserRecorded(t *testing.T) {
	tests := []struct {
		name string
		want agent.Summary
		// cost is the wanted CostUSD when CostKnown.
		cost float64
		// note is part of the wanted CostNote when the cost is unknown.
		note string
	}{
		{
			name: "text",
			want: agent.Summary{
				SessionID: "df437d8c-ee5e-45dc-b823-3acfd76f5110",
				// The init event says "auto"; the result names the
				// models the CLI used, the router's and this one.
				Model:     "gemini-3.8-flash",
				Lines:     agent.Lines{Events: 5},
				Turns:     1,
				FinalText: "All stories pass.\n<promise>COMPLETE</promise>\n",
				Usage:     contract.Usage{InputTokens: 883 + 12004, OutputTokens: 13 + 12},
			},
			note: `no price for model "gemini-3.5-flash-lite"`,
		},
		{
			name: "tools",
			want: agent.Summary{
				SessionID: "689444c4-f365-4dcf-b963-84978b2ada67",
				Model:     "gemini-2.5-flash",
				Lines:     agent.Lines{Events: 11},
				Turns:     3,
				ToolUses:  2,
				LastTool:  "write_file",
				FinalText: "Reply number 2 to your prompt. It says: SHELL: create hello.txt and notes/out.txt",
				Usage:     contract.Usage{InputTokens: 36973, OutputTokens: 76},
				CostKnown: true,
			},
			cost: (36973*0.3 + 76*2.5) / 1e6,
		},
		{
			name: "tool_error",
			want: agent.Summary{
				SessionID: "06086e1a-e753-423d-8eef-17978ecf7553",
				Model:     "gemini-2.5-flash",
				Lines:     agent.Lines{Events: 9},
				Turns:     3,
				ToolUses:  2,
				LastTool:  "read_file",
				FinalText: "Reply number 2 to your prompt. It says: TOOLFAIL: run a failing command",
				Usage:     contract.Usage{InputTokens: 36957, OutputTokens: 60},
				CostKnown: true,
			},
			cost: (36957*0.3 + 60*2.5) / 1e6,
		},
		{
			name: "cached",
			want: agent.Summary{
				SessionID: "f2eb1888-2233-4505-a1dc-bf7cd64dd1dd",
				Model:     "gemini-2.5-flash",
				Lines:     agent.Lines{Events: 4},
				Turns:     1,
				FinalText: "Cached and thought.",
				// 50 candidates and 120 thinking tokens are billed as
				// output; 4000 of the 10000 prompt tokens were cached.
				Usage:     contract.Usage{InputTokens: 6000, OutputTokens: 170, CacheReadInputTokens: 4000},
				CostKnown: true,
			},
			cost: (6000*0.3 + 4000*0.03 + 170*2.5) / 1e6,
		},
		{
			name: "turn_limit",
			want: agent.Summary{
				SessionID: "5734792f-f8cb-4dde-b14f-7d3bd1151479",
				Model:     "gemini-2.5-flash",
				Lines:     agent.Lines{Events: 7},
				Turns:     2,
				ToolUses:  2,
				LastTool:  "run_shell_command",
				Usage:     contract.Usage{InputTokens: 24514, OutputTokens: 38},
				CostKnown: true,
			},
			cost: (24514*0.3 + 38*2.5) / 1e6,
		},
		{
			name: "resume",
			want: agent.Summary{
				SessionID: "bcba61c6-a4b9-446e-91cd-fca0bba99a17",
				Model:     "gemini-2.5-flash",
				Lines:     agent.Lines{Events: 5},
				Turns:     1,
				FinalText: "Reply number 3 to your prompt. It says: Carry on where you left off.",
				Usage:     contract.Usage{InputTokens: 12590, OutputTokens: 18},
				CostKnown: true,
			},
			cost: (12590*0.3 + 18*2.5) / 1e6,
		},
		{
			name: "api_500",
			want: agent.Summary{
				SessionID: "69f92b91-0d79-460b-99cb-26a08f01395d",
				Model:     "gemini-2.5-flash",
				Lines:     agent.Lines{Events: 3},
				CostKnown: true,
			},
		},
		{
			name: "killed",
			want: agent.Summary{
				SessionID: "1340bf64-4073-49a2-a40f-26e9780634ab",
				Model:     "gemini-2.5-flash",
				Lines:     agent.Lines{Events: 2},
			},
			note: "printed no result",
		},
		{
			name: "untrusted",
			note: "printed no result",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := replay(t, tc.name, agent.Options{})
			got := p.Summary()
			require.InDelta(t, tc.cost, got.CostUSD, 1e-12)
			if tc.note != "" {
				require.False(t, got.CostKnown)
				require.Contains(t, got.CostNote, "cost unknown: ")
				require.Contains(t, got.CostNote, tc.note)
			}
			got.CostUSD, got.CostNote = 0, ""
			require.Equal(t, tc.want, got)
		})
	}
}

func TestParserEvents(t *testing.T) {
	_, events := replay(t, "tools", agent.Options{})
	require.Equal(t, []agent.Event{
		{Says: "I'll create it.", Tool: "run_shell_command", ToolSubject: "echo hello > hello.txt && ls"},
		{Tool: "write_file", ToolSubject: "notes/out.txt"},
		{Says: "Reply number 2 to your prompt. It says: SHELL: create hello.txt and notes/out.txt"},
	}, events)

	_, events = replay(t, "api_500", agent.Options{})
	require.Equal(t, []agent.Event{
		{Error: `[API Error: {"error":{"code":500,"message":"Internal error encountered.","status":"INTERNAL"}}]`},
	}, events)

	_, events = replay(t, "turn_limit", agent.Options{})
	require.Equal(t, agent.Event{Error: "Reached max session turns for this session. Increase the number of turns by specifying maxSessionTurns in settings.json."}, events[len(events)-1])
}

func TestParserGarbage(t *testing.T) {
	clean, _ := replay(t, "tools", agent.Options{})

	garbage := []string{
		"not json at all",
		`{"type":"message","role":"assistant","content":"cut off`,
		`{"no_type":true}`,
		`[1,2,3]`,
		"Warning: 256-color support not detected.",
	}
	var mixed []string
	for i, l := range agenttest.Lines(t, "testdata", "tools") {
		mixed = append(mixed, l)
		if i < len(garbage) {
			mixed = append(mixed, garbage[i])
		}
		if i == 3 {
			mixed = append(mixed, "", `{"type":"thought","content":"thinking"}`, `{"type":"tool_use","parameters":"not an object","tool_name":7}`)
		}
	}

	p := newParser()
	invalid := 0
	for _, l := range mixed {
		_, err := p.Line([]byte(l))
		if err != nil {
			require.ErrorIs(t, err, agent.ErrInvalidLine)
			invalid++
		}
	}
	require.Equal(t, len(garbage), invalid)

	want := clean.Summary()
	want.InvalidLines = len(garbage)
	want.FirstInvalidLine = "not json at all"
	// The thought event, of a type the parser does not read, and the
	// tool_use of a shape it does not know.
	want.Events += 2
	want.UnknownEvents = 2
	require.Equal(t, want, p.Summary())

	p.Oversized()
	require.Equal(t, 1, p.Summary().OversizedLines)
}

func TestParserConstructed(t *testing.T) {
	tests := []struct {
		name   string
		lines  []string
		events []agent.Event
		want   agent.Summary
	}{
		{
			name: "error events of both severities",
			lines: []string{
				`{"type":"init","session_id":"s1","model":"gemini-2.5-pro"}`,
				`{"type":"error","severity":"warning","message":"Agent execution blocked: hook said no"}`,
				`{"type":"error","severity":"error","message":"Maximum session turns exceeded"}`,
			},
			events: []agent.Event{
				{Error: "warning: Agent execution blocked: hook said no"},
				{Error: "Maximum session turns exceeded"},
			},
			want: agent.Summary{SessionID: "s1", Model: "gemini-2.5-pro", Lines: agent.Lines{Events: 3},
				CostNote: "cost unknown: the Gemini CLI printed no result with token counts"},
		},
		{
			name: "whole messages and a tool call without text",
			lines: []string{
				`{"type":"message","role":"assistant","content":"First whole message."}`,
				`{"type":"tool_use","tool_name":"grep_search","tool_id":"t1","parameters":{"pattern":"TODO\nmore","dir_path":"src"}}`,
				`{"type":"tool_result","tool_id":"t1","status":"error","error":{"type":"x","message":"no matches"}}`,
				`{"type":"message","role":"assistant","content":"Part one, ","delta":true}`,
				`{"type":"message","role":"assistant","content":"part two.","delta":true}`,
			},
			events: []agent.Event{
				{Says: "First whole message."},
				{Tool: "grep_search", ToolSubject: "TODO"},
			},
			want: agent.Summary{Lines: agent.Lines{Events: 5}, Turns: 2, ToolUses: 1, LastTool: "grep_search",
				FinalText: "Part one, part two.",
				CostNote:  "cost unknown: the Gemini CLI printed no result with token counts"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newParser()
			require.Equal(t, tc.events, agenttest.Feed(t, p, tc.lines))
			require.Equal(t, tc.want, p.Summary())
		})
	}
}

func TestParserCost(t *testing.T) {
	tests := []struct {
		name   string
		file   string
		o      agent.Options
		cost   float64
		known  bool
		note   string
		model  string
		tokens int64
	}{
		{
			name:  "default prices",
			file:  "tools",
			cost:  (36973*0.3 + 76*2.5) / 1e6,
			known: true,
			model: "gemini-2.5-flash",
		},
		{
			name:  "configured prices",
			file:  "tools",
			o:     agent.Options{Prices: contract.Prices{"gemini-2.5-flash": {Input: 1, Output: 10}}},
			cost:  (36973*1 + 76*10) / 1e6,
			known: true,
			model: "gemini-2.5-flash",
		},
		{
			name:  "a model without a price",
			file:  "tools",
			o:     agent.Options{Prices: contract.Prices{"gemini-2.5-pro": {Input: 1, Output: 10}}},
			note:  `cost unknown: no price for model "gemini-2.5-flash" (set agent.prices)`,
			model: "gemini-2.5-flash",
		},
		{
			name: "every model the router used is priced",
			file: "text",
			o: agent.Options{Prices: agent.DefaultPrices.Merge(contract.Prices{
				"gemini-3.5-flash-lite": {Input: 0.1, Output: 0.4},
				"gemini-3.8-flash":      {Input: 0.5, Output: 3},
			})},
			cost:  (883*0.1+13*0.4)/1e6 + (12004*0.5+12*3)/1e6,
			known: true,
			model: "gemini-3.8-flash",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := replay(t, tc.file, tc.o)
			s := p.Summary()
			require.Equal(t, tc.known, s.CostKnown)
			require.InDelta(t, tc.cost, s.CostUSD, 1e-12)
			require.Equal(t, tc.note, s.CostNote)
			require.Equal(t, tc.model, s.Model)
		})
	}
}

func TestParserBoundsTexts(t *testing.T) {
	p := newParser()
	chunk := strings.Repeat("word é ", 100) // 800 bytes
	for range 40 {
		_, err := p.Line([]byte(`{"type":"message","role":"assistant","content":"` + chunk + `","delta":true}`))
		require.NoError(t, err)
	}
	_, err := p.Line([]byte(`{"type":"message","role":"assistant","content":"\n<promise>COMPLETE</promise>","delta":true}`))
	require.NoError(t, err)
	ev, err := p.Line([]byte(`{"type":"result","status":"success","stats":{"total_tokens":3,"input_tokens":1,"output_tokens":2,"models":{"gemini-2.5-flash":{"total_tokens":3,"input_tokens":1,"output_tokens":2}}}}`))
	require.NoError(t, err)

	final := p.Summary().FinalText
	require.LessOrEqual(t, len(final), agent.MaxTextLen)
	require.True(t, strings.HasPrefix(final, "word é word"), final[:40])
	require.True(t, strings.HasSuffix(final, "\n<promise>COMPLETE</promise>"))
	require.Contains(t, final, " … ")
	require.True(t, strings.ToValidUTF8(final, "") == final)
	require.LessOrEqual(t, len(ev.Says), agent.MaxTextLen)
}
