package activities

import (
	"context"

	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/tasks"
)

// prompt is the prompt of the iteration in: the planner's, a repair of
// the task file the last agent broke (loadErr), a reviewer's, or the
// executor's.
func (a *Agent) prompt(in contract.IterationInput, mode contract.Mode, promise string, st tasks.State, loadErr error) (string, error) {
	if in.RoleOf() == contract.RolePlanner {
		return a.planPrompt(in), nil
	}
	pin := tasks.PromptInput{
		Mode:              mode,
		State:             st,
		Iteration:         in.Iteration,
		MaxIterations:     in.MaxIterations,
		CompletionPromise: promise,
		Guidance:          in.Guidance,
		Notices:           in.Notices,
		MemoriesFile:      in.Task.MemoriesFile,
		Rules:             in.Task.Rules,
		InstructionsFile:  in.Task.InstructionsFile,
		AgentsFile:        tasks.AgentsFileOf(in.Workspace),
	}
	var err error
	if pin.Instructions, err = tasks.LoadInstructions(in.Workspace, in.Task.InstructionsFile); err != nil {
		return "", temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrTypeInvalidTaskFile, err)
	}
	if mode == contract.ModeIssue {
		pin.Learnings, err = tasks.LoadMemories(in.Task.MemoriesFile, tasks.MemoriesLimit)
	} else {
		pin.Learnings, err = tasks.LoadLearnings(in.Workspace, mode, 8<<10)
	}
	if err != nil {
		return "", invalidTaskFile(err)
	}
	if loadErr != nil {
		if in.RoleOf() == contract.RoleReviewer {
			// Nothing to review against; the reviewer says so.
			return "", invalidTaskFile(loadErr)
		}
		// The agent broke the task file: this iteration repairs it.
		return tasks.BuildRepairPrompt(in.Workspace, pin, loadErr), nil
	}
	if in.RoleOf() == contract.RoleReviewer {
		return tasks.BuildReviewPrompt(in.Workspace, tasks.RoleInput{PromptInput: pin, RoleInstructions: in.RoleInstructions})
	}
	return tasks.BuildPrompt(in.Workspace, pin)
}

// Prompt is the prompt the iteration in would give its agent, built as
// RunIteration builds it, without running anything.
func Prompt(ctx context.Context, in contract.IterationInput) (string, error) {
	mode, promise, err := resolveTask(in.Workspace, in.Task)
	if err != nil {
		return "", err
	}
	st, loadErr := tasks.Load(in.Workspace, mode)
	return (&Agent{}).prompt(in, mode, promise, st, loadErr)
}
