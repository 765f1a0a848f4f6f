package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/agent"
	"github.com/durable-ralph/ralph/agent/claude"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/gittest"
)

// ralphArgs is the command line Durable Ralph runs the agent with.
var ralphArgs = []string{"-p", "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions"}

const threeStoryPRD = `{
  "project": "Widgets",
  "branchName": "ralph/widgets",
  "userStories": [
    {"id": "US-002", "title": "Add a widget", "acceptanceCriteria": ["form saves"], "priority": 2, "passes": false, "notes": ""},
    {"id": "US-001", "title": "List widgets", "acceptanceCriteria": ["list renders"], "priority": 1, "passes": false, "notes": ""},
    {"id": "US-003", "title": "Delete a widget", "acceptanceCriteria": ["row disappears"], "priority": 3, "passes": false,
     "notes": "keep \"passes\": false in mind"}
  ]
}
`

const threeTaskProgress = `# Progress: Widgets

## Status

In Progress

## Tasks

### Phase 1: Catalogue

- [ ] List widgets
- [x] Add a widget
- [ ] Delete a widget

## Completed This Iteration

- [ ] not a task
`

// fakeBinary is the fake agent, built once.
var fakeBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "fakeclaude-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "claude")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

func TestMain(m *testing.M) {
	code := m.Run()
	if bin, err := fakeBinary(); err == nil {
		os.RemoveAll(filepath.Dir(bin))
	}
	os.Exit(code)
}

// fake runs the fake agent in a workspace.
type fake struct {
	t        *testing.T
	dir      string // the workspace
	state    string // FAKE_CLAUDE_STATE_DIR
	scenario string // FAKE_CLAUDE_SCENARIO, "" for none
}

func newFake(t *testing.T, files map[string]string, steps ...map[string]any) *fake {
	t.Helper()
	f := &fake{t: t, dir: newRepo(t, files), state: t.TempDir()}
	if len(steps) > 0 {
		data, err := json.Marshal(map[string]any{"steps": steps})
		require.NoError(t, err)
		f.scenario = filepath.Join(t.TempDir(), "scenario.json")
		require.NoError(t, os.WriteFile(f.scenario, data, 0o644))
	}
	return f
}

// result is one finished invocation.
type result struct {
	stdout, stderr string
	code           int
	summary        claude.Summary
	verdict        agent.Verdict
}

func (f *fake) command(ctx context.Context, stdin string, args ...string) *exec.Cmd {
	f.t.Helper()
	bin, err := fakeBinary()
	require.NoError(f.t, err)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = f.dir
	cmd.Env = append(os.Environ(), "FAKE_CLAUDE_STATE_DIR="+f.state, "FAKE_CLAUDE_SCENARIO="+f.scenario)
	cmd.Stdin = strings.NewReader(stdin)
	return cmd
}

// run runs the fake agent with stdin and args and parses its stdout.
func (f *fake) run(stdin string, args ...string) result {
	f.t.Helper()
	cmd := f.command(context.Background(), stdin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := errors.AsType[*exec.ExitError](err)
		require.True(f.t, ok, "run: %v", err)
		code = ee.ExitCode()
	}
	p := claude.NewParser()
	sc := bufio.NewScanner(bytes.NewReader(stdout.Bytes()))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		_, _ = p.Line(sc.Bytes())
	}
	require.NoError(f.t, sc.Err())
	s := p.Summary()
	return result{
		stdout: stdout.String(), stderr: stderr.String(), code: code,
		summary: s, verdict: claude.Classify(s, err, stderr.String(), time.Now()),
	}
}

func (f *fake) read(name string) string {
	f.t.Helper()
	data, err := os.ReadFile(filepath.Join(f.dir, name))
	require.NoError(f.t, err)
	return string(data)
}

