package main

import (
	"fmt"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/words"
)

// queueState is the State row of a queue.
func queueState(st contract.QueueStatus) string {
	state := string(st.State)
	if st.Reason != "" {
		state += " (" + string(st.Reason) + ")"
	}
	if st.StopRequested && st.Reason == "" {
		state += ", stop requested"
	}
	if st.Paused && st.State != contract.StatePaused {
		state += ", pause requested"
	}
	return state
}

// queueLimits is the Limits row of a queue.
func queueLimits(s contract.QueueSettings) string {
	limits := fmt.Sprintf("poll every %s", s.PollInterval)
	if s.MaxIssues > 0 {
		limits += ", at most " + words.Count(s.MaxIssues, "issue")
	}
	if s.MaxCostUSD > 0 {
		limits += fmt.Sprintf(", at most $%.2f", s.MaxCostUSD)
	}
	if s.MaxCostPerDay > 0 {
		limits += fmt.Sprintf(", at most $%.2f a UTC day", s.MaxCostPerDay)
	}
	if s.UntilIdle {
		limits += ", ends when idle"
	}
	return limits
}
