package activities_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/gittest"
)

// fakeClaude is the fake agent binary, built once from testsuite/fakeclaude.
var fakeClaude string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ralph-activities-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The fake agent, its scenarios and state live under fakeRoot, which
	// its sandbox lets it reach (iterationInput).
	fakeRoot = filepath.Join(dir, "fake")
	if err := os.Mkdir(fakeRoot, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fakeClaude = filepath.Join(fakeRoot, "claude")
	build := exec.Command("go", "build", "-o", fakeClaude, "../testsuite/fakeclaude")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build fake agent:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const prd = `{
  "project": "Widgets",
  "branchName": "ralph/widgets",
  "userStories": [
    {"id": "US-001", "title": "List widgets", "description": "d", "acceptanceCriteria": ["a"], "priority": 1, "passes": false, "notes": ""},
    {"id": "US-002", "title": "Add a widget", "description": "d", "acceptanceCriteria": ["a"], "priority": 2, "passes": false, "notes": ""}
  ]
}
`

func newRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	return gittest.NewRepo(t, files)
}

func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return gittest.Run(t, dir, args...)
}

// scenarioEnv writes a fake-agent scenario and returns the agent's
// environment and its state dir (where calls.jsonl goes).
// fakeRoot holds the fake agent's scenarios and state.
var fakeRoot string

// fakeDir is a new directory under fakeRoot, removed after t.
func fakeDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp(fakeRoot, "t-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func scenarioEnv(t *testing.T, steps ...map[string]any) ([]string, string) {
	t.Helper()
	state := fakeDir(t)
	env := []string{"FAKE_CLAUDE_STATE_DIR=" + state}
	if len(steps) > 0 {
		data, err := json.Marshal(map[string]any{"steps": steps})
		require.NoError(t, err)
		path := filepath.Join(fakeDir(t), "scenario.json")
		require.NoError(t, os.WriteFile(path, data, 0o644))
		env = append(env, "FAKE_CLAUDE_SCENARIO="+path)
	}
	return env, state
}

func countCalls(t *testing.T, state string) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(state, "calls.jsonl"))
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	require.NoError(t, err)
	return strings.Count(string(data), "\n")
}

func iterationInput(dir string, n int) contract.IterationInput {
	return contract.IterationInput{
		SessionID: "ralph-test-0001", Iteration: n, MaxIterations: 10, Workspace: dir,
		Agent: contract.AgentSettings{Command: []string{fakeClaude}, Timeout: time.Minute,
			Sandbox: contract.SandboxSettings{ReadWrite: []string{fakeRoot}}},
		Git: contract.GitSettings{AutoCommit: true},
	}
}

func runActivity(t *testing.T, ag *activities.Agent, in contract.IterationInput) (res contract.IterationResult, beats int, err error) {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	var n atomic.Int32
	env.SetOnActivityHeartbeatListener(func(*activity.Info, converter.EncodedValues) { n.Add(1) })
	env.RegisterActivity(ag)
	val, err := env.ExecuteActivity(ag.RunIteration, in)
	if err == nil {
		require.NoError(t, val.Get(&res))
	}
	return res, int(n.Load()), err
}

