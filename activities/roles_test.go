package activities_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/contract"
)

// TestReviewerCannotChangeTheWorkspace runs reviewers on a workspace that
// holds the executors' uncommitted work (git.auto-commit off): a reviewer
// that edits fails and its edits go, the executors' work stays; one that
// only reads gets its verdict.
func TestReviewerCannotChangeTheWorkspace(t *testing.T) {
	tests := []struct {
		name    string
		step    map[string]any
		verdict string
		reasons string
	}{
		{"edits", map[string]any{"write": map[string]string{"list.go": "// fixed by the reviewer\n", "prd.json": "{}"}, "commit": true, "text": "Fixed.\n<verdict>pass</verdict>"},
			contract.VerdictFail, "The reviewer changed the workspace (list.go, prd.json)"},
		{"reads", map[string]any{"text": "Checked.\n<verdict>fail</verdict>\nUS-002: no handler"}, contract.VerdictFail, "US-002: no handler"},
		{"passes", map[string]any{"text": "<verdict>pass</verdict>\nAll criteria hold."}, contract.VerdictPass, "All criteria hold."},
		{"says nothing", map[string]any{"text": "Looks fine."}, contract.VerdictFail, "ended without a verdict"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := newRepo(t, map[string]string{"prd.json": prd})
			// The executors' uncommitted work.
			require.NoError(t, os.WriteFile(filepath.Join(dir, "wip.go"), []byte("package wip\n"), 0o644))
			done := strings.ReplaceAll(prd, `"passes": false`, `"passes": true`)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "prd.json"), []byte(done), 0o644))
			head := gitRun(t, dir, "rev-parse", "HEAD")

			env, _ := scenarioEnv(t, tc.step)
			in := iterationInput(dir, 3)
			in.Role, in.RoleInstructions = contract.RoleReviewer, "Also run the linter."
			in.Git.AutoCommit = false
			res, _, err := runActivity(t, &activities.Agent{Env: env}, in)
			require.NoError(t, err)
			require.Equal(t, contract.OutcomeSuccess, res.Outcome, res.Reason)
			require.Equal(t, contract.RoleReviewer, res.Role)
			require.NotNil(t, res.Review)
			require.Equal(t, tc.verdict, res.Review.Verdict)
			require.Contains(t, res.Review.Reasons, tc.reasons)
			require.False(t, res.CompletionClaimed, "a reviewer never claims completion")
			require.Empty(t, res.Commit)

			require.Equal(t, head, gitRun(t, dir, "rev-parse", "HEAD"), "HEAD is where the review found it")
			require.NoFileExists(t, filepath.Join(dir, "list.go"))
			wip, err := os.ReadFile(filepath.Join(dir, "wip.go"))
			require.NoError(t, err)
			require.Equal(t, "package wip\n", string(wip), "the executors' work stays")
			got, err := os.ReadFile(filepath.Join(dir, "prd.json"))
			require.NoError(t, err)
			require.Equal(t, done, string(got))
			if tc.verdict == contract.VerdictFail {
				require.NotEmpty(t, res.Notices, "the next executor hears why")
				require.Contains(t, res.Notices[0], tc.reasons)
			} else {
				require.Empty(t, res.Notices)
			}
		})
	}
}

// TestPlannerPlanIsCheckedAndCommitted runs planner iterations: an
// invalid plan stays uncommitted with its error, a valid one is committed
// with the planner's role.
func TestPlannerPlanIsCheckedAndCommitted(t *testing.T) {
	dir := newRepo(t, map[string]string{"README.md": "# Widgets\n"})
	valid := `{"project": "W", "userStories": [{"id": "US-001", "title": "List", "acceptanceCriteria": ["renders", "Typecheck passes"], "priority": 1, "passes": false}]}`
	env, _ := scenarioEnv(t,
		map[string]any{"write": map[string]string{"prd.json": `{"userStories": [{"id": "US-001", "title": "List", "priority": 1}]}`}},
		map[string]any{"write": map[string]string{"prd.json": valid}},
	)
	ag := &activities.Agent{Env: env}
	in := iterationInput(dir, 1)
	in.Role, in.Plan = contract.RolePlanner, &contract.PlanRequest{Idea: "list widgets"}

	res, _, err := runActivity(t, ag, in)
	require.NoError(t, err)
	require.NotNil(t, res.Plan)
	require.False(t, res.Plan.Valid)
	require.Contains(t, res.Plan.Error, `no "acceptanceCriteria"`)
	require.Empty(t, res.Commit, "an invalid plan is not committed")

	in.Iteration = 2
	in.Plan.Feedback = res.Plan.Error
	res, _, err = runActivity(t, ag, in)
	require.NoError(t, err)
	require.True(t, res.Plan.Valid, res.Plan.Error)
	require.Equal(t, []contract.StoryBrief{{ID: "US-001", Title: "List", Priority: 1, Criteria: []string{"renders", "Typecheck passes"}}}, res.Plan.Stories)
	require.NotEmpty(t, res.Commit)
	msg := gitRun(t, dir, "log", "-1", "--format=%B")
	require.Contains(t, msg, "ralph: iteration 2: plan prd.json (1 stories)")
	require.Contains(t, msg, "Ralph-Role: planner")
	require.Equal(t, 1, res.Task.Total)
}
