package agent

import (
	"testing"

	"github.com/durable-ralph/ralph/internal/words"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/contract"
)

func TestPricesCost(t *testing.T) {
	prices := DefaultPrices.Merge(contract.Prices{"My-Model": {Input: 2, Output: 8}})
	tests := []struct {
		name  string
		model string
		usage contract.Usage
		cost  float64
		ok    bool
		note  string
	}{
		{"cached input at its own price", "gpt-5", contract.Usage{InputTokens: 1_000_000, CacheReadInputTokens: 2_000_000, OutputTokens: 100_000}, 1.25 + 0.25 + 1, true, ""},
		{"no cached price: input price", "my-model", contract.Usage{InputTokens: 500_000, CacheReadInputTokens: 500_000, OutputTokens: 1_000_000}, 2 + 8, true, ""},
		{"model names ignore case", "GPT-5-MINI", contract.Usage{OutputTokens: 1_000_000}, 2, true, ""},
		{"unknown model", "o9-preview", contract.Usage{InputTokens: 10}, 0, false, `cost unknown: no price for model "o9-preview" (set agent.prices)`},
		{"no model", "", contract.Usage{InputTokens: 10}, 0, false, "cost unknown: the agent did not name its model"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cost, ok, note := prices.Cost(tc.model, tc.usage)
			require.Equal(t, tc.ok, ok)
			require.InDelta(t, tc.cost, cost, 1e-9)
			require.Equal(t, tc.note, note)
		})
	}
}

func TestPricesValidate(t *testing.T) {
	require.NoError(t, DefaultPrices.Validate())
	require.ErrorContains(t, contract.Prices{"m": {Input: -1}}.Validate(), `price of model "m" is negative`)
	require.ErrorContains(t, contract.Prices{" ": {Input: 1}}.Validate(), "no model name")
}

func TestCut(t *testing.T) {
	require.Equal(t, "short", words.Cut("short", 10))
	require.Equal(t, "ééé…", words.Cut("éééééé", 9))
}

func TestJSONLine(t *testing.T) {
	var s Summary
	for _, tc := range []struct {
		line, typ string
		invalid   bool
	}{
		{"  \n", "", false},
		{`{"type":"thread.started","thread_id":"t1"}` + "\n", "thread.started", false},
		{"Warning: garbage", "", true},
		{`{"no":"type"}`, "", true},
		{`{"type":"turn.completed"}`, "turn.completed", false},
	} {
		typ, line, err := s.JSONLine([]byte(tc.line))
		require.Equal(t, tc.typ, typ, tc.line)
		if tc.invalid {
			require.ErrorIs(t, err, ErrInvalidLine)
		} else {
			require.NoError(t, err)
		}
		if typ != "" {
			require.Equal(t, byte('}'), line[len(line)-1], "trimmed")
		}
	}
	require.Equal(t, 2, s.Events)
	require.Equal(t, 2, s.InvalidLines)
	require.Equal(t, "Warning: garbage", s.FirstInvalidLine)
}
