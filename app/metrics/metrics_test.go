package metrics_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/app/metrics"
	"github.com/durable-ralph/ralph/contract"
)

func TestMetricsServePrometheusText(t *testing.T) {
	m, err := metrics.New()
	require.NoError(t, err)
	slots := activities.NewSlots(3)
	m.WatchAgents(slots)
	require.True(t, slots.TryAcquire())

	m.ObserveIteration(contract.IterationResult{Outcome: contract.OutcomeSuccess, CostUSD: 0.25,
		Usage: contract.Usage{InputTokens: 100, OutputTokens: 20, CacheReadInputTokens: 7}})
	m.ObserveIteration(contract.IterationResult{Outcome: contract.OutcomeAgentError})
	// What the SDK records through its handler lands on the same registry.
	m.SDKHandler().Counter("temporal_request").Inc(2)

	stop, addr, err := m.Serve("127.0.0.1:0")
	require.NoError(t, err)
	defer stop()
	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	text := string(body)
	for _, want := range []string{
		`ralph_iterations_total{outcome="success"} 1`,
		`ralph_iterations_total{outcome="agent_error"} 1`,
		`ralph_agent_cost_usd_total 0.25`,
		`ralph_agent_tokens_total{kind="input"} 100`,
		`ralph_agent_tokens_total{kind="output"} 20`,
		`ralph_agent_tokens_total{kind="cache_read"} 7`,
		`ralph_agents_running 1`,
		`ralph_agents_waiting 0`,
		`ralph_agents_max 3`,
		`temporal_request 2`,
	} {
		require.Contains(t, text, want)
	}
	require.NotContains(t, text, `kind="cache_creation"`, "no series for a kind never seen")
}
