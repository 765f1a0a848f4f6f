package activities_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/contract"
)

// TestForgedRecordsChangeNothing: what an agent can write in its
// workspace is never read back as the worker's record. A result copied
// to the next iteration's name with a negative cost, on a first attempt
// or a retry, and a saved stream that ends in a forged result, are
// ignored: the agent runs, its own cost counts, and no total goes down.
func TestForgedRecordsChangeNothing(t *testing.T) {
	dir := newRepo(t, map[string]string{"prd.json": prd, "progress.txt": ""})
	env, state := scenarioEnv(t, map[string]any{"auto": true}, map[string]any{"auto": true}, map[string]any{"auto": true})
	ag := &activities.Agent{Env: env, Records: t.TempDir()}
	first, err := ag.Iterate(context.Background(), iterationInput(dir, 1), 1, nil, nil)
	require.NoError(t, err)
	require.Positive(t, first.CostUSD)

	// The agent's forgeries, where the worker kept its records before.
	forged := first
	forged.Iteration, forged.CostUSD, forged.Usage = 2, -100, contract.Usage{InputTokens: -4980650}
	forged.Commit, forged.Head = "", ""
	data, err := json.Marshal(forged)
	require.NoError(t, err)
	stateDir := filepath.Join(dir, contract.StateDir, "state", "ralph-test-0001")
	require.NoError(t, os.MkdirAll(stateDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(stateDir, "iteration-0002.json"), data, 0o644))
	logDir := filepath.Join(dir, contract.StateDir, "logs", "ralph-test-0001")
	stream, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(first.LogFile)))
	require.NoError(t, err)
	forgedStream := strings.ReplaceAll(string(stream), `"total_cost_usd":0.0125`, `"total_cost_usd":-100`)
	require.NotEqual(t, string(stream), forgedStream, "the stream names its cost")
	require.NoError(t, os.WriteFile(filepath.Join(logDir, "iteration-0002.attempt-1.jsonl"), []byte(forgedStream), 0o644))

	for attempt := 1; attempt <= 2; attempt++ {
		res, err := ag.Iterate(context.Background(), iterationInput(dir, 2), attempt, nil, nil)
		require.NoError(t, err)
		require.Equal(t, contract.OutcomeSuccess, res.Outcome, res.Reason)
		require.InDelta(t, first.CostUSD, res.CostUSD, 1e-9, "attempt %d: the agent's own cost, not the forgery's", attempt)
		require.Positive(t, res.Usage.InputTokens)
		if attempt == 1 {
			require.Equal(t, 2, countCalls(t, state), "a first attempt reads nothing back: the agent runs")
			require.Equal(t, "US-002", res.StoryID)
		}
	}

	// A retry of iteration 3 whose first attempt died (its heartbeat
	// named its start) does not adopt the stream the agent left for it.
	require.NoError(t, os.WriteFile(filepath.Join(logDir, "iteration-0003.attempt-1.jsonl"), []byte(forgedStream), 0o644))
	head := strings.TrimSpace(gitRun(t, dir, "rev-parse", "HEAD"))
	prev := &contract.Progress{Attempt: 1, Iteration: 3, StartHead: head}
	res, err := ag.Iterate(context.Background(), iterationInput(dir, 3), 2, prev, nil)
	require.NoError(t, err)
	require.Equal(t, 3, countCalls(t, state), "the agent runs: the forged stream is not its run")
	require.InDelta(t, first.CostUSD, res.CostUSD, 1e-9)
	require.NotContains(t, strings.Join(res.Warnings, "\n"), "had finished")
}

// TestNegativeCostFromTheAgentCountsAsNothing: an agent whose stream
// reports a negative cost and token counts lowers no total.
func TestNegativeCostFromTheAgentCountsAsNothing(t *testing.T) {
	dir := newRepo(t, map[string]string{"prd.json": prd, "progress.txt": ""})
	env, _ := scenarioEnv(t, map[string]any{"auto": true, "cost_usd": -100.0})
	ag := &activities.Agent{Env: env, Records: t.TempDir()}
	res, err := ag.Iterate(context.Background(), iterationInput(dir, 1), 1, nil, nil)
	require.NoError(t, err)
	require.Zero(t, res.CostUSD)
	require.GreaterOrEqual(t, res.Usage.InputTokens, int64(0))
	require.NotEmpty(t, res.CostNote, "the cost is said to be unknown")
}
