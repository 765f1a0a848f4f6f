package activities

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/contract"
)

// keepAlive heartbeats an iteration for as long as it runs, not only
// while its agent does: what follows the agent (git on a large tree, the
// commit) must not look like a dead worker. Between the agent's own
// beats it repeats the last progress, or the dead attempt's until there
// is one, so that a retry always finds the latest.
type keepAlive struct {
	mu    sync.Mutex
	last  *contract.Progress
	send  func(contract.Progress)
	beats chan struct{} // a beat was sent: the ticker may wait again
	done  chan struct{}
	ended chan struct{}
}

func newKeepAlive(prev *contract.Progress, send func(contract.Progress)) *keepAlive {
	return &keepAlive{last: prev, send: send, beats: make(chan struct{}, 1), done: make(chan struct{}), ended: make(chan struct{})}
}

// start repeats the last progress every interval without a beat, until
// stop.
func (k *keepAlive) start(interval time.Duration) {
	go func() {
		defer close(k.ended)
		k.run(interval)
	}()
}

// stop ends the repeats and returns when the last has been sent. It is
// called once.
func (k *keepAlive) stop() {
	close(k.done)
	<-k.ended
}

// beat sends p and keeps it as the last progress.
func (k *keepAlive) beat(p contract.Progress) {
	k.mu.Lock()
	k.last = &p
	k.mu.Unlock()
	k.send(p)
	select {
	case k.beats <- struct{}{}:
	default:
	}
}

// run repeats the last progress when no beat came for an interval.
func (k *keepAlive) run(interval time.Duration) {
	t := time.NewTimer(interval)
	defer t.Stop()
	for {
		select {
		case <-k.done:
			return
		case <-k.beats:
		case <-t.C:
			k.mu.Lock()
			last := k.last
			k.mu.Unlock()
			if last != nil {
				k.send(*last)
			}
		}
		t.Reset(interval)
	}
}

// takeSlot takes one of the worker's agent slots for the iteration,
// waiting while they are all taken. While it waits it heartbeats the
// progress of a dead earlier attempt (so that the next attempt still
// finds it) with a line that says what it waits for, and tells the
// session through OnSlot.
func (a *Agent) takeSlot(ctx context.Context, in contract.IterationInput, prev *contract.Progress, beat func(contract.Progress)) (release func(), err error) {
	if a.Slots.TryAcquire() {
		return a.Slots.Release, nil
	}
	info := activity.GetInfo(ctx)
	ev := SlotEvent{
		WorkflowID: info.WorkflowExecution.ID, RunID: info.WorkflowExecution.RunID,
		Iteration: in.Iteration, Waiting: true, Running: a.Slots.Running(), Max: a.Slots.Max(),
	}
	notify := func(ev SlotEvent) {
		if a.OnSlot != nil {
			a.OnSlot(ctx, ev)
		}
	}
	notify(ev)
	waiting := contract.Progress{Attempt: int(info.Attempt), Iteration: in.Iteration}
	if prev != nil {
		waiting = *prev
		waiting.Attempt, waiting.Live = int(info.Attempt), nil
	}
	since := time.Now()
	tick := func() {
		waiting.Tail = []string{fmt.Sprintf("waiting for an agent slot: %d of %d in use on this worker (%s so far)",
			a.Slots.Running(), a.Slots.Max(), time.Since(since).Round(time.Second))}
		waiting.UpdatedAt = time.Now()
		beat(waiting)
	}
	tick()
	interval := a.heartbeatInterval()
	if hb := info.HeartbeatTimeout; hb > 0 && interval > hb/4 {
		interval = hb / 4
	}
	// Wait no longer than leaves the attempt time for its agent: its
	// start-to-close timeout counts the wait too.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if deadline := info.Deadline; !deadline.IsZero() {
		budget := max(time.Until(deadline)-in.Agent.Timeout-slotWaitMargin, minSlotWait)
		wctx, cancel = context.WithTimeout(ctx, budget)
		defer cancel()
	}
	if err := a.Slots.Acquire(wctx, interval, tick); err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, temporal.NewApplicationErrorWithOptions(
			fmt.Sprintf("all %d agent slots of this worker stayed in use for %s", a.Slots.Max(), time.Since(since).Round(time.Second)), contract.ErrTypeAgentSlotBusy, temporal.ApplicationErrorOptions{NonRetryable: true, Details: []any{waiting}})
	}
	ev.Waiting = false
	notify(ev)
	return a.Slots.Release, nil
}

// Bounds of an attempt's wait for an agent slot: it ends slotWaitMargin
// before the time the agent needs, and lasts at least minSlotWait.
const (
	slotWaitMargin = 30 * time.Second
	minSlotWait    = 10 * time.Second
)

// gitHeartbeatInterval is how often a git activity of the queue (a work
// tree, a round's preparation, a push) heartbeats while it runs.
const gitHeartbeatInterval = 5 * time.Second

// HeartbeatWhile heartbeats the activity of ctx every interval until
// the returned stop is called. An activity that reports no progress of
// its own (git on a large repository) thus never looks like a dead
// worker, and the attempt of a worker that died is retried after the
// heartbeat timeout instead of the whole start-to-close timeout.
func HeartbeatWhile(ctx context.Context, interval time.Duration) (stop func()) {
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() {
		close(done)
		<-ended
	}
}
