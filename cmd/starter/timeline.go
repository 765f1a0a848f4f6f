package main

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/config"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/workflows"
)

// timeline is a session's history as it stands now: the runs from its
// first to its current one, following continue-as-new back from the
// current run (a reset run holds the part of its base run it was reset
// from), with every iteration the session ran in them.
type timeline struct {
	id string
	// runs are oldest first.
	runs []timelineRun
	// iterations are by number: the first scheduling of each and its
	// last result in this timeline.
	iterations map[int]*timelineIteration
	// input is the latest run's input.
	input contract.SessionInput
	// running says the current run is open.
	running bool
}

// timelineRun is one run of a timeline.
type timelineRun struct {
	runID   string
	history *historypb.History
}

// timelineIteration is what a timeline holds of one iteration.
type timelineIteration struct {
	number int
	// runID is the run that first scheduled it; scheduledBy the workflow
	// task that did (its completed event), which a reset to just before
	// the iteration resets to.
	runID       string
	scheduledBy int64
	role        string
	// result is its last result; nil while it runs or when it failed
	// (failure says why).
	result  *contract.IterationResult
	failure string
}

// openTimeline connects for cmd and reads the timeline of the session
// args name. toRun connects as the commands that start sessions do
// (connectToRun: on a dev server that no worker serves, this process is
// the worker while it runs); otherwise it only dials. The caller closes
// conn.
func (cctx *commandContext) openTimeline(cmd *cobra.Command, args []string, toRun bool) (*connection, *timeline, error) {
	var conn *connection
	var err error
	if toRun {
		cfg, lerr := config.Load(cmd.Flags(), "")
		if lerr != nil {
			return nil, nil, lerr
		}
		conn, err = cctx.connectToRun(cfg)
	} else {
		conn, err = cctx.dial(cmd)
	}
	if err != nil {
		return nil, nil, err
	}
	tl, err := cctx.timelineOf(conn, args)
	if err != nil {
		conn.close()
		return nil, nil, err
	}
	return conn, tl, nil
}

// timelineOf reads the timeline of the session args name (sessionID).
func (cctx *commandContext) timelineOf(conn *connection, args []string) (*timeline, error) {
	return readTimeline(cctx, conn, sessionID(cctx, conn.client, conn.cfg.Worker.HostID, args))
}

// readTimeline reads the timeline of session id.
func readTimeline(ctx context.Context, conn *connection, id string) (*timeline, error) {
	tl := &timeline{id: id, iterations: map[int]*timelineIteration{}}
	desc, err := conn.client.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		if _, ok := errors.AsType[*serviceerror.NotFound](err); ok {
			return nil, fmt.Errorf("no session %s on this server (%s)", id, conn.address)
		}
		return nil, fmt.Errorf("describe %s: %w", id, err)
	}
	if t := desc.GetWorkflowExecutionInfo().GetType().GetName(); t != "Session" {
		return nil, fmt.Errorf("%s is a %s workflow, not a session", id, t)
	}
	current := desc.GetWorkflowExecutionInfo().GetExecution().GetRunId()
	runID := current
	for {
		h, err := runHistory(ctx, conn, id, runID)
		if err != nil {
			return nil, err
		}
		if len(h.Events) == 0 {
			return nil, fmt.Errorf("session %s has an empty history", id)
		}
		if runID == current {
			tl.running = !closedEvent(h.Events[len(h.Events)-1])
			if err := conn.dataConverter.FromPayloads(h.Events[0].GetWorkflowExecutionStartedEventAttributes().GetInput(), &tl.input); err != nil {
				return nil, fmt.Errorf("decode the input of %s: %w", id, err)
			}
		}
		tl.runs = append(tl.runs, timelineRun{runID: runID, history: h})
		prev := h.Events[0].GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId()
		if prev == "" {
			break
		}
		runID = prev
	}
	slices.Reverse(tl.runs)
	for _, r := range tl.runs {
		if err := tl.add(conn, r); err != nil {
			return nil, err
		}
	}
	return tl, nil
}