// calls reads calls.jsonl.
func (f *fake) calls() []call {
	f.t.Helper()
	data, err := os.ReadFile(filepath.Join(f.state, "calls.jsonl"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(f.t, err)
	var calls []call
	for line := range bytes.Lines(data) {
		var c call
		require.NoError(f.t, json.Unmarshal(line, &c))
		calls = append(calls, c)
	}
	return calls
}

func newRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	return gittest.NewRepo(t, files)
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return gittest.Run(t, dir, args...)
}

func TestAutoPRD(t *testing.T) {
	f := newFake(t, map[string]string{"prd.json": threeStoryPRD})

	for i, id := range []string{"US-001", "US-002", "US-003"} {
		r := f.run("Work on the next story.", ralphArgs...)
		require.Equal(t, 0, r.code, r.stderr)
		require.Equal(t, contract.OutcomeSuccess, r.verdict.Outcome, r.verdict.Reason)
		require.Contains(t, r.summary.ResultText, "Implemented "+id)
		require.NotContains(t, r.summary.ResultText, "<promise>")
		require.Equal(t, fmt.Sprintf("%s: %s\n", id, storyTitle(id)), f.read("story-"+id+".txt"))
		require.Equal(t, i+1, strings.Count(f.read("progress.txt"), "Implemented"))
		require.Equal(t, 3, r.summary.ToolUses, "a Write for the story file, prd.json and progress.txt")
		require.Equal(t, 3, r.summary.ToolResults)
		require.Equal(t, "Write", r.summary.LastTool)
	}
	// Only the three "passes" values changed, byte for byte.
	require.Equal(t, strings.ReplaceAll(threeStoryPRD, `"passes": false,`, `"passes": true,`), f.read("prd.json"))

	r := f.run("Work on the next story.", ralphArgs...)
	require.Equal(t, contract.OutcomeSuccess, r.verdict.Outcome, r.verdict.Reason)
	require.True(t, strings.HasSuffix(r.summary.ResultText, "\n\n<promise>COMPLETE</promise>"), r.summary.ResultText)
	require.Zero(t, r.summary.ToolUses)

	calls := f.calls()
	require.Len(t, calls, 4)
	for i, c := range calls {
		require.Equal(t, i+1, c.N)
		require.Equal(t, "Work on the next story.", c.Prompt)
		require.Equal(t, f.dir, c.CWD)
		require.Equal(t, ralphArgs, c.Argv[1:])
	}
	require.Len(t, strings.Split(strings.TrimSpace(git(t, f.dir, "status", "--porcelain")), "\n"), 5,
		"prd.json, progress.txt and three story files changed; the state lives outside the workspace")
}

func storyTitle(id string) string {
	return map[string]string{"US-001": "List widgets", "US-002": "Add a widget", "US-003": "Delete a widget"}[id]
}

func TestStreamParsesLikeClaudeCode(t *testing.T) {
	f := newFake(t, map[string]string{"prd.json": threeStoryPRD},
		map[string]any{"auto": true},
		map[string]any{"write": map[string]string{"notes/a.md": "a\n"}, "cost_usd": 0.5, "num_turns": 9,
			"usage": map[string]int{"input_tokens": 10, "output_tokens": 20, "cache_creation_input_tokens": 30, "cache_read_input_tokens": 40}},
	)

	r := f.run("go", ralphArgs...)
	s := r.summary
	c := f.calls()[0]
	require.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, s.SessionID)
	require.Equal(t, c.SessionID, s.SessionID)
	require.Equal(t, "claude-opus-5-5", s.Model)
	require.Equal(t, "2.1.329", s.CLIVersion)
	require.Equal(t, f.dir, s.CWD)
	require.Zero(t, s.InvalidLines)
	require.Zero(t, s.UnknownEvents)
	require.True(t, s.HasResult)
	require.Equal(t, "success", s.ResultSubtype)
	require.False(t, s.IsError)
	require.Equal(t, 0.0125, s.CostUSD)
	require.Equal(t, contract.Usage{InputTokens: 1200, OutputTokens: 350, CacheCreationInputTokens: 4000, CacheReadInputTokens: 15000}, s.Usage)
	require.Equal(t, 4, s.Turns, "three tool turns and the final text")
	require.Equal(t, 4, s.NumTurns)
	require.Equal(t, s.ResultText, s.LastText)

	// Every line is one JSON object as the real CLI prints them: ids as
	// Anthropic writes them and the content blocks one per event.
	for line := range strings.Lines(r.stdout) {
		var ev map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &ev), line)
		require.Equal(t, s.SessionID, ev["session_id"])
		require.NotEmpty(t, ev["uuid"])
		if ev["type"] == "assistant" {
			msg := ev["message"].(map[string]any)
			require.Regexp(t, `^msg_01[A-Za-z0-9]{22}$`, msg["id"])
			require.Len(t, msg["content"], 1)
			if block := msg["content"].([]any)[0].(map[string]any); block["type"] == "tool_use" {
				require.Regexp(t, `^toolu_01[A-Za-z0-9]{22}$`, block["id"])
			}
		}
	}
	require.NotContains(t, r.stdout, `\u003c`, "HTML is not escaped, as in JSON.stringify")

	r = f.run("go", append(ralphArgs, "--model", "claude-sonnet-4-5")...)
	require.Equal(t, "claude-sonnet-4-5", r.summary.Model)
	require.Equal(t, 0.5, r.summary.CostUSD)
	require.Equal(t, contract.Usage{InputTokens: 10, OutputTokens: 20, CacheCreationInputTokens: 30, CacheReadInputTokens: 40}, r.summary.Usage)
	require.Equal(t, 9, r.summary.NumTurns)
	require.Equal(t, "a\n", f.read("notes/a.md"))
	require.Contains(t, r.stdout, `"modelUsage":{"claude-sonnet-4-5":{"inputTokens":10,`)
}

