package testsuite_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestFinishedWorkspace: a task file that is already done ends the
// session complete at prepare without running the agent; run on the
// finished workspace says it starts a new session; --attach-only refuses
// to start one.
func TestFinishedWorkspace(t *testing.T) {
	done := strings.ReplaceAll(threeStoryPRD, `"passes": false`, `"passes": true`)
	r := newRepo(t, map[string]string{"prd.json": done, "progress.txt": ""})
	se := newStarterEnv(t, scenario(t, map[string]any{"auto": true}))

	code, out := starter(t, se, "run", "--dev", "--follow", r.Dir)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "ended: complete (prd.json is already complete (3 of 3 done): no iteration ran)")
	require.Empty(t, calls(t, se.env), "no agent ran")

	code, out = starter(t, se, "run", "--dev", "--attach-only", r.Dir)
	require.Equal(t, 1, code, out)
	require.Regexp(t, `starter: no session is running on `+r.Dir+` \(the last one ended completed at \d{4}-\d\d-\d\d \d\d:\d\d\); run without --attach-only to start a new one`, out)
	require.NotContains(t, out, "Started a new session")
	require.NotContains(t, out, "Started session")

	code, out = starter(t, se, "run", "--dev", "--follow", r.Dir)
	require.Equal(t, 0, code, out)
	require.Regexp(t, `Started a new session \(the last one on this workspace ended completed at [^)]+\) ralph-`, out)
}

// TestFirstRun is the README's first section: init on a repository,
// then run, and the example's two stories are done.
func TestFirstRun(t *testing.T) {
	r := newRepo(t, map[string]string{"README.md": "# app\n"})
	se := newStarterEnv(t, scenario(t, map[string]any{"auto": true}))

	elsewhere := t.TempDir()
	p := startProcIn(t, elsewhere, se.env, bins.starter, "init", r.Dir)
	require.Equal(t, 0, p.wait(t, time.Minute), p.Output())
	require.Contains(t, p.Output(), "committed ralph.yaml, prd.json")
	require.Contains(t, p.Output(), "starter run --dev --follow "+r.Dir)
	require.Empty(t, r.git("status", "--porcelain"))

	// The project's instructions reach every prompt; `prompt` shows the
	// next one without running anything.
	r.write("RALPH.md", "Keep every line under 80 columns.\n")
	r.git("add", "RALPH.md")
	r.git("commit", "-qm", "instructions")
	p = startProcIn(t, elsewhere, se.env, bins.starter, "prompt", "--instructions-file", "RALPH.md", r.Dir)
	require.Equal(t, 0, p.wait(t, time.Minute), p.Output())
	require.Contains(t, p.Output(), "# Ralph loop: iteration 1 of 100")
	require.Contains(t, p.Output(), "## Project instructions (from `RALPH.md`)")
	require.Contains(t, p.Output(), "Keep every line under 80 columns.")
	require.Empty(t, calls(t, se.env), "prompt runs nothing")

	code, out := starter(t, se, "run", "--dev", "--follow", "--instructions-file", "RALPH.md", r.Dir)
	require.Equal(t, 0, code, out)
	got := calls(t, se.env)
	require.NotEmpty(t, got)
	require.Contains(t, got[0].Prompt, "Keep every line under 80 columns.")
	require.Contains(t, got[0].Prompt, "add it to `AGENTS.md`")
	require.Contains(t, out, "iteration 1: success")
	require.Contains(t, out, "[US-002 List how to build and test the project]")
	require.Contains(t, out, "ended: complete")
}

// TestUncommittedTaskFileAlone: a task file written just before run is
// no reason to refuse it: the session commits it, saying so. Any other
// uncommitted change still stops run, once, before a session starts.
func TestUncommittedTaskFileAlone(t *testing.T) {
	r := newRepo(t, map[string]string{"README.md": "# app\n"})
	se := newStarterEnv(t, scenario(t, map[string]any{"auto": true}))
	r.write("prd.json", threeStoryPRD)
	r.write("notes.txt", "wip")

	code, out := starter(t, se, "run", "--dev", "--follow", r.Dir)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "starter: workspace "+r.Dir+" has uncommitted changes (notes.txt, prd.json): commit or stash them, or allow a dirty tree (--allow-dirty)\n")
	require.Equal(t, 1, strings.Count(out, "uncommitted changes"), "said once")
	require.NotContains(t, out, "level=")
	code, out = starter(t, se, "list", "--dev")
	require.Equal(t, 0, code, out)
	require.NotContains(t, out, "ralph-", "a refused start leaves no failed session behind")

	require.NoError(t, os.Remove(filepath.Join(r.Dir, "notes.txt")))
	code, out = starter(t, se, "run", "--dev", "--follow", "--max-iterations", "1", r.Dir)
	require.Equal(t, 2, code, out)
	require.Contains(t, out, "iteration 1: success")
	log := r.git("log", "--format=%s", "--reverse")
	require.Contains(t, log, "ralph: add the task file prd.json\n")
	require.Less(t, strings.Index(log, "ralph: add the task file"), strings.Index(log, "US-001"), "before the first iteration")
}