func TestRunIterationCommitsOneStory(t *testing.T) {
	dir := newRepo(t, map[string]string{"prd.json": prd, "progress.txt": ""})
	// The agent works for a while, so the iteration heartbeats.
	env, state := scenarioEnv(t, map[string]any{"auto": true, "sleep_ms": 300})
	ag := &activities.Agent{Env: env, HeartbeatInterval: 50 * time.Millisecond, Records: t.TempDir()}

	res, beats, err := runActivity(t, ag, iterationInput(dir, 1))
	require.NoError(t, err)
	require.Equal(t, contract.OutcomeSuccess, res.Outcome, res.Reason)
	require.GreaterOrEqual(t, beats, 1)
	require.Equal(t, "US-001", res.StoryID)
	require.Equal(t, "List widgets", res.StoryTitle)
	require.NotEmpty(t, res.AgentSessionID)
	require.InDelta(t, 0.0125, res.CostUSD, 1e-9)
	require.Positive(t, res.Usage.Total())
	require.Positive(t, res.NumTurns)
	require.Contains(t, res.FilesChanged, "prd.json")
	require.Equal(t, 1, res.Task.Done)
	require.Equal(t, 2, res.Task.Total)
	require.False(t, res.CompletionClaimed)
	require.Len(t, res.Commit, 40)
	require.Equal(t, res.Commit, strings.TrimSpace(gitRun(t, dir, "rev-parse", "HEAD")))

	msg := gitRun(t, dir, "log", "-1", "--format=%B")
	require.Contains(t, msg, "ralph: iteration 1: US-001 List widgets")
	require.Contains(t, msg, "Ralph-Session: ralph-test-0001")
	require.Contains(t, msg, "Ralph-Iteration: 1")
	require.Empty(t, strings.TrimSpace(gitRun(t, dir, "status", "--porcelain")))

	// The prompt and the raw stream are kept, in one file.
	require.Equal(t, ".ralph/logs/ralph-test-0001/iteration-0001.attempt-1.jsonl", res.LogFile)
	require.Contains(t, logPromptOf(t, filepath.Join(dir, res.LogFile)), "US-001")
	raw, err := os.ReadFile(filepath.Join(dir, res.LogFile))
	require.NoError(t, err)
	require.Contains(t, string(raw), `"type":"result"`)
	entries, err := os.ReadDir(filepath.Join(dir, ".ralph/logs/ralph-test-0001"))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no prompt file beside the log")
	require.Equal(t, 1, countCalls(t, state))

	// The same iteration again (a retry after the worker lost the
	// result) returns the recorded result: no second agent run, no
	// second commit.
	again, err := ag.Iterate(context.Background(), iterationInput(dir, 1), 2, nil, nil)
	require.NoError(t, err)
	require.Equal(t, res.Commit, again.Commit)
	require.Equal(t, res.CostUSD, again.CostUSD)
	require.Equal(t, 1, countCalls(t, state))
	require.Equal(t, "2", strings.TrimSpace(gitRun(t, dir, "rev-list", "--count", "HEAD")))
}

func TestRunIterationCommitsAfterCrashBeforeCommit(t *testing.T) {
	dir := newRepo(t, map[string]string{"prd.json": prd})
	env, state := scenarioEnv(t)
	ag := &activities.Agent{Env: env, Records: t.TempDir()}
	in := iterationInput(dir, 1)
	in.Git.AutoCommit = false
	res, _, err := runActivity(t, ag, in)
	require.NoError(t, err)
	require.Empty(t, res.Commit)
	require.NotEmpty(t, strings.TrimSpace(gitRun(t, dir, "status", "--porcelain")))

	// As if the first attempt died between recording its result and
	// committing: the retry commits once, without running the agent.
	in.Git.AutoCommit = true
	res, err = ag.Iterate(context.Background(), in, 2, nil, nil)
	require.NoError(t, err)
	require.NotEmpty(t, res.Commit)
	require.Equal(t, 1, countCalls(t, state))
	res2, err := ag.Iterate(context.Background(), in, 3, nil, nil)
	require.NoError(t, err)
	require.Equal(t, res.Commit, res2.Commit)
	require.Equal(t, "2", strings.TrimSpace(gitRun(t, dir, "rev-list", "--count", "HEAD")))
}

func TestRunIterationClassifiesAgentEnds(t *testing.T) {
	tests := []struct {
		name    string
		step    map[string]any
		timeout time.Duration
		want    contract.Outcome
		reason  string
	}{
		{name: "garbage", step: map[string]any{"garbage": true}, want: contract.OutcomeAgentError, reason: "not stream-json"},
		{name: "crash", step: map[string]any{"crash": true}, want: contract.OutcomeAgentError, reason: "without a result"},
		{name: "error_result", step: map[string]any{"is_error": true, "error_text": "tool loop failed"}, want: contract.OutcomeAgentError, reason: "tool loop failed"},
		{name: "rate_limited", step: map[string]any{"rate_limit": 3600}, want: contract.OutcomeRateLimited},
		{name: "hang_times_out", step: map[string]any{"hang": true}, timeout: 2 * time.Second, want: contract.OutcomeTimeout, reason: "iteration timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := newRepo(t, map[string]string{"prd.json": prd})
			env, _ := scenarioEnv(t, tt.step)
			in := iterationInput(dir, 1)
			if tt.timeout > 0 {
				in.Agent.Timeout = tt.timeout
			}
			started := time.Now()
			res, _, err := runActivity(t, &activities.Agent{Env: env}, in)
			require.NoError(t, err, "agent failures are results, not activity errors")
			require.Equal(t, tt.want, res.Outcome, res.Reason)
			require.Contains(t, res.Reason, tt.reason)
			if tt.want == contract.OutcomeRateLimited {
				require.WithinDuration(t, time.Now().Add(time.Hour), res.RateLimitResetsAt, time.Minute)
			}
			if tt.timeout > 0 {
				require.Less(t, time.Since(started), tt.timeout+10*time.Second, "the hung agent's group is killed promptly")
			}
		})
	}
}

