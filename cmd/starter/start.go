package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/sandbox"
	"github.com/durable-ralph/ralph/workflows/session"
)

// startOrAttach starts the session unless one is already running with id.
// previous describes the last session of the workspace when it has ended
// (a new one then starts, with records of its own); with attachOnly no
// session is started.
func startOrAttach(ctx context.Context, c client.Client, taskQueue, id string, in contract.SessionInput, attachOnly bool, check func() error) (attached bool, previous string, err error) {
	desc, err := c.DescribeWorkflowExecution(ctx, id, "")
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
	case err != nil:
		return false, "", fmt.Errorf("describe session %s: %w", id, err)
	case desc.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		return true, "", nil
	default:
		info := desc.GetWorkflowExecutionInfo()
		state := attr(info.GetSearchAttributes().GetIndexedFields(), contract.SearchRalphStatus, executionStatus(info.GetStatus()))
		previous = fmt.Sprintf("%s at %s", state, info.GetCloseTime().AsTime().Local().Format("2006-01-02 15:04"))
	}
	if attachOnly {
		if previous != "" {
			return false, previous, fmt.Errorf("no session is running on %s (the last one ended %s); run without --attach-only to start a new one", in.Workspace, previous)
		}
		return false, "", fmt.Errorf("no session is running on %s; run without --attach-only to start one", in.Workspace)
	}
	// What the session would fail on at once fails here, before it
	// leaves a failed session behind.
	if err := check(); err != nil {
		return false, previous, err
	}
	_, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:        id,
		TaskQueue: taskQueue,
		// A finished session may be started again on the same
		// workspace; a running one is attached to, never duplicated.
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		StaticSummary:            "Ralph session on " + workspaceName(in),
		StaticDetails:            "Workspace: `" + in.Workspace + "`" + onHost(in.Host),
		TypedSearchAttributes:    sessionAttributes(in),
	}, session.Session, in)
	if err != nil {
		return false, previous, fmt.Errorf("start session %s: %w", id, err)
	}
	return false, previous, nil
}

// checkLocally checks, on this machine, what the session's first
// activity would: the workspace (activities.CheckWorkspace), prd.json's
// branchName, which the first activity checks out, and, when this
// process is the worker, the binaries of its agents (every role's). A
// work tree that is not made yet is checked in its clone, whose HEAD it
// will start from.
func checkLocally(ctx context.Context, in contract.SessionInput, isWorker bool) error {
	check := startCheck(in)
	if wt := in.Worktree; wt != nil {
		if _, err := os.Stat(wt.Dir()); err != nil {
			check.Workspace, check.Git.AllowDirty = wt.Clone, true
		}
	}
	if err := activities.CheckStart(ctx, check); err != nil {
		return err
	}
	if isWorker {
		return lookAgents(agentsOf(in))
	}
	return nil
}

// startCheck is what the start-up check of in's workspace checks.
func startCheck(in contract.SessionInput) contract.PrepareInput {
	return contract.PrepareInput{Workspace: in.Workspace, Task: in.Task, Git: in.Git, Planning: in.Plan != nil, Worktree: in.Worktree}
}

// workspaceExists reports whether the workspace of in (the clone of a
// work tree) is a directory of this machine.
func workspaceExists(in contract.SessionInput) bool {
	dir := in.Workspace
	if wt := in.Worktree; wt != nil {
		dir = wt.Clone
	}
	fi, err := os.Stat(dir)
	return err == nil && fi.IsDir()
}

// needSandbox refuses a session whose agent.sandbox s is required when
// agents cannot run contained on this machine (problem says why, as
// ralph.SandboxProblem does): its first iteration would fail
// (SandboxUnavailable), after the session had switched the workspace's
// branch.
func needSandbox(s contract.SandboxSettings, problem func(contract.SandboxSettings) error) error {
	if s.Mode != sandbox.ModeRequired {
		return nil
	}
	err := problem(s)
	if err == nil {
		return nil
	}
	return temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("agent.sandbox is required, but agents cannot run contained on this machine: %s", strings.TrimPrefix(err.Error(), sandbox.ErrUnavailable.Error()+": ")),
		contract.ErrTypeSandboxUnavailable, err)
}

// lookAgents looks the binaries of agents up on this process's PATH,
// for when this process is their worker.
func lookAgents(agents []contract.AgentSettings) error {
	for _, a := range agents {
		if len(a.Command) == 0 {
			continue
		}
		if _, err := exec.LookPath(a.Command[0]); err != nil {
			backend := a.Backend
			if backend == "" {
				backend = activities.DefaultBackend
			}
			return temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("agent binary %q not found on PATH", a.Command[0]), contract.ErrTypeAgentNotFound, nil,
				contract.AgentProblem{Backend: backend, Binary: a.Command[0]})
		}
	}
	return nil
}

// onHost is the host part of a session's static details.
func onHost(host string) string {
	if host == "" {
		return ""
	}
	return " on host `" + host + "`"
}

// sessionAttributes are the search attributes a session starts with: its
// host, so that it is found by host before its first activity runs.
func sessionAttributes(in contract.SessionInput) temporal.SearchAttributes {
	if in.Host == "" {
		return temporal.SearchAttributes{}
	}
	return temporal.NewSearchAttributes(temporal.NewSearchAttributeKeyKeyword(contract.SearchRalphHost).ValueSet(in.Host))
}
