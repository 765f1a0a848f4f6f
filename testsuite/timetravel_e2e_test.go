package testsuite_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/workflows/workflowtest"
)

// fourStoryPRD is threeStoryPRD with a fourth story.
var fourStoryPRD = strings.Replace(threeStoryPRD, `"priority": 3, "passes": false, "notes": ""}`,
	`"priority": 3, "passes": false, "notes": ""},
    {"id": "US-004", "title": "Rename a widget", "description": "As a user I rename a widget.", "acceptanceCriteria": ["name changes"], "priority": 4, "passes": false, "notes": ""}`, 1)

// callsIn are the fake agent's calls whose working directory is dir.
func callsIn(t testing.TB, se *starterEnv, dir string) []fakeCall {
	t.Helper()
	var out []fakeCall
	for _, c := range calls(t, se.env) {
		if filepath.Clean(c.CWD) == filepath.Clean(dir) {
			out = append(out, c)
		}
	}
	return out
}

// TestTimeTravel is issue 33 as a new user tries it through the CLI: a
// four-story session read back with log, forked at iteration 2 onto
// another model, rewound to iteration 2, and the two compared.
func TestTimeTravel(t *testing.T) {
	r := newRepo(t, map[string]string{"prd.json": fourStoryPRD, "progress.txt": ""})
	se := newStarterEnv(t, scenario(t, map[string]any{"auto": true, "claim_last": true, "sleep_ms": 700}))
	startDevWorker(t, se)
	id := sessionIDOf(r.Dir)

	// A run continues as new after each iteration at least two seconds
	// old: the session spans runs, and the rewind resets one that has
	// continued as new.
	code, out := starter(t, se, "run", "--dev", "--follow", "-q", "--iterations-per-run", "1", r.Dir)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "ended: complete")
	c := se.dial(t)
	defer c.Close()
	desc, err := c.DescribeWorkflowExecution(context.Background(), id, "")
	require.NoError(t, err)
	firstRun := desc.GetWorkflowExecutionInfo().GetFirstRunId()
	require.NotEqual(t, firstRun, desc.GetWorkflowExecutionInfo().GetExecution().GetRunId(), "the session continued as new")
	commits := r.ralphCommits()
	require.Len(t, commits, 4, "one commit per story")
	require.Len(t, callsIn(t, se, r.Dir), 4)
	head := strings.TrimSpace(r.git("rev-parse", "HEAD"))
	iter2 := strings.TrimSpace(r.git("rev-parse", "HEAD~2"))

	// log: the list, then iteration 2 alone.
	code, out = starter(t, se, "log", "--dev", r.Dir)
	require.Equal(t, 0, code, out)
	for n := 1; n <= 4; n++ {
		require.Contains(t, out, "iteration "+string(rune('0'+n))+": success")
	}
	code, out = starter(t, se, "log", "--dev", r.Dir, "--iteration", "2")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "Iteration 2 of "+id)
	require.Contains(t, out, "US-002")
	require.Contains(t, out, "Commit: "+iter2)
	require.Contains(t, out, "── attempt 1")
	did := out[strings.Index(out, "What the agent did:"):]
	require.Contains(t, did, "I'll implement US-002")
	require.NotContains(t, did, "US-003", "nothing of the next iteration")
	require.NotContains(t, out, "US-003: Delete", "nothing of the next iteration's work")
	code, out = starter(t, se, "log", "--dev", r.Dir, "--iteration", "2", "-o", "json")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, `"iteration":2`)
	code, out = starter(t, se, "log", "--dev", r.Dir, "--iteration", "9")
	require.NotEqual(t, 0, code)
	require.Contains(t, out, "has no iteration 9: it ran 4")

	// fork at 2 onto another model: two agent runs, both with the model,
	// on a branch from iteration 2's commit; the original untouched.
	code, out = starter(t, se, "fork", "--dev", r.Dir, "--at", "2", "--model", "fork-model", "--follow", "-q")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "Forked "+id+" at iteration 2")
	require.Contains(t, out, "ended: complete")
	forkDir := filepath.Join(r.Dir, ".ralph", "worktrees", "fork-2-fork-model")
	forkCalls := callsIn(t, se, forkDir)
	require.Len(t, forkCalls, 2, "the iterations before 2 are adopted, not run again")
	for _, c := range forkCalls {
		i := slices.Index(c.Argv, "--model")
		require.True(t, i >= 0 && i+1 < len(c.Argv) && c.Argv[i+1] == "fork-model", "argv %v", c.Argv)
	}
	require.Equal(t, iter2, strings.TrimSpace(r.git("rev-parse", "ralph/fork-2-fork-model~2")), "the fork starts at iteration 2's commit")
	require.Equal(t, head, strings.TrimSpace(r.git("rev-parse", "ralph/widgets")), "the original's branch is untouched")
	forkID := contract.SessionWorkflowID(testHost, forkDir)
	code, out = starter(t, se, "status", "--dev", forkID)
	require.Equal(t, 0, code, out)
	require.Regexp(t, `Forked from\s+`+id+` at iteration 2`, out)
	require.Regexp(t, `Iteration\s+4 of`, out)

	// rewind to 2: the branch goes back, the old commits stay on a ref,
	// stories 3 and 4 are done again.
	before := len(calls(t, se.env))
	start := time.Now()
	code, out = starter(t, se, "rewind", "--dev", r.Dir, "--to", "2", "--follow", "-q")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "Rewound "+id+" to iteration 2")
	require.Contains(t, out, "ended: complete")
	all := calls(t, se.env)
	require.Len(t, all, before+2, "stories 3 and 4 again, nothing before")
	t.Logf("rewind command to the next agent's start: %s", all[before].Time.Sub(start).Round(time.Millisecond))
	ref := contract.RewoundRef(id, 1)
	require.Equal(t, head, strings.TrimSpace(r.git("rev-parse", ref)), "the left commits are kept")
	require.Equal(t, iter2, strings.TrimSpace(r.git("rev-parse", "ralph/widgets~2")), "the branch went back to iteration 2")
	require.NotEqual(t, head, strings.TrimSpace(r.git("rev-parse", "ralph/widgets")))
	require.Len(t, r.ralphCommits(), 4, "two kept, two redone: no doubled commit on the branch")
	code, out = starter(t, se, "status", "--dev", r.Dir)
	require.Equal(t, 0, code, out)
	require.Regexp(t, `Rewound\s+to iteration 2 at .*, from 4: 2 iterations`, out)
	require.Regexp(t, `Abandoned\s+\$0\.0[0-9]+`, out)

	code, out = starter(t, se, "compare", "--dev", r.Dir, forkID)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "From iteration 2")
	require.Regexp(t, `Iterations\s+2\s+2`, out)
	require.Regexp(t, `Stories done\s+4 of 4\s+4 of 4`, out)
	require.Contains(t, out, "claude fork-model")

	// Bad input.
	code, out = starter(t, se, "rewind", "--dev", r.Dir, "--to", "7")
	require.NotEqual(t, 0, code)
	require.Contains(t, out, "has no iteration 7")
	r.write("scratch.txt", "a person's edit")
	code, out = starter(t, se, "rewind", "--dev", r.Dir, "--to", "1")
	require.NotEqual(t, 0, code)
	require.Contains(t, out, "uncommitted changes (scratch.txt)")

	replayCurrent(t, c, id, "rewound")
	replayCurrent(t, c, forkID, "fork")
}

