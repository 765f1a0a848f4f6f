package testsuite_test

// Tests that run the real Codex CLI (pinned, installed by `make codex`) as
// a session's agent against testsuite/responsesapi, a scripted stand-in
// for OpenAI's Responses API (a custom model provider in CODEX_HOME's
// config.toml). testsuite/responsesapi's own tests check the CLI's wire
// behaviour run by run; these check Ralph's sessions on it.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/testsuite/realcli"
	"github.com/durable-ralph/ralph/testsuite/responsesapi"
)

// codexAgent is the real Codex CLI with its API answered by script: a
// CODEX_HOME of its own (where it keeps its threads) whose config.toml
// makes the server its model provider, without retries of its own: the
// tests of errors see the first one.
func codexAgent(t *testing.T, script responsesapi.Script) (cliAgent, *responsesapi.Server) {
	return codexAgentRetrying(t, script, 0)
}

// codexSessionAgent is codexAgent with Codex's own retries, as a user has
// them, for the tests of whole sessions: on a loaded machine Codex 0.169
// now and then loses the stream of a turn from the scripted server, even
// on the host's network without the sandbox ("stream disconnected before
// completion: … error decoding response body": 1 of 40 runs of
// TestCodexCLIWorkerKillResumes on an idle machine, 4 of 12 with both
// cores busy, once in a CI run), and retries it.
func codexSessionAgent(t *testing.T, script responsesapi.Script) (cliAgent, *responsesapi.Server) {
	return codexAgentRetrying(t, script, -1)
}

// codexAgentRetrying is codexAgent with Codex's retries bounded by retries
// (responsesapi.Server.CodexConfig).
func codexAgentRetrying(t *testing.T, script responsesapi.Script, retries int) (cliAgent, *responsesapi.Server) {
	t.Helper()
	bin := realcli.CodexBin(t)
	srv := responsesapi.New(script)
	t.Cleanup(srv.Close)
	srv.SetLog(t.Logf)
	home := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(home, "config.toml"), []byte(srv.CodexConfig(retries)), 0o600))
	return cliAgent{backend: "codex", bin: bin, env: []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + t.TempDir(),
		"TMPDIR=" + t.TempDir(),
		"CODEX_HOME=" + home,
		responsesapi.EnvKey + "=sk-test-scripted",
		// A worker passes its agent only the variables of its
		// allow-list and of agent.env.
		"RALPH_AGENT_ENV=" + responsesapi.EnvKey,
	}}, srv
}

func TestCodexCLICompletesThreeStories(t *testing.T) {
	a, srv := codexSessionAgent(t, responsesapi.RalphPRDScript())
	a.model = "gpt-5.1-codex"
	res, r := threeStorySession(t, a)
	require.GreaterOrEqual(t, res.Iterations, 4, "three stories and the completion claim")
	require.NotEmpty(t, srv.Responses())
	for _, req := range srv.Responses() {
		require.Equal(t, "gpt-5.1-codex", req.Model, "the model asked for")
	}
	// Codex reports tokens; Ralph prices them at gpt-5.1-codex's list
	// price.
	require.Zero(t, res.Totals.CostUnknown)
	u := res.Totals.Usage
	want := (float64(u.InputTokens+u.CacheCreationInputTokens)*1.25 + float64(u.CacheReadInputTokens)*0.125 + float64(u.OutputTokens)*10) / 1e6
	require.InDelta(t, want, res.Totals.CostUSD, 1e-9)
	require.Positive(t, res.Totals.CostUSD)
	logs, err := filepath.Glob(filepath.Join(r.Dir, ".ralph", "logs", "*", "iteration-*.jsonl"))
	require.NoError(t, err)
	require.NotEmpty(t, logs)
	require.NotEmpty(t, codexThread(t, logs[0]), "the raw log is the CLI's own JSONL")
}

// TestCodexCLIWorkerKillResumes kills the worker while the CLI waits for
// the reply to its first tool call; the retry runs `codex exec resume` of
// the thread the dead attempt reported, and the model sees the earlier
// turns and Ralph's "You were interrupted" in that conversation.
func TestCodexCLIWorkerKillResumes(t *testing.T) {
	var held heldTurn
	a, srv := codexSessionAgent(t, holdingScript(&held, responsesapi.RalphPRDScript(), func(r responsesapi.Reply) responsesapi.Reply {
		return responsesapi.Hold(5 * time.Minute).Then(r)
	}))
	requireWorkerKillResumes(t, a, &held, codexThread, "attempt 2 ran codex exec resume of attempt 1's thread",
		srv.Responses, func(req *responsesapi.Request) int { return len(req.ToolCalls()) })
}

