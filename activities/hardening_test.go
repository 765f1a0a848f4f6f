package activities_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/contract"
)

// wrapped is an agent command line: a shell script that runs first, then
// execs the fake agent with the arguments Ralph passes.
func wrapped(script string) []string {
	return []string{"/bin/sh", "-c", script + `; exec "$FAKE_AGENT" "$@"`, "agent"}
}

// alive reports whether pid runs and is not a zombie (nothing reaps
// orphans here).
func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}

func TestAgentBackgroundProcessEndsWithTheAgent(t *testing.T) {
	tests := []struct {
		name       string
		background string
	}{
		{"child_keeps_stdout", `sleep 300 &`},
		{"child_detached_from_output", `sleep 300 >/dev/null 2>&1 </dev/null &`},
		// Codex and the Gemini CLI run commands in sessions of their
		// own: out of the agent's process group.
		{"child_in_a_session_of_its_own", `setsid sleep 300 >/dev/null 2>&1 </dev/null &`},
	}
	for _, tt := range tests {
		for _, mode := range []string{"off", "auto"} {
			t.Run(tt.name+"/sandbox "+mode, func(t *testing.T) { backgroundChildEnds(t, tt.background, mode) })
		}
	}
}

// backgroundChildEnds runs an agent that leaves background running and
// checks that nothing of it outlives the iteration: found by its PID
// without a sandbox, by its working directory in one (a PID there is
// the sandbox's own).
func backgroundChildEnds(t *testing.T, background, mode string) {
	dir := newRepo(t, map[string]string{"prd.json": prd})
	env, _ := scenarioEnv(t)
	pidFile := filepath.Join(fakeDir(t), "pid")
	env = append(env, "FAKE_AGENT="+fakeClaude, "PID_FILE="+pidFile)
	in := iterationInput(dir, 1)
	in.Agent.Command = wrapped(background + ` echo $! > "$PID_FILE"`)
	in.Agent.Timeout = 40 * time.Second
	in.Agent.Sandbox.Mode = mode

	started := time.Now()
	res, _, err := runActivity(t, &activities.Agent{Env: env}, in)
	require.NoError(t, err)
	require.Equal(t, contract.OutcomeSuccess, res.Outcome, "the iteration ends when the agent exits, not at its timeout: %s", res.Reason)
	require.Less(t, time.Since(started), 20*time.Second)
	require.NotEmpty(t, res.Commit)
	if res.Contained != "" {
		require.Eventually(t, func() bool { return len(processesIn(t, dir)) == 0 }, 5*time.Second, 50*time.Millisecond,
			"the agent's background child outlived the iteration")
		return
	}
	data, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return !alive(pid) }, 5*time.Second, 50*time.Millisecond,
		"the agent's background child %d outlived the iteration", pid)
}

const brokenPRD = `{
  "project": "Widgets",
  "userStories": [
    {"id": "US-001", "title": "List widgets", "passes": true,}
    {"id": "US-002", "title": "Add a widget", "passes": false}
  ]
}
`

const repairedPRD = `{
  "project": "Widgets",
  "userStories": [
    {"id": "US-001", "title": "List widgets", "description": "d", "acceptanceCriteria": ["a"], "priority": 1, "passes": true, "notes": ""},
    {"id": "US-002", "title": "Add a widget", "description": "d", "acceptanceCriteria": ["a"], "priority": 2, "passes": false, "notes": ""}
  ]
}
`