func TestCancelKillsTheAgentProcessGroup(t *testing.T) {
	dir := newRepo(t, map[string]string{"prd.json": prd})
	env, _ := scenarioEnv(t, map[string]any{"hang": true})
	ag := &activities.Agent{Env: env}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(time.Second, cancel)
	started := time.Now()
	_, err := ag.Iterate(ctx, iterationInput(dir, 1), 1, nil, nil)
	require.ErrorIs(t, err, context.Canceled)
	require.Less(t, time.Since(started), 10*time.Second)

	// The fake's `sleep 300` child was in the agent's group; nothing of
	// the group may survive in the workspace.
	time.Sleep(200 * time.Millisecond)
	require.Empty(t, processesIn(t, dir), "agent processes survived the cancellation")
}

// processesIn lists the processes whose working directory is dir.
func processesIn(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var pids []string
	for _, e := range entries {
		if cwd, err := os.Readlink("/proc/" + e.Name() + "/cwd"); err == nil && cwd == dir {
			cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
			pids = append(pids, e.Name()+" "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return pids
}

func TestRunIterationMissingBinaryIsPermanent(t *testing.T) {
	dir := newRepo(t, map[string]string{"prd.json": prd})
	in := iterationInput(dir, 1)
	in.Agent.Command = []string{"no-such-agent-binary"}
	_, _, err := runActivity(t, &activities.Agent{}, in)
	require.Error(t, err)
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	require.Equal(t, contract.ErrTypeAgentNotFound, appErr.Type())
	require.True(t, appErr.NonRetryable())
	require.Contains(t, err.Error(), `agent binary "no-such-agent-binary" not found`)
}

func TestRunIterationClaimVerifiedAgainstTaskFile(t *testing.T) {
	done := strings.ReplaceAll(prd, `"passes": false`, `"passes": true`)
	tests := []struct {
		name         string
		prd          string
		wantComplete bool
	}{
		{name: "all_stories_pass", prd: done, wantComplete: true},
		{name: "stories_left", prd: prd, wantComplete: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := newRepo(t, map[string]string{"prd.json": tt.prd})
			env, _ := scenarioEnv(t, map[string]any{"claim": true, "text": "All done."})
			res, _, err := runActivity(t, &activities.Agent{Env: env}, iterationInput(dir, 1))
			require.NoError(t, err)
			require.True(t, res.CompletionClaimed)
			require.Equal(t, tt.wantComplete, res.Task.Complete)
			require.True(t, res.Task.Verifiable)
		})
	}
}

func TestPrepareWorkspace(t *testing.T) {
	ctx := context.Background()
	ag := &activities.Agent{}
	t.Run("checks_out_prd_branch", func(t *testing.T) {
		dir := newRepo(t, map[string]string{"prd.json": prd})
		res, err := ag.PrepareWorkspace(ctx, contract.PrepareInput{SessionID: "s", Workspace: dir})
		require.NoError(t, err)
		require.Equal(t, "prd", res.Mode)
		require.Equal(t, "<promise>COMPLETE</promise>", res.CompletionPromise)
		require.Equal(t, "ralph/widgets", res.Branch)
		require.Equal(t, "US-001", res.Task.CurrentID)
		require.Equal(t, filepath.Base(dir), res.Repo)
	})
	tests := []struct {
		name     string
		setup    func(t *testing.T) string
		in       contract.PrepareInput
		wantType string
		wantMsg  string
	}{
		{
			name: "dirty_tree",
			setup: func(t *testing.T) string {
				d := newRepo(t, map[string]string{"prd.json": prd})
				write(t, d, "wip.txt")
				return d
			},
			wantType: contract.ErrTypeDirtyWorkspace, wantMsg: "uncommitted changes (wip.txt)",
		},
		{
			name: "task_file_and_another_change",
			setup: func(t *testing.T) string {
				d := newRepo(t, map[string]string{"README.md": "hi"})
				require.NoError(t, os.WriteFile(filepath.Join(d, "prd.json"), []byte(prd), 0o644))
				write(t, d, "wip.txt")
				return d
			},
			wantType: contract.ErrTypeDirtyWorkspace, wantMsg: "uncommitted changes (prd.json, wip.txt)",
		},
		{
			name: "malformed_prd",
			setup: func(t *testing.T) string {
				return newRepo(t, map[string]string{"prd.json": "{\n  \"userStories\": [\n    {\"id\": 1,}\n  ]\n}\n"})
			},
			wantType: contract.ErrTypeInvalidTaskFile, wantMsg: "prd.json:3:",
		},
		{
			name:     "no_task_file",
			setup:    func(t *testing.T) string { return newRepo(t, map[string]string{"README.md": "hi"}) },
			wantType: contract.ErrTypeInvalidTaskFile, wantMsg: "prd.json",
		},
		{
			name:     "not_a_git_repository",
			setup:    func(t *testing.T) string { return t.TempDir() },
			wantType: contract.ErrTypeInvalidWorkspace, wantMsg: "not a git repository",
		},
		{
			name:     "missing_workspace",
			setup:    func(t *testing.T) string { return filepath.Join(t.TempDir(), "gone") },
			wantType: contract.ErrTypeInvalidWorkspace, wantMsg: "not accessible",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tt.setup(t)
			in := tt.in
			in.SessionID, in.Workspace = "s", dir
			_, err := ag.PrepareWorkspace(ctx, in)
			require.Error(t, err)
			var appErr *temporal.ApplicationError
			require.ErrorAs(t, err, &appErr)
			require.Equal(t, tt.wantType, appErr.Type())
			require.True(t, appErr.NonRetryable())
			require.Contains(t, err.Error(), tt.wantMsg)
		})
	}
	t.Run("uncommitted_task_file_alone_is_committed", func(t *testing.T) {
		dir := newRepo(t, map[string]string{"README.md": "hi"})
		require.NoError(t, os.WriteFile(filepath.Join(dir, "prd.json"), []byte(prd), 0o644))
		check, err := activities.CheckWorkspace(ctx, contract.PrepareInput{Workspace: dir})
		require.NoError(t, err)
		require.Equal(t, "prd.json", check.UncommittedTaskFile)
		require.Contains(t, gitRun(t, dir, "status", "--porcelain"), "prd.json", "the check changes nothing")

		res, err := ag.PrepareWorkspace(ctx, contract.PrepareInput{SessionID: "s", Workspace: dir, Git: contract.GitSettings{AutoCommit: true}})
		require.NoError(t, err)
		require.Equal(t, "ralph/widgets", res.Branch)
		require.Empty(t, gitRun(t, dir, "status", "--porcelain"))
		require.Contains(t, gitRun(t, dir, "log", "-1", "--format=%B"), "ralph: add the task file prd.json\n\nprd.json was not committed when the session started")
		// A retry finds it committed and changes nothing more.
		head := gitRun(t, dir, "rev-parse", "HEAD")
		_, err = ag.PrepareWorkspace(ctx, contract.PrepareInput{SessionID: "s", Workspace: dir, Git: contract.GitSettings{AutoCommit: true}})
		require.NoError(t, err)
		require.Equal(t, head, gitRun(t, dir, "rev-parse", "HEAD"))
	})
	t.Run("dirty_tree_allowed", func(t *testing.T) {
		dir := newRepo(t, map[string]string{"prd.json": prd})
		write(t, dir, "wip.txt")
		_, err := ag.PrepareWorkspace(ctx, contract.PrepareInput{SessionID: "s", Workspace: dir, Git: contract.GitSettings{AllowDirty: true}})
		require.NoError(t, err)
	})
}

func write(t *testing.T, dir, name string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644))
}