// replayCurrent replays every run of workflow id's timeline as it
// stands (from the current run back along continue-as-new: a reset run,
// the runs before it) against today's code, each as the run it is, and
// records them under label.
func replayCurrent(t *testing.T, c client.Client, id, label string) {
	t.Helper()
	var hs []*historypb.History
	for run := ""; ; {
		h, err := collectHistory(c.GetWorkflowHistory(context.Background(), id, run, false, 0))
		require.NoError(t, err)
		hs = append([]*historypb.History{h}, hs...)
		if run = h.Events[0].GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId(); run == "" {
			break
		}
	}
	for i, h := range hs {
		require.NoError(t, workflowtest.Replay1(newReplayer(), h), "replay of run %d of %s", i+1, id)
		recordHistory(t, h, label, i+1)
	}
}

// TestRewindAndForkSurviveWorkerKill: a session rewound while its
// iteration runs, its worker killed (kill -9) right after the rewind is
// asked, and a fork whose worker is killed as it starts: one branch, one
// ref, one commit per story, nothing doubled.
func TestRewindAndForkSurviveWorkerKill(t *testing.T) {
	r := newRepo(t, map[string]string{"prd.json": fourStoryPRD, "progress.txt": ""})
	se := newStarterEnv(t, scenario(t, map[string]any{"auto": true, "claim_last": true, "sleep_ms": 2500}))
	w := startDevWorker(t, se)
	code, out := starter(t, se, "run", "--dev", r.Dir)
	require.Equal(t, 0, code, out)
	waitFor(t, 2*time.Minute, "iteration 3's agent", func() bool { return len(callsIn(t, se, r.Dir)) >= 3 })
	require.Len(t, r.ralphCommits(), 2, "iterations 1 and 2 committed, 3 runs")
	iter1 := strings.TrimSpace(r.git("rev-parse", "HEAD~1"))
	iter2 := strings.TrimSpace(r.git("rev-parse", "HEAD"))

	// Rewind while iteration 3 runs: the worker cancels it.
	start := time.Now()
	code, out = starter(t, se, "rewind", "--dev", r.Dir, "--to", "2")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "iterations 3 to 3")
	waitFor(t, time.Minute, "iteration 3 again", func() bool { return len(callsIn(t, se, r.Dir)) >= 4 })
	t.Logf("rewind of a running session to the next agent's start: %s", callsIn(t, se, r.Dir)[3].Time.Sub(start).Round(time.Millisecond))

	// Rewind while iteration 3 runs again, and kill the worker at once.
	code, out = starter(t, se, "rewind", "--dev", r.Dir, "--to", "1")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "iterations 2 to 3")
	require.NoError(t, w.cmd.Process.Kill())
	w.wait(t, time.Minute)
	w = startDevWorker(t, se)
	code, out = starter(t, se, "run", "--dev", "--attach-only", "--follow", "-q", r.Dir)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "ended: complete")

	require.Equal(t, iter1, strings.TrimSpace(r.git("rev-parse", "ralph/widgets~3")), "the branch went back to iteration 1 and redid 2, 3 and 4")
	storyOnce(t, r, "ralph/widgets")
	id := sessionIDOf(r.Dir)
	refs := strings.Fields(r.git("for-each-ref", "--sort=refname", "--format=%(refname)", contract.RewoundRefPrefix))
	require.Equal(t, []string{contract.RewoundRef(id, 1), contract.RewoundRef(id, 2)}, refs, "one ref per rewind")
	for _, ref := range refs {
		r.git("merge-base", "--is-ancestor", iter2, ref) // what iteration 2 (and 3's start) left is kept
	}
	code, out = starter(t, se, "status", "--dev", r.Dir)
	require.Equal(t, 0, code, out)
	require.Regexp(t, `Rewound\s+to iteration 2 at .*, from 3: 1 iteration \(`, out)
	require.Regexp(t, `Rewound\s+to iteration 1 at .*, from 3: 2 iterations \(`, out)

	// Fork at 2, and kill the worker as the fork starts.
	iter2 = strings.TrimSpace(r.git("rev-parse", "ralph/widgets~2"))
	code, out = starter(t, se, "fork", "--dev", r.Dir, "--at", "2")
	require.Equal(t, 0, code, out)
	require.NoError(t, w.cmd.Process.Kill())
	w.wait(t, time.Minute)
	startDevWorker(t, se)
	forkID := contract.SessionWorkflowID(testHost, filepath.Join(r.Dir, ".ralph", "worktrees", "fork-2"))
	start = time.Now()
	waitFor(t, 2*time.Minute, "the fork's end", func() bool {
		_, out := starter(t, se, "status", "--dev", forkID)
		return strings.Contains(out, "completed (complete)")
	})
	t.Logf("the fork ended %s after the worker came back", time.Since(start).Round(time.Second))
	require.Equal(t, iter2, strings.TrimSpace(r.git("rev-parse", "ralph/fork-2~2")), "the fork starts at iteration 2's commit")
	storyOnce(t, r, "ralph/fork-2")
	require.Equal(t, 1, strings.Count(r.git("worktree", "list", "--porcelain"), "worktree "+filepath.Join(r.Dir, ".ralph", "worktrees", "fork-2")+"\n"), "one work tree")
}

// storyOnce checks that each of the four stories was committed once on
// branch (subjects "ralph: iteration N: US-00K Title").
func storyOnce(t *testing.T, r *repo, branch string) {
	t.Helper()
	subjects := r.git("log", "--format=%s", branch)
	for _, id := range []string{"US-001", "US-002", "US-003", "US-004"} {
		require.Equal(t, 1, strings.Count(subjects, ": "+id+" "), "%s on %s:\n%s", id, branch, subjects)
	}
}
