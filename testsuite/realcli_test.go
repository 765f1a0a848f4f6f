package testsuite_test

// Tests that run the real Claude Code CLI (pinned, installed by `make
// claude`) against testsuite/modelserver, a scripted stand-in for the
// Anthropic Messages API. The CLI runs its real tools in the workspace
// and prints its real stream-json, so these tests check Ralph against
// what the CLI actually does, where the other tests use the fake agent.

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/agent/claude"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/sandbox"
	"github.com/durable-ralph/ralph/testsuite/modelserver"
	"github.com/durable-ralph/ralph/testsuite/realcli"
)

// cliEnv is the environment of the real CLI in a test: the model server as
// its API, no traffic anywhere else, a home (where it keeps its sessions)
// and a temp dir of its own, and credentials: an API key unless auth says
// otherwise.
func cliEnv(t *testing.T, baseURL string, auth ...string) []string {
	t.Helper()
	if len(auth) == 0 {
		auth = []string{"ANTHROPIC_API_KEY=sk-ant-test-dummy"}
	}
	return append([]string{
		"ANTHROPIC_BASE_URL=" + baseURL,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		"HOME=" + t.TempDir(),
		"TMPDIR=" + t.TempDir(),
		// Claude Code refuses --dangerously-skip-permissions to root
		// unless told it runs in a sandbox; IS_SANDBOX=1 is the CLI's
		// supported switch for that, and the tests run as root in a
		// throwaway container.
		"IS_SANDBOX=1",
	}, auth...)
}

// gatewayToken is an ANTHROPIC_AUTH_TOKEN that Claude Code takes for the
// token of a Claude gateway: a JWT whose audience is "claude-gateway" (the
// CLI reads the claim without checking a signature; the server does not
// check it either). Behind a gateway, as for claude.ai subscribers, the
// CLI reads the unified rate-limit headers of a 429 as a usage limit with
// a reset time; with an API key it reports every 429 as "Request rejected
// (429)".
func gatewayToken() string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + enc([]byte(`{"aud":"claude-gateway","sub":"ralph-test"}`)) + ".unsigned"
}

// streamLines reads the stream-json events of an agent log.
func streamLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev map[string]any
		if json.Unmarshal(sc.Bytes(), &ev) == nil {
			out = append(out, ev)
		}
	}
	require.NoError(t, sc.Err())
	return out
}

// eventsOf returns the events of the given type.
func eventsOf(events []map[string]any, typ string) []map[string]any {
	var out []map[string]any
	for _, ev := range events {
		if ev["type"] == typ {
			out = append(out, ev)
		}
	}
	return out
}

// initEvent is the system init event of an agent log.
func initEvent(t *testing.T, path string) map[string]any {
	t.Helper()
	for _, ev := range eventsOf(streamLines(t, path), "system") {
		if ev["subtype"] == "init" {
			return ev
		}
	}
	t.Fatalf("no init event in %s", path)
	return nil
}

// compactJSON is ev as one JSON line, for the test log.
func compactJSON(ev map[string]any) string {
	b, _ := json.Marshal(ev)
	return string(b)
}