func TestFailures(t *testing.T) {
	tests := []struct {
		name      string
		step      map[string]any
		code      int
		outcome   contract.Outcome
		reason    string
		resetsIn  time.Duration
		noResult  bool
		stderrHas string
	}{
		{
			name:     "garbage",
			step:     map[string]any{"garbage": true},
			code:     1,
			outcome:  contract.OutcomeAgentError,
			reason:   "agent printed 12 lines that are not stream-json and no result",
			noResult: true,
		},
		{
			name:     "garbage with a count and a status",
			step:     map[string]any{"garbage": 3, "exit_code": 7},
			code:     7,
			outcome:  contract.OutcomeAgentError,
			reason:   "agent printed 3 lines that are not stream-json and no result and exited with status 7",
			noResult: true,
		},
		{
			name:     "crash",
			step:     map[string]any{"auto": true, "crash": 3},
			code:     3,
			outcome:  contract.OutcomeAgentError,
			reason:   "agent exited with status 3 without a result event",
			noResult: true,
		},
		{
			name:      "error during execution",
			step:      map[string]any{"is_error": true, "error_text": "Tool permission stream closed"},
			code:      1,
			outcome:   contract.OutcomeAgentError,
			reason:    "agent ended with error_during_execution: Tool permission stream closed",
			stderrHas: "Tool permission stream closed",
		},
		{
			name:     "rate limit",
			step:     map[string]any{"rate_limit": 90},
			code:     1,
			outcome:  contract.OutcomeRateLimited,
			reason:   "rate limited (five_hour): You've hit your 5-hour limit · resets ",
			resetsIn: 90 * time.Second,
		},
		{
			name:    "invalid API key",
			step:    map[string]any{"auth_error": true},
			code:    1,
			outcome: contract.OutcomePermanent,
			reason:  "Invalid API key · Fix external API key",
		},
		{
			name:    "exit code after a good result",
			step:    map[string]any{"exit_code": 5},
			code:    5,
			outcome: contract.OutcomeAgentError,
			reason:  "agent exited with status 5 after a successful result",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, map[string]string{"prd.json": threeStoryPRD}, tt.step)
			start := time.Now()
			r := f.run("go", ralphArgs...)
			require.Equal(t, tt.code, r.code, r.stderr)
			require.Equal(t, tt.outcome, r.verdict.Outcome, r.verdict.Reason)
			require.Contains(t, r.verdict.Reason, tt.reason)
			require.Equal(t, !tt.noResult, r.summary.HasResult)
			require.Contains(t, r.stderr, tt.stderrHas)
			if tt.resetsIn > 0 {
				require.WithinDuration(t, start.Add(tt.resetsIn), r.verdict.ResetsAt, 2*time.Second)
			}
		})
	}
}

