package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/tasks"
)

// TestAutoPlansAValidPRD plays the planner without a scenario: from the
// planner prompt Durable Ralph builds, it writes a prd.json that Ralph's
// own plan check accepts; a later planner, told why a person rejected
// the plan, keeps the stories and adds one for the reason.
func TestAutoPlansAValidPRD(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		// feedback is the planner's feedback, as the session words it.
		feedback string
		want     []string // story titles, in priority order
		branch   string
	}{{
		name: "from_an_idea",
		want: []string{"A CLI that converts CSV to JSON", "A --pretty flag"},
	}, {
		name:     "revised_after_a_rejection",
		feedback: "A person read the plan and rejected it: users must be able to read from stdin",
		want:     []string{"A CLI that converts CSV to JSON", "A --pretty flag", "Users must be able to read from stdin"},
	}, {
		name: "extends_the_prd_there_is",
		files: map[string]string{"prd.json": `{"project": "app", "branchName": "ralph/getting-started", "userStories": [
  {"id": "US-001", "title": "Describe the project", "acceptanceCriteria": ["RALPH-NOTES.md exists"], "priority": 1, "passes": true, "notes": ""}]}`},
		want:   []string{"Describe the project", "A CLI that converts CSV to JSON", "A --pretty flag"},
		branch: "ralph/getting-started",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, tt.files)
			in := tasks.PlanInput{Idea: "a CLI that converts CSV to JSON, with a --pretty flag", Feedback: tt.feedback}
			in.Mode, in.Iteration = contract.ModePRD, 1
			if tt.feedback != "" {
				// The first plan is there, as the planner left it.
				r := f.run(tasks.BuildPlanPrompt(f.dir, tasks.PlanInput{Idea: in.Idea, RoleInput: in.RoleInput}), ralphArgs...)
				require.Equal(t, 0, r.code, r.stderr)
			}
			r := f.run(tasks.BuildPlanPrompt(f.dir, in), ralphArgs...)
			require.Equal(t, 0, r.code, r.stderr)
			require.Equal(t, contract.OutcomeSuccess, r.verdict.Outcome, r.verdict.Reason)
			require.NotContains(t, r.summary.ResultText, "<promise>", "a planner never claims completion")

			st, briefs, err := tasks.ValidatePlan(f.dir)
			require.NoError(t, err, f.read("prd.json"))
			var titles []string
			for _, b := range briefs {
				titles = append(titles, b.Title)
				require.Contains(t, b.Criteria, "Typecheck passes")
			}
			require.Equal(t, tt.want, titles)
			branch := tt.branch
			if branch == "" {
				branch = "ralph/a-cli-that-converts"
			}
			require.Equal(t, branch, st.BranchName)
			require.Equal(t, "1", strings.TrimSpace(git(t, f.dir, "rev-list", "--count", "HEAD")), "the planner does not commit")
		})
	}
}

// TestAutoReviewPasses plays the reviewer without a scenario: it passes
// the work with a verdict Ralph reads and changes nothing.
func TestAutoReviewPasses(t *testing.T) {
	f := newFake(t, map[string]string{"prd.json": threeStoryPRD})
	prompt, err := tasks.BuildReviewPrompt(f.dir, tasks.RoleInput{PromptInput: tasks.PromptInput{Mode: contract.ModePRD, Iteration: 4}})
	require.NoError(t, err)

	r := f.run(prompt, ralphArgs...)
	require.Equal(t, 0, r.code, r.stderr)
	verdict, reasons, ok := tasks.ParseVerdict(r.summary.ResultText)
	require.True(t, ok, r.summary.ResultText)
	require.Equal(t, "pass", verdict)
	require.NotEmpty(t, reasons)
	require.Zero(t, r.summary.ToolUses)
	require.Empty(t, git(t, f.dir, "status", "--porcelain"), "a reviewer changes nothing")
}

// TestNextStepIsPlayedOnce writes next-step.json into the state
// directory: the next invocation without a role plays it instead of its
// own step and removes it; a reviewer leaves it for the executor, and
// the invocation after plays its own step again.
func TestNextStepIsPlayedOnce(t *testing.T) {
	f := newFake(t, map[string]string{"prd.json": threeStoryPRD})
	next := filepath.Join(f.state, "next-step.json")
	require.NoError(t, os.WriteFile(next, []byte(`{"auto": true, "checkpoint": {"type": "decision", "question": "SQLite or Postgres?"}}`), 0o644))

	review, err := tasks.BuildReviewPrompt(f.dir, tasks.RoleInput{PromptInput: tasks.PromptInput{Mode: contract.ModePRD, Iteration: 1}})
	require.NoError(t, err)
	r := f.run(review, ralphArgs...)
	require.Equal(t, 0, r.code, r.stderr)
	require.FileExists(t, next, "a reviewer does not take the executor's step")

	r = f.run("Work on the next story.", ralphArgs...)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.summary.ResultText, "Implemented US-001")
	require.Contains(t, f.read(".ralph/checkpoint.json"), "SQLite or Postgres?")
	require.NoFileExists(t, next)

	require.NoError(t, os.Remove(filepath.Join(f.dir, ".ralph", "checkpoint.json")))
	r = f.run("Work on the next story.", ralphArgs...)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.summary.ResultText, "Implemented US-002")
	require.NoFileExists(t, filepath.Join(f.dir, ".ralph", "checkpoint.json"), "the step was played once")

	require.NoError(t, os.WriteFile(next, []byte(`{"auto": true, "nonsense": 1}`), 0o644))
	r = f.run("Work on the next story.", ralphArgs...)
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "next-step.json")
	require.Contains(t, r.stderr, "nonsense")
}
