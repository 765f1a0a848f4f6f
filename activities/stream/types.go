package stream

import "time"

// Usage is the token accounting Claude Code reports in a result event.
type Usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
}

// Add returns the sum of u and o.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		InputTokens:              u.InputTokens + o.InputTokens,
		OutputTokens:             u.OutputTokens + o.OutputTokens,
		CacheCreationInputTokens: u.CacheCreationInputTokens + o.CacheCreationInputTokens,
		CacheReadInputTokens:     u.CacheReadInputTokens + o.CacheReadInputTokens,
	}
}

// Total is every token counted in u.
func (u Usage) Total() int64 {
	return u.InputTokens + u.OutputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
}

// Outcome classifies how one agent run ended.
type Outcome string

// Outcomes of one agent run.
const (
	OutcomeSuccess     Outcome = "success"
	OutcomeAgentError  Outcome = "agent_error"
	OutcomeRateLimited Outcome = "rate_limited"
	OutcomePermanent   Outcome = "permanent_error"
	OutcomeTimeout     Outcome = "timeout"
)

// RateLimit is what the agent told us about a usage or rate limit.
type RateLimit struct {
	Status   string    `json:"status"`              // "allowed", "allowed_warning", "rejected"
	Type     string    `json:"type,omitempty"`      // e.g. "five_hour"
	ResetsAt time.Time `json:"resets_at,omitempty"` // zero when unknown
}