func TestCommandLine(t *testing.T) {
	tests := []struct {
		name   string
		stdin  string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{
			name:   "stream-json without --verbose",
			stdin:  "hi",
			args:   []string{"-p", "--output-format", "stream-json"},
			code:   1,
			stderr: "Error: When using --print, --output-format=stream-json requires --verbose\n",
		},
		{
			name:   "version",
			args:   []string{"--version"},
			stdout: "2.1.329 (Claude Code)\n",
		},
		{
			name:   "unknown flag",
			stdin:  "hi",
			args:   []string{"-p", "--bogus-flag"},
			code:   1,
			stderr: "error: unknown option '--bogus-flag'\n",
		},
		{
			name:   "unknown short flag",
			args:   []string{"-x"},
			code:   1,
			stderr: "error: unknown option '-x'\n",
		},
		{
			name:   "bad output format",
			stdin:  "hi",
			args:   []string{"-p", "--output-format=yaml"},
			code:   1,
			stderr: "error: option '--output-format <format>' argument 'yaml' is invalid. Allowed choices are text, json, stream-json.\n",
		},
		{
			name:   "missing model",
			stdin:  "hi",
			args:   []string{"-p", "--model"},
			code:   1,
			stderr: "error: option '--model <model>' argument missing\n",
		},
		{
			name:   "max turns not a number",
			args:   []string{"-p", "--max-turns", "abc", "hi"},
			code:   1,
			stderr: "error: option '--max-turns <turns>' argument 'abc' is invalid. must be a number\n",
		},
		{
			name:   "bad session id",
			stdin:  "hi",
			args:   []string{"-p", "--session-id", "nope"},
			code:   1,
			stderr: "Error: Invalid session ID. Must be a valid UUID.\n",
		},
		{
			name:   "no prompt",
			args:   append([]string(nil), ralphArgs...),
			code:   1,
			stderr: "Error: Input must be provided either through stdin or as a prompt argument when using --print\n",
		},
		{
			name:   "blank prompt",
			stdin:  " \n\t",
			args:   []string{"-p", "--output-format", "stream-json"},
			code:   1,
			stderr: "Error: Input contained only whitespace. Provide a prompt with text through stdin or as a prompt argument when using --print\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, nil)
			r := f.run(tt.stdin, tt.args...)
			require.Equal(t, tt.code, r.code)
			require.Equal(t, tt.stdout, r.stdout)
			require.Equal(t, tt.stderr, r.stderr)
			require.Empty(t, f.calls(), "only runs are counted")
			if tt.code != 0 {
				require.Equal(t, contract.OutcomePermanent, r.verdict.Outcome, r.verdict.Reason)
			}
		})
	}
}

func TestArgumentsAndFormats(t *testing.T) {
	f := newFake(t, map[string]string{"PROMPT.md": "# Objective\n\nKeep a counter.\n"},
		map[string]any{"counter_file": "counter.txt"})

	// The prompt as an argument; flags after it; variadic tools stop at
	// the next flag.
	r := f.run("", "-p", "count", "--allowedTools", "Bash", "Edit", "--append-system-prompt", "be brief",
		"--output-format", "json", "--session-id", "11111111-2222-4333-8444-555555555555", "--max-turns=5")
	require.Equal(t, 0, r.code, r.stderr)
	var res map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &res))
	require.Equal(t, "result", res["type"])
	require.Equal(t, "11111111-2222-4333-8444-555555555555", res["session_id"])
	require.Equal(t, "Incremented counter.txt to 1.", res["result"])
	require.Equal(t, "1\n", f.read("counter.txt"))

	r = f.run("count again", "-p")
	require.Equal(t, "Incremented counter.txt to 2.\n", r.stdout)
	require.Equal(t, "2\n", f.read("counter.txt"))

	// Resuming a session this fake agent started keeps its id.
	r = f.run("more", append(ralphArgs, "--resume", "11111111-2222-4333-8444-555555555555")...)
	require.Equal(t, "11111111-2222-4333-8444-555555555555", r.summary.SessionID)
	require.Equal(t, contract.OutcomeSuccess, r.verdict.Outcome)

	// Resuming another fails as the real CLI does, without playing a step.
	r = f.run("more", append(ralphArgs, "--resume", "99999999-2222-4333-8444-555555555555")...)
	require.Equal(t, 1, r.code)
	require.Equal(t, "No conversation found with session ID: 99999999-2222-4333-8444-555555555555\n", r.stderr)
	require.Equal(t, "error_during_execution", r.summary.ResultSubtype)
	require.Equal(t, contract.OutcomeAgentError, r.verdict.Outcome)

	calls := f.calls()
	require.Len(t, calls, 3)
	require.Equal(t, "count", calls[0].Prompt)
	require.Equal(t, "count again", calls[1].Prompt)
	require.Equal(t, "3\n", f.read("counter.txt"))
}

