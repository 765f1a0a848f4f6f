package claude

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/agent"
	"github.com/durable-ralph/ralph/contract"
)

func TestBackendArgs(t *testing.T) {
	b := Backend{}
	base := []string{"-p", "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions"}
	require.Equal(t, base, b.Args(agent.Options{}, ""))
	require.Equal(t, append(append([]string(nil), base...), "--model", "opus", "--max-turns", "7", "--fast", "--resume", "s-1"),
		b.Args(agent.Options{Model: "opus", MaxTurns: 7, ExtraArgs: []string{"--fast"}}, "s-1"))
}

func TestBackendParser(t *testing.T) {
	p := Backend{}.NewParser(agent.Options{})
	lines := []struct {
		line string
		want agent.Event
	}{
		{`{"type":"system","subtype":"init","session_id":"s-1","model":"claude-opus-4-5"}`, agent.Event{}},
		{`{"type":"assistant","session_id":"s-1","message":{"id":"m1","content":[{"type":"text","text":"Let me look"},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}}`,
			agent.Event{Says: "Let me look", Tool: "Bash", ToolSubject: "ls"}},
		{`{"type":"assistant","parent_tool_use_id":"t9","message":{"id":"m2","content":[{"type":"tool_use","id":"t2","name":"Grep","input":{"pattern":"x"}}]}}`, agent.Event{}},
		{`{"type":"assistant","error":"rate_limit","message":{"model":"<synthetic>","content":[{"type":"text","text":"API Error: 429"}]}}`, agent.Event{Error: "API Error: 429"}},
		{`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1"}]}}`, agent.Event{}},
		{`{"type":"result","subtype":"success","is_error":false,"result":"Done. <promise>COMPLETE</promise>","total_cost_usd":0.25,"num_turns":3,"usage":{"input_tokens":10,"output_tokens":20}}`, agent.Event{}},
	}
	for _, l := range lines {
		ev, err := p.Line([]byte(l.line))
		require.NoError(t, err)
		require.Equal(t, l.want, ev, l.line)
	}
	_, err := p.Line([]byte("garbage"))
	require.ErrorIs(t, err, agent.ErrInvalidLine)

	s := p.Summary()
	require.Equal(t, "s-1", s.SessionID)
	require.Equal(t, "claude-opus-4-5", s.Model)
	require.Equal(t, 3, s.Turns, "num_turns of the result")
	require.Equal(t, 2, s.ToolUses)
	require.Equal(t, "Done. <promise>COMPLETE</promise>", s.FinalText)
	require.True(t, s.CostKnown)
	require.Equal(t, 0.25, s.CostUSD)
	require.Equal(t, contract.Usage{InputTokens: 10, OutputTokens: 20}, s.Usage)
	require.Equal(t, 1, s.InvalidLines)
	require.Equal(t, contract.OutcomeSuccess, p.Verdict(nil, "", time.Now()).Outcome)
	require.False(t, p.ResumeFailed())
}

func TestBackendResumeFailed(t *testing.T) {
	p := Backend{}.NewParser(agent.Options{})
	_, err := p.Line([]byte(`{"type":"result","subtype":"error_during_execution","is_error":true,"errors":["No conversation found with session ID: s-9"]}`))
	require.NoError(t, err)
	require.True(t, p.ResumeFailed())
	require.Equal(t, contract.OutcomeAgentError, p.Verdict(nil, "", time.Now()).Outcome)
}
