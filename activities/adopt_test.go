package activities_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/contract"
)

// TestRetryAdoptsAnAttemptWhoseAgentFinished: the agent of attempt 1
// wrote its whole stream, result included, and its worker stopped
// before recording it (frozen past the heartbeat timeout, or killed).
// The retry records that run — its story, its cost once, one commit —
// and runs no agent; a stream cut before its result is run again.
func TestRetryAdoptsAnAttemptWhoseAgentFinished(t *testing.T) {
	for _, tt := range []struct {
		name   string
		cut    bool // the stream lost its last line (the result)
		adopts bool
	}{
		{"finished", false, true},
		{"cut before the result", true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := newRepo(t, map[string]string{"prd.json": prd, "progress.txt": ""})
			head := strings.TrimSpace(gitRun(t, dir, "rev-parse", "HEAD"))
			env, state := scenarioEnv(t, map[string]any{"auto": true})
			ag := &activities.Agent{Env: env, Records: t.TempDir()}
			in := iterationInput(dir, 1)

			// Attempt 1 runs the agent to its end; its worker dies before
			// it commits or saves the result.
			first := in
			first.Git.AutoCommit = false
			ran, err := ag.Iterate(context.Background(), first, 1, nil, nil)
			require.NoError(t, err)
			require.Equal(t, "US-001", ran.StoryID)
			require.NotEmpty(t, ran.LogFile)
			forgetResult(t, ag, 1)
			if tt.cut {
				path := recordedStream(t, ag, 1, 1)
				data, err := os.ReadFile(path)
				require.NoError(t, err)
				lines := strings.Split(strings.TrimSpace(string(data)), "\n")
				require.Contains(t, lines[len(lines)-1], `"type":"result"`)
				require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines[:len(lines)-1], "\n")+"\n"), 0o644))
			}
			prev := &contract.Progress{Attempt: 1, Iteration: 1, StartHead: head, StoryID: "US-001", StoryTitle: "List widgets",
				Log: ran.LogFile, AgentSessionID: ran.AgentSessionID, CostUSD: ran.CostUSD / 2}

			res, err := ag.Iterate(context.Background(), in, 2, prev, nil)
			require.NoError(t, err)
			require.Equal(t, contract.OutcomeSuccess, res.Outcome, res.Reason)
			require.NotEmpty(t, res.Commit)
			if !tt.adopts {
				// As before adoption: the dead attempt's work is a commit of
				// its own, and the agent runs again, on the next story.
				require.Equal(t, 2, countCalls(t, state), "a run that did not finish is run again")
				require.NotEmpty(t, res.InterruptedCommit)
				require.Equal(t, "US-002", res.StoryID)
				return
			}
			require.Equal(t, "US-001", res.StoryID)
			require.Equal(t, 1, countCalls(t, state), "the finished run is not run again")
			require.InDelta(t, ran.CostUSD, res.CostUSD, 1e-9, "the run's cost, counted once")
			require.Equal(t, ran.Usage, res.Usage)
			require.Contains(t, strings.Join(res.Warnings, "\n"), "had finished")
			log := strings.Split(strings.TrimSpace(gitRun(t, dir, "log", "--format=%s", head+"..HEAD")), "\n")
			require.Equal(t, []string{"ralph: iteration 1: US-001 List widgets"}, log, "one commit, for the story the agent did")
			require.Empty(t, strings.TrimSpace(gitRun(t, dir, "status", "--porcelain")))
		})
	}
}

