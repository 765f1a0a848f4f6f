package session_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/workflows/session"
	"github.com/durable-ralph/ralph/workflows/workflowtest"
)

func TestSessionWaitsForItsHost(t *testing.T) {
	env := newEnv(t)
	var queues []string
	s := &script{results: []func(contract.IterationInput) (contract.IterationResult, error){
		// Nobody on box-1 took the iteration in time; a dead attempt
		// had started the agent.
		func(contract.IterationInput) (contract.IterationResult, error) {
			return contract.IterationResult{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START, nil,
				contract.Progress{Attempt: 2, Iteration: 1, StartHead: "abc123", AgentSessionID: "agent-1"})
		},
		ok(workflowtest.Progressed(0, 1)), ok(workflowtest.Progressed(0, 2)),
		claims,
	}}
	env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in contract.IterationInput) (contract.IterationResult, error) {
			queues = append(queues, activity.GetInfo(ctx).TaskQueue)
			return s.run(ctx, in)
		})
	var probes int
	env.OnActivity(a.HostReady, mock.Anything).Return(func(ctx context.Context) (string, error) {
		probes++
		queues = append(queues, activity.GetInfo(ctx).TaskQueue)
		return "box-1", nil
	}).After(10 * time.Minute)
	var offline contract.Status
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(contract.QueryStatus)
		require.NoError(t, err)
		require.NoError(t, v.Get(&offline))
	}, 5*time.Minute)

	in := workflowtest.SessionInput()
	in.Host = "box-1"
	in.HostTimeout = time.Minute
	res := runSession(t, env, in)

	require.Equal(t, contract.StateHostOffline, offline.State)
	require.Equal(t, "box-1", offline.Host)
	require.Equal(t, 1, offline.Iteration)
	require.Equal(t, contract.ReasonComplete, res.Reason, res.Message)
	require.Equal(t, 3, res.Iterations, "the iteration its host missed is run again, not counted twice")
	require.Equal(t, 0, res.Totals.Failures, "a host that went away is not a failed iteration")
	require.Equal(t, 1, probes)
	require.Len(t, s.inputs, 4)
	require.Equal(t, 1, s.inputs[1].Iteration)
	require.Nil(t, s.inputs[0].Resume)
	require.NotNil(t, s.inputs[1].Resume, "the next try goes on from the dead attempt's progress")
	require.Equal(t, "agent-1", s.inputs[1].Resume.AgentSessionID)
	require.Equal(t, "abc123", s.inputs[1].Resume.StartHead)
	require.Nil(t, s.inputs[2].Resume)
	for _, q := range queues {
		require.Equal(t, contract.HostTaskQueue("default-test-taskqueue", "box-1"), q)
	}
}

func TestSessionShowsItWaitsForAnAgentSlot(t *testing.T) {
	env := newEnv(t)
	var queue string
	env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in contract.IterationInput) (contract.IterationResult, error) {
			queue = activity.GetInfo(ctx).TaskQueue
			r := workflowtest.Progressed(in.Iteration, 3)
			r.CompletionClaimed = true
			return r, nil
		}).After(10 * time.Minute)
	states := map[time.Duration]contract.State{}
	signal := func(at time.Duration, slot contract.AgentSlot) {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(contract.SignalAgentSlot, slot) }, at)
	}
	query := func(at time.Duration) {
		env.RegisterDelayedCallback(func() {
			v, err := env.QueryWorkflow(contract.QueryStatus)
			require.NoError(t, err)
			var st contract.Status
			require.NoError(t, v.Get(&st))
			states[at] = st.State
		}, at)
	}
	signal(time.Minute, contract.AgentSlot{Iteration: 1, Waiting: true, Running: 4, Max: 4})
	query(2 * time.Minute)
	signal(3*time.Minute, contract.AgentSlot{Iteration: 7, Waiting: true}) // not this iteration's
	query(4 * time.Minute)
	signal(5*time.Minute, contract.AgentSlot{Iteration: 1, Waiting: false})
	query(6 * time.Minute)

	env.ExecuteWorkflow(session.Session, workflowtest.SessionInput())
	var res contract.SessionResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, contract.ReasonComplete, res.Reason)
	require.Equal(t, map[time.Duration]contract.State{
		2 * time.Minute: contract.StateWaitingForAgentSlot,
		4 * time.Minute: contract.StateWaitingForAgentSlot,
		6 * time.Minute: contract.StateRunning,
	}, states)
	require.Equal(t, "default-test-taskqueue", queue, "a session without a host keeps its activities on its own queue")
}

