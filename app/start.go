package app

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/sandbox"
)

// SessionStartOptions are the options a session of in starts with under
// id, whoever starts it (starter run, a chat's /run): a finished session
// may be started again on the same workspace; a running one is attached
// to, never doubled.
func SessionStartOptions(id, taskQueue string, in contract.SessionInput) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                taskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		StaticSummary:            "Ralph session on " + WorkspaceName(in),
		StaticDetails:            "Workspace: `" + in.Workspace + "`" + OnHost(in.Host),
		TypedSearchAttributes:    SessionAttributes(in),
	}
}

// AgentsOf are the agents a session started with in runs, each once: the
// executor's, the reviewer's and the planner's (when the session plans).
func AgentsOf(in contract.SessionInput) []contract.AgentSettings {
	roles := []string{contract.RoleExecutor}
	if in.Roles != nil && in.Roles.Reviewer != nil {
		roles = append(roles, contract.RoleReviewer)
	}
	if in.Plan != nil {
		roles = append(roles, contract.RolePlanner)
	}
	var agents []contract.AgentSettings
	for _, role := range roles {
		a := in.AgentOf(role).Agent
		if !slices.ContainsFunc(agents, func(b contract.AgentSettings) bool {
			return b.Backend == a.Backend && slices.Equal(b.Command, a.Command)
		}) {
			agents = append(agents, a)
		}
	}
	return agents
}

// WorkspaceName names in's workspace for a person: its directory, or the
// work tree and its clone.
func WorkspaceName(in contract.SessionInput) string {
	if wt := in.Worktree; wt != nil {
		return fmt.Sprintf("%s (work tree %s, branch %s)", filepath.Base(wt.Clone), wt.Name, wt.Branch())
	}
	return filepath.Base(in.Workspace)
}

// CheckStart checks, on this machine, what the session's first
// activity would: the workspace (activities.CheckWorkspace), prd.json's
// branchName, which the first activity checks out, and, when this
// process is the worker, the binaries of its agents (every role's). A
// work tree that is not made yet is checked in its clone, whose HEAD it
// will start from.
func CheckStart(ctx context.Context, in contract.SessionInput, isWorker bool) error {
	check := StartCheck(in)
	if wt := in.Worktree; wt != nil {
		if _, err := os.Stat(wt.Dir()); err != nil {
			check.Workspace, check.Git.AllowDirty = wt.Clone, true
		}
	}
	if err := activities.CheckStart(ctx, check); err != nil {
		return err
	}
	if isWorker {
		return LookAgents(AgentsOf(in))
	}
	return nil
}

// StartCheck is what the start-up check of in's workspace checks.
func StartCheck(in contract.SessionInput) contract.PrepareInput {
	return contract.PrepareInput{Workspace: in.Workspace, Task: in.Task, Git: in.Git, Planning: in.Plan != nil, Worktree: in.Worktree}
}

// WorkspaceExists reports whether the workspace of in (the clone of a
// work tree) is a directory of this machine.
func WorkspaceExists(in contract.SessionInput) bool {
	dir := in.Workspace
	if wt := in.Worktree; wt != nil {
		dir = wt.Clone
	}
	fi, err := os.Stat(dir)
	return err == nil && fi.IsDir()
}

// NeedSandbox refuses a session whose agent.sandbox s is required when
// agents cannot run contained on this machine (problem says why, as
// ralph.SandboxProblem does): its first iteration would fail
// (SandboxUnavailable), after the session had switched the workspace's
// branch.
func NeedSandbox(s contract.SandboxSettings, problem func(contract.SandboxSettings) error) error {
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

// LookAgents looks the binaries of agents up on this process's PATH,
// for when this process is their worker.
func LookAgents(agents []contract.AgentSettings) error {
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

// OnHost is the host part of a session's static details.
func OnHost(host string) string {
	if host == "" {
		return ""
	}
	return " on host `" + host + "`"
}

// SessionAttributes are the search attributes a session starts with: its
// host, so that it is found by host before its first activity runs.
func SessionAttributes(in contract.SessionInput) temporal.SearchAttributes {
	if in.Host == "" {
		return temporal.SearchAttributes{}
	}
	return temporal.NewSearchAttributes(temporal.NewSearchAttributeKeyKeyword(contract.SearchRalphHost).ValueSet(in.Host))
}
