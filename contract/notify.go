package contract

import (
	"fmt"
	"time"
)

// NotifyEvent is what a notification tells a person about.
type NotifyEvent string

// The events a notification is sent for (notify.events).
const (
	// NotifyQuestion: a checkpoint waits for an answer.
	NotifyQuestion NotifyEvent = "question"
	// NotifyPlan: a plan waits for approval.
	NotifyPlan NotifyEvent = "plan"
	// NotifyEnded: a session or queue ended (complete or stopped).
	NotifyEnded NotifyEvent = "ended"
	// NotifyFailed: a session or queue ended failed.
	NotifyFailed NotifyEvent = "failed"
	// NotifyLimit: a session ended at a limit (iterations, cost, time).
	NotifyLimit NotifyEvent = "limit"
	// NotifyPR: a pull request was opened, merged or closed, or its
	// follower gave up.
	NotifyPR NotifyEvent = "pr"
	// NotifyHostOffline: a session waits for its host's worker.
	NotifyHostOffline NotifyEvent = "host_offline"
	// NotifyBudget: a queue spent its daily budget.
	NotifyBudget NotifyEvent = "budget"
)

// NotifyEvents are every event, in the order the README lists them.
var NotifyEvents = []NotifyEvent{NotifyQuestion, NotifyPlan, NotifyEnded, NotifyFailed, NotifyLimit, NotifyPR, NotifyHostOffline, NotifyBudget}

// Channel names of notifications.
const (
	ChannelTelegram = "telegram"
	ChannelSlack    = "slack"
	ChannelWebhook  = "webhook"
)

// Notification is the input of ActivityNotify: one event of one
// workflow, sent to every configured channel that takes its event.
type Notification struct {
	// Key is the notification's idempotency key (NotifyKey): a channel
	// that has it recorded as sent is not sent it again.
	Key   string      `json:"key"`
	Event NotifyEvent `json:"event"`
	// Session names the session for a person: its workspace, or
	// owner/repo#N for an issue's.
	Session    string `json:"session"`
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
	// Text is what happened, in one line (agent text clipped and
	// redacted by the sender too).
	Text string `json:"text"`
	// Details are further lines: the question's context, the plan's
	// stories, the end's iteration, cost and commits.
	Details []string `json:"details,omitempty"`
	// Choices are the answers a question offers (buttons where the
	// channel has them).
	Choices []string `json:"choices,omitempty"`
	// Question is the number of the checkpoint an answer to this message
	// answers; 0 for events that take no answer.
	Question int `json:"question,omitempty"`
	// URL is a link that belongs to the event (the pull request).
	URL string `json:"url,omitempty"`
	// At is when the event happened: a notification older than
	// notify.max-age is given up.
	At time.Time `json:"at"`
}

// NotifyKey is the idempotency key of the seq-th notification of the
// workflow run: the same in every retry and every replay.
func NotifyKey(workflowID, runID string, event NotifyEvent, seq int) string {
	return fmt.Sprintf("%s/%s/%s/%d", workflowID, runID, event, seq)
}

// NotifyResult is the result of ActivityNotify.
type NotifyResult struct {
	// Sent are the messages the channels took (in this attempt or an
	// earlier one, found recorded).
	Sent []SentMessage `json:"sent,omitempty"`
	// GaveUp names the channels that were not reached before
	// notify.max-age, with their last error.
	GaveUp []string `json:"gave_up,omitempty"`
}

// SentMessage is one message a channel took.
type SentMessage struct {
	Channel string `json:"channel"`
	// Chat is the Telegram chat ID or the Slack channel ID.
	Chat string `json:"chat,omitempty"`
	// MessageID is the Telegram message ID or the Slack message's ts.
	MessageID string `json:"message_id,omitempty"`
}