func TestMaxTurns(t *testing.T) {
	f := newFake(t, map[string]string{"prd.json": threeStoryPRD})
	r := f.run("go", append(ralphArgs, "--max-turns", "2")...)
	require.Equal(t, 1, r.code)
	require.Equal(t, "error_max_turns", r.summary.ResultSubtype)
	require.Equal(t, "Reached maximum number of turns (2)", r.summary.ResultText)
	require.Equal(t, 2, r.summary.Turns)
	require.Equal(t, contract.OutcomeAgentError, r.verdict.Outcome)
}

func TestAutoProgress(t *testing.T) {
	f := newFake(t, map[string]string{"progress.md": threeTaskProgress})

	r := f.run("go", ralphArgs...)
	require.Equal(t, contract.OutcomeSuccess, r.verdict.Outcome, r.verdict.Reason)
	require.Contains(t, r.summary.ResultText, "Completed task 1 (List widgets)")
	require.NotContains(t, r.summary.ResultText, "RALPH_DONE")
	require.Equal(t, "List widgets\n", f.read("task-1.txt"))

	// The run that checks the last box also says so in ## Status.
	r = f.run("go", ralphArgs...)
	require.Contains(t, r.summary.ResultText, "Completed task 3 (Delete a widget)")
	require.True(t, strings.HasSuffix(r.summary.ResultText, "\n\nRALPH_DONE"), r.summary.ResultText)
	want := strings.NewReplacer("In Progress", "RALPH_DONE", "- [ ] List widgets", "- [x] List widgets",
		"- [ ] Delete a widget", "- [x] Delete a widget").Replace(threeTaskProgress)
	require.Equal(t, want, f.read("progress.md"))

	r = f.run("go", ralphArgs...)
	require.True(t, strings.HasSuffix(r.summary.ResultText, "\n\nRALPH_DONE"), r.summary.ResultText)
	require.Zero(t, r.summary.ToolUses)
}

func TestCommitAndCheckpoint(t *testing.T) {
	f := newFake(t, nil, map[string]any{
		"write":      map[string]string{"main.go": "package main\n"},
		"checkpoint": map[string]any{"story": "US-001", "step": 2},
		"commit":     "feat: add main",
		"claim":      true,
		"text":       "All done.",
	})
	r := f.run("go", ralphArgs...)
	require.Equal(t, contract.OutcomeSuccess, r.verdict.Outcome, r.verdict.Reason)
	require.Equal(t, "All done.", r.summary.ResultText, "no task file, so no promise to claim")
	require.Equal(t, `{"step":2,"story":"US-001"}`, f.read(".ralph/checkpoint.json"))
	require.Equal(t, "feat: add main\n", git(t, f.dir, "log", "-1", "--format=%s"))
	require.Empty(t, git(t, f.dir, "status", "--porcelain"))
	require.Equal(t, "Bash", r.summary.LastTool)
}

func TestSleepPrintsProgress(t *testing.T) {
	f := newFake(t, nil, map[string]any{"sleep_ms": 1500})
	start := time.Now()
	r := f.run("go", ralphArgs...)
	require.GreaterOrEqual(t, time.Since(start), 1500*time.Millisecond)
	require.Equal(t, contract.OutcomeSuccess, r.verdict.Outcome, r.verdict.Reason)
	require.Equal(t, 1, r.summary.UnknownEvents, "one tool_progress event")
	require.Equal(t, "Bash", r.summary.LastTool)
}

func TestFlood(t *testing.T) {
	f := newFake(t, nil, map[string]any{"flood_mb": 3, "flood_line_kb": 512})
	r := f.run("go", ralphArgs...)
	require.Greater(t, len(r.stdout), 3<<20)
	require.Equal(t, contract.OutcomeSuccess, r.verdict.Outcome, r.verdict.Reason)
	require.Zero(t, r.summary.InvalidLines)
	require.Equal(t, "Nothing to do.", r.summary.ResultText)
}

func TestHangNeedsTheProcessGroupKilled(t *testing.T) {
	f := newFake(t, nil, map[string]any{"hang": true})
	cmd := f.command(context.Background(), "go", ralphArgs...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	pgid := cmd.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })

	first, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	ev, err := claude.NewParser().Line([]byte(first))
	require.NoError(t, err)
	require.Equal(t, "init", ev.Subtype)

	// The sleep child shares the process group, and stdout.
	out, err := exec.Command("pgrep", "-g", fmt.Sprint(pgid), "-x", "sleep").Output()
	require.NoError(t, err, "no sleep child in the process group")
	require.NotEmpty(t, strings.TrimSpace(string(out)))

	require.NoError(t, syscall.Kill(-pgid, syscall.SIGTERM))
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		require.Error(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the fake agent outlived its process group")
	}
}

