package preflight_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/workflows/preflight"
)

// a names the worker's activities by their methods; it is never called.
var a *activities.Agent

// TestAgentPreflight: the preflight runs its check once, on the host's
// queue, within the pickup bound, and hands its answer or its failure on.
func TestAgentPreflight(t *testing.T) {
	notFound := temporal.NewNonRetryableApplicationError(`agent binary "codex" (backend codex) not found`,
		contract.ErrTypeAgentNotFound, nil, contract.AgentProblem{Backend: "codex", Binary: "codex"})
	tests := []struct {
		name    string
		host    string
		err     error
		queue   string
		errType string
		timeout enumspb.TimeoutType
	}{
		{name: "on_the_host_queue", host: "box-1", queue: contract.HostTaskQueue("default-test-taskqueue", "box-1")},
		{name: "legacy_session_on_the_shared_queue", queue: "default-test-taskqueue"},
		{name: "agent_missing", host: "box-1", err: notFound, errType: contract.ErrTypeAgentNotFound},
		{name: "no_worker_takes_it", host: "box-1", err: temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START, nil),
			timeout: enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestWorkflowEnvironment()
			env.RegisterWorkflow(preflight.AgentPreflight)
			var queue string
			var bound time.Duration
			calls := 0
			env.OnActivity(a.CheckAgents, mock.Anything, mock.Anything).Return(
				func(ctx context.Context, in contract.AgentPreflightInput) (contract.AgentPreflightResult, error) {
					calls++
					info := activity.GetInfo(ctx)
					queue = info.TaskQueue
					bound = info.ScheduleToCloseTimeout
					if tt.err != nil {
						return contract.AgentPreflightResult{}, tt.err
					}
					return contract.AgentPreflightResult{Host: in.Host, Agents: []contract.AgentCheck{{Backend: "claude", Binary: "claude"}}}, nil
				})
			env.ExecuteWorkflow(preflight.AgentPreflight, contract.AgentPreflightInput{
				Host: tt.host, Agents: []contract.AgentSettings{{Command: []string{"claude"}}}})
			require.True(t, env.IsWorkflowCompleted())
			require.Equal(t, 1, calls, "never retried")
			require.Positive(t, bound, "bounded")
			err := env.GetWorkflowError()
			switch {
			case tt.errType != "":
				var appErr *temporal.ApplicationError
				require.ErrorAs(t, err, &appErr)
				require.Equal(t, tt.errType, appErr.Type())
			case tt.timeout != enumspb.TIMEOUT_TYPE_UNSPECIFIED:
				var timeout *temporal.TimeoutError
				require.True(t, errors.As(err, &timeout), "%v", err)
				require.Equal(t, tt.timeout, timeout.TimeoutType())
			default:
				require.NoError(t, err)
				require.Equal(t, tt.queue, queue)
				var res contract.AgentPreflightResult
				require.NoError(t, env.GetWorkflowResult(&res))
				require.Len(t, res.Agents, 1)
			}
		})
	}
}
