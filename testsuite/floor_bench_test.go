package testsuite_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// floorQueue is the task queue of the floor benchmark's worker.
const floorQueue = "bench-floor"

// hostQueue is the task queue of the activities of a floor run "on its
// host's queue": a queue of its own, as a session's iteration is on
// contract.HostTaskQueue, not on the session's queue.
func hostQueue(queue string) string { return queue + "@host" }

// floorLoop is the least a durable loop can be on Temporal: n iterations,
// each one activity that does nothing, in one run. What it costs per
// iteration is what any Temporal session pays before its agent, its git
// and its checks (the ratio goal of the overhead benchmark is measured
// against it in the note). queue is the activity's task queue, "" for
// the workflow's own, the one the server can hand the activity over on
// eagerly, in its answer to the workflow task that schedules it.
func floorLoop(ctx workflow.Context, n int, queue string) (int, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute, TaskQueue: queue})
	done := 0
	for range n {
		if err := workflow.ExecuteActivity(ctx, floorStep).Get(ctx, nil); err != nil {
			return done, err
		}
		done++
	}
	return done, nil
}

// floorStep is an iteration that does nothing.
func floorStep(context.Context) error { return nil }

// benchTemporalFloor runs floorLoop for benchIterations on an embedded
// server with its SQLite file, as benchSession does, with an SDK worker of
// default options in this process. onHost puts the activities on a
// queue of their own, polled by a second worker, as a session's are (both
// workers' pollers autoscaled then, as Ralph's worker's are): the floor
// of a loop whose iteration cannot be handed over eagerly.
func benchTemporalFloor(b *testing.B, onHost bool) runFigures {
	b.Helper()
	srv := startServer(b, b.TempDir())
	defer srv.Stop()
	c := dial(b, srv.Address(), srv.Namespace())
	defer c.Close()
	opts, queue := worker.Options{}, ""
	if onHost {
		opts, queue = autoscaledPollers(), hostQueue(floorQueue)
		hw := worker.New(c, queue, opts)
		hw.RegisterActivity(floorStep)
		require.NoError(b, hw.Start())
		defer hw.Stop()
	}
	w := worker.New(c, floorQueue, opts)
	w.RegisterWorkflow(floorLoop)
	w.RegisterActivity(floorStep)
	require.NoError(b, w.Start())
	defer w.Stop()
	ctx := context.Background()
	id := "bench-floor"
	start := time.Now()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: floorQueue}, floorLoop, benchIterations, queue)
	require.NoError(b, err)
	started := time.Since(start)
	var done int
	require.NoError(b, run.Get(ctx, &done))
	f := runFigures{wall: time.Since(start)}
	require.Equal(b, benchIterations, done)
	f.events, f.bytes, f.phases = historyCost(b, c, id)
	f.countToClose("Temporal floor", started)
	return f
}

// autoscaledPollers are worker options whose pollers scale with the
// backlog, as app.NewWorker's do.
func autoscaledPollers() worker.Options {
	return worker.Options{
		WorkflowTaskPollerBehavior: worker.NewPollerBehaviorAutoscaling(worker.PollerBehaviorAutoscalingOptions{}),
		ActivityTaskPollerBehavior: worker.NewPollerBehaviorAutoscaling(worker.PollerBehaviorAutoscalingOptions{}),
	}
}