// codexThread is the thread_id of the thread.started event of a raw log.
func codexThread(t *testing.T, path string) string {
	t.Helper()
	return eventField(t, path, "thread.started", "thread_id")
}

// TestCodexCLIErrorsAreClassified has the API fail; the outcome is read
// from what the CLI itself printed.
func TestCodexCLIErrorsAreClassified(t *testing.T) {
	t.Run("rate limit", func(t *testing.T) {
		a, _ := codexAgent(t, func(*responsesapi.Request) responsesapi.Reply { return responsesapi.RateLimit(20 * time.Second) })
		res := iterateWith(t, a)
		require.Equal(t, contract.OutcomeRateLimited, res.Outcome, res.Reason)
		require.Empty(t, res.Commit)
	})
	t.Run("usage limit with a reset time", func(t *testing.T) {
		a, _ := codexAgent(t, func(*responsesapi.Request) responsesapi.Reply { return responsesapi.UsageLimit(2*time.Hour, "plus") })
		began := time.Now()
		res := iterateWith(t, a)
		require.Equal(t, contract.OutcomeRateLimited, res.Outcome, res.Reason)
		require.Contains(t, res.Reason, "usage limit")
		require.WithinDuration(t, began.Add(2*time.Hour), res.RateLimitResetsAt, 2*time.Minute)
	})
	t.Run("server error", func(t *testing.T) {
		a, _ := codexAgent(t, func(*responsesapi.Request) responsesapi.Reply { return responsesapi.ServerError() })
		res := iterateWith(t, a)
		require.Equal(t, contract.OutcomeAgentError, res.Outcome, res.Reason)
		require.NotEmpty(t, res.Reason)
	})
	t.Run("exhausted quota", func(t *testing.T) {
		a, _ := codexAgent(t, func(*responsesapi.Request) responsesapi.Reply { return responsesapi.QuotaExceeded() })
		_, err := iterate(t, a)
		require.ErrorContains(t, err, "agent failed permanently")
		require.ErrorContains(t, err, "Quota exceeded")
	})
}

// TestUsageLimitFallsBackToCodex: the executor (the fake Claude Code)
// hits its 5-hour limit, which resets in an hour; with agent.fallback
// [codex] the same iteration runs again at once on the real Codex CLI,
// which does the three stories. Each iteration says it ran on codex, and
// the cost is split by backend.
func TestUsageLimitFallsBackToCodex(t *testing.T) {
	a, srv := codexSessionAgent(t, responsesapi.RalphPRDScript())
	a.model = "gpt-5.1-codex"
	fake := fakeEnv(t, scenario(t, map[string]any{"rate_limit": 3600}))
	r := newRepo(t, map[string]string{"prd.json": threeStoryPRD, "progress.txt": "# Progress log\n"})
	cl := startCluster(t, "", &activities.Agent{Env: append(append([]string(nil), a.env...), fake...)})
	in := input(r.Dir)
	codex := in.Agent
	codex.Backend, codex.Command, codex.Model = "codex", []string{a.bin}, a.model
	in.Fallback = &contract.FallbackSettings{Agents: []contract.AgentSettings{codex}, After: 15 * time.Minute}

	res, err := runSession(t, cl, in)
	require.NoError(t, err)
	require.Equal(t, contract.ReasonComplete, res.Reason, res.Message)
	require.Len(t, calls(t, fake), 1, "Claude Code ran once, hit its limit, and was not run again before the reset")
	require.NotEmpty(t, srv.Responses(), "Codex did the work")
	require.Equal(t, 1, res.Totals.RateLimitWaits)
	commits := r.ralphCommits()
	require.Len(t, commits, 3, "one commit per story: %v", commits)
	for i, id := range []string{"US-001", "US-002", "US-003"} {
		require.Contains(t, commits[i], fmt.Sprintf("iteration %d: %s", i+1, id))
	}
	require.Positive(t, res.Totals.CostByBackend["codex"])
	require.InDelta(t, res.Totals.CostUSD, res.Totals.CostByBackend["codex"]+res.Totals.CostByBackend["claude"], 1e-9)

	var st contract.Status
	v, err := cl.client.QueryWorkflow(context.Background(), sessionIDOf(r.Dir), "", contract.QueryStatus)
	require.NoError(t, err)
	require.NoError(t, v.Get(&st))
	var lines []string
	for _, it := range st.Recent {
		lines = append(lines, it.Line())
	}
	require.Contains(t, strings.Join(lines, "\n"), "iteration 1 on codex (fallback): success")
}