func TestConcurrentInvocationsCountOnce(t *testing.T) {
	const n = 6
	steps := make([]map[string]any, n)
	for i := range steps {
		steps[i] = map[string]any{"text": fmt.Sprintf("step %d", i+1)}
	}
	f := newFake(t, nil, steps...)
	texts := make(chan string, n)
	t.Run("group", func(t *testing.T) {
		for i := range n {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				g := *f
				g.t = t
				texts <- g.run("go", ralphArgs...).summary.ResultText
			})
		}
	})
	close(texts)
	seen := map[string]bool{}
	for text := range texts {
		seen[text] = true
	}
	require.Len(t, seen, n, "every invocation played its own step: %v", seen)
	require.Len(t, f.calls(), n)
}

func TestScenarioRepeat(t *testing.T) {
	f := newFake(t, map[string]string{"prd.json": threeStoryPRD})
	sc := filepath.Join(t.TempDir(), "scenario.json")
	require.NoError(t, os.WriteFile(sc, []byte(`{"steps":[{"text":"first"}],"repeat":"auto"}`), 0o644))
	f.scenario = sc
	require.Equal(t, "first", f.run("go", ralphArgs...).summary.ResultText)
	require.Contains(t, f.run("go", ralphArgs...).summary.ResultText, "Implemented US-001")

	require.NoError(t, os.WriteFile(sc, []byte(`[{"text":"first"},{"text":"last"}]`), 0o644))
	f.state = t.TempDir()
	for _, want := range []string{"first", "last", "last"} {
		require.Equal(t, want, f.run("go", ralphArgs...).summary.ResultText)
	}

	require.NoError(t, os.WriteFile(sc, []byte(`{"steps":[{"auto":true,"tpyo":1}]}`), 0o644))
	r := f.run("go", ralphArgs...)
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, `unknown field "tpyo"`)
}

func TestSetPasses(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		index   int
		want    string
		wantErr bool
	}{
		{
			name:  "compact",
			in:    `{"userStories":[{"id":"a","passes":false},{"id":"b","passes":false}]}`,
			index: 1,
			want:  `{"userStories":[{"id":"a","passes":false},{"id":"b","passes":true}]}`,
		},
		{
			name:  "other keys first, nested values",
			in:    "{\"meta\": {\"passes\": false}, \"userStories\": [\n {\"notes\": {\"passes\": false}, \"passes\" :  false }\n]}",
			index: 0,
			want:  "{\"meta\": {\"passes\": false}, \"userStories\": [\n {\"notes\": {\"passes\": false}, \"passes\" :  true }\n]}",
		},
		{name: "already true", in: `{"userStories":[{"passes":true}]}`, wantErr: true},
		{name: "no passes", in: `{"userStories":[{"id":"a"}]}`, wantErr: true},
		{name: "no such story", in: `{"userStories":[]}`, wantErr: true},
		{name: "not JSON", in: `{"userStories":[`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := setPasses([]byte(tt.in), tt.index)
			if tt.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, string(got))
		})
	}
}

func TestResetTime(t *testing.T) {
	t.Setenv("TZ", "Europe/London")
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		at   time.Time
		want string
	}{
		{now.Add(9 * time.Hour), "7pm (Europe/London)"},
		{now.Add(90 * time.Minute), "11:30am (Europe/London)"},
		{time.Date(2026, 12, 8, 19, 0, 0, 0, time.UTC), "Dec 8, 7pm (Europe/London)"},
		{time.Date(2027, 1, 2, 7, 0, 0, 0, time.UTC), "Jan 2, 2027, 7am (Europe/London)"},
	}
	for _, tt := range tests {
		got := resetTime(tt.at, now)
		require.Equal(t, tt.want, got)
		parsed, ok := claude.ParseResetsAt("resets "+got, now)
		require.True(t, ok)
		require.True(t, tt.at.Equal(parsed), "%s parses as %v", got, parsed)
	}
}