// runHistory is the history of run runID of id.
func runHistory(ctx context.Context, conn *connection, id, runID string) (*historypb.History, error) {
	it := conn.client.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	h := &historypb.History{}
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			if _, ok := errors.AsType[*serviceerror.NotFound](err); ok {
				return nil, fmt.Errorf("no session %s on this server (%s)", id, conn.address)
			}
			return nil, fmt.Errorf("read the history of %s: %w", id, err)
		}
		h.Events = append(h.Events, e)
	}
	return h, nil
}

func closedEvent(e *historypb.HistoryEvent) bool {
	switch e.GetEventType() {
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
		enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
		enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
		return true
	}
	return false
}

// add reads the iterations of run r.
func (tl *timeline) add(conn *connection, r timelineRun) error {
	scheduled := map[int64]*timelineIteration{}
	for _, e := range r.history.Events {
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			a := e.GetActivityTaskScheduledEventAttributes()
			if a.GetActivityType().GetName() != contract.ActivityRunIteration {
				continue
			}
			var in contract.IterationInput
			if err := conn.dataConverter.FromPayloads(a.GetInput(), &in); err != nil {
				return fmt.Errorf("decode iteration input in %s: %w", tl.id, err)
			}
			it := tl.iterations[in.Iteration]
			if it == nil {
				it = &timelineIteration{number: in.Iteration, runID: r.runID, scheduledBy: a.GetWorkflowTaskCompletedEventId(), role: in.Role}
				tl.iterations[in.Iteration] = it
			}
			scheduled[e.GetEventId()] = it
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			a := e.GetActivityTaskCompletedEventAttributes()
			it := scheduled[a.GetScheduledEventId()]
			if it == nil {
				continue
			}
			var res contract.IterationResult
			if err := conn.dataConverter.FromPayloads(a.GetResult(), &res); err != nil {
				return fmt.Errorf("decode the result of iteration %d in %s: %w", it.number, tl.id, err)
			}
			it.result, it.failure = &res, ""
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED:
			if it := scheduled[e.GetActivityTaskFailedEventAttributes().GetScheduledEventId()]; it != nil && it.result == nil {
				it.failure = e.GetActivityTaskFailedEventAttributes().GetFailure().GetMessage()
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
			if it := scheduled[e.GetActivityTaskTimedOutEventAttributes().GetScheduledEventId()]; it != nil && it.result == nil {
				it.failure = "timed out: " + e.GetActivityTaskTimedOutEventAttributes().GetFailure().GetMessage()
			}
		}
	}
	return nil
}

// last is the highest iteration number the timeline scheduled.
func (tl *timeline) last() int {
	n := 0
	for k := range tl.iterations {
		n = max(n, k)
	}
	return n
}

// finished is iteration n when it ran to a result, or an error that says
// what is wrong with n.
func (tl *timeline) finished(n int) (*timelineIteration, error) {
	it := tl.iterations[n]
	switch {
	case n < 1:
		return nil, fmt.Errorf("there is no iteration %d: iterations count from 1", n)
	case it == nil && tl.last() == 0:
		return nil, fmt.Errorf("session %s has run no iteration yet", tl.id)
	case it == nil:
		return nil, fmt.Errorf("session %s has no iteration %d: it ran %d", tl.id, n, tl.last())
	case it.result == nil && it.failure == "":
		return nil, fmt.Errorf("iteration %d of %s is still running", n, tl.id)
	case it.result == nil:
		return nil, fmt.Errorf("iteration %d of %s has no result (%s)", n, tl.id, it.failure)
	}
	return it, nil
}

