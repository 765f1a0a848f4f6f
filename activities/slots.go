package activities

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// Slots caps how many agents a worker runs at once (worker.max-agents).
// An iteration takes a slot before it starts its agent and gives it back
// when the iteration ends; one that finds none free waits, heartbeating.
type Slots struct {
	ch      chan struct{}
	waiting atomic.Int64
}

// NewSlots returns n slots; n < 1 is 1.
func NewSlots(n int) *Slots {
	return &Slots{ch: make(chan struct{}, max(n, 1))}
}

// Max is the number of slots.
func (s *Slots) Max() int { return cap(s.ch) }

// Running is the number of slots taken: agents running.
func (s *Slots) Running() int { return len(s.ch) }

// Waiting is the number of iterations waiting for a slot.
func (s *Slots) Waiting() int { return int(s.waiting.Load()) }

// TryAcquire takes a slot if one is free.
func (s *Slots) TryAcquire() bool {
	select {
	case s.ch <- struct{}{}:
		return true
	default:
		return false
	}
}

// Acquire waits for a slot, calling tick every interval while it waits,
// until ctx ends.
func (s *Slots) Acquire(ctx context.Context, interval time.Duration, tick func()) error {
	s.waiting.Add(1)
	defer s.waiting.Add(-1)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case s.ch <- struct{}{}:
			return nil
		case <-t.C:
			tick()
		case <-ctx.Done():
			return fmt.Errorf("wait for an agent slot: %w", ctx.Err())
		}
	}
}

// Release gives a slot back.
func (s *Slots) Release() { <-s.ch }

// SlotEvent tells a session that its iteration waits for an agent slot
// (Waiting) or got one.
type SlotEvent struct {
	WorkflowID, RunID string
	Iteration         int
	Waiting           bool
	Running, Max      int
}
