package testsuite_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestReviewerFailsThenPasses runs a session with a reviewer, played by
// the fake agent: the first review edits a file (refused, discarded), the
// second fails the work with a reason the next executor gets, the third
// passes it, and only then does the session complete.
func TestReviewerFailsThenPasses(t *testing.T) {
	r := newRepo(t, map[string]string{"prd.json": threeStoryPRD, "progress.txt": ""})
	se := newStarterEnv(t, rawScenario(t, map[string]any{
		"steps":  []any{map[string]any{"auto": true}},
		"repeat": "auto",
		"roles": map[string]any{"reviewer": []any{
			map[string]any{"write": map[string]string{"list.go": "// fixed it myself\n"}, "text": "I fixed the list.\n<verdict>pass</verdict>"},
			map[string]any{"text": "I ran the checks.\n<verdict>fail</verdict>\nUS-002: the form does not save: no handler is wired to the submit button."},
			map[string]any{"text": "Every criterion holds.\n<verdict>pass</verdict>"},
		}},
	}))
	id := sessionIDOf(r.Dir)
	startDevWorker(t, se)
	code, out := starter(t, se, "run", "--dev", "--follow", "--review", "--max-no-progress", "2", r.Dir)
	require.Equal(t, 0, code, out)
	lines := strings.Split(out, "\n")
	byPrefix := func(prefix string) string {
		for _, l := range lines {
			if strings.HasPrefix(l, prefix) {
				return l
			}
		}
		t.Fatalf("no line %q in:\n%s", prefix, out)
		return ""
	}
	require.Contains(t, byPrefix("iteration 4 (executor)"), "completion claimed; the reviewer checks the work next")
	require.Contains(t, byPrefix("iteration 5 (reviewer)"), "verdict: fail (the reviewer failed the work: The reviewer changed the workspace (list.go)")
	require.Contains(t, byPrefix("iteration 7 (reviewer)"), "verdict: fail (the reviewer failed the work: US-002: the form does not save")
	require.Contains(t, byPrefix("iteration 9 (reviewer)"), "verdict: pass")
	require.Contains(t, out, "ended: complete (completion claimed, confirmed by prd.json and passed by the reviewer in iteration 9)")

	require.NoFileExists(t, filepath.Join(r.Dir, "list.go"), "the reviewer's edit was discarded")
	prompt6 := sessionPrompt(t, r.Dir, id, 6)
	require.Contains(t, string(prompt6), "The reviewer changed the workspace (list.go)")
	prompt8 := sessionPrompt(t, r.Dir, id, 8)
	require.Contains(t, string(prompt8), "US-002: the form does not save: no handler is wired to the submit button.")
	review := sessionPrompt(t, r.Dir, id, 5)
	require.Contains(t, string(review), "## Role: reviewer")
	require.Contains(t, string(review), "<verdict>fail</verdict>")

	// Commits name their role; the reviewer made none.
	roles := r.git("log", "--format=%(trailers:key=Ralph-Iteration,valueonly,separator=)|%(trailers:key=Ralph-Role,valueonly,separator=)")
	for _, l := range strings.Fields(roles) {
		it, role, _ := strings.Cut(l, "|")
		if it == "" {
			continue
		}
		require.Equal(t, "executor", role, "iteration %s", it)
		require.NotContains(t, []string{"5", "7", "9"}, it, "a reviewer iteration committed")
	}

	code, out = starter(t, se, "status", "--dev", r.Dir)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "executor, reviewer")
	replayFrom(t, se, id)
}

const planTwoStories = `{
  "project": "Widgets",
  "branchName": "ralph/widgets",
  "description": "Widget catalogue",
  "userStories": [
    {"id": "US-001", "title": "List widgets", "description": "As a user I see all widgets.", "acceptanceCriteria": ["list renders", "Typecheck passes"], "priority": 1, "passes": false, "notes": ""},
    {"id": "US-002", "title": "Add a widget", "description": "As a user I add a widget.", "acceptanceCriteria": ["form saves", "Typecheck passes"], "priority": 2, "passes": false, "notes": ""}
  ]
}
`

