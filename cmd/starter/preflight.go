package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/app"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/workflows/preflight"
)

// preflightSlack is how long a preflight may take beyond its own bounds
// (the pickup and each agent's --version): its workflow's start and end.
const preflightSlack = 10 * time.Second

// preflight checks, on the worker of host (the AgentPreflight workflow,
// whose activity runs on the host's task queue), that the agents can run
// there, and the workspace when it is given (one this machine cannot
// see), before anything starts. A host no worker polls is not checked:
// a session started for it waits, host_offline, until one does (the
// caller warns). An agent the worker cannot run, or a worker that polled
// lately but does not take the check, is an error; a check that cannot
// be made otherwise (a worker of an older version) is a warning.
func (cctx *commandContext) preflight(conn *connection, host string, agents []contract.AgentSettings, workspace *contract.PrepareInput) error {
	if seen, err := workerSeen(cctx, conn.client, conn.cfg.TaskQueue, host); err != nil || !seen {
		return nil
	}
	in := contract.AgentPreflightInput{Host: host, Agents: agents, Pickup: contract.DefaultPreflightPickup, Workspace: workspace}
	err := cctx.checkOnHost(conn, in)
	var timeout *temporal.TimeoutError
	if errors.As(err, &timeout) && cctx.Err() == nil {
		// A worker that polled lately may be busy, or stopped for a
		// moment (a suspended laptop, SIGSTOP): it gets as long again.
		fmt.Fprintf(cctx.stderr, "The worker of host %s has not answered the check in time (busy, or stopped a moment): waiting as long again\n", host)
		err = cctx.checkOnHost(conn, in)
	}
	if err == nil {
		return nil
	}
	if cctx.Err() != nil {
		return cctx.Err()
	}
	return cctx.preflightFailed(conn, host, err)
}

// checkOnHost runs the AgentPreflight workflow of in once and returns
// its error; one it could not start is a warning, nil.
func (cctx *commandContext) checkOnHost(conn *connection, in contract.AgentPreflightInput) error {
	host, agents := in.Host, in.Agents
	bound := in.Pickup + time.Duration(len(agents))*contract.PreflightVersionTimeout + preflightSlack
	ctx, cancel := context.WithTimeout(cctx, bound+5*time.Second)
	defer cancel()
	run, err := conn.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       contract.PreflightWorkflowID(host, uniqueSuffix()),
		TaskQueue:                conn.cfg.TaskQueue,
		WorkflowExecutionTimeout: bound,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		StaticSummary:            "Ralph preflight of a session's agents" + app.OnHost(host),
	}, preflight.AgentPreflight, in)
	if err != nil {
		fmt.Fprintf(cctx.stderr, "warning: could not check the agents on the worker of host %s: %v\n", host, err)
		return nil
	}
	var res contract.AgentPreflightResult
	return run.Get(ctx, &res)
}

// preflightFailed is what a failed preflight of host's agents means: the
// agent's own failure or the workspace's (what keeps the session from
// starting there), no worker that takes the check (an error), or a check
// that could not be made (a warning, nil).
func (cctx *commandContext) preflightFailed(conn *connection, host string, err error) error {
	if ae, ok := errors.AsType[*temporal.ApplicationError](err); ok {
		switch ae.Type() {
		case contract.ErrTypeAgentNotFound, contract.ErrTypeAgentUnusable, contract.ErrTypeInvalidAgentConfig,
			contract.ErrTypeInvalidWorkspace, contract.ErrTypeDirtyWorkspace, contract.ErrTypeInvalidTaskFile,
			contract.ErrTypeSandboxUnavailable, contract.ErrTypeUnsafeRepository:
			return err
		}
	}
	var timeout *temporal.TimeoutError
	if errors.As(err, &timeout) || errors.Is(err, context.DeadlineExceeded) {
		return errors.New(noWorkerNote(conn, host))
	}
	fmt.Fprintf(cctx.stderr, "warning: could not check the agents on the worker of host %s (%s): starting anyway\n", host, cctx.explain(err))
	return nil
}

// uniqueSuffix is a random suffix for a workflow ID.
func uniqueSuffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24)
	return hex.EncodeToString(b)
}
