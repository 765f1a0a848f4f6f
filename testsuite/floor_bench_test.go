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

// floorLoop is the least a durable loop can be on Temporal: n iterations,
// each one activity that does nothing, in one run. What it costs per
// iteration is what any Temporal session pays before its agent, its git
// and its checks (the ratio goal of the overhead benchmark is measured
// against it in the note).
func floorLoop(ctx workflow.Context, n int) (int, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
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
// default options in this process.
func benchTemporalFloor(b *testing.B) runFigures {
	b.Helper()
	srv := startServer(b, b.TempDir())
	defer srv.Stop()
	c := dial(b, srv.Address(), srv.Namespace())
	defer c.Close()
	w := worker.New(c, floorQueue, worker.Options{})
	w.RegisterWorkflow(floorLoop)
	w.RegisterActivity(floorStep)
	require.NoError(b, w.Start())
	defer w.Stop()
	ctx := context.Background()
	id := "bench-floor"
	start := time.Now()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: floorQueue}, floorLoop, benchIterations)
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