// prdPasses reports the passes flag of each story in the workspace's
// prd.json.
func prdPasses(t *testing.T, r *repo) map[string]bool {
	t.Helper()
	var prd struct {
		UserStories []struct {
			ID     string `json:"id"`
			Passes bool   `json:"passes"`
		} `json:"userStories"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.read("prd.json")), &prd))
	out := map[string]bool{}
	for _, s := range prd.UserStories {
		out[s.ID] = s.Passes
	}
	return out
}

// TestRealCLICompletesThreeStories runs a whole session with the real CLI
// as the agent: three iterations each implement a story with the CLI's
// Write and Bash tools, a fourth finds nothing left and claims
// completion. Cost and tokens are what the CLI itself reported.
func TestRealCLICompletesThreeStories(t *testing.T) {
	claudeBin := realcli.ClaudeBin(t)
	ms := modelserver.New(modelserver.RalphPRDScript())
	defer ms.Close()
	ms.SetLog(t.Logf)

	r := newRepo(t, map[string]string{"prd.json": threeStoryPRD, "progress.txt": "# Progress log\n"})
	cl := startCluster(t, "", &activities.Agent{Env: cliEnv(t, ms.URL())})
	in := input(r.Dir)
	in.Agent.Command = []string{claudeBin}

	began := time.Now()
	res, err := runSession(t, cl, in)
	require.NoError(t, err)
	t.Logf("session with the real CLI: %d iterations in %.1f s, $%.4f, %d tokens",
		res.Iterations, time.Since(began).Seconds(), res.Totals.CostUSD, res.Totals.Usage.Total())
	require.Equal(t, contract.ReasonComplete, res.Reason, res.Message)
	require.GreaterOrEqual(t, res.Iterations, 3)
	require.Zero(t, res.Totals.Failures)

	commits := r.ralphCommits()
	require.Len(t, commits, 3, "one commit per story: %v", commits)
	for i, id := range []string{"US-001", "US-002", "US-003"} {
		require.Contains(t, commits[i], fmt.Sprintf("iteration %d: %s", i+1, id))
		require.Equal(t, fmt.Sprintf("Story %s is implemented.\n", id), r.read("story-"+id+".txt"), "written by the CLI's Write tool")
		require.Contains(t, r.read("progress.txt"), id+": wrote story-"+id+".txt", "appended by the CLI's Bash tool")
	}
	for id, passes := range prdPasses(t, r) {
		require.True(t, passes, id)
	}
	require.Empty(t, strings.TrimSpace(r.git("status", "--porcelain")), "the tree is clean")

	// The totals are the sums of what the CLI reported in its result
	// events.
	logs, err := filepath.Glob(filepath.Join(r.Dir, ".ralph", "logs", "*", "iteration-*.jsonl"))
	require.NoError(t, err)
	require.Len(t, logs, res.Iterations)
	var cost float64
	var tokens int64
	for _, l := range logs {
		results := eventsOf(streamLines(t, l), "result")
		require.Len(t, results, 1, l)
		ev := results[0]
		require.Equal(t, false, ev["is_error"], compactJSON(ev))
		cost += ev["total_cost_usd"].(float64)
		for _, k := range []string{"input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"} {
			tokens += int64(ev["usage"].(map[string]any)[k].(float64))
		}
	}
	// The live view's lines come out of the real CLI's stream: a tool
	// call names its tool and what it works on.
	sort.Strings(logs)
	data, err := os.ReadFile(logs[0])
	require.NoError(t, err)
	parser := claude.NewParser()
	var tools []string
	for _, line := range strings.Split(string(data), "\n") {
		if ev, err := parser.Line([]byte(line)); err == nil && ev.ToolUses > 0 {
			tools = append(tools, ev.ToolName+" "+ev.ToolSubject)
		}
	}
	t.Logf("tool calls of iteration 1 as the live view shows them: %q", tools)
	joined := strings.Join(tools, "\n")
	require.Regexp(t, `(?m)^Write \S*story-US-001\.txt$`, joined)
	require.Regexp(t, `(?m)^Bash .*progress\.txt`, joined)

	require.Positive(t, res.Totals.CostUSD)
	require.InDelta(t, cost, res.Totals.CostUSD, 1e-9)
	require.Positive(t, res.Totals.Usage.Total())
	require.Equal(t, tokens, res.Totals.Usage.Total())

	// Every iteration spoke to the model server, with the CLI's headers.
	reqs := ms.Messages()
	require.GreaterOrEqual(t, len(reqs), 3*4+1)
	require.Equal(t, "sk-ant-test-dummy", reqs[0].Header.Get("X-Api-Key"))
	require.Contains(t, reqs[0].Header.Get("User-Agent"), "claude-cli/")
	require.Contains(t, reqs[0].Prompt(), "## This iteration: US-001")
}

// iterateOnce runs one iteration of a fresh workspace with the real CLI,
// its model server answering with script, outside of Temporal.
func iterateOnce(t *testing.T, script modelserver.Script, env ...string) (contract.IterationResult, *modelserver.Server, []map[string]any) {
	t.Helper()
	claudeBin := realcli.ClaudeBin(t)
	ms := modelserver.New(script)
	t.Cleanup(ms.Close)
	ms.SetLog(t.Logf)
	r := newRepo(t, map[string]string{"prd.json": threeStoryPRD, "progress.txt": ""})
	var auth []string
	var extra []string
	for _, kv := range env {
		if strings.HasPrefix(kv, "ANTHROPIC_API_KEY=") || strings.HasPrefix(kv, "ANTHROPIC_AUTH_TOKEN=") {
			auth = append(auth, kv)
		} else {
			extra = append(extra, kv)
		}
	}
	ag := &activities.Agent{Env: append(cliEnv(t, ms.URL(), auth...), extra...)}
	in := contract.IterationInput{
		SessionID:     "realcli-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")),
		Iteration:     1,
		MaxIterations: 10,
		Workspace:     r.Dir,
		Agent:         contract.AgentSettings{Command: []string{claudeBin}, Timeout: 2 * time.Minute, Sandbox: realSandbox(t)},
		Git:           contract.GitSettings{AutoCommit: true},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	began := time.Now()
	res, err := ag.Iterate(ctx, in, 1, nil, nil)
	require.NoError(t, err)
	if in.Agent.Sandbox.Mode == sandbox.ModeRequired {
		require.NotEmpty(t, res.Contained, "Claude Code ran in the sandbox, its model API reached on the allow-list")
	}
	t.Logf("iteration took %.1f s: outcome %s, reason %q, resets at %v", time.Since(began).Seconds(), res.Outcome, res.Reason, res.RateLimitResetsAt)
	logPath := filepath.Join(r.Dir, filepath.FromSlash(res.LogFile))
	raw, err := os.ReadFile(logPath)
	require.NoError(t, err)
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		if !strings.HasPrefix(line, `{"type":"system","subtype":"init"`) {
			t.Logf("CLI printed: %s", line)
		}
	}
	events := streamLines(t, logPath)
	require.Empty(t, res.Commit, "a failed call changes nothing")
	return res, ms, events
}

// unifiedLimitHeaders are the headers of a 429 from the API when a
// subscription's usage limit is hit: the ones Claude Code 2.1.329 reads
// (anthropic-ratelimit-unified-status, -reset, -representative-claim,
// the per-window -5h-* and the overage state).
func unifiedLimitHeaders(reset time.Time) map[string]string {
	epoch := strconv.FormatInt(reset.Unix(), 10)
	return map[string]string{
		"anthropic-ratelimit-unified-status":                  "rejected",
		"anthropic-ratelimit-unified-reset":                   epoch,
		"anthropic-ratelimit-unified-representative-claim":    "five_hour",
		"anthropic-ratelimit-unified-5h-status":               "rejected",
		"anthropic-ratelimit-unified-5h-reset":                epoch,
		"anthropic-ratelimit-unified-5h-utilization":          "1.0",
		"anthropic-ratelimit-unified-overage-status":          "rejected",
		"anthropic-ratelimit-unified-overage-disabled-reason": "out_of_credits",
		"retry-after": strconv.Itoa(int(time.Until(reset).Seconds())),
	}
}

// apiError is a script that answers every request with the API error
// of status, type typ and message.
func apiError(status int, typ, message string) modelserver.Script {
	return func(*modelserver.Request) modelserver.Reply { return modelserver.Error(status, typ, message, nil) }
}

// TestRealCLIRateLimitIsClassified has the model server refuse with the
// API's 429s and checks the outcome Ralph reads from the CLI's output.
func TestRealCLIRateLimitIsClassified(t *testing.T) {
	realcli.ClaudeBin(t)

	t.Run("usage limit with reset time", func(t *testing.T) {
		reset := time.Now().Add(2 * time.Hour).Truncate(time.Hour)
		res, ms, events := iterateOnce(t, func(*modelserver.Request) modelserver.Reply {
			return modelserver.Error(429, "rate_limit_error", "This request would exceed your account's rate limit. Please try again later.", unifiedLimitHeaders(reset))
		}, "ANTHROPIC_AUTH_TOKEN="+gatewayToken())

		require.Equal(t, contract.OutcomeRateLimited, res.Outcome, res.Reason)
		require.True(t, res.RateLimitResetsAt.Equal(reset), "resets at %v, want %v", res.RateLimitResetsAt, reset)
		require.Contains(t, res.Reason, "rate limited (five_hour): You've hit your 5-hour limit · resets ")
		require.Len(t, ms.Messages(), 1, "a usage limit is not retried")
		require.True(t, strings.HasPrefix(ms.Messages()[0].Header.Get("Authorization"), "Bearer "))

		limits := eventsOf(events, "rate_limit_event")
		require.NotEmpty(t, limits)
		info := limits[len(limits)-1]["rate_limit_info"].(map[string]any)
		require.Equal(t, "rejected", info["status"])
		require.Equal(t, "five_hour", info["rateLimitType"])
		require.EqualValues(t, reset.Unix(), info["resetsAt"])
	})

	t.Run("API 429 without a usage limit", func(t *testing.T) {
		res, ms, _ := iterateOnce(t, apiError(429, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"), "CLAUDE_CODE_MAX_RETRIES=1")
		require.Equal(t, contract.OutcomeRateLimited, res.Outcome, res.Reason)
		require.True(t, res.RateLimitResetsAt.IsZero(), "the API did not say when")
		require.Contains(t, res.Reason, "API Error: Request rejected (429) · Number of request tokens has exceeded your per-minute rate limit")
		require.Len(t, ms.Messages(), 2, "one retry (CLAUDE_CODE_MAX_RETRIES=1)")
	})

	t.Run("API overloaded", func(t *testing.T) {
		res, ms, events := iterateOnce(t, apiError(529, "overloaded_error", "Overloaded"), "CLAUDE_CODE_MAX_RETRIES=1")
		require.Equal(t, contract.OutcomeRateLimited, res.Outcome, res.Reason)
		require.Contains(t, res.Reason, "API Error: 529 Overloaded")
		require.Len(t, ms.Messages(), 2)
		retries := 0
		for _, ev := range eventsOf(events, "system") {
			if ev["subtype"] == "api_retry" {
				retries++
				require.EqualValues(t, 529, ev["error_status"])
			}
		}
		require.Equal(t, 1, retries)
	})
}

// TestRealCLIAPIErrorIsClassified has the model server fail with API
// errors that are neither limits nor permanent: the iteration is an agent
// error whose reason is the CLI's own message.
func TestRealCLIAPIErrorIsClassified(t *testing.T) {
	realcli.ClaudeBin(t)

	t.Run("400 invalid request", func(t *testing.T) {
		res, _, events := iterateOnce(t, apiError(400, "invalid_request_error", "messages.0.content: the widget service rejected this request"))
		require.Equal(t, contract.OutcomeAgentError, res.Outcome, res.Reason)
		require.Equal(t, "agent reported an error: API Error: 400 messages.0.content: the widget service rejected this request", res.Reason)
		results := eventsOf(events, "result")
		require.Len(t, results, 1)
		require.EqualValues(t, 400, results[0]["api_error_status"])
		require.Equal(t, true, results[0]["is_error"])
	})

	t.Run("500 after the CLI's retries", func(t *testing.T) {
		res, ms, events := iterateOnce(t, apiError(500, "api_error", "Internal server error"), "CLAUDE_CODE_MAX_RETRIES=1")
		require.Equal(t, contract.OutcomeAgentError, res.Outcome, res.Reason)
		require.Contains(t, res.Reason, "agent reported an error: API Error: 500 Internal server error. This is a server-side issue, usually temporary")
		require.Len(t, ms.Messages(), 2, "the first try and one retry (CLAUDE_CODE_MAX_RETRIES=1)")
		require.Len(t, eventsOf(events, "result"), 1)
	})
}

// TestRealCLIWorkerKillResumes kills -9 a worker process while the real
// CLI it runs waits for the model (the second turn of the first iteration
// is held). A new worker retries the iteration with `claude --resume`: the
// CLI sends the model the earlier turns and Ralph's "You were interrupted"
// message, the story is finished where it stopped, and the session
// completes with one commit per story.
func TestRealCLIWorkerKillResumes(t *testing.T) {
	claudeBin := realcli.ClaudeBin(t)

	// Hold the first iteration's second turn (the reply to the Write
	// tool's result) until the CLI goes away.
	var held heldTurn
	ms := modelserver.New(holdingScript(&held, modelserver.RalphPRDScript(), func(r modelserver.Reply) modelserver.Reply {
		return modelserver.Hold(5 * time.Minute).Then(r)
	}))
	defer ms.Close()
	ms.SetLog(t.Logf)

	ws := startWorkerSession(t, append(cliEnv(t, ms.URL()), "RALPH_AGENT_ENV=DISABLE_AUTOUPDATER"), func(dir string) contract.SessionInput {
		in := input(dir)
		in.Agent.Command = []string{claudeBin}
		return in
	})
	r := ws.r

	// Kill the worker once the CLI has waited on the held turn long enough
	// to have reported its session in a heartbeat.
	waitFor(t, time.Minute, "the CLI to reach the held turn", held.waited)
	require.FileExists(t, filepath.Join(r.Dir, "story-US-001.txt"), "the first turn's Write ran")
	res, commits := ws.killWorker(t)
	for i, c := range commits {
		require.Contains(t, c, fmt.Sprintf("iteration %d: US-00%d", i+1, i+1))
	}
	require.Equal(t, 1, strings.Count(r.read("progress.txt"), "US-001:"), "the resumed story was recorded once")
	require.Zero(t, res.Totals.Failures)

	// The retry resumed the CLI's own session: the model saw the earlier
	// turns (the Write of story-US-001.txt and its result) followed by
	// Ralph's resume prompt, in a request of the same CLI session.
	var resumed *modelserver.Request
	for _, req := range ms.Messages() {
		if strings.HasPrefix(strings.TrimSpace(req.LastUserText), "You were interrupted") {
			resumed = &req
			break
		}
	}
	require.NotNil(t, resumed, "the server saw the resumed conversation")
	var shape []string
	for _, m := range resumed.Messages {
		var types []string
		for _, b := range m.Content {
			if m.Role == "assistant" && b.Type == "text" {
				types = append(types, strconv.Quote(b.Text))
			} else {
				types = append(types, b.Type)
			}
		}
		shape = append(shape, m.Role+"("+strings.Join(types, ",")+")")
	}
	t.Logf("the resumed request's messages: %s", strings.Join(shape, " "))
	require.Contains(t, resumed.Prompt(), "## This iteration: US-001")
	var wrote bool
	for _, tu := range resumed.ToolUses() {
		wrote = wrote || tu.Name == "Write" && strings.Contains(string(tu.Input), "story-US-001.txt")
	}
	require.True(t, wrote, "the resumed conversation holds the first turn's Write")
	first := ms.Messages()[0]
	require.Equal(t, first.Header.Get("X-Claude-Code-Session-Id"), resumed.Header.Get("X-Claude-Code-Session-Id"))

	attempt1, attempt2 := attemptLogs(t, r)
	init1, init2 := initEvent(t, attempt1), initEvent(t, attempt2)
	require.Equal(t, init1["session_id"], init2["session_id"], "attempt 2 ran claude --resume of attempt 1's session")
	require.Equal(t, first.Header.Get("X-Claude-Code-Session-Id"), init1["session_id"])

	replay(t, ws.c, sessionIDOf(r.Dir))
}
