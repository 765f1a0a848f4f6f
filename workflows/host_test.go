package workflows_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/workflows"
)

func TestSessionWaitsForItsHost(t *testing.T) {
	env := newEnv(t)
	var queues []string
	s := &script{results: []func(activities.IterationInput) (activities.IterationResult, error){
		// Nobody on box-1 took the iteration in time; a dead attempt
		// had started the agent.
		func(activities.IterationInput) (activities.IterationResult, error) {
			return activities.IterationResult{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START, nil,
				activities.Progress{Attempt: 2, Iteration: 1, StartHead: "abc123", AgentSessionID: "agent-1"})
		},
		ok(progressed(0, 1)), ok(progressed(0, 2)),
		func(in activities.IterationInput) (activities.IterationResult, error) {
			r := progressed(in.Iteration, 3)
			r.CompletionClaimed = true
			return r, nil
		},
	}}
	env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.IterationInput) (activities.IterationResult, error) {
			queues = append(queues, activity.GetInfo(ctx).TaskQueue)
			return s.run(ctx, in)
		})
	var probes int
	env.OnActivity(a.HostReady, mock.Anything).Return(func(ctx context.Context) (string, error) {
		probes++
		queues = append(queues, activity.GetInfo(ctx).TaskQueue)
		return "box-1", nil
	}).After(10 * time.Minute)
	var offline workflows.Status
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(workflows.QueryStatus)
		require.NoError(t, err)
		require.NoError(t, v.Get(&offline))
	}, 5*time.Minute)

	in := baseInput()
	in.Host = "box-1"
	in.HostTimeout = time.Minute
	env.ExecuteWorkflow(workflows.Session, in)
	var res workflows.SessionResult
	require.NoError(t, env.GetWorkflowResult(&res))

	require.Equal(t, workflows.StateHostOffline, offline.State)
	require.Equal(t, "box-1", offline.Host)
	require.Equal(t, 1, offline.Iteration)
	require.Equal(t, workflows.ReasonComplete, res.Reason, res.Message)
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
		require.Equal(t, workflows.HostTaskQueue("default-test-taskqueue", "box-1"), q)
	}
}

func TestSessionShowsItWaitsForAnAgentSlot(t *testing.T) {
	env := newEnv(t)
	var queue string
	env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.IterationInput) (activities.IterationResult, error) {
			queue = activity.GetInfo(ctx).TaskQueue
			r := progressed(in.Iteration, 3)
			r.CompletionClaimed = true
			return r, nil
		}).After(10 * time.Minute)
	states := map[time.Duration]workflows.State{}
	signal := func(at time.Duration, slot workflows.AgentSlot) {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(workflows.SignalAgentSlot, slot) }, at)
	}
	query := func(at time.Duration) {
		env.RegisterDelayedCallback(func() {
			v, err := env.QueryWorkflow(workflows.QueryStatus)
			require.NoError(t, err)
			var st workflows.Status
			require.NoError(t, v.Get(&st))
			states[at] = st.State
		}, at)
	}
	signal(time.Minute, workflows.AgentSlot{Iteration: 1, Waiting: true, Running: 4, Max: 4})
	query(2 * time.Minute)
	signal(3*time.Minute, workflows.AgentSlot{Iteration: 7, Waiting: true}) // not this iteration's
	query(4 * time.Minute)
	signal(5*time.Minute, workflows.AgentSlot{Iteration: 1, Waiting: false})
	query(6 * time.Minute)

	env.ExecuteWorkflow(workflows.Session, baseInput())
	var res workflows.SessionResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, workflows.ReasonComplete, res.Reason)
	require.Equal(t, map[time.Duration]workflows.State{
		2 * time.Minute: workflows.StateWaitingForAgentSlot,
		4 * time.Minute: workflows.StateWaitingForAgentSlot,
		6 * time.Minute: workflows.StateRunning,
	}, states)
	require.Equal(t, "default-test-taskqueue", queue, "a session without a host keeps its activities on its own queue")
}