func TestWorkflowIDs(t *testing.T) {
	for _, tc := range []struct {
		name, got, want string
	}{
		{"session", contract.SessionWorkflowID("box-1", "/work/app"), contract.LegacySessionWorkflowID("/work/app") + "@box-1"},
		{"legacy session", contract.SessionWorkflowID("", "/work/app"), contract.LegacySessionWorkflowID("/work/app")},
		{"queue", contract.QueueWorkflowID("box-1", "acme", "app"), "ralph-queue-acme-app@box-1"},
		{"legacy queue", contract.QueueWorkflowID("", "acme", "app"), "ralph-queue-acme-app"},
		{"issue", contract.IssueSessionID("box-1", "acme", "app", 7), "ralph-acme-app-issue-7@box-1"},
		{"legacy issue", contract.IssueSessionID("", "acme", "app", 7), "ralph-acme-app-issue-7"},
	} {
		t.Run(tc.name, func(t *testing.T) { require.Equal(t, tc.want, tc.got) })
	}
	require.NotEqual(t, contract.SessionWorkflowID("box-1", "/work/app"), contract.SessionWorkflowID("box-2", "/work/app"),
		"the same path on two machines is two sessions")
}

func TestSessionStoppedWhileItsHostIsOffline(t *testing.T) {
	env := newEnv(t)
	var ran int
	env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in contract.IterationInput) (contract.IterationResult, error) {
			ran++
			if ran == 1 {
				return workflowtest.Progressed(in.Iteration, 1), nil
			}
			return contract.IterationResult{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START, nil)
		})
	// The host never comes back.
	env.OnActivity(a.HostReady, mock.Anything).Return("box-1", nil).After(1000 * time.Hour)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(contract.SignalStop, contract.StopSignal{Reason: "box-1 is gone"})
	}, time.Hour)

	in := workflowtest.SessionInput()
	in.Host = "box-1"
	in.Limits.MaxRuntime = 0
	res := runSession(t, env, in)
	require.Equal(t, contract.ReasonStopped, res.Reason)
	require.Equal(t, "stop requested: box-1 is gone while host box-1 was offline (iteration 2 did not run)", res.Message)
	require.Equal(t, 1, res.Iterations, "the iteration that never ran is not counted")
	require.Equal(t, 0, res.Totals.Failures)
}

func TestSessionWaitsOnWhenAgentSlotsStayBusy(t *testing.T) {
	env := newEnv(t)
	s := &script{results: []func(contract.IterationInput) (contract.IterationResult, error){
		func(contract.IterationInput) (contract.IterationResult, error) {
			return contract.IterationResult{}, temporal.NewApplicationErrorWithOptions("all 4 agent slots of this worker stayed in use for 1m30s",
				contract.ErrTypeAgentSlotBusy, temporal.ApplicationErrorOptions{NonRetryable: true,
					Details: []any{contract.Progress{Iteration: 1, StartHead: "abc123", AgentSessionID: "agent-1"}}})
		},
		claims,
	}}
	env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(s.run)
	in := workflowtest.SessionInput()
	in.Host = "box-1"
	res := runSession(t, env, in)
	require.Equal(t, contract.ReasonComplete, res.Reason, res.Message)
	require.Equal(t, 1, res.Iterations)
	require.Equal(t, 0, res.Totals.Failures, "busy slots are not a failed iteration")
	require.Len(t, s.inputs, 2)
	require.Equal(t, 1, s.inputs[1].Iteration)
	require.NotNil(t, s.inputs[1].Resume)
	require.Equal(t, "agent-1", s.inputs[1].Resume.AgentSessionID)
}