// after is the iteration after n, which a rewind or fork at n redoes:
// an error when nothing ran after n.
func (tl *timeline) after(n int) (*timelineIteration, error) {
	next := tl.iterations[n+1]
	if next == nil {
		state := "ended"
		if tl.running {
			state = "waits"
		}
		return nil, fmt.Errorf("iteration %d is the last that %s ran (it %s after it): nothing after it to go back from; run it again with starter run",
			n, tl.id, state)
	}
	if next.role == contract.RolePlanner {
		return nil, fmt.Errorf("iteration %d of %s is a planner's: go back to the plan's end, not into it", n+1, tl.id)
	}
	return next, nil
}

// history is the history of run runID.
func (tl *timeline) history(runID string) *historypb.History {
	for _, r := range tl.runs {
		if r.runID == runID {
			return r.history
		}
	}
	return nil
}

// stateAfter is the session's whole state after iteration n, as its own
// code had it: its run's history is replayed, and the carry-over query
// answered at the moment the workflow schedules iteration n+1.
func (tl *timeline) stateAfter(conn *connection, n int) (contract.CarryOver, error) {
	next, err := tl.after(n)
	if err != nil {
		return contract.CarryOver{}, err
	}
	h := tl.history(next.runID)
	capture := &stateCapture{iteration: n + 1}
	replayer, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{
		DataConverter: conn.dataConverter,
		Interceptors:  []interceptor.WorkerInterceptor{capture},
	})
	if err != nil {
		return contract.CarryOver{}, err
	}
	workflows.Register(replayer)
	rerr := replayer.ReplayWorkflowHistoryWithOptions(nil, h, worker.ReplayWorkflowHistoryOptions{
		OriginalExecution: workflow.Execution{ID: tl.id, RunID: next.runID},
	})
	switch {
	case capture.err != nil:
		return contract.CarryOver{}, fmt.Errorf("read the state after iteration %d: %w", n, capture.err)
	case capture.state == nil && rerr != nil:
		return contract.CarryOver{}, fmt.Errorf("replay %s to iteration %d (this starter's workflow code must be the worker's): %w", tl.id, n, rerr)
	case capture.state == nil:
		return contract.CarryOver{}, fmt.Errorf("the replay of %s never scheduled iteration %d", tl.id, n+1)
	}
	return *capture.state, nil
}

// stateCapture is a replay's interceptor that answers the session's
// carry-over query when the workflow schedules iteration.
type stateCapture struct {
	interceptor.WorkerInterceptorBase
	iteration int
	query     func() (contract.CarryOver, error)
	state     *contract.CarryOver
	err       error
}

func (c *stateCapture) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &captureInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, c: c}
}

type captureInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	c *stateCapture
}

func (i *captureInbound) Init(outbound interceptor.WorkflowOutboundInterceptor) error {
	return i.Next.Init(&captureOutbound{WorkflowOutboundInterceptorBase: interceptor.WorkflowOutboundInterceptorBase{Next: outbound}, c: i.c})
}

type captureOutbound struct {
	interceptor.WorkflowOutboundInterceptorBase
	c *stateCapture
}

func (o *captureOutbound) SetQueryHandlerWithOptions(ctx workflow.Context, name string, handler any, opts workflow.QueryHandlerOptions) error {
	if name == contract.QueryCarryOver {
		if q, ok := handler.(func() (contract.CarryOver, error)); ok {
			o.c.query = q
		}
	}
	return o.Next.SetQueryHandlerWithOptions(ctx, name, handler, opts)
}

func (o *captureOutbound) ExecuteActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future {
	if c := o.c; activityType == contract.ActivityRunIteration && c.state == nil && c.err == nil && len(args) == 1 {
		if in, ok := args[0].(contract.IterationInput); ok && in.Iteration == c.iteration {
			if c.query == nil {
				c.err = errors.New("the session's code has no carry-over query")
			} else if st, err := c.query(); err != nil {
				c.err = err
			} else {
				c.state = &st
			}
		}
	}
	return o.Next.ExecuteActivity(ctx, activityType, args...)
}