// TestRetryAdoptsAFinishedAttemptThatNeverBeat: attempt 2's worker
// froze before its first heartbeat while its agent finished, so attempt
// 3 gets attempt 1's progress. It still adopts attempt 2's run, found on
// disk, and counts attempt 1's cost from its last beat as well.
func TestRetryAdoptsAFinishedAttemptThatNeverBeat(t *testing.T) {
	dir := newRepo(t, map[string]string{"prd.json": prd, "progress.txt": ""})
	head := strings.TrimSpace(gitRun(t, dir, "rev-parse", "HEAD"))
	env, state := scenarioEnv(t, map[string]any{"auto": true})
	ag := &activities.Agent{Env: env, Records: t.TempDir()}
	in := iterationInput(dir, 1)
	second := in
	second.Git.AutoCommit = false
	ran, err := ag.Iterate(context.Background(), second, 2, nil, nil)
	require.NoError(t, err)
	forgetResult(t, ag, 1)
	// Attempt 2 died before its first beat and before it recorded how it
	// started, as a worker before these records did.
	require.NoError(t, os.Remove(filepath.Join(ag.Records, "sessions", "ralph-test-0001", "iteration-0001.attempt-2.start.json")))
	first := &contract.Progress{Attempt: 1, Iteration: 1, StartHead: head, StoryID: "US-001", StoryTitle: "List widgets",
		CostUSD: 0.02, Usage: contract.Usage{InputTokens: 7}}

	res, err := ag.Iterate(context.Background(), in, 3, first, nil)
	require.NoError(t, err)
	require.Equal(t, 1, countCalls(t, state), "the finished run is not run again")
	require.InDelta(t, ran.CostUSD+0.02, res.CostUSD, 1e-9, "the adopted run and attempt 1's beat, each once")
	require.Equal(t, ran.Usage.Add(contract.Usage{InputTokens: 7}), res.Usage)
	require.Equal(t, "US-001", res.StoryID)
	require.Contains(t, strings.Join(res.Warnings, "\n"), "attempt 2's agent had finished")
	log := strings.Split(strings.TrimSpace(gitRun(t, dir, "log", "--format=%s", head+"..HEAD")), "\n")
	require.Equal(t, []string{"ralph: iteration 1: US-001 List widgets"}, log)
}

// TestEveryDeadAttemptIsCounted: attempt 3 gets the progress of attempt 2,
// which died too and carried what attempt 1 reported. Attempt 3's beats
// carry both, and its result counts both once.
func TestEveryDeadAttemptIsCounted(t *testing.T) {
	dir := newRepo(t, map[string]string{"prd.json": prd, "progress.txt": ""})
	head := strings.TrimSpace(gitRun(t, dir, "rev-parse", "HEAD"))
	env, _ := scenarioEnv(t, map[string]any{"auto": true, "sleep_ms": 300})
	ag := &activities.Agent{Env: env, HeartbeatInterval: 20 * time.Millisecond}
	second := &contract.Progress{Attempt: 2, Iteration: 1, StartHead: head, StoryID: "US-001", StoryTitle: "List widgets",
		CostUSD: 0.03, Usage: contract.Usage{InputTokens: 3}, EarlierCostUSD: 0.02, EarlierUsage: contract.Usage{InputTokens: 2}}
	var mu sync.Mutex
	var last contract.Progress
	res, err := ag.Iterate(context.Background(), iterationInput(dir, 1), 3, second, func(p contract.Progress) {
		mu.Lock()
		defer mu.Unlock()
		last = p
	})
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	require.InDelta(t, 0.05, last.EarlierCostUSD, 1e-9, "a beat carries what the dead attempts reported")
	require.Equal(t, contract.Usage{InputTokens: 5}, last.EarlierUsage)
	fresh := res.CostUSD - 0.05
	require.Positive(t, fresh, "this attempt's own run")
	require.Equal(t, int64(5), res.Usage.Total()-lastRunTokens(t, dir, res.LogFile))
}

// forgetResult removes the result the worker recorded of iteration n,
// and keeps the streams of its attempts: as if its worker died before
// it recorded its result.
func forgetResult(t *testing.T, ag *activities.Agent, n int) {
	t.Helper()
	require.NoError(t, os.Remove(filepath.Join(ag.Records, "sessions", "ralph-test-0001", fmt.Sprintf("iteration-%04d.json", n))))
}

// recordedStream is the worker's record of the stream of attempt of
// iteration n.
func recordedStream(t *testing.T, ag *activities.Agent, n, attempt int) string {
	t.Helper()
	p := filepath.Join(ag.Records, "sessions", "ralph-test-0001", fmt.Sprintf("iteration-%04d.attempt-%d.jsonl", n, attempt))
	require.FileExists(t, p)
	return p
}

// lastRunTokens are the tokens the result event of the stream log name
// (relative to dir) reports.
func lastRunTokens(t *testing.T, dir, name string) int64 {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	var ev struct {
		Type  string `json:"type"`
		Usage struct {
			Input         int64 `json:"input_tokens"`
			Output        int64 `json:"output_tokens"`
			CacheRead     int64 `json:"cache_read_input_tokens"`
			CacheCreation int64 `json:"cache_creation_input_tokens"`
		} `json:"usage"`
	}
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &ev))
	require.Equal(t, "result", ev.Type)
	return ev.Usage.Input + ev.Usage.Output + ev.Usage.CacheRead + ev.Usage.CacheCreation
}