// TestStartupErrorsSaidOnce: each error a session would fail on at once
// is printed once, with how to fix it, before any session starts.
func TestStartupErrorsSaidOnce(t *testing.T) {
	se := newStarterEnv(t, scenario(t, map[string]any{"auto": true}))
	notGit := t.TempDir()
	noTask := newRepo(t, map[string]string{"README.md": "# app\n"})
	badTask := newRepo(t, map[string]string{"prd.json": "{\n  \"userStories\": [\n    {\"id\": 1,}\n  ]\n}\n"})
	good := newRepo(t, map[string]string{"prd.json": threeStoryPRD})
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"not a git repository", []string{notGit}, "starter: workspace " + notGit + " is not a git repository (run git init there first)\n"},
		{"no task file", []string{noTask.Dir}, "starter: no task file in " + noTask.Dir + ": looked for prd.json, progress.md, PROMPT.md\n" +
			"Write one: `starter init DIR` writes a commented ralph.yaml and an example prd.json (see Task files in docs/sessions.md).\n"},
		{"malformed task file", []string{badTask.Dir}, "starter: prd.json:3:14: invalid character '}' looking for beginning of object key string\n" +
			"Fix the task file where the message says (see Task files in docs/sessions.md for its format).\n"},
		{"missing agent", []string{"--agent-command", "no-such-agent", good.Dir}, "starter: agent binary \"no-such-agent\" not found on PATH\n" +
			"Install the agent where the worker runs (Claude Code: npm install -g @anthropic-ai/claude-code), or name another with --agent-command.\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := starter(t, se, append([]string{"run", "--dev", "--follow"}, tc.args...)...)
			require.Equal(t, 1, code, out)
			require.Contains(t, out, tc.want)
			first := strings.SplitN(tc.want, "\n", 2)[0]
			require.Equal(t, 1, strings.Count(out, strings.TrimPrefix(first, "starter: ")), "said once:\n%s", out)
			require.NotContains(t, out, "level=")
		})
	}
	code, out := starter(t, se, "list", "--dev")
	require.Equal(t, 0, code, out)
	require.NotContains(t, out, "ralph-", "no failed start left behind")
	require.NotContains(t, out, "level=", "list --dev logs to its file, not here")
	// status of a workspace without a session: one error, no log lines.
	code, out = starter(t, se, "status", "--dev", good.Dir)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "starter: no session ralph-")
	require.Contains(t, out, "here: start one with starter run --dev --state-dir "+se.stateDir+" "+good.Dir+"\n")
	require.NotContains(t, out, "level=", "status --dev logs to its file, not here")
}

// TestCtrlC: the first Ctrl-C on run --follow --dev says the session is
// saved and how long it waits for the agent; a second one stops at once.
// Nothing is logged at ERROR, and the next run finishes the session.
func TestCtrlC(t *testing.T) {
	r := newRepo(t, map[string]string{"prd.json": threeStoryPRD})
	path := scenario(t, map[string]any{"auto": true, "sleep_ms": 60000})
	se := newStarterEnv(t, path)

	p := startProc(t, se.env, bins.starter, "run", "--dev", "--follow", r.Dir)
	waitFor(t, time.Minute, "the agent at work", func() bool { return strings.Contains(p.Output(), "▸ Bash  sleep 60") })
	require.NoError(t, p.cmd.Process.Signal(os.Interrupt))
	waitFor(t, 30*time.Second, "the first Ctrl-C's answer", func() bool {
		return strings.Contains(p.Output(), "Waiting up to 15s for the running agent to stop (Ctrl-C again to stop at once)")
	})
	require.Contains(t, p.Output(), "Interrupted: the session is saved; run the same command again to resume it.")
	stopped := time.Now()
	require.NoError(t, p.cmd.Process.Signal(os.Interrupt))
	require.Equal(t, 130, p.wait(t, 10*time.Second), p.Output())
	require.Less(t, time.Since(stopped), 5*time.Second, "at once")
	out := p.Output()
	require.Contains(t, out, "Stopped at once: the session is saved, and its iteration resumes on the next run.")
	require.NotContains(t, out, "level=")

	// The next run resumes the iteration; a quick agent finishes the work.
	require.NoError(t, os.WriteFile(path, []byte(`{"steps":[{"auto":true}]}`), 0o644))
	code, out := starter(t, se, "run", "--dev", "--follow", r.Dir)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "Attached to running session")
	require.Contains(t, out, "ended: complete")
	require.NotContains(t, out, "level=")
}

// TestFlagsPerCommand runs the real binaries: each command shows and
// takes its own flags only, and both say what they are.
func TestFlagsPerCommand(t *testing.T) {
	se := newStarterEnv(t, "")
	run := func(bin string, args ...string) (int, string) {
		p := startProc(t, se.env, bin, args...)
		return p.wait(t, time.Minute), p.Output()
	}
	code, out := run(bins.starter, "guide", "--help")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "--queue")
	require.NotContains(t, out, "--max-cost")
	code, out = run(bins.starter, "run", "--help")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "--max-cost")
	for _, tc := range []struct {
		bin  string
		args []string
		want string
	}{
		{bins.starter, []string{"status", "--model", "x"}, "starter: unknown flag: --model\n"},
		{bins.worker, []string{"--max-iterations", "1"}, "worker: unknown flag: --max-iterations\n"},
		{bins.starter, []string{"list", "--status", "bogus"}, "starter: invalid --status \"bogus\": valid states are starting, running, waiting_for_agent_slot, host_offline, paused, rate_limited, awaiting_human, completed, stopped, limited, failed, idle, working, budget_wait, waiting_for_checks, waiting_for_review, fixing_ci, addressing_review, updating_branch, waiting_for_answer, merging, waiting_for_merge, finished\n"},
	} {
		code, out := run(tc.bin, tc.args...)
		require.Equal(t, 1, code, out)
		require.Equal(t, tc.want, out)
	}
	code, out = run(bins.worker, "help")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "Usage:\n  worker [flags]")
	for _, bin := range []string{bins.starter, bins.worker} {
		code, out := run(bin, "--version")
		require.Equal(t, 0, code, out)
		require.Regexp(t, `^(starter|worker) \S+ \(.+\), Temporal server v1\.\d+\.\d+, Temporal Go SDK v1\.\d+\.\d+, go1\.`, out)
	}
}
