package session_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/workflows/session"
	"github.com/durable-ralph/ralph/workflows/workflowtest"
)

// byRole plays executor results in order, and reviewer and planner
// results from their own lists, recording every input.
func byRole(executor, reviewer, planner []contract.IterationResult) *script {
	n := map[string]int{}
	pick := func(list []contract.IterationResult, role string) contract.IterationResult {
		i := min(n[role], len(list)-1)
		n[role]++
		return list[i]
	}
	return &script{results: []func(contract.IterationInput) (contract.IterationResult, error){
		func(in contract.IterationInput) (contract.IterationResult, error) {
			var r contract.IterationResult
			switch in.RoleOf() {
			case contract.RoleReviewer:
				r = pick(reviewer, in.Role)
			case contract.RolePlanner:
				r = pick(planner, in.Role)
			default:
				r = pick(executor, contract.RoleExecutor)
			}
			r.Iteration, r.Role = in.Iteration, in.Role
			return r, nil
		},
	}}
}

func review(verdict string) contract.IterationResult {
	return contract.IterationResult{Outcome: contract.OutcomeSuccess, Review: &contract.ReviewResult{Verdict: verdict, Reasons: "US-002 lacks tests"},
		Task: contract.TaskState{Mode: "prd", File: "prd.json", Total: 3, Done: 3, Complete: true, Verifiable: true}}
}

func claimAll() contract.IterationResult {
	r := workflowtest.Progressed(0, 3)
	r.CompletionClaimed = true
	return r
}

func TestReviewerRouting(t *testing.T) {
	reviewer := &contract.RoleAgent{Agent: contract.AgentSettings{Backend: "codex", Command: []string{"codex"}, Model: "gpt-5.1-codex"}, Instructions: "run make test"}
	tests := []struct {
		name      string
		every     int
		executor  []contract.IterationResult
		reviewer  []contract.IterationResult
		wantRoles []string
		wantIters int
	}{
		{
			name:      "a fail sends the loop on, a pass completes",
			executor:  []contract.IterationResult{workflowtest.Progressed(0, 1), workflowtest.Progressed(0, 2), claimAll(), claimAll()},
			reviewer:  []contract.IterationResult{review(contract.VerdictFail), review(contract.VerdictPass)},
			wantRoles: []string{"", "", "", "reviewer", "", "reviewer"},
			wantIters: 6,
		},
		{
			name:      "a reviewer that fails to run runs again",
			executor:  []contract.IterationResult{claimAll()},
			reviewer:  []contract.IterationResult{{Outcome: contract.OutcomeAgentError, Reason: "exit 1"}, review(contract.VerdictPass)},
			wantRoles: []string{"", "reviewer", "reviewer"},
			wantIters: 3,
		},
		{
			name:      "every N executor iterations",
			every:     2,
			executor:  []contract.IterationResult{workflowtest.Progressed(0, 1), workflowtest.Progressed(0, 2), workflowtest.Progressed(0, 2), claimAll()},
			reviewer:  []contract.IterationResult{review(contract.VerdictFail), review(contract.VerdictPass)},
			wantRoles: []string{"", "", "reviewer", "", "", "reviewer"},
			wantIters: 6,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t)
			sc := byRole(tc.executor, tc.reviewer, nil)
			env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(sc.run)
			in := workflowtest.SessionInput()
			in.Roles = &contract.Roles{Reviewer: reviewer, ReviewEvery: tc.every}
			env.ExecuteWorkflow(session.Session, in)
			require.NoError(t, env.GetWorkflowError())
			var res contract.SessionResult
			require.NoError(t, env.GetWorkflowResult(&res))
			require.Equal(t, contract.ReasonComplete, res.Reason, res.Message)
			require.Equal(t, tc.wantIters, res.Iterations)
			var roles []string
			for _, in := range sc.inputs {
				roles = append(roles, in.Role)
				if in.Role == contract.RoleReviewer {
					require.Equal(t, "codex", in.Agent.Backend, "the reviewer's own agent")
					require.Equal(t, "run make test", in.RoleInstructions)
				} else {
					require.Equal(t, "claude", in.Agent.Command[0])
				}
			}
			require.Equal(t, tc.wantRoles, roles)
			require.Contains(t, res.Message, "passed by the reviewer")
		})
	}
}

