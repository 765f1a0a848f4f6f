package claude

import "time"

// RateLimit is what the agent told us about a usage or rate limit.
type RateLimit struct {
	Status   string    `json:"status"`              // "allowed", "allowed_warning", "rejected"
	Type     string    `json:"type,omitempty"`      // e.g. "five_hour"
	ResetsAt time.Time `json:"resets_at,omitempty"` // zero when unknown
}
