package contract

import (
	"fmt"
	"slices"
	"strings"
)

// SessionMoves is the session's state machine: for each state a session
// can be in before it ends, the states it may move to next. A session
// starts in StateStarting (each run after continue-as-new too), may
// always stay where it is, may end from any of these states, and never
// leaves the state it ended in (SessionEnds). The Session workflow moves
// its state in one place, which refuses a move this table lacks.
var SessionMoves = map[State][]State{
	// Preparing the workspace and planning: a planner's iteration may
	// wait for a slot or for the usage limit, its plan for a person.
	StateStarting: {StateRunning, StateHostOffline, StateWaitingForAgentSlot, StateRateLimited,
		StateAwaitingHuman, StateWaitingForAnswer},
	StateRunning: {StatePaused, StateRateLimited, StateAwaitingHuman, StateWaitingForAnswer,
		StateHostOffline, StateWaitingForAgentSlot},
	StatePaused:              {StateRunning},
	StateRateLimited:         {StateRunning},
	StateAwaitingHuman:       {StateRunning},
	StateWaitingForAnswer:    {StateRunning},
	StateWaitingForAgentSlot: {StateRunning, StateHostOffline},
	// Back to what the session did when its host went away: only a
	// workspace activity waits for a host.
	StateHostOffline: {StateStarting, StateRunning, StateWaitingForAgentSlot},
}

// SessionEnds are the states a session ends in.
var SessionEnds = []State{StateCompleted, StateLimited, StateStopped, StateFailed}

// CanMove reports whether SessionMoves lets a session move from state
// from to state to.
func CanMove(from, to State) bool {
	switch {
	case from == to:
		return true
	case slices.Contains(SessionEnds, from):
		return false
	case slices.Contains(SessionEnds, to):
		_, known := SessionMoves[from]
		return known
	}
	return slices.Contains(SessionMoves[from], to)
}

// SessionDiagram is SessionMoves as a Mermaid state diagram, which the
// documentation shows (docs/sessions.md).
func SessionDiagram() string {
	var b strings.Builder
	b.WriteString("stateDiagram-v2\n    [*] --> starting\n")
	for _, from := range States() {
		for _, to := range SessionMoves[from] {
			fmt.Fprintf(&b, "    %s --> %s\n", from, to)
		}
	}
	b.WriteString("    state ended <<choice>>\n")
	for _, from := range States() {
		if _, ok := SessionMoves[from]; ok {
			fmt.Fprintf(&b, "    %s --> ended\n", from)
		}
	}
	for _, end := range SessionEnds {
		fmt.Fprintf(&b, "    ended --> %s\n    %s --> [*]\n", end, end)
	}
	return b.String()
}
