package app

import (
	"context"
	"errors"
	"fmt"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/config"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/words"
	"github.com/durable-ralph/ralph/workflows/session"
)

// chatRunMemo is the memo field that holds the chat update a session was
// started for: a retried /run finds its own session.
const chatRunMemo = "ralph-chat-update"

// ChatRunner plans and runs, for a chat's /run ALIAS IDEA, a session on
// the workspace the worker's notify.workspaces names ALIAS: with that
// workspace's configuration, as `starter plan IDEA DIR` on this machine
// would (the user's and the workspace's files, the environment, the
// trust check), the plan waiting for a person's approval. The alias
// comes from the message; the directory never does.
type ChatRunner struct {
	// Client starts the sessions, on TaskQueue.
	Client    client.Client
	TaskQueue string
	// Notify is the worker's notify.* (its workspaces).
	Notify config.NotifyConfig
	// Host is the worker's host ID: the session runs here.
	Host string
	// Load loads a workspace's configuration (config.Load with no flags).
	Load func(workspace string) (config.Config, error)
	// Converter reads the memo of a session (the client's; nil is the
	// default, without encryption).
	Converter converter.DataConverter
}

// Run starts the session in asks for, or says why it does not.
func (r *ChatRunner) Run(ctx context.Context, in contract.ChatRun) (contract.ChatRunResult, error) {
	dir, ok := r.Notify.Workspace(in.Alias)
	if !ok {
		known := "none is configured (notify.workspaces)"
		if aliases := r.Notify.Aliases(); len(aliases) > 0 {
			known = "the workspaces are " + strings.Join(aliases, ", ")
		}
		return refused(fmt.Sprintf("No workspace is called %q here: %s.", words.Clip(in.Alias, 40), known)), nil
	}
	sin, err := r.input(ctx, dir, in)
	if err != nil {
		return refused(fmt.Sprintf("Could not plan in %s: %s", in.Alias, err)), nil
	}
	id := contract.SessionWorkflowID(sin.Host, sin.Workspace)
	opts := SessionStartOptions(id, r.TaskQueue, sin)
	opts.WorkflowIDConflictPolicy = enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL
	opts.WorkflowExecutionErrorWhenAlreadyStarted = true // or the SDK answers with the running one
	opts.Memo = map[string]any{chatRunMemo: in.UpdateID}
	opts.StaticSummary += fmt.Sprintf(" (asked in %s by %s)", in.Via, in.By)
	_, err = r.Client.ExecuteWorkflow(ctx, opts, session.Session, sin)
	switch {
	case err == nil:
	case temporal.IsWorkflowExecutionAlreadyStartedError(err):
		if mine, derr := r.startedFor(ctx, id, in.UpdateID); derr != nil {
			return contract.ChatRunResult{}, derr
		} else if !mine {
			return refused(fmt.Sprintf("A session already runs in %s (%s): answer or guide it by replying to its messages, or /stop it first.", in.Alias, id)), nil
		}
	default:
		return contract.ChatRunResult{}, fmt.Errorf("start session %s: %w", id, err)
	}
	return contract.ChatRunResult{Started: true, WorkflowID: id, Message: fmt.Sprintf(
		"Planning in %s (session %s): %s\nThe plan comes here to approve before anything runs.", in.Alias, id, words.Clip(in.Idea, 200))}, nil
}

// input is the input of the session that plans in.Idea in dir, checked
// as starter checks a session it starts on its own worker's machine.
func (r *ChatRunner) input(ctx context.Context, dir string, in contract.ChatRun) (contract.SessionInput, error) {
	cfg, err := r.Load(dir)
	if err != nil {
		return contract.SessionInput{}, err
	}
	if err := cfg.CheckWorkspaceTrusted(); err != nil {
		return contract.SessionInput{}, err
	}
	sin, err := SessionInput(cfg, dir)
	if err != nil {
		return sin, err
	}
	sin.Host = r.Host
	sin.Plan = &contract.PlanSettings{Idea: in.Idea}
	if !WorkspaceExists(sin) {
		return sin, fmt.Errorf("%s is not a directory on this worker's machine", sin.Workspace)
	}
	if err := CheckStart(ctx, sin, true); err != nil {
		return sin, err
	}
	return sin, NeedSandbox(sin.Agent.Sandbox, SandboxProblem)
}

// startedFor reports whether the running session id was started for the
// chat update updateID.
func (r *ChatRunner) startedFor(ctx context.Context, id, updateID string) (bool, error) {
	desc, err := r.Client.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return false, fmt.Errorf("describe session %s: %w", id, err)
	}
	p := desc.GetWorkflowExecutionInfo().GetMemo().GetFields()[chatRunMemo]
	if p == nil {
		return false, nil
	}
	var got string
	conv := r.Converter
	if conv == nil {
		conv = converter.GetDefaultDataConverter()
	}
	if err := conv.FromPayload(p, &got); err != nil {
		return false, errors.Join(fmt.Errorf("read the memo of %s", id), err)
	}
	return got == updateID, nil
}

// refused is a /run that starts nothing, and why.
func refused(why string) contract.ChatRunResult { return contract.ChatRunResult{Message: why} }
