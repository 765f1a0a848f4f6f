package codex

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/agent"
	"github.com/durable-ralph/ralph/agent/agenttest"
	"github.com/durable-ralph/ralph/contract"
)

// replay feeds testdata/name.jsonl to a new parser for o and returns it
// with the events of the lines it parsed.
func replay(t *testing.T, name string, o agent.Options) (*Parser, []agent.Event) {
	t.Helper()
	return agenttest.Replay(t, Backend{}.NewParser(o).(*Parser), "testdata", name)
}

// newParser returns a new parser for the default options.
func newParser() *Parser {
	return Backend{}.NewParser(agent.Options{}).(*Parser)
}

func TestSummaryRecorded(t *testing.T) {
	tests := []struct {
		name  string
		model string
		want  agent.Summary
	}{
		{
			name: "text",
			want: agent.Summary{
				SessionID: "01a205ff-f01f-7b73-89bf-9d5e964258f0", Model: DefaultModel, Lines: agent.Lines{Events: 4}, Turns: 1,
				FinalText: "Hello! I am the scripted model.\nNothing to do here.",
				Usage:     contract.Usage{InputTokens: 13851, OutputTokens: 13},
				CostNote:  `cost unknown: no price for model "gpt-6.1-sol", Codex's default, assumed as no model was set (set agent.model or agent.prices)`,
			},
		},
		{
			name:  "shell",
			model: "gpt-5",
			want: agent.Summary{
				SessionID: "01a205ff-f1a1-7c83-bcd1-3fad9cadcede", Model: "gpt-5", Lines: agent.Lines{Events: 10}, Turns: 2,
				ToolUses: 2, LastTool: "Bash",
				FinalText: "Created hello.txt; missing.txt does not exist.\n<promise>COMPLETE</promise>",
				Usage:     contract.Usage{InputTokens: 42253 - 27904, OutputTokens: 116, CacheReadInputTokens: 27904},
				CostUSD:   (14349*1.25 + 27904*0.125 + 116*10) / 1e6, CostKnown: true,
			},
		},
		{
			name: "garbage",
			want: agent.Summary{
				SessionID: "01a205ff-f1a1-7c83-bcd1-3fad9cadcede", Model: DefaultModel, Lines: agent.Lines{Events: 10, InvalidLines: 6, FirstInvalidLine: "Loading codex..."}, Turns: 2,
				ToolUses: 2, LastTool: "Bash",
				FinalText: "Created hello.txt; missing.txt does not exist.\n<promise>COMPLETE</promise>",
				Usage:     contract.Usage{InputTokens: 42253 - 27904, OutputTokens: 116, CacheReadInputTokens: 27904},
				CostNote:  `cost unknown: no price for model "gpt-6.1-sol", Codex's default, assumed as no model was set (set agent.model or agent.prices)`,
			},
		},
		{
			// The model comes from Codex's warning that it has no
			// metadata for it.
			name: "unknown_model",
			want: agent.Summary{
				SessionID: "01a205ff-f60d-7253-8881-98f89f5785fb", Model: "gpt-5.1-codex", Lines: agent.Lines{Events: 11}, Turns: 2,
				ToolUses: 2, LastTool: "Bash",
				FinalText: "Created hello.txt; missing.txt does not exist.\n<promise>COMPLETE</promise>",
				Usage:     contract.Usage{InputTokens: 10400, OutputTokens: 66, CacheReadInputTokens: 19968},
				CostUSD:   (10400*1.25 + 19968*0.125 + 66*10) / 1e6, CostKnown: true,
			},
		},
		{
			name:  "patch",
			model: "gpt-5.5",
			want: agent.Summary{
				SessionID: "01a205ff-f42f-7971-94fe-9fdd37c3e05c", Model: "gpt-5.5", Lines: agent.Lines{Events: 9}, Turns: 2,
				ToolUses: 2, LastTool: "Bash", FinalText: "notes.txt added.",
				Usage:    contract.Usage{InputTokens: 29143 - 19200, OutputTokens: 38, CacheReadInputTokens: 19200},
				CostNote: `cost unknown: no price for model "gpt-5.5" (set agent.prices)`,
			},
		},
		{
			name:  "cached",
			model: "gpt-5-mini",
			want: agent.Summary{
				SessionID: "01a205ff-f799-7560-a1c0-0636fbe7dc68", Model: "gpt-5-mini", Lines: agent.Lines{Events: 4}, Turns: 1, FinalText: "Cached.",
				Usage:   contract.Usage{InputTokens: 5500, OutputTokens: 300, CacheCreationInputTokens: 500, CacheReadInputTokens: 4000},
				CostUSD: (6000*0.25 + 4000*0.025 + 300*2) / 1e6, CostKnown: true,
			},
		},
		{
			// Codex reports the usage of the whole thread: the run it
			// resumed (resume_first: 27848 input tokens) counts too.
			name:  "resume",
			model: "gpt-5",
			want: agent.Summary{
				SessionID: "01a205ff-f8ca-71f0-ad7e-765d0dd31bd4", Model: "gpt-5", Lines: agent.Lines{Events: 6}, Turns: 1,
				ToolUses: 1, LastTool: "Bash", FinalText: "first.txt says one.",
				Usage:   contract.Usage{InputTokens: 56165 - 41856, OutputTokens: 82, CacheReadInputTokens: 41856},
				CostUSD: (14309*1.25 + 41856*0.125 + 82*10) / 1e6, CostKnown: true,
			},
		},
		{
			name:  "killed",
			model: "gpt-5",
			want: agent.Summary{
				SessionID: "01a20600-1b2c-76b3-81e1-7d94f2d1a99e", Model: "gpt-5", Lines: agent.Lines{Events: 5}, Turns: 1,
				ToolUses: 1, LastTool: "Bash", FinalText: "Starting.",
				CostNote: "cost unknown: Codex reported no token usage (no turn completed)",
			},
		},
		{
			name:  "rate_limit_429_retried",
			model: "gpt-5",
			want: agent.Summary{
				SessionID: "01a20600-0668-7831-aa3a-90036d4dce07", Model: "gpt-5", Lines: agent.Lines{Events: 5},
				CostNote: "cost unknown: Codex reported no token usage (no turn completed)",
			},
		},
		{
			name: "resume_missing",
			want: agent.Summary{Model: DefaultModel, CostNote: "cost unknown: Codex reported no token usage (no turn completed)"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := replay(t, tc.name, agent.Options{Model: tc.model})
			got := p.Summary()
			require.InDelta(t, tc.want.CostUSD, got.CostUSD, 1e-12)
			got.CostUSD = tc.want.CostUSD
			require.Equal(t, tc.want, got)
		})
	}
}