func TestBrokenTaskFileGetsARepairIteration(t *testing.T) {
	// The last iteration's agent committed an invalid prd.json.
	dir := newRepo(t, map[string]string{"prd.json": brokenPRD})
	env, state := scenarioEnv(t, map[string]any{"write": map[string]string{"prd.json": repairedPRD}, "commit": "fix: repair prd.json"})
	in := iterationInput(dir, 2)
	in.Task.Mode = "prd"

	res, _, err := runActivity(t, &activities.Agent{Env: env}, in)
	require.NoError(t, err, "an unreadable task file is the agent's to repair, not an activity failure")
	require.True(t, res.Repair)
	require.Equal(t, contract.OutcomeSuccess, res.Outcome, res.Reason)
	require.Empty(t, res.TaskFileError, "the repair worked")
	require.Equal(t, 2, res.Task.Total)

	prompt := lastPrompt(t, state)
	require.Contains(t, prompt, "prd.json:4:", "the prompt gives the parse error's position")
	require.Contains(t, prompt, "repair `prd.json`")
	require.Contains(t, prompt, "Keep every story")
	require.Contains(t, prompt, `"id": "US-002"`, "the prompt shows the broken file")
	require.NotContains(t, prompt, "<promise>COMPLETE</promise>\n\nWrite it only", "a repair iteration is not told how to claim completion")
}

func TestBrokenTaskFileAfterTheIterationIsReported(t *testing.T) {
	dir := newRepo(t, map[string]string{"prd.json": prd})
	env, _ := scenarioEnv(t, map[string]any{"write": map[string]string{"prd.json": brokenPRD}, "commit": true})
	res, _, err := runActivity(t, &activities.Agent{Env: env}, iterationInput(dir, 1))
	require.NoError(t, err)
	require.Equal(t, contract.OutcomeAgentError, res.Outcome)
	require.Contains(t, res.TaskFileError, "prd.json:4:")
}

// lastPrompt is the prompt the fake agent last received.
func lastPrompt(t *testing.T, state string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(state, "calls.jsonl"))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	var call struct {
		Prompt string `json:"prompt"`
	}
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &call))
	return call.Prompt
}

func TestAgentRewritingGitIsPutRight(t *testing.T) {
	tests := []struct {
		name   string
		script string
		halt   bool
	}{
		{"reset_hard", `git reset -q --hard HEAD~1`, false},
		{"checkout_other_branch", `git checkout -q -b other HEAD~1`, false},
		{"detached_head", `git checkout -q --detach HEAD`, false},
		{"amended_history", `git commit -q --amend -m rewritten`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := newRepo(t, map[string]string{"prd.json": prd, "progress.txt": ""})
			// Iteration 1 does a story; the later ones write a new file
			// after their rewrite of git.
			env, _ := scenarioEnv(t, map[string]any{"auto": true}, map[string]any{"write": map[string]string{"notes.md": "what I found\n"}})
			env = append(env, "FAKE_AGENT="+fakeClaude)
			ag := &activities.Agent{Env: env}

			in := iterationInput(dir, 1)
			in.ExecutionKey = "ralph-test-0001.run-1"
			in.Branch = "main"
			first, _, err := runActivity(t, ag, in)
			require.NoError(t, err)
			require.NotEmpty(t, first.Commit)
			require.Equal(t, "refs/ralph/ralph-test-0001-run-1/last", first.Ref)
			require.Equal(t, first.Commit, strings.TrimSpace(gitRun(t, dir, "rev-parse", first.Ref)))

			in = iterationInput(dir, 2)
			in.ExecutionKey = "ralph-test-0001.run-1"
			in.Branch = "main"
			in.Agent.Command = wrapped(tt.script)
			second, _, err := runActivity(t, ag, in)
			require.NoError(t, err)
			if tt.halt {
				require.Contains(t, second.Halt, "rewrote git history")
				require.Empty(t, second.Commit, "nothing is committed on a history Ralph did not expect")
				require.Equal(t, first.Commit, strings.TrimSpace(gitRun(t, dir, "rev-parse", "refs/ralph/ralph-test-0001-run-1/2-start")),
					"the line the agent left stays reachable")
				return
			}
			require.Empty(t, second.Halt)
			require.NotEmpty(t, second.Notices, "the next prompt is told what happened")
			require.Equal(t, "main", strings.TrimSpace(gitRun(t, dir, "symbolic-ref", "--short", "HEAD")), "HEAD is back on the session branch")
			gitRun(t, dir, "merge-base", "--is-ancestor", first.Commit, "HEAD")
			require.NotEmpty(t, second.Commit)
			require.Equal(t, second.Commit, strings.TrimSpace(gitRun(t, dir, "rev-parse", "main")), "the iteration's work is committed on the session branch")
			require.Empty(t, strings.TrimSpace(gitRun(t, dir, "status", "--porcelain")))

			// The notice reaches the next iteration's prompt.
			in = iterationInput(dir, 3)
			in.ExecutionKey = "ralph-test-0001.run-1"
			in.Branch = "main"
			in.Notices = second.Notices
			_, _, err = runActivity(t, ag, in)
			require.NoError(t, err)
			prompt := logPromptOf(t, filepath.Join(dir, ".ralph/logs/ralph-test-0001.run-1/iteration-0003.attempt-1.jsonl"))
			require.Contains(t, prompt, "What Ralph found after the last iteration")
		})
	}
}