// TestRetryAdoptsARunWhoseAttemptNeverBeat: attempt 1's worker froze
// before its first heartbeat while its agent finished, and the retry
// gets no progress at all from Temporal; the agent committed its own
// work, so the workspace is clean. The worker's record of how attempt 1
// started and of its stream is enough: the run is adopted, its cost
// counted once, the agent not run again.
func TestRetryAdoptsARunWhoseAttemptNeverBeat(t *testing.T) {
	dir := newRepo(t, map[string]string{"prd.json": prd, "progress.txt": ""})
	head := strings.TrimSpace(gitRun(t, dir, "rev-parse", "HEAD"))
	env, state := scenarioEnv(t, map[string]any{"auto": true, "commit": true})
	ag := &activities.Agent{Env: env, Records: t.TempDir()}
	in := iterationInput(dir, 1)
	first := in
	first.Git.AutoCommit = false
	ran, err := ag.Iterate(context.Background(), first, 1, nil, nil)
	require.NoError(t, err)
	forgetResult(t, ag, 1)

	res, err := ag.Iterate(context.Background(), in, 2, nil, nil)
	require.NoError(t, err)
	require.Equal(t, 1, countCalls(t, state), "the finished run is not run again")
	require.InDelta(t, ran.CostUSD, res.CostUSD, 1e-9, "its cost, once")
	require.Equal(t, "US-001", res.StoryID)
	require.Equal(t, 1, res.AgentCommits, "the agent's commit is the iteration's")
	require.Equal(t, "1", strings.TrimSpace(gitRun(t, dir, "rev-list", "--count", head+"..HEAD")))
}

// TestNextIterationCountsALastRunThatFinishedUnseen: iteration 1 failed
// after its retries, its last attempt's worker frozen while its agent
// finished (the result is in the worker's record of the stream, and the
// session counted only what its last heartbeat said). Iteration 2's
// result counts the rest of that run's cost, once, and a retry of
// iteration 2 still finds the stream.
func TestNextIterationCountsALastRunThatFinishedUnseen(t *testing.T) {
	for _, tt := range []struct {
		name    string
		counted contract.UncountedRun
		extra   float64
	}{
		{"its last heartbeat said nothing of it", contract.UncountedRun{Iteration: 1}, 0.0125},
		{"its last heartbeat said part of it", contract.UncountedRun{Iteration: 1, Attempt: 5, CostUSD: 0.005}, 0.0075},
		{"its last heartbeat said all of it", contract.UncountedRun{Iteration: 1, Attempt: 5, CostUSD: 0.0125,
			Usage: contract.Usage{InputTokens: 1 << 40, OutputTokens: 1 << 40, CacheCreationInputTokens: 1 << 40, CacheReadInputTokens: 1 << 40}}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := newRepo(t, map[string]string{"prd.json": prd, "progress.txt": ""})
			env, _ := scenarioEnv(t, map[string]any{"auto": true})
			ag := &activities.Agent{Env: env, Records: t.TempDir()}
			first := iterationInput(dir, 1)
			first.Git.AutoCommit = false
			lost, err := ag.Iterate(context.Background(), first, 5, nil, nil)
			require.NoError(t, err)
			forgetResult(t, ag, 1) // its worker never recorded it

			in := iterationInput(dir, 2)
			in.Uncounted = []contract.UncountedRun{tt.counted}
			res, err := ag.Iterate(context.Background(), in, 1, nil, nil)
			require.NoError(t, err)
			require.InDelta(t, lost.CostUSD+tt.extra, res.CostUSD, 1e-9, "iteration 2's own run and what iteration 1's last run cost beyond what was counted")
			if tt.extra > 0 {
				require.Contains(t, strings.Join(res.Warnings, "\n"), "iteration 1 failed after its retries")
				require.Greater(t, res.Usage.Total(), lost.Usage.Total())
			}
			forgetResult(t, ag, 2)
			again, err := ag.Iterate(context.Background(), in, 2, nil, nil)
			require.NoError(t, err)
			require.InDelta(t, res.CostUSD, again.CostUSD, 1e-9, "a retry of iteration 2 counts it too, once")
		})
	}
}