func TestEventsRecorded(t *testing.T) {
	_, events := replay(t, "shell", agent.Options{})
	require.Equal(t, []agent.Event{
		{}, // thread.started
		{}, // turn.started
		{}, // reasoning
		{Says: "I'll create hello.txt."},
		{Tool: "Bash", ToolSubject: `printf 'hello\n' > hello.txt && ls`},
		{}, // the command completed
		{Tool: "Bash", ToolSubject: "cat missing.txt; exit 3"},
		{},
		{Says: "Created hello.txt; missing.txt does not exist.\n<promise>COMPLETE</promise>"},
		{}, // turn.completed
	}, events)

	_, events = replay(t, "patch", agent.Options{})
	require.Contains(t, events, agent.Event{Tool: "Edit", ToolSubject: "/tmp/TestRecordCodexpatch2945599734/002/notes.txt"})

	_, events = replay(t, "api_500_retried", agent.Options{})
	require.Equal(t, []agent.Event{
		{}, {},
		{Error: "Reconnecting... 1/1 (We’re currently experiencing high demand, which may cause temporary errors.)"},
		{Error: "We’re currently experiencing high demand, which may cause temporary errors."},
		{Error: "We’re currently experiencing high demand, which may cause temporary errors."},
	}, events)

	_, events = replay(t, "unknown_model", agent.Options{})
	require.Equal(t, agent.Event{Error: "Model metadata for `gpt-5.1-codex` not found. Defaulting to fallback metadata; this can degrade performance and cause issues."}, events[1])
}