func TestWorkspaceInASubdirectoryKeepsRalphFilesOutOfGit(t *testing.T) {
	root := newRepo(t, map[string]string{"README.md": "app\n"})
	sub := filepath.Join(root, "services", "api")
	require.NoError(t, os.MkdirAll(sub, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(sub, "prd.json"), []byte(prd), 0o644))
	gitRun(t, root, "add", "-A")
	gitRun(t, root, "commit", "-q", "-m", "api prd")

	env, _ := scenarioEnv(t)
	ag := &activities.Agent{Env: env}
	_, err := ag.PrepareWorkspace(t.Context(), contract.PrepareInput{SessionID: "s", Workspace: sub, Git: contract.GitSettings{}})
	require.NoError(t, err)
	for i := 1; i <= 2; i++ {
		res, _, err := runActivity(t, ag, iterationInput(sub, i))
		require.NoError(t, err)
		require.NotEmpty(t, res.Commit)
	}
	require.Contains(t, logPromptOf(t, filepath.Join(sub, ".ralph/logs/ralph-test-0001/iteration-0001.attempt-1.jsonl")), "iteration 1")
	require.Empty(t, strings.TrimSpace(gitRun(t, root, "status", "--porcelain")), "the tree is clean")
	files := gitRun(t, root, "log", "--all", "--name-only", "--format=")
	require.NotContains(t, files, ".ralph", "no Ralph state or log is committed")
}

// readOnly makes dir and everything in it unwritable, also for root (who
// ignores permission bits but not the immutable attribute).
func readOnly(t *testing.T, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		require.NoError(t, filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			if fi.IsDir() {
				t.Cleanup(func() { _ = os.Chmod(p, 0o755) })
				return os.Chmod(p, 0o555)
			}
			return nil
		}))
		return
	}
	out, err := exec.Command("chattr", "-R", "+i", dir).CombinedOutput()
	require.NoError(t, err, "chattr: %s", out)
	t.Cleanup(func() { _ = exec.Command("chattr", "-R", "-i", dir).Run() })
}

func TestResultThatCannotBeRecordedStillCommitsAndCounts(t *testing.T) {
	dir := newRepo(t, map[string]string{"prd.json": prd})
	env, _ := scenarioEnv(t)
	ag := &activities.Agent{Env: env, Records: t.TempDir()}
	_, _, err := runActivity(t, ag, iterationInput(dir, 1))
	require.NoError(t, err)

	readOnly(t, filepath.Join(dir, ".ralph"))
	readOnly(t, ag.Records)
	res, _, err := runActivity(t, ag, iterationInput(dir, 2))
	require.NoError(t, err, "the work and its cost are reported, not lost to an activity error")
	require.Equal(t, contract.OutcomeSuccess, res.Outcome)
	require.Positive(t, res.CostUSD)
	require.NotEmpty(t, res.Commit, "the agent's work is committed")
	require.Empty(t, strings.TrimSpace(gitRun(t, dir, "status", "--porcelain")))
	warnings := strings.Join(res.Warnings, "\n")
	require.Contains(t, warnings, "record the result")
	require.Contains(t, warnings, ".ralph/logs/ralph-test-0001/iteration-0002.attempt-1.jsonl")
	require.Contains(t, warnings, dir)
	require.Regexp(t, "permission denied|operation not permitted", warnings)
}

