package testsuite_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/durable-ralph/ralph/app"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/workflows/session"
)

// TestSignalsInTheTaskOfTheLastResultBeforeContinueAsNew delivers stop,
// guide and pause in the same workflow task as the result of the last
// iteration before continue-as-new, on a real server: the workflow worker
// is stopped while that iteration runs, the signal and the result are
// both recorded, and a new workflow worker gets them in one task. None may
// be lost with the old run.
func TestSignalsInTheTaskOfTheLastResultBeforeContinueAsNew(t *testing.T) {
	srv := startServer(t, "")
	t.Cleanup(srv.Stop)
	c := dial(t, srv.Address(), srv.Namespace())
	t.Cleanup(c.Close)

	cases := []struct {
		name   string
		signal string
		arg    any
		check  func(t *testing.T, run client.WorkflowRun, fake *boundaryAgent)
	}{
		{"stop", contract.SignalStop, contract.StopSignal{Reason: "enough"}, func(t *testing.T, run client.WorkflowRun, _ *boundaryAgent) {
			var res contract.SessionResult
			require.NoError(t, run.Get(context.Background(), &res))
			require.Equal(t, contract.ReasonStopped, res.Reason, res.Message)
			require.Equal(t, 2, res.Iterations, "no iteration after the stop")
		}},
		{"guide", contract.SignalGuide, "never touch migrations/", func(t *testing.T, run client.WorkflowRun, fake *boundaryAgent) {
			var res contract.SessionResult
			require.NoError(t, run.Get(context.Background(), &res))
			in := fake.inputs()
			require.Len(t, in, 3)
			require.Equal(t, []string{"never touch migrations/"}, in[2].Guidance, "the guidance reaches the first iteration of the next run")
		}},
		{"pause", contract.SignalPause, nil, func(t *testing.T, run client.WorkflowRun, fake *boundaryAgent) {
			waitFor(t, 30*time.Second, "the session to pause", func() bool {
				v, err := c.QueryWorkflow(context.Background(), run.GetID(), "", contract.QueryStatus)
				if err != nil {
					return false
				}
				var st contract.Status
				return v.Get(&st) == nil && st.State == contract.StatePaused
			})
			require.Len(t, fake.inputs(), 2, "no iteration runs while paused")
			require.NoError(t, c.SignalWorkflow(context.Background(), run.GetID(), "", contract.SignalStop, contract.StopSignal{}))
			var res contract.SessionResult
			require.NoError(t, run.Get(context.Background(), &res))
			require.Equal(t, 2, res.Iterations)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			queue := "boundary-" + tc.name
			fake := &boundaryAgent{t: t, c: c, signal: tc.signal, arg: tc.arg}
			// The session's workspace activities run on its host's queue.
			acts := worker.New(c, contract.HostTaskQueue(queue, testHost), worker.Options{DisableWorkflowWorker: true})
			acts.RegisterActivityWithOptions(fake.prepare, activity.RegisterOptions{Name: "PrepareWorkspace"})
			acts.RegisterActivityWithOptions(fake.iterate, activity.RegisterOptions{Name: "RunIteration"})
			require.NoError(t, acts.Start())
			defer acts.Stop()
			fake.startWorkflows = func() {
				w := app.NewWorkflowWorker(c, queue)
				require.NoError(t, w.Start())
				fake.mu.Lock()
				fake.wf = w
				fake.mu.Unlock()
			}
			fake.startWorkflows()
			defer func() { fake.mu.Lock(); fake.wf.Stop(); fake.mu.Unlock() }()

			in := input("/boundary/" + tc.name)
			in.Limits.IterationsPerRun = 2
			in.Limits.MaxIterations = 3
			run, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{
				ID: "boundary-" + tc.name, TaskQueue: queue,
			}, session.Session, in)
			require.NoError(t, err)
			fake.id = run.GetID()
			defer func() {
				if !t.Failed() {
					return
				}
				it := c.GetWorkflowHistory(context.Background(), run.GetID(), fake.firstRun, false, 0)
				for it.HasNext() {
					e, err := it.Next()
					if err != nil {
						break
					}
					t.Logf("%d %s %v", e.EventId, e.EventType, e.Attributes)
				}
			}()
			tc.check(t, run, fake)
		})
	}
}

// boundaryAgent stands in for the activities: its second iteration stops
// the workflow worker, signals the session and only then returns, so the
// signal and the result wait for the next workflow worker together.
type boundaryAgent struct {
	t              *testing.T
	c              client.Client
	id             string
	firstRun       string
	signal         string
	arg            any
	startWorkflows func()

	mu   sync.Mutex
	wf   worker.Worker
	seen []contract.IterationInput
}

func (b *boundaryAgent) prepare(context.Context, contract.PrepareInput) (contract.PrepareResult, error) {
	return contract.PrepareResult{Mode: "prd", Branch: "main",
		Task: contract.TaskState{Mode: "prd", File: "prd.json", Total: 3, Verifiable: true}}, nil
}

func (b *boundaryAgent) iterate(ctx context.Context, in contract.IterationInput) (contract.IterationResult, error) {
	b.mu.Lock()
	b.seen = append(b.seen, in)
	n := len(b.seen)
	wf := b.wf
	b.mu.Unlock()
	if n == 2 {
		b.firstRun = activity.GetInfo(ctx).WorkflowExecution.RunID
		wf.Stop()
		if err := b.c.SignalWorkflow(ctx, b.id, "", b.signal, b.arg); err != nil {
			return contract.IterationResult{}, errors.Join(errors.New("signal"), err)
		}
		// The result is reported after this returns; the new workflow
		// worker starts polling once it is recorded.
		go func() {
			time.Sleep(time.Second)
			b.startWorkflows()
		}()
	}
	return contract.IterationResult{
		Iteration: in.Iteration, Outcome: contract.OutcomeSuccess, CostUSD: 0.01,
		FilesChanged: []string{"a.go"}, Commit: "c0ffee",
		Task: contract.TaskState{Mode: "prd", File: "prd.json", Total: 3, Done: 1, Verifiable: true},
	}, nil
}

func (b *boundaryAgent) inputs() []contract.IterationInput {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]contract.IterationInput(nil), b.seen...)
}
