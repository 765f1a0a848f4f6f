// Package preflight holds the AgentPreflight workflow: the check, on the
// worker of the host a session will run on, that its agents can run there.
package preflight

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/contract"
)

// preflightRun bounds the check itself once a worker took it: every
// agent's --version, one after the other.
const preflightRun = time.Minute

// AgentPreflight checks, on the worker of in.Host, that the agents of a
// session about to start can run there (the CheckAgents activity, once).
// A client cannot run an activity itself, so the starter runs this
// short workflow and starts the session only when it succeeds. A worker
// of the host that does not take the check within in.Pickup fails it
// with a schedule-to-start timeout: no worker runs for the host.
func AgentPreflight(ctx workflow.Context, in contract.AgentPreflightInput) (contract.AgentPreflightResult, error) {
	pickup := in.Pickup
	if pickup <= 0 {
		pickup = contract.DefaultPreflightPickup
	}
	opts := workflow.ActivityOptions{
		TaskQueue:              workflow.GetInfo(ctx).TaskQueueName,
		ScheduleToStartTimeout: pickup,
		StartToCloseTimeout:    preflightRun,
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 1},
		Summary:                "check the session's agents",
	}
	if in.Host != "" {
		opts.TaskQueue = contract.HostTaskQueue(opts.TaskQueue, in.Host)
	}
	var res contract.AgentPreflightResult
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), contract.ActivityCheckAgents, in).Get(ctx, &res)
	return res, err
}