// dieAfterSession runs attempt 1 of in with an agent that hangs: its
// worker "dies" (the context ends) once it reported the agent's session
// in a heartbeat. It returns that attempt's last progress.
func dieAfterSession(t *testing.T, ag *activities.Agent, in contract.IterationInput) contract.Progress {
	t.Helper()
	var last contract.Progress
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := ag.Iterate(ctx, in, 1, nil, func(p contract.Progress) {
		last = p
		if p.AgentSessionID != "" {
			cancel()
		}
	})
	require.ErrorIs(t, err, context.Canceled)
	require.NotEmpty(t, last.AgentSessionID)
	return last
}

func TestRetryResumesTheAgentSession(t *testing.T) {
	dir := newRepo(t, map[string]string{"prd.json": prd, "progress.txt": ""})
	env, state := scenarioEnv(t, map[string]any{"hang": true}, map[string]any{"auto": true})
	ag := &activities.Agent{Env: env, HeartbeatInterval: 100 * time.Millisecond}
	in := iterationInput(dir, 1)

	last := dieAfterSession(t, ag, in)
	require.NotEmpty(t, last.StartHead)
	require.Equal(t, "US-001", last.StoryID)

	res, err := ag.Iterate(context.Background(), in, 2, &last, nil)
	require.NoError(t, err)
	require.Equal(t, contract.OutcomeSuccess, res.Outcome, res.Reason)
	require.True(t, res.Resumed)
	require.Equal(t, last.AgentSessionID, res.AgentSessionID)
	require.Equal(t, "US-001", res.StoryID)
	require.NotEmpty(t, res.Commit)

	data, err := os.ReadFile(filepath.Join(state, "calls.jsonl"))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	require.Len(t, lines, 2)
	var second struct {
		Argv   []string `json:"argv"`
		Prompt string   `json:"prompt"`
	}
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &second))
	require.Contains(t, strings.Join(second.Argv, " "), "--resume "+last.AgentSessionID)
	require.Contains(t, second.Prompt, "You were interrupted")
	require.Equal(t, "2", strings.TrimSpace(gitRun(t, dir, "rev-list", "--count", "HEAD")), "one commit for the iteration")
}

