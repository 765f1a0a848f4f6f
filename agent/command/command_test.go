package command

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/agent"
	"github.com/durable-ralph/ralph/agent/agenttest"
	"github.com/durable-ralph/ralph/contract"
)

func TestBackendArgs(t *testing.T) {
	b := Backend{}
	require.Equal(t, "command", b.Name())
	require.Empty(t, b.Args(agent.Options{Model: "ignored"}, ""))
	require.Equal(t, []string{"--fast"}, b.Args(agent.Options{ExtraArgs: []string{"--fast"}}, "session-that-cannot-be"))
}

func TestParserText(t *testing.T) {
	p := Backend{}.NewParser(agent.Options{})
	ev, err := p.Line([]byte("Working on US-001"))
	require.NoError(t, err)
	require.Equal(t, agent.Event{Says: "Working on US-001"}, ev)
	ev, err = p.Line([]byte("   "))
	require.NoError(t, err)
	require.Zero(t, ev)
	_, _ = p.Line([]byte(`{"not":"parsed, just text"}`))
	_, _ = p.Line([]byte("<promise>COMPLETE</promise>"))
	p.Oversized()
	s := p.Summary()
	require.Equal(t, 4, s.Events)
	require.Equal(t, 1, s.OversizedLines)
	require.True(t, strings.HasSuffix(s.FinalText, "<promise>COMPLETE</promise>"))
	require.Contains(t, s.FinalText, "Working on US-001")
	require.False(t, s.CostKnown)
	require.Contains(t, s.CostNote, "cost unknown")
	require.False(t, p.ResumeFailed())
}

func TestParserKeepsTheEnd(t *testing.T) {
	p := Backend{}.NewParser(agent.Options{})
	for range 1000 {
		_, _ = p.Line([]byte(strings.Repeat("x", 100)))
	}
	_, _ = p.Line([]byte("DONE"))
	s := p.Summary()
	require.LessOrEqual(t, len(s.FinalText), finalLimit)
	require.True(t, strings.HasSuffix(s.FinalText, "DONE"))
}

func TestVerdict(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		stderr  string
		want    contract.Outcome
		contain string
	}{
		{"success", nil, "warning: something", contract.OutcomeSuccess, ""},
		{"failed", agenttest.ExitWith(t, 1), "loading model\nerror: model crashed\n", contract.OutcomeAgentError, "status 1: error: model crashed"},
		{"throttled", agenttest.ExitWith(t, 2), "Error: 429 Too Many Requests", contract.OutcomeRateLimited, "429 Too Many Requests"},
		{"rate limit words", agenttest.ExitWith(t, 1), "API said: rate limit reached, slow down", contract.OutcomeRateLimited, "rate limit reached"},
		{"not found", &exec.Error{Name: "my-agent", Err: exec.ErrNotFound}, "", contract.OutcomePermanent, "could not be started"},
		{"read error", errors.New("read stdout: broken pipe"), "", contract.OutcomeAgentError, "broken pipe"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := Backend{}.NewParser(agent.Options{}).Verdict(tc.err, tc.stderr, time.Now())
			require.Equal(t, tc.want, v.Outcome, v.Reason)
			require.Contains(t, v.Reason, tc.contain)
		})
	}
}
