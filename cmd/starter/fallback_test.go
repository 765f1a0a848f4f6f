package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/contract"
)

// TestStatusShowsTheFallback: while a fallback backend runs, status says
// which and until when, and splits the cost by backend.
func TestStatusShowsTheFallback(t *testing.T) {
	var rows []string
	row := func(k, format string, args ...any) { rows = append(rows, k+": "+fmt.Sprintf(format, args...)) }
	until := time.Date(2026, 11, 27, 19, 0, 0, 0, time.Local)
	counterRows(row, contract.Status{
		Totals:   contract.Totals{CostUSD: 2, RateLimitWaits: 1, CostByBackend: map[string]float64{"codex": 1.5, "claude": 0.5}},
		Fallback: &contract.FallbackState{Index: 1, Backend: "codex", Instead: "claude", Until: until},
	})
	text := strings.Join(rows, "\n")
	require.Contains(t, text, "Cost: $2.0000; claude $0.5000, codex $1.5000")
	require.Contains(t, text, "Rate limits: 1 usage limit hit")
	require.Contains(t, text, "Fallback: running on codex until claude's usage limit resets (2026-11-27 19:00:00)")

	rows = nil
	counterRows(row, contract.Status{Totals: contract.Totals{CostUSD: 2}})
	require.Contains(t, strings.Join(rows, "\n"), "Cost: $2.0000\n", "no split without agent.fallback")
	require.NotContains(t, strings.Join(rows, "\n"), "Fallback")
}
