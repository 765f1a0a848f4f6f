package activities_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/contract"
)

func TestIterationWaitsForAnAgentSlot(t *testing.T) {
	dir := newRepo(t, map[string]string{"prd.json": prd, "progress.txt": ""})
	env, _ := scenarioEnv(t, map[string]any{"auto": true})
	var mu sync.Mutex
	var events []activities.SlotEvent
	ag := &activities.Agent{
		Env: env, HeartbeatInterval: 20 * time.Millisecond,
		Slots: activities.NewSlots(1),
		OnSlot: func(_ context.Context, ev activities.SlotEvent) {
			mu.Lock()
			defer mu.Unlock()
			events = append(events, ev)
		},
	}
	// Another iteration holds the only slot for a while.
	require.True(t, ag.Slots.TryAcquire())
	go func() {
		time.Sleep(300 * time.Millisecond)
		ag.Slots.Release()
	}()
	res, beats, err := runActivity(t, ag, iterationInput(dir, 1))
	require.NoError(t, err)
	require.Equal(t, contract.OutcomeSuccess, res.Outcome, res.Reason)
	require.Positive(t, beats)
	require.Equal(t, 0, ag.Slots.Running(), "the slot is given back")
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, events, 2)
	require.True(t, events[0].Waiting)
	require.Equal(t, 1, events[0].Running)
	require.Equal(t, 1, events[0].Max)
	require.Equal(t, 1, events[0].Iteration)
	require.False(t, events[1].Waiting)
}

func TestIterationGivesUpAnAttemptWhenSlotsStayBusy(t *testing.T) {
	dir := newRepo(t, map[string]string{"prd.json": prd, "progress.txt": ""})
	env, state := scenarioEnv(t, map[string]any{"auto": true})
	ag := &activities.Agent{Env: env, HeartbeatInterval: 20 * time.Millisecond, Slots: activities.NewSlots(1)}
	require.True(t, ag.Slots.TryAcquire())
	defer ag.Slots.Release()
	in := iterationInput(dir, 1)
	// The test environment's attempt ends 10 minutes from its start: an
	// agent that may take 9m45s leaves the wait its minimum, 10s.
	in.Agent.Timeout = 9*time.Minute + 45*time.Second
	start := time.Now()
	_, _, err := runActivity(t, ag, in)
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "%v", err)
	require.Equal(t, contract.ErrTypeAgentSlotBusy, appErr.Type())
	require.True(t, appErr.NonRetryable())
	require.Contains(t, appErr.Error(), "all 1 agent slots of this worker stayed in use")
	require.Less(t, time.Since(start), time.Minute)
	require.Equal(t, 0, countCalls(t, state), "no agent ran")
}
