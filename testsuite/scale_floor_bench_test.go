package testsuite_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/contract"
)

// scaleFloorQueue is the task queue of the scale floor's worker.
const scaleFloorQueue = "bench-scale-floor"

// scaleFloorLoop is the least a durable loop doing the plain loop's
// work can be on Temporal: n iterations of dir, each one activity that
// runs the plain loop's iteration (the same Agent code: spawn, parse,
// commit), in one run, nothing else. queue is the activity's task queue
// ("" for the workflow's: handed over eagerly).
func scaleFloorLoop(ctx workflow.Context, dir string, n int, queue string) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute, TaskQueue: queue})
	for it := 1; it <= n; it++ {
		if err := workflow.ExecuteActivity(ctx, scaleFloorStepName, dir, it).Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

// scaleFloorStepName is the activity of scaleFloorLoop.
const scaleFloorStepName = "ScaleFloorStep"

// floorStepper runs the plain loop's iteration as an activity.
type floorStepper struct {
	sc *scaleBench
	ag *activities.Agent
}

func (f *floorStepper) step(ctx context.Context, dir string, it int) error {
	in := f.sc.input(dir)
	res, err := f.ag.Iterate(ctx, contract.IterationInput{
		SessionID: activity.GetInfo(ctx).WorkflowExecution.ID, Iteration: it, MaxIterations: f.sc.iterations,
		Workspace: dir, Agent: in.Agent, Task: in.Task, Git: in.Git,
	}, 1, nil, nil)
	switch {
	case err != nil:
		return err
	case res.Outcome != contract.OutcomeSuccess:
		return fmt.Errorf("iteration %d: %s: %s", it, res.Outcome, res.Reason)
	case res.Commit == "":
		return fmt.Errorf("iteration %d committed nothing", it)
	}
	return nil
}

// floorLoops runs n scaleFloorLoops at once on a fresh embedded server
// with an SDK worker in this process (pollers autoscaled, as the
// worker's are), and returns their wall time and this process's CPU
// (server, worker, agents and git alike). onHost puts their activities
// on a queue of their own, polled by a second worker, as a session's
// iterations are on their host's queue.
func (sc *scaleBench) floorLoops(b *testing.B, n int, onHost bool) (time.Duration, cpuTimes, scaleWaits) {
	b.Helper()
	dirs := sc.workspaces(b, n)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	srv := startServer(b, b.TempDir())
	defer srv.Stop()
	c := dial(b, srv.Address(), srv.Namespace())
	defer c.Close()
	w := worker.New(c, scaleFloorQueue, autoscaledPollers())
	w.RegisterWorkflow(scaleFloorLoop)
	st := &floorStepper{sc: sc, ag: &activities.Agent{Env: []string{"FAKE_CLAUDE_SCENARIO=" + sc.scenario}}}
	w.RegisterActivityWithOptions(st.step, activity.RegisterOptions{Name: scaleFloorStepName})
	require.NoError(b, w.Start())
	defer w.Stop()
	queue, prefix := "", "floor"
	if onHost {
		queue, prefix = hostQueue(scaleFloorQueue), "hosted-floor"
		hw := worker.New(c, queue, autoscaledPollers())
		hw.RegisterActivityWithOptions(st.step, activity.RegisterOptions{Name: scaleFloorStepName})
		require.NoError(b, hw.Start())
		defer hw.Stop()
	}
	time.Sleep(time.Second) // the pollers connected

	errs := make([]error, n)
	ids := make([]string, n)
	var wg sync.WaitGroup
	cpu0, err := procCPU(os.Getpid())
	require.NoError(b, err)
	start := time.Now()
	for i, dir := range dirs {
		ids[i] = fmt.Sprintf("%s-%d", prefix, i)
		wg.Go(func() {
			r, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
				ID: ids[i], TaskQueue: scaleFloorQueue,
			}, scaleFloorLoop, dir, sc.iterations, queue)
			if err == nil {
				err = r.Get(ctx, nil)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu, err := procCPU(os.Getpid())
	require.NoError(b, err)
	for i, err := range errs {
		require.NoError(b, err, "floor loop %d", i)
		sc.checkCounter(b, dirs[i], "")
	}
	return elapsed, cpu.sub(cpu0), sessionWaits(b, c, ids, false)
}