func TestAgentEnvironmentIsAnAllowList(t *testing.T) {
	t.Setenv("GITHUB_TOKEN", "ghp_worker_only_token_1234")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "aws-secret-worker-only")
	t.Setenv("TEMPORAL_API_KEY", "temporal-key-worker-only")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-agent-needs-this")
	t.Setenv("LC_ALL", "C.UTF-8")
	t.Setenv("GOFLAGS", "-mod=mod")
	dir := newRepo(t, map[string]string{"prd.json": prd})
	env, _ := scenarioEnv(t)
	dump := filepath.Join(fakeDir(t), "env")
	env = append(env, "FAKE_AGENT="+fakeClaude, "ENV_DUMP="+dump, "GOFLAGS", "MY_SETTING=on")
	in := iterationInput(dir, 1)
	in.Agent.Command = wrapped(`env > "$ENV_DUMP"`)
	_, _, err := runActivity(t, &activities.Agent{Env: env}, in)
	require.NoError(t, err)
	data, err := os.ReadFile(dump)
	require.NoError(t, err)
	got := string(data)
	for _, banned := range []string{"GITHUB_TOKEN=", "AWS_SECRET_ACCESS_KEY=", "TEMPORAL_API_KEY="} {
		require.NotContains(t, got, banned)
	}
	for _, want := range []string{"PATH=", "ANTHROPIC_API_KEY=sk-ant-agent-needs-this", "LC_ALL=C.UTF-8", "GOFLAGS=-mod=mod", "MY_SETTING=on"} {
		require.Contains(t, got, want)
	}
}

func TestSecretsAreRedactedFromWhatLeavesTheActivity(t *testing.T) {
	const secret = "sk-ant-api03-very-secret-value-XYZ"
	t.Setenv("ANTHROPIC_API_KEY", secret)
	dir := newRepo(t, map[string]string{"prd.json": prd})
	env, _ := scenarioEnv(t, map[string]any{"is_error": true, "error_text": "boom"})
	env = append(env, "FAKE_AGENT="+fakeClaude)
	in := iterationInput(dir, 1)
	// The agent prints the key on stderr and in its stream.
	in.Agent.Command = []string{"/bin/sh", "-c",
		`printf '{"type":"assistant","message":{"content":[{"type":"text","text":"my key is %s"}]}}\n' "$ANTHROPIC_API_KEY"; ` +
			`echo "auth with $ANTHROPIC_API_KEY failed" >&2; exit 3`, "agent"}
	res, _, err := runActivity(t, &activities.Agent{Env: env}, in)
	require.NoError(t, err)
	require.Equal(t, contract.OutcomeAgentError, res.Outcome)
	require.NotContains(t, res.Reason, secret)
	require.NotContains(t, res.ResultText, secret)
	require.Contains(t, res.ResultText, "[REDACTED:ANTHROPIC_API_KEY]")
	require.Contains(t, res.Reason, "[REDACTED:ANTHROPIC_API_KEY]", "the stderr line is in the reason, redacted")
	raw, err := os.ReadFile(filepath.Join(dir, res.LogFile))
	require.NoError(t, err)
	require.NotContains(t, string(raw), secret)
	require.Contains(t, string(raw), "[REDACTED:ANTHROPIC_API_KEY]")
}

