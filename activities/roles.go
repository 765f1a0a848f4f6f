package activities

import (
	"context"
	"fmt"
	"strings"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/git"
	"github.com/durable-ralph/ralph/tasks"
)

// review turns a reviewer's run into its verdict. A reviewer may not
// change the workspace: when HEAD moved or a file changed since start
// (the workspace as the reviewer found it, uncommitted work of the
// executors included), start is put back and the review fails, whatever
// the reviewer said.
func (a *Agent) review(ctx context.Context, repo *git.Repo, in contract.IterationInput, mode contract.Mode, start contract.Snapshot, finalText string, res *contract.IterationResult) error {
	if st, err := tasks.Load(in.Workspace, mode); err == nil {
		res.Task = taskState(st)
	}
	changed, moved, err := repo.Changed(ctx, start)
	if err != nil {
		return fmt.Errorf("compare the workspace with the review's start: %w", err)
	}
	res.Head = start.Head
	if len(changed) > 0 || moved {
		if err := repo.Restore(ctx, start); err != nil {
			return fmt.Errorf("discard the reviewer's changes: %w", err)
		}
	}
	if res.Outcome != contract.OutcomeSuccess {
		return nil // a reviewer that failed gave no verdict
	}
	if len(changed) > 0 || moved {
		if len(changed) == 0 {
			changed = []string{"HEAD moved"}
		}
		res.Review = &contract.ReviewResult{
			Verdict: contract.VerdictFail,
			Changed: changed,
			Reasons: fmt.Sprintf("The reviewer changed the workspace (%s), which a review must not do; Ralph discarded the changes, and the review failed.",
				strings.Join(firstFew(changed, 10), ", ")),
		}
	} else if verdict, reasons, ok := tasks.ParseVerdict(finalText); ok {
		res.Review = &contract.ReviewResult{Verdict: verdict, Reasons: reasons}
	} else {
		res.Review = &contract.ReviewResult{Verdict: contract.VerdictFail,
			Reasons: "The reviewer ended without a verdict (<verdict>pass</verdict> or <verdict>fail</verdict>), so the work is not confirmed. Its last words: " + truncate(finalText, 600)}
	}
	if !res.Review.Passed() {
		res.Notices = append(res.Notices, fmt.Sprintf(
			"The reviewer of iteration %d checked the work against the acceptance criteria and failed it. Fix what it found, then check the criteria yourself before you claim completion again:\n%s",
			in.Iteration, res.Review.Reasons))
	}
	return nil
}

// checkPlan checks the prd.json a planner left: a valid plan is
// committed by finishCommit; an invalid one is left in the tree for the
// next planner iteration, which is told why.
func (a *Agent) checkPlan(ctx context.Context, repo *git.Repo, in contract.IterationInput, startHead string, res *contract.IterationResult) error {
	if _, err := recordChanges(ctx, repo, startHead, res); err != nil {
		return err
	}
	if res.Outcome != contract.OutcomeSuccess {
		return nil
	}
	st, stories, err := tasks.ValidatePlan(in.Workspace)
	if err != nil {
		res.Plan = &contract.PlanResult{Error: err.Error()}
		return nil
	}
	res.Plan = &contract.PlanResult{Valid: true, Stories: stories}
	res.Task = taskState(st)
	return nil
}

// recordChanges records in res what the iteration changed since
// startHead, and returns the uncommitted paths it found.
func recordChanges(ctx context.Context, repo *git.Repo, startHead string, res *contract.IterationResult) ([]string, error) {
	head, err := repo.Head(ctx)
	if err != nil {
		return nil, err
	}
	res.Head = head
	if head != startHead {
		if res.AgentCommits, err = repo.CountCommits(ctx, startHead); err != nil {
			return nil, fmt.Errorf("count agent commits: %w", err)
		}
	}
	files, pending, err := changes(ctx, repo, startHead)
	res.FilesChanged = files
	return pending, err
}

// changedFiles are the files changed since startHead, committed or not.
func changedFiles(ctx context.Context, repo *git.Repo, startHead string) ([]string, error) {
	files, _, err := changes(ctx, repo, startHead)
	return files, err
}

// changes are the files changed since startHead, committed or not, and
// those not committed.
func changes(ctx context.Context, repo *git.Repo, startHead string) (files, pending []string, err error) {
	committed, err := repo.ChangedSince(ctx, startHead)
	if err != nil {
		return nil, nil, fmt.Errorf("list committed changes: %w", err)
	}
	if pending, err = repo.Status(ctx); err != nil {
		return nil, nil, fmt.Errorf("git status: %w", err)
	}
	return union(committed, pending), pending, nil
}

// planPrompt is the prompt of a planner iteration.
func (a *Agent) planPrompt(in contract.IterationInput) string {
	pin := tasks.PlanInput{RoleInput: tasks.RoleInput{
		PromptInput: tasks.PromptInput{
			Mode:      contract.ModePRD,
			Iteration: in.Iteration,
			Guidance:  in.Guidance,
			Notices:   in.Notices,
			Rules:     in.Task.Rules,
		},
		RoleInstructions: in.RoleInstructions,
	}}
	if in.Plan != nil {
		pin.Idea, pin.Feedback = in.Plan.Idea, in.Plan.Feedback
	}
	if text, err := tasks.LoadInstructions(in.Workspace, in.Task.InstructionsFile); err == nil {
		pin.Instructions, pin.InstructionsFile = text, in.Task.InstructionsFile
	}
	return tasks.BuildPlanPrompt(in.Workspace, pin)
}

// firstFew is the first n of list, and how many more there are.
func firstFew(list []string, n int) []string {
	if len(list) <= n {
		return list
	}
	return append(list[:n:n], fmt.Sprintf("and %d more", len(list)-n))
}
