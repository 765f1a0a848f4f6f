package flow

import (
	"errors"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/contract"
)

// Host routes a workflow's workspace activities to the worker of the
// machine that holds the workspace. The zero host (sessions and queues
// started before hosts existed) leaves them on the workflow's own task
// queue: what their histories recorded, so they replay unchanged.
type Host struct {
	// ID is the host; "" leaves activities on the workflow's own queue.
	ID string
	// Timeout is how long an activity may wait for the host's worker
	// (0 is contract.DefaultHostTimeout).
	Timeout time.Duration
	// Offline is called with true when the host's worker has not taken an
	// activity within timeout, and with false when it is back.
	Offline func(ctx workflow.Context, off bool)
	// Stop, when not nil, delivers when a person gives up waiting for
	// the host: the wait ends with ErrStoppedOffline.
	Stop workflow.ReceiveChannel
}

// ErrStoppedOffline ends a wait for an offline host when a stop is
// requested.
var ErrStoppedOffline = errors.New("stopped while the host was offline")

// Routed reports whether h sends activities to a host's own queue.
func (h Host) Routed() bool { return h.ID != "" }

// Options are opts on h's queue: an activity that no worker of h starts
// within the host timeout fails with a schedule-to-start timeout, which
// is how a workflow learns that the host is gone (see awaitBack).
func (h Host) Options(ctx workflow.Context, opts workflow.ActivityOptions) workflow.ActivityOptions {
	if !h.Routed() {
		return opts
	}
	opts.TaskQueue = contract.HostTaskQueue(workflow.GetInfo(ctx).TaskQueueName, h.ID)
	opts.ScheduleToStartTimeout = h.Timeout
	if opts.ScheduleToStartTimeout <= 0 {
		opts.ScheduleToStartTimeout = contract.DefaultHostTimeout
	}
	return opts
}

// IsHostGone reports whether err is an activity that no worker of its
// host started in time, and returns the last progress a dead attempt of
// it reported (nil if none), so that the next try goes on from there.
func IsHostGone(err error) (bool, *contract.Progress) {
	var timeout *temporal.TimeoutError
	if !errors.As(err, &timeout) || timeout.TimeoutType() != enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START {
		return false, nil
	}
	if !timeout.HasLastHeartbeatDetails() {
		return true, nil
	}
	var p contract.Progress
	if timeout.LastHeartbeatDetails(&p) != nil {
		return true, nil
	}
	return true, &p
}

// IsSlotBusy reports whether err is an iteration that waited for one of
// its worker's agent slots as long as one attempt may, and returns the
// progress it carried (nil if none).
func IsSlotBusy(err error) (bool, *contract.Progress) {
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != contract.ErrTypeAgentSlotBusy {
		return false, nil
	}
	var p contract.Progress
	if !appErr.HasDetails() || appErr.Details(&p) != nil {
		return true, nil
	}
	return true, &p
}

// Execute runs activity on h's queue and waits for its result. When the
// host's worker does not take it in time, the workflow shows the host
// offline, waits for the worker to come back and schedules the activity
// again: a host that goes away delays the work, it does not fail it.
func (h Host) Execute(ctx workflow.Context, opts workflow.ActivityOptions, result any, activity any, args ...any) error {
	for {
		err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, h.Options(ctx, opts)), activity, args...).Get(ctx, result)
		if gone, _ := IsHostGone(err); !gone || !h.Routed() {
			return err
		}
		_, stopped, err := h.AwaitBack(ctx, nil)
		if err != nil {
			return err
		}
		if stopped {
			return ErrStoppedOffline
		}
	}
}

// AwaitBack shows h offline and waits until a worker of h takes a probe
// activity, then shows it back. When the timer deadline returns fires
// first (the session's runtime ran out), the wait ends with expired true;
// when h.Stop delivers first (a person gave up on the host), with stopped
// true.
func (h Host) AwaitBack(ctx workflow.Context, deadline func() workflow.Future) (expired, stopped bool, err error) {
	if h.Offline != nil {
		h.Offline(ctx, true)
	}
	probe := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue: contract.HostTaskQueue(workflow.GetInfo(ctx).TaskQueueName, h.ID),
		// No schedule-to-start limit: it waits in the host's queue for
		// as long as the host is away.
		StartToCloseTimeout: time.Minute,
		Summary:             "wait for host " + h.ID + " to come back",
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    time.Minute,
		},
	}), contract.ActivityHostReady)
	back := false
	for !back && !expired && !stopped {
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(probe, func(f workflow.Future) {
			err = f.Get(ctx, nil)
			back = true
		})
		if deadline != nil {
			if d := deadline(); d != nil {
				sel.AddFuture(d, func(f workflow.Future) {
					// A cancelled timer is a deadline that moved.
					if f.Get(ctx, nil) == nil {
						expired = true
					}
				})
			}
		}
		if h.Stop != nil {
			sel.AddReceive(h.Stop, func(c workflow.ReceiveChannel, _ bool) {
				c.Receive(ctx, nil)
				stopped = true
			})
		}
		sel.Select(ctx)
		if ctx.Err() != nil {
			return false, false, temporal.NewCanceledError()
		}
	}
	if h.Offline != nil && back {
		h.Offline(ctx, false)
	}
	return expired, stopped, err
}