func TestLineSynthetic(t *testing.T) {
	// unknown checks that the line was an event the parser does not read.
	unknown := func(t *testing.T, s agent.Summary) {
		require.Equal(t, 1, s.UnknownEvents)
		require.Equal(t, 1, s.Events)
	}
	tests := []struct {
		name string
		line string
		want agent.Event
		// check checks the summary after the line.
		check func(t *testing.T, s agent.Summary)
	}{
		{
			name: "item_type_agent_message",
			line: `{"type":"item.completed","item":{"id":"item_0","item_type":"agent_message","text":"Done."}}`,
			want: agent.Event{Says: "Done."},
			check: func(t *testing.T, s agent.Summary) {
				require.Equal(t, "Done.", s.FinalText)
				require.Equal(t, 1, s.Turns)
			},
		},
		{
			name: "item_type_assistant_message",
			line: `{"type":"item.completed","item":{"id":"item_0","item_type":"assistant_message","text":"Old style."}}`,
			want: agent.Event{Says: "Old style."},
		},
		{
			name: "item_type_command",
			line: `{"type":"item.started","item":{"id":"item_1","item_type":"command_execution","command":"bash -lc 'go test ./...'","aggregated_output":"","status":"in_progress"}}`,
			want: agent.Event{Tool: "Bash", ToolSubject: "go test ./..."},
		},
		{
			name: "command_as_words",
			line: `{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":["bash","-lc","ls -la\nwc -l x"]}}`,
			want: agent.Event{Tool: "Bash", ToolSubject: "ls -la wc -l x"},
		},
		{
			name: "command_not_wrapped",
			line: `{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"git status --short"}}`,
			want: agent.Event{Tool: "Bash", ToolSubject: "git status --short"},
		},
		{
			name: "command_unfinished_quote",
			line: `{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"bash -lc 'echo"}}`,
			want: agent.Event{Tool: "Bash", ToolSubject: "bash -lc 'echo"},
		},
		{
			name: "item_type_file_change",
			line: `{"type":"item.completed","item":{"id":"item_2","item_type":"file_change","changes":[{"path":"a.go","kind":"update"},{"path":"b.go","kind":"add"}],"status":"completed"}}`,
			want: agent.Event{Tool: "Edit", ToolSubject: "a.go, b.go"},
		},
		{
			name: "mcp_tool_call",
			line: `{"type":"item.started","item":{"id":"item_3","type":"mcp_tool_call","server":"github","tool":"create_issue","arguments":{"title":"x"},"status":"in_progress"}}`,
			want: agent.Event{Tool: "mcp__github__create_issue", ToolSubject: `{"title":"x"}`},
		},
		{
			name: "web_search",
			line: `{"type":"item.completed","item":{"id":"item_4","type":"web_search","query":"temporal go sdk","action":{"type":"search"}}}`,
			want: agent.Event{Tool: "WebSearch", ToolSubject: "temporal go sdk"},
		},
		{
			name: "todo_list",
			line: `{"type":"item.started","item":{"id":"item_5","type":"todo_list","items":[{"text":"read","completed":true},{"text":"write tests","completed":false}]}}`,
			want: agent.Event{Tool: "Plan", ToolSubject: "write tests"},
		},
		{
			name: "collab_tool_call",
			line: `{"type":"item.started","item":{"id":"item_6","type":"collab_tool_call","tool":"spawn_agent","prompt":"review the diff","status":"in_progress"}}`,
			want: agent.Event{Tool: "spawn_agent", ToolSubject: "review the diff"},
		},
		{
			name: "error_item_is_a_warning",
			line: `{"type":"item.completed","item":{"id":"item_0","type":"error","message":"Model metadata for ` + "`my-model`" + ` not found."}}`,
			want: agent.Event{Error: "Model metadata for `my-model` not found."},
			check: func(t *testing.T, s agent.Summary) {
				require.Equal(t, "my-model", s.Model)
			},
		},
		{
			name: "turn_failed",
			line: `{"type":"turn.failed","error":{"message":"boom"}}`,
			want: agent.Event{Error: "boom"},
		},
		{
			name:  "unknown_event",
			line:  `{"type":"thread.archived","thread_id":"x"}`,
			check: unknown,
		},
		{
			name:  "unknown_item",
			line:  `{"type":"item.completed","item":{"id":"item_7","type":"image_view","path":"a.png"}}`,
			check: unknown,
		},
		{
			name:  "event_of_another_shape",
			line:  `{"type":"turn.completed","usage":"lots"}`,
			check: unknown,
		},
		{
			name: "blank",
			line: " \r",
			check: func(t *testing.T, s agent.Summary) {
				require.Equal(t, agent.Summary{Model: DefaultModel, CostNote: "cost unknown: Codex reported no token usage (no turn completed)"}, s)
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newParser()
			ev, err := p.Line([]byte(tc.line))
			require.NoError(t, err)
			require.Equal(t, tc.want, ev)
			if tc.check != nil {
				tc.check(t, p.Summary())
			}
		})
	}
}

