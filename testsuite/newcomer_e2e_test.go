package testsuite_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestQueueWithoutTokenSaysSoOnce starts the issue queue of a clone with
// no GitHub token where this process would be the queue's worker (--dev,
// no worker running): it says so once, naming the variable, and starts
// nothing.
func TestQueueWithoutTokenSaysSoOnce(t *testing.T) {
	r := newRepo(t, map[string]string{"README.md": "# app\n"})
	r.git("remote", "add", "origin", "https://github.com/acme/app.git")
	se := newStarterEnv(t, "")
	se.env = append(se.env, "GITHUB_TOKEN=", "GH_TOKEN=")

	code, out := starter(t, se, "queue", "--dev", r.Dir)
	require.Equal(t, 1, code, out)
	require.Equal(t, 1, strings.Count(out, "GITHUB_TOKEN"), out)
	require.Contains(t, out, "starter: no GitHub token: set GITHUB_TOKEN (or GH_TOKEN) in this environment, or give a file holding it with --github-token-file: this process is the queue's worker")
	require.NotContains(t, out, "Issue queue ralph-queue", "nothing started")

	code, out = starter(t, se, "list", "--dev")
	require.Equal(t, 0, code, out)
	require.NotContains(t, out, "ralph-queue-acme-app")
}

// TestPromptAndLimitsWhileAnIterationRuns asks, while the first
// iteration runs, for the prompt and for a cost limit with more digits
// than cents: prompt says iteration 1 runs and where its prompt is, and
// prints the next one's with the guidance waiting for it; set-limits
// prints the limit as given.
func TestPromptAndLimitsWhileAnIterationRuns(t *testing.T) {
	r := newRepo(t, map[string]string{"prd.json": threeStoryPRD, "progress.txt": ""})
	se := newStarterEnv(t, scenario(t, map[string]any{"auto": true, "sleep_ms": 6000}, map[string]any{"auto": true}))
	id := sessionIDOf(r.Dir)
	startDevWorker(t, se)
	code, out := starter(t, se, "run", "--dev", r.Dir)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "Switching "+r.Dir+" from branch main to a new branch ralph/widgets (prd.json's branchName)")
	waitFor(t, time.Minute, "the first iteration to run", func() bool { return len(calls(t, se.env)) >= 1 })

	code, out = starter(t, se, "guide", "--dev", r.Dir, "Name the list handler listWidgets.")
	require.Equal(t, 0, code, out)
	p := startProcIn(t, r.Dir, se.env, bins.starter, "prompt", "--dev", r.Dir)
	require.Equal(t, 0, p.wait(t, time.Minute), p.Output())
	m := regexp.MustCompile(`Iteration 1 of session ` + regexp.QuoteMeta(id) + " runs now; `starter log --iteration 1` shows its prompt \\(the first record of (\\S+)\\)\\.\n").FindStringSubmatch(p.Output())
	require.NotNil(t, m, p.Output())
	saved := logPrompt(t, m[1])
	require.Contains(t, string(saved), "# Ralph loop: iteration 1 of 100")
	require.NotContains(t, string(saved), "Name the list handler listWidgets.", "iteration 1 never got the guidance")
	require.Contains(t, p.Output(), "The prompt of iteration 2, the next, as the task file is now and with the guidance waiting for it:")
	require.Contains(t, p.Output(), "# Ralph loop: iteration 2 of 100")
	require.Contains(t, p.Output(), "Name the list handler listWidgets.")

	code, out = starter(t, se, "set-limits", "--dev", r.Dir, "--max-cost", "50.0001")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "max cost $50.0001")

	code, out = starter(t, se, "run", "--dev", "--follow", "-q", r.Dir)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "ended: complete")
	require.NotContains(t, out, "Switching", "attaching switches nothing")
	require.Equal(t, "ralph/widgets\n", r.git("branch", "--show-current"))
}