func TestRetryWithoutSessionKeepsOrResetsPartialWork(t *testing.T) {
	tests := []struct {
		name              string
		reset, autoCommit bool
	}{
		{"committed_apart", false, true},
		{"kept_uncommitted", false, false},
		{"reset", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := newRepo(t, map[string]string{"prd.json": prd})
			head := strings.TrimSpace(gitRun(t, dir, "rev-parse", "HEAD"))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "half-done.go"), []byte("package x\n"), 0o644))
			env, state := scenarioEnv(t)
			in := iterationInput(dir, 1)
			in.Agent.ResetInterrupted = tt.reset
			in.Git.AutoCommit = tt.autoCommit
			prev := &contract.Progress{Attempt: 1, StartHead: head, StoryID: "US-001", StoryTitle: "List widgets"}
			res, err := (&activities.Agent{Env: env}).Iterate(context.Background(), in, 2, prev, nil)
			require.NoError(t, err)
			require.Equal(t, contract.OutcomeSuccess, res.Outcome, res.Reason)
			require.False(t, res.Resumed)

			data, err := os.ReadFile(filepath.Join(state, "calls.jsonl"))
			require.NoError(t, err)
			switch {
			case tt.reset:
				require.NotContains(t, res.FilesChanged, "half-done.go")
				require.NoFileExists(t, filepath.Join(dir, "half-done.go"))
				require.NotContains(t, string(data), "was interrupted")
				require.Empty(t, res.InterruptedCommit)
			case tt.autoCommit:
				// The dead attempt's work is a commit of its own, named
				// for its story; the retry's work is another.
				require.NotEmpty(t, res.InterruptedCommit)
				require.NotContains(t, res.FilesChanged, "half-done.go")
				require.Contains(t, string(data), "Ralph committed the work it left as "+contract.ShortSHA(res.InterruptedCommit))
				subject := gitRun(t, dir, "log", "-1", "--format=%s%n%b", res.InterruptedCommit)
				require.Contains(t, subject, "ralph: iteration 1 (interrupted): US-001 List widgets")
				require.Contains(t, subject, "Ralph-Interrupted: 1")
				require.NotContains(t, subject, "Ralph-Iteration:", "the iteration's own commit is still to come")
				files := gitRun(t, dir, "show", "--name-only", "--format=", res.InterruptedCommit)
				require.Equal(t, "half-done.go", strings.TrimSpace(files))
				require.NotEmpty(t, res.Commit)
				require.Equal(t, res.InterruptedCommit, strings.TrimSpace(gitRun(t, dir, "rev-parse", res.Commit+"^")))
			default:
				require.Contains(t, res.FilesChanged, "half-done.go")
				require.Contains(t, string(data), "It left changes in: half-done.go")
				require.Empty(t, res.InterruptedCommit)
			}
		})
	}
}