func TestNoRolesRunsExecutorsOnly(t *testing.T) {
	env := newEnv(t)
	sc := byRole([]contract.IterationResult{workflowtest.Progressed(0, 1), claimAll()}, nil, nil)
	env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(sc.run)
	env.ExecuteWorkflow(session.Session, workflowtest.SessionInput())
	var res contract.SessionResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, contract.ReasonComplete, res.Reason)
	for _, in := range sc.inputs {
		require.Empty(t, in.Role, "no role in the input of sessions without roles")
	}
}

func TestPlanner(t *testing.T) {
	valid := contract.IterationResult{Outcome: contract.OutcomeSuccess, Commit: "p1", FilesChanged: []string{"prd.json"},
		Plan: &contract.PlanResult{Valid: true, Stories: []contract.StoryBrief{{ID: "US-001", Title: "List", Priority: 1, Criteria: []string{"Typecheck passes"}}}},
		Task: contract.TaskState{Mode: "prd", File: "prd.json", Total: 1, Verifiable: true}}
	invalid := contract.IterationResult{Outcome: contract.OutcomeSuccess, FilesChanged: []string{"prd.json"},
		Plan: &contract.PlanResult{Error: `prd.json: userStories[0] (US-001): "acceptanceCriteria" lacks "Typecheck passes"`}}

	t.Run("three invalid plans end the session", func(t *testing.T) {
		env := newEnv(t)
		sc := byRole(nil, nil, []contract.IterationResult{invalid})
		env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(sc.run)
		in := workflowtest.SessionInput()
		in.Plan = &contract.PlanSettings{Idea: "widgets", Yes: true}
		res := runSession(t, env, in)
		require.Equal(t, contract.ReasonTaskFileInvalid, res.Reason)
		require.Contains(t, res.Message, "in 3 tries")
		require.Len(t, sc.inputs, 3)
		require.Empty(t, sc.inputs[0].Plan.Feedback)
		require.Contains(t, sc.inputs[1].Plan.Feedback, `lacks "Typecheck passes"`, "the planner is told why")
		require.Equal(t, "widgets", sc.inputs[2].Plan.Idea)
	})

	t.Run("--yes takes a valid plan and works on it", func(t *testing.T) {
		env := newEnv(t)
		sc := byRole([]contract.IterationResult{claimAll()}, nil, []contract.IterationResult{invalid, valid})
		env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(sc.run)
		in := workflowtest.SessionInput()
		in.Plan = &contract.PlanSettings{Idea: "widgets", Yes: true}
		res := runSession(t, env, in)
		require.Equal(t, contract.ReasonComplete, res.Reason, res.Message)
		require.Equal(t, []string{"planner", "planner", ""}, []string{sc.inputs[0].Role, sc.inputs[1].Role, sc.inputs[2].Role})
	})

	t.Run("a rejected plan goes back to the planner", func(t *testing.T) {
		env := newEnv(t)
		sc := byRole([]contract.IterationResult{claimAll()}, nil, []contract.IterationResult{valid})
		env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(sc.run)
		in := workflowtest.SessionInput()
		in.Plan = &contract.PlanSettings{Idea: "widgets"}
		env.RegisterDelayedCallback(func() {
			env.SignalWorkflow(contract.SignalCheckpoint, contract.Answer{ID: "cp-1-plan", Reject: true, Reason: "add deletion"})
		}, time.Hour)
		env.RegisterDelayedCallback(func() {
			v, err := env.QueryWorkflow(contract.QueryStatus)
			require.NoError(t, err)
			var st contract.Status
			require.NoError(t, v.Get(&st))
			require.NotNil(t, st.Pending)
			require.Equal(t, "cp-2-plan", st.Pending.ID)
			require.Contains(t, st.Pending.Context, "1. US-001 List")
			require.Len(t, st.Plan, 1, "status shows the plan")
			env.SignalWorkflow(contract.SignalCheckpoint, contract.Answer{ID: "cp-2-plan", Approve: true})
		}, 2*time.Hour)
		res := runSession(t, env, in)
		require.Equal(t, contract.ReasonComplete, res.Reason, res.Message)
		require.Len(t, sc.inputs, 3)
		require.Contains(t, sc.inputs[1].Plan.Feedback, "rejected it: add deletion")
		require.Equal(t, "", sc.inputs[2].Role)
	})
}
