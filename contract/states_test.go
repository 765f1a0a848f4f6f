package contract

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSessionMoves walks the session's state machine: every state is
// reached from starting, every state before the end can end, an end is
// never left, and the moves the table lacks are refused.
func TestSessionMoves(t *testing.T) {
	reached := map[State]bool{StateStarting: true}
	for todo := []State{StateStarting}; len(todo) > 0; todo = todo[1:] {
		if slices.Contains(SessionEnds, todo[0]) {
			continue
		}
		for _, to := range append(slices.Clone(SessionMoves[todo[0]]), SessionEnds...) {
			require.True(t, CanMove(todo[0], to), "%s -> %s", todo[0], to)
			if !reached[to] {
				reached[to] = true
				todo = append(todo, to)
			}
		}
	}
	for from, tos := range SessionMoves {
		require.True(t, reached[from], "%s is never reached from starting", from)
		for _, to := range tos {
			_, goesOn := SessionMoves[to]
			require.True(t, goesOn || slices.Contains(SessionEnds, to), "%s -> %s leads nowhere", from, to)
		}
	}
	for _, end := range SessionEnds {
		require.True(t, reached[end], "%s is never reached", end)
		require.True(t, CanMove(end, end), "an end state may stay")
		for _, to := range States() {
			if to != end {
				require.False(t, CanMove(end, to), "%s is an end, left for %s", end, to)
			}
		}
	}
	tests := []struct {
		from, to State
		ok       bool
	}{
		{StateStarting, StateRunning, true},
		{StateRunning, StateRunning, true},
		{StateRunning, StateStarting, false},
		{StatePaused, StateRateLimited, false},
		{StateAwaitingHuman, StatePaused, false},
		{StateRateLimited, StateHostOffline, false},
		{StateHostOffline, StateStarting, true},
		{StateHostOffline, StatePaused, false},
		{StateWaitingForAgentSlot, StateLimited, true},
		{StateRunning, StateIdle, false}, // a queue's state
		{StateIdle, StateCompleted, false},
	}
	for _, tt := range tests {
		require.Equal(t, tt.ok, CanMove(tt.from, tt.to), "%s -> %s", tt.from, tt.to)
	}
}