// TestRetryKeepsOneCommitPerStory: a dead attempt that finished US-001
// without committing it, and a retry that goes on to US-002, make two
// commits, each holding and naming its own story.
func TestRetryKeepsOneCommitPerStory(t *testing.T) {
	dir := newRepo(t, map[string]string{"prd.json": prd, "progress.txt": ""})
	head := strings.TrimSpace(gitRun(t, dir, "rev-parse", "HEAD"))
	done := strings.Replace(prd, `"passes": false`, `"passes": true`, 1)
	require.NotEqual(t, prd, done)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "prd.json"), []byte(done), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "story-US-001.txt"), []byte("US-001\n"), 0o644))
	env, _ := scenarioEnv(t, map[string]any{"auto": true})
	prev := &contract.Progress{Attempt: 1, StartHead: head, StoryID: "US-001", StoryTitle: "List widgets"}
	res, err := (&activities.Agent{Env: env}).Iterate(context.Background(), iterationInput(dir, 1), 2, prev, nil)
	require.NoError(t, err)
	require.Equal(t, contract.OutcomeSuccess, res.Outcome, res.Reason)
	require.Equal(t, "US-002", res.StoryID, "the retry's commit names the story it did")

	log := strings.Split(strings.TrimSpace(gitRun(t, dir, "log", "--format=%s", head+"..HEAD")), "\n")
	require.Len(t, log, 2)
	require.True(t, strings.HasPrefix(log[1], "ralph: iteration 1 (interrupted): US-001"), log[1])
	require.True(t, strings.HasPrefix(log[0], "ralph: iteration 1: US-002"), log[0])
	first := gitRun(t, dir, "show", "--name-only", "--format=", res.InterruptedCommit)
	require.Contains(t, first, "story-US-001.txt")
	second := gitRun(t, dir, "show", "--name-only", "--format=", res.Commit)
	require.NotContains(t, second, "story-US-001.txt")
}

// TestResumeCommitsTheDeadAttemptsEditsFirst: the edits a dead attempt
// left become their own commit before the agent's session is resumed,
// and the resumed agent is told where they are.
func TestResumeCommitsTheDeadAttemptsEditsFirst(t *testing.T) {
	dir := newRepo(t, map[string]string{"prd.json": prd, "progress.txt": ""})
	env, state := scenarioEnv(t, map[string]any{"hang": true}, map[string]any{"auto": true})
	ag := &activities.Agent{Env: env, HeartbeatInterval: 100 * time.Millisecond}
	in := iterationInput(dir, 1)
	last := dieAfterSession(t, ag, in)
	// What the dead attempt had written when its worker died.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "half.go"), []byte("package x\n"), 0o644))

	res, err := ag.Iterate(context.Background(), in, 2, &last, nil)
	require.NoError(t, err)
	require.True(t, res.Resumed)
	require.NotEmpty(t, res.InterruptedCommit)
	require.Equal(t, "half.go", strings.TrimSpace(gitRun(t, dir, "show", "--name-only", "--format=", res.InterruptedCommit)))
	require.Contains(t, gitRun(t, dir, "log", "-1", "--format=%s", res.InterruptedCommit), "ralph: iteration 1 (interrupted): US-001")
	require.NotContains(t, res.FilesChanged, "half.go")

	data, err := os.ReadFile(filepath.Join(state, "calls.jsonl"))
	require.NoError(t, err)
	require.Contains(t, string(data), "Ralph committed the edits you had made as "+contract.ShortSHA(res.InterruptedCommit))
}