func TestLineInvalid(t *testing.T) {
	p := newParser()
	for _, line := range []string{"not json", `[1,2]`, `"text"`, `{"type":""}`, `{"no_type":1}`, `{"type":"turn.started"`, "\xff\xfe"} {
		_, err := p.Line([]byte(line))
		require.ErrorIs(t, err, agent.ErrInvalidLine, line)
	}
	p.Oversized()
	s := p.Summary()
	require.Equal(t, 7, s.InvalidLines)
	require.Equal(t, "not json", s.FirstInvalidLine)
	require.Equal(t, 1, s.OversizedLines)
	require.Zero(t, s.Events)
}

func TestToolCountedOnce(t *testing.T) {
	p := newParser()
	lines := []string{
		`{"type":"item.started","item":{"id":"item_1","type":"todo_list","items":[{"text":"a","completed":false}]}}`,
		`{"type":"item.updated","item":{"id":"item_1","type":"todo_list","items":[{"text":"a","completed":true}]}}`,
		`{"type":"item.completed","item":{"id":"item_1","type":"todo_list","items":[{"text":"a","completed":true}]}}`,
		// A completed item never seen started counts and shows.
		`{"type":"item.completed","item":{"id":"item_2","type":"file_change","changes":[{"path":"x","kind":"add"}],"status":"completed"}}`,
	}
	var shown int
	for _, ev := range agenttest.Feed(t, p, lines) {
		if ev.Tool != "" {
			shown++
		}
	}
	require.Equal(t, 2, shown)
	require.Equal(t, 2, p.Summary().ToolUses)
	require.Equal(t, "Edit", p.Summary().LastTool)
}

func TestTextsBounded(t *testing.T) {
	long := strings.Repeat("é", 5000) + "\n<promise>COMPLETE</promise>"
	p := newParser()
	text, err := json.Marshal(long)
	require.NoError(t, err)
	ev, err := p.Line([]byte(`{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":` + string(text) + `}}`))
	require.NoError(t, err)
	s := p.Summary()
	require.LessOrEqual(t, len(s.FinalText), agent.MaxTextLen)
	require.True(t, strings.HasSuffix(s.FinalText, "<promise>COMPLETE</promise>"), "the end of the text is kept")
	require.True(t, strings.HasPrefix(s.FinalText, "éé"))
	require.Equal(t, s.FinalText, ev.Says)

	_, err = p.Line([]byte(`{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"` + strings.Repeat("x", 10000) + `"}}`))
	require.NoError(t, err)
	_, err = p.Line([]byte(`{"type":"error","message":"` + strings.Repeat("e", 10000) + `"}`))
	require.NoError(t, err)
	require.LessOrEqual(t, len(p.Errors[0]), agent.MaxTextLen)
}

func TestCutMiddle(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"abcdefghij", 7, "ab…ij"},
		{"ééééé", 8, "é…é"},
	}
	for _, tc := range tests {
		got := cutMiddle(tc.s, tc.n)
		require.Equal(t, tc.want, got)
		require.LessOrEqual(t, len(got), tc.n)
	}
}

func TestShellWords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		ok   bool
	}{
		{`/bin/bash -lc 'ls -la'`, []string{"/bin/bash", "-lc", "ls -la"}, true},
		{`/bin/bash -lc "printf 'hi\\n' > a && echo \"q\" \$HOME"`, []string{"/bin/bash", "-lc", `printf 'hi\n' > a && echo "q" $HOME`}, true},
		{`/bin/bash -lc 'echo '"'"'x'"'"''`, []string{"/bin/bash", "-lc", `echo 'x'`}, true},
		{`a\ b c`, []string{"a b", "c"}, true},
		{`''`, []string{""}, true},
		{`"open`, nil, false},
	}
	for _, tc := range tests {
		got, ok := shellWords(tc.in)
		require.Equal(t, tc.ok, ok, tc.in)
		require.Equal(t, tc.want, got, tc.in)
	}
}

func TestInvalidLineError(t *testing.T) {
	p := newParser()
	_, err := p.Line([]byte("Loading codex..."))
	require.True(t, errors.Is(err, agent.ErrInvalidLine))
	require.Contains(t, err.Error(), `"Loading codex..."`)
}