// TestPlanApproveComplete plans a prd.json from an idea with the fake
// agent as the planner: its first plan is invalid and it is told why, a
// person rejects the second with a reason, approves the third, and the
// session then works through the stories to completion.
func TestPlanApproveComplete(t *testing.T) {
	r := newRepo(t, map[string]string{"README.md": "# Widgets\n"})
	planThree := strings.Replace(planTwoStories, `"priority": 2, "passes": false, "notes": ""}`,
		`"priority": 2, "passes": false, "notes": ""},
    {"id": "US-003", "title": "Delete a widget", "description": "As a user I delete a widget.", "acceptanceCriteria": ["row disappears", "Typecheck passes"], "priority": 3, "passes": false, "notes": ""}`, 1)
	se := newStarterEnv(t, rawScenario(t, map[string]any{
		"steps":  []any{map[string]any{"auto": true}},
		"repeat": "auto",
		"roles": map[string]any{"planner": []any{
			map[string]any{"write": map[string]string{"prd.json": strings.ReplaceAll(planTwoStories, `, "Typecheck passes"`, "")}, "text": "Planned."},
			map[string]any{"write": map[string]string{"prd.json": planTwoStories}, "text": "Planned, with typechecks."},
			map[string]any{"write": map[string]string{"prd.json": planThree}, "text": "Added deletion."},
		}},
	}))
	id := sessionIDOf(r.Dir)
	startDevWorker(t, se)

	code, out := starter(t, se, "plan", "--dev", "a catalogue of widgets", r.Dir)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "Started session "+id)

	waitForStarter(t, se, "the first plan to wait for a human", "cp-2-plan", "status", "--dev", r.Dir)
	code, out = starter(t, se, "status", "--dev", r.Dir)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "The planner wrote 2 stories into prd.json")
	require.Contains(t, out, "1. US-001 List widgets")
	require.Contains(t, out, "- Typecheck passes")
	require.Contains(t, out, "Roles        executor, planner")
	require.NotContains(t, out, "running: the planner", "it waits for a person, not for the planner")
	code, out = starter(t, se, "plan", "--dev", "another idea", r.Dir)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "already runs on "+r.Dir+": plan starts a session of its own; stop that one first")
	code, out = starter(t, se, "respond", "--dev", r.Dir, "--checkpoint", "cp-2-plan", "--reject", "--reason", "users must be able to delete widgets too")
	require.Equal(t, 0, code, out)

	waitForStarter(t, se, "the revised plan", "cp-3-plan", "status", "--dev", r.Dir)
	code, out = starter(t, se, "status", "--dev", r.Dir)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "3. US-003 Delete a widget")
	code, out = starter(t, se, "respond", "--dev", r.Dir, "--checkpoint", "cp-3-plan", "--approve")
	require.Equal(t, 0, code, out)

	code, out = starter(t, se, "run", "--dev", "--follow", "-q", r.Dir)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "ended: complete")

	// What each planner was told.
	prompt2 := sessionPrompt(t, r.Dir, id, 2)
	require.Contains(t, string(prompt2), "## Role: planner")
	require.Contains(t, string(prompt2), `lacks "Typecheck passes"`)
	prompt3 := sessionPrompt(t, r.Dir, id, 3)
	require.Contains(t, string(prompt3), "users must be able to delete widgets too")
	require.Contains(t, string(prompt3), "a catalogue of widgets")

	// The plans are committed as the planner's; the stories as the executors'.
	log := r.git("log", "--reverse", "--format=%s|%(trailers:key=Ralph-Role,valueonly,separator=)")
	require.Contains(t, log, "ralph: iteration 2: plan prd.json (2 stories)|planner")
	require.Contains(t, log, "ralph: iteration 3: plan prd.json (3 stories)|planner")
	require.Contains(t, log, "US-003 Delete a widget|executor")
	require.NotContains(t, log, "iteration 1:", "the invalid plan was not committed")
	require.Equal(t, 3, strings.Count(r.read("prd.json"), `"passes": true`))
	replayFrom(t, se, id)
}

// TestPlanFollowShowsTheStories follows a plan in the terminal: the
// stories of the plan to approve are printed there, and after the
// approval the same command follows the work to its end.
func TestPlanFollowShowsTheStories(t *testing.T) {
	r := newRepo(t, map[string]string{"README.md": "# Widgets\n"})
	se := newStarterEnv(t, rawScenario(t, map[string]any{
		"steps":  []any{map[string]any{"auto": true}},
		"repeat": "auto",
		"roles":  map[string]any{"planner": []any{map[string]any{"write": map[string]string{"prd.json": planTwoStories}, "text": "Planned."}}},
	}))
	startDevWorker(t, se)
	p := startProc(t, se.env, bins.starter, "plan", "--dev", "--follow", "a catalogue of widgets", r.Dir)
	waitFor(t, time.Minute, "the plan in the terminal", func() bool {
		return strings.Contains(p.Output(), "2. US-002 Add a widget")
	})
	out := p.Output()
	require.Contains(t, out, "session waits for a human: checkpoint cp-1-plan (human-verify): The planner wrote 2 stories")
	require.Contains(t, out, "1. US-001 List widgets\n     - list renders\n     - Typecheck passes")
	require.Contains(t, out, "iteration 1 (planner): success")
	code, text := starter(t, se, "respond", "--dev", r.Dir, "--approve")
	require.Equal(t, 0, code, text)
	require.Equal(t, 0, p.wait(t, 2*time.Minute), p.Output())
	require.Contains(t, p.Output(), "ended: complete")
	require.Contains(t, p.Output(), "iteration 3 (executor): success")
}