// The worker writes logs and records, and reads the checkpoint file, in
// the workspace, outside the sandbox: a symlink the agent planted there
// must lead neither its writes nor its reads out of the workspace.
func TestPlantedSymlinksDoNotLeadTheWorkerOut(t *testing.T) {
	outside := t.TempDir()
	target := filepath.Join(outside, "bashrc")
	secret := filepath.Join(outside, "id_ed25519")
	require.NoError(t, os.WriteFile(target, []byte("# the user's own\n"), 0o644))
	require.NoError(t, os.WriteFile(secret, []byte("PRIVATE-KEY-CANARY"), 0o600))
	dir := newRepo(t, map[string]string{"prd.json": prd})
	env, _ := scenarioEnv(t)
	env = append(env, "FAKE_AGENT="+fakeClaude, "TARGET="+target, "SECRET="+secret)
	in := iterationInput(dir, 1)
	in.Agent.Command = wrapped(`d=.ralph/logs/ralph-test-0001; s=.ralph/state/ralph-test-0001; mkdir -p $d $s &&
ln -s "$TARGET" $d/iteration-0002.prompt.md && ln -s "$TARGET" $d/iteration-0002.attempt-1.jsonl &&
ln -s "$TARGET" $s/iteration-0002.json.tmp && ln -s "$SECRET" .ralph/checkpoint.json`)
	ag := &activities.Agent{Env: env}
	first, _, err := runActivity(t, ag, in)
	require.NoError(t, err)
	require.NotNil(t, first.Checkpoint, "a checkpoint file that leads out is reported, unread")
	require.NotContains(t, first.Checkpoint.Question+first.Checkpoint.Context, "PRIVATE-KEY-CANARY")
	require.Contains(t, first.Checkpoint.Context, "outside the workspace")

	second, _, err := runActivity(t, ag, iterationInput(dir, 2))
	require.NoError(t, err)
	require.NotEmpty(t, second.Commit, "the iteration runs and commits without its log")
	data, err := os.ReadFile(target)
	require.NoError(t, err)
	require.Equal(t, "# the user's own\n", string(data), "nothing was written through the planted links")
}

// TestAgentsTricksOnTheCommit: an agent that makes prd.json a symbolic
// link out of the workspace and moves Ralph's .ralph directory into the
// work tree gets neither committed: the task file is put back as the
// iteration found it (the next prompt says so), Ralph's prompts and
// logs stay out of git, and the agent's own work is committed.
func TestAgentsTricksOnTheCommit(t *testing.T) {
	dir := newRepo(t, map[string]string{"prd.json": prd})
	ag := &activities.Agent{Records: t.TempDir()}
	in := iterationInput(dir, 1)
	in.Agent = contract.AgentSettings{Backend: "command", Timeout: time.Minute, Command: []string{"sh", "-c",
		"cat >/dev/null; echo work > work.txt; mv prd.json prd.real; ln -s /etc/passwd prd.json; mv .ralph notes; echo done"}}
	res, err := ag.Iterate(context.Background(), in, 1, nil, nil)
	require.NoError(t, err)
	require.NotEmpty(t, res.Commit, "the agent's own work is committed")

	fi, err := os.Lstat(filepath.Join(dir, "prd.json"))
	require.NoError(t, err)
	require.True(t, fi.Mode().IsRegular(), "prd.json is a file again")
	data, err := os.ReadFile(filepath.Join(dir, "prd.json"))
	require.NoError(t, err)
	require.Equal(t, prd, string(data))
	committed := gitRun(t, dir, "show", "--name-only", "--format=", res.Commit)
	require.Contains(t, committed, "work.txt")
	require.NotContains(t, committed, "prd.json")
	require.NotContains(t, committed, "notes/")
	require.Empty(t, gitRun(t, dir, "ls-files", "notes"), "Ralph's prompts and logs are not in git")
	require.Contains(t, strings.Join(res.Warnings, "\n"), "made prd.json a symbolic link (to /etc/passwd)")
	require.Contains(t, strings.Join(res.Warnings, "\n"), "moved Ralph's .ralph directory to notes")
	require.Contains(t, strings.Join(res.Notices, "\n"), "Ralph put prd.json back")
}