func TestWorkflowIDs(t *testing.T) {
	for _, tc := range []struct {
		name, got, want string
	}{
		{"session", workflows.SessionWorkflowID("box-1", "/work/app"), workflows.LegacySessionWorkflowID("/work/app") + "@box-1"},
		{"legacy session", workflows.SessionWorkflowID("", "/work/app"), workflows.LegacySessionWorkflowID("/work/app")},
		{"queue", workflows.QueueWorkflowID("box-1", "acme", "app"), "ralph-queue-acme-app@box-1"},
		{"legacy queue", workflows.QueueWorkflowID("", "acme", "app"), "ralph-queue-acme-app"},
		{"issue", workflows.IssueSessionID("box-1", "acme", "app", 7), "ralph-acme-app-issue-7@box-1"},
		{"legacy issue", workflows.IssueSessionID("", "acme", "app", 7), "ralph-acme-app-issue-7"},
	} {
		t.Run(tc.name, func(t *testing.T) { require.Equal(t, tc.want, tc.got) })
	}
	require.NotEqual(t, workflows.SessionWorkflowID("box-1", "/work/app"), workflows.SessionWorkflowID("box-2", "/work/app"),
		"the same path on two machines is two sessions")
}

func TestSessionStoppedWhileItsHostIsOffline(t *testing.T) {
	env := newEnv(t)
	var ran int
	env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.IterationInput) (activities.IterationResult, error) {
			ran++
			if ran == 1 {
				return progressed(in.Iteration, 1), nil
			}
			return activities.IterationResult{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START, nil)
		})
	// The host never comes back.
	env.OnActivity(a.HostReady, mock.Anything).Return("box-1", nil).After(1000 * time.Hour)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(workflows.SignalStop, workflows.StopSignal{Reason: "box-1 is gone"})
	}, time.Hour)

	in := baseInput()
	in.Host = "box-1"
	in.Limits.MaxRuntime = 0
	env.ExecuteWorkflow(workflows.Session, in)
	var res workflows.SessionResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, workflows.ReasonStopped, res.Reason)
	require.Equal(t, "stop requested: box-1 is gone while host box-1 was offline (iteration 2 did not run)", res.Message)
	require.Equal(t, 1, res.Iterations, "the iteration that never ran is not counted")
	require.Equal(t, 0, res.Totals.Failures)
}

func TestSessionWaitsOnWhenAgentSlotsStayBusy(t *testing.T) {
	env := newEnv(t)
	s := &script{results: []func(activities.IterationInput) (activities.IterationResult, error){
		func(activities.IterationInput) (activities.IterationResult, error) {
			return activities.IterationResult{}, temporal.NewApplicationErrorWithOptions("all 4 agent slots of this worker stayed in use for 1m30s",
				activities.ErrTypeAgentSlotBusy, temporal.ApplicationErrorOptions{NonRetryable: true,
					Details: []any{activities.Progress{Iteration: 1, StartHead: "abc123", AgentSessionID: "agent-1"}}})
		},
		func(in activities.IterationInput) (activities.IterationResult, error) {
			r := progressed(in.Iteration, 3)
			r.CompletionClaimed = true
			return r, nil
		},
	}}
	env.OnActivity(a.RunIteration, mock.Anything, mock.Anything).Return(s.run)
	in := baseInput()
	in.Host = "box-1"
	env.ExecuteWorkflow(workflows.Session, in)
	var res workflows.SessionResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, workflows.ReasonComplete, res.Reason, res.Message)
	require.Equal(t, 1, res.Iterations)
	require.Equal(t, 0, res.Totals.Failures, "busy slots are not a failed iteration")
	require.Len(t, s.inputs, 2)
	require.Equal(t, 1, s.inputs[1].Iteration)
	require.NotNil(t, s.inputs[1].Resume)
	require.Equal(t, "agent-1", s.inputs[1].Resume.AgentSessionID)
}