// TestRetryAfterADeathBeforeTheFirstBeat: an attempt that died before it
// ever heartbeat leaves its retry no progress, but its work is still
// committed under its own story (the one HEAD's task file has next), not
// folded into the next story's commit.
func TestRetryAfterADeathBeforeTheFirstBeat(t *testing.T) {
	dir := newRepo(t, map[string]string{"prd.json": prd, "progress.txt": ""})
	head := strings.TrimSpace(gitRun(t, dir, "rev-parse", "HEAD"))
	done := strings.Replace(prd, `"passes": false`, `"passes": true`, 1)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "prd.json"), []byte(done), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "story-US-001.txt"), []byte("US-001\n"), 0o644))
	env, _ := scenarioEnv(t, map[string]any{"auto": true})
	res, err := (&activities.Agent{Env: env}).Iterate(context.Background(), iterationInput(dir, 1), 2, nil, nil)
	require.NoError(t, err)
	require.Equal(t, contract.OutcomeSuccess, res.Outcome, res.Reason)
	require.Equal(t, "US-002", res.StoryID)

	log := strings.Split(strings.TrimSpace(gitRun(t, dir, "log", "--format=%s", head+"..HEAD")), "\n")
	require.Len(t, log, 2, "one commit per story")
	require.True(t, strings.HasPrefix(log[1], "ralph: iteration 1 (interrupted): US-001 List widgets"), log[1])
	require.True(t, strings.HasPrefix(log[0], "ralph: iteration 1: US-002"), log[0])
	second := gitRun(t, dir, "show", "--name-only", "--format=", res.Commit)
	require.NotContains(t, second, "story-US-001.txt")
}

// TestRetriesOfAFailingIterationKeepOneInterruptedCommit: attempts that
// die one after the other, each leaving work, leave one "(interrupted)"
// commit of the iteration, holding all of it, not one per attempt.
func TestRetriesOfAFailingIterationKeepOneInterruptedCommit(t *testing.T) {
	dir := newRepo(t, map[string]string{"prd.json": prd, "progress.txt": ""})
	head := strings.TrimSpace(gitRun(t, dir, "rev-parse", "HEAD"))
	env, _ := scenarioEnv(t, map[string]any{"exit_code": 1, "is_error": true, "error_text": "crashed"})
	ag := &activities.Agent{Env: env, Records: t.TempDir()}
	in := iterationInput(dir, 1)
	start := head
	for attempt := 2; attempt <= 4; attempt++ {
		// What the attempt before left when its worker died.
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("left-%d.txt", attempt)), []byte("x\n"), 0o644))
		prev := &contract.Progress{Attempt: attempt - 1, Iteration: 1, StartHead: start, StoryID: "US-001", StoryTitle: "List widgets"}
		res, err := ag.Iterate(context.Background(), in, attempt, prev, nil)
		require.NoError(t, err)
		require.NotEmpty(t, res.InterruptedCommit)
		start = res.InterruptedCommit
		// Its worker died before it recorded its result.
		forgetResult(t, ag, 1)
	}
	log := strings.Split(strings.TrimSpace(gitRun(t, dir, "log", "--format=%s", head+"..HEAD")), "\n")
	require.Equal(t, []string{"ralph: iteration 1 (interrupted): US-001 List widgets"}, log)
	files := gitRun(t, dir, "show", "--name-only", "--format=", "HEAD")
	for attempt := 2; attempt <= 4; attempt++ {
		require.Contains(t, files, fmt.Sprintf("left-%d.txt", attempt))
	}

	// An attempt that had gone on to the next story leaves a commit of
	// its own: each story keeps its commit.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "left-5.txt"), []byte("x\n"), 0o644))
	prev := &contract.Progress{Attempt: 4, Iteration: 1, StartHead: start, StoryID: "US-002", StoryTitle: "Add a widget"}
	_, err := ag.Iterate(context.Background(), in, 5, prev, nil)
	require.NoError(t, err)
	log = strings.Split(strings.TrimSpace(gitRun(t, dir, "log", "--format=%s", head+"..HEAD")), "\n")
	require.Equal(t, []string{"ralph: iteration 1 (interrupted): US-002 Add a widget", "ralph: iteration 1 (interrupted): US-001 List widgets"}, log)
}
