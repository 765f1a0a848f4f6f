package tasks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/contract"
)

func TestParseVerdict(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		verdict string
		reasons string
		ok      bool
	}{
		{"pass", "All good.\n<verdict>pass</verdict>", contract.VerdictPass, "All good.", true},
		{"fail with reasons after", "Checked.\n<verdict>fail</verdict>\nUS-002: no handler\nUS-003: no test", contract.VerdictFail, "US-002: no handler\nUS-003: no test", true},
		{"the last verdict counts", "I first thought <verdict>pass</verdict> but\n<VERDICT> Fail </VERDICT>\nbroken build", contract.VerdictFail, "broken build", true},
		{"no verdict", "Looks fine to me.", "", "", false},
		{"not a verdict", "<verdict>maybe</verdict>", "", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, r, ok := ParseVerdict(tc.text)
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.verdict, v)
			require.Equal(t, tc.reasons, r)
		})
	}
}

func TestValidatePlan(t *testing.T) {
	story := func(id string, prio int, criteria ...string) string {
		q := make([]string, len(criteria))
		for i, c := range criteria {
			q[i] = `"` + c + `"`
		}
		return `{"id": "` + id + `", "title": "T ` + id + `", "description": "d", "acceptanceCriteria": [` + strings.Join(q, ", ") + `], "priority": ` + string(rune('0'+prio)) + `, "passes": false, "notes": ""}`
	}
	prd := func(stories ...string) string {
		return `{"project": "P", "branchName": "ralph/p", "userStories": [` + strings.Join(stories, ",\n") + `]}`
	}
	tests := []struct {
		name    string
		file    string
		wantErr string
		order   []string
	}{
		{"valid, in priority order", prd(story("US-002", 2, "saves", "Typecheck passes"), story("US-001", 1, "lists", "typecheck passes")), "", []string{"US-001", "US-002"}},
		{"no typecheck", prd(story("US-001", 1, "lists")), `userStories[0] (US-001): "acceptanceCriteria" lacks "Typecheck passes"`, nil},
		{"no criteria", prd(story("US-001", 1)), `userStories[0] (US-001): no "acceptanceCriteria"`, nil},
		{"no priority", prd(story("US-001", 0, "Typecheck passes")), `"priority" must be 1 or more`, nil},
		{"not JSON", `{"userStories": [`, "prd.json", nil},
		{"no file", "", "file does not exist", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.file != "" {
				require.NoError(t, os.WriteFile(filepath.Join(dir, contract.PRDFile), []byte(tc.file), 0o644))
			}
			st, stories, err := ValidatePlan(dir)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, len(tc.order), st.Total)
			var ids []string
			for _, s := range stories {
				ids = append(ids, s.ID)
			}
			require.Equal(t, tc.order, ids)
		})
	}
}

func TestPlanAndReviewPrompts(t *testing.T) {
	dir := t.TempDir()
	p := BuildPlanPrompt(dir, PlanInput{Idea: "a CSV to JSON converter", Feedback: "split US-003",
		RoleInput: RoleInput{RoleInstructions: "stories of at most 50 lines"}})
	for _, want := range []string{"## Role: planner", "a CSV to JSON converter", "split US-003", "stories of at most 50 lines", TypecheckCriterion} {
		require.Contains(t, p, want)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, contract.PRDFile), []byte(`{"userStories": [{"id": "US-001", "title": "List", "acceptanceCriteria": ["Typecheck passes"], "priority": 1, "passes": true}]}`), 0o644))
	r, err := BuildReviewPrompt(dir, RoleInput{PromptInput: PromptInput{Mode: contract.ModePRD, Iteration: 4, Notices: []string{"checked out main again"}}})
	require.NoError(t, err)
	for _, want := range []string{"# Ralph loop: iteration 4, review", "## Role: reviewer", "1 of 1 story or task done", "<verdict>pass</verdict>", "Do not change anything", "checked out main again"} {
		require.Contains(t, r, want)
	}
	require.NotContains(t, r, "<promise>", "a reviewer is never told how to claim completion")
}
