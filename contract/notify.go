package contract

import (
	"crypto/sha256"
	"encoding/base64"
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

// NotifyEvents are every event, in the order docs/people.md lists them.
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
	// Question numbers, from 1, the notifications of a run that take an
	// answer (a question, a plan); 0 for events that take none.
	Question int `json:"question,omitempty"`
	// Checkpoint is the ID of the checkpoint an answer answers.
	Checkpoint string `json:"checkpoint,omitempty"`
	// URL is a link that belongs to the event (the pull request).
	URL string `json:"url,omitempty"`
	// At is when the event happened: a notification older than
	// notify.max-age is given up.
	At time.Time `json:"at"`
	// Channel sends it to that channel only (ChannelTelegram, …); ""
	// sends it to all. The Notification workflow sends to each channel by
	// an activity of its own, so a channel that is down holds up no other.
	Channel string `json:"channel,omitempty"`
}

// NotifyKey is the idempotency key of the seq-th notification of the
// workflow run: the same in every retry and every replay.
func NotifyKey(workflowID, runID string, event NotifyEvent, seq int) string {
	return fmt.Sprintf("%s/%s/%s/%d", workflowID, runID, event, seq)
}

// SignalNotifyGaveUp tells the workflow whose notification it was that
// a channel did not take it before notify.max-age (NotifyGaveUp): its
// status lists it.
const SignalNotifyGaveUp = "notify-gave-up"

// NotifyGaveUpLimit bounds the undelivered notifications a status lists.
const NotifyGaveUpLimit = 5

// NotifyGaveUp is the data of SignalNotifyGaveUp.
type NotifyGaveUp struct {
	Event NotifyEvent `json:"event"`
	Text  string      `json:"text"`
	// GaveUp are the channels, each with its last error.
	GaveUp []string  `json:"gave_up"`
	At     time.Time `json:"at"`
}

// KeyHash is a short hash of a notification's key, 12 characters of
// base64url, that its message's buttons carry (Telegram allows 64 bytes
// of data a button): enough to tell the keys of the last messages apart.
func KeyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return base64.RawURLEncoding.EncodeToString(sum[:9])
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

// Names of the notification workflows and activities.
const (
	// WorkflowNotification sends one notification (its input) by
	// ActivityNotify, retried until it is delivered or too old; its ID
	// is NotificationID, so it runs once. Sessions, queues and followers
	// start it as an abandoned child and do not wait for it.
	WorkflowNotification = "Notification"
	// ActivityNotify sends a Notification to every configured channel.
	ActivityNotify = "Notify"
	// ActivityNotifies is the local activity that says whether the
	// worker sends an event (a NotifyEvent) anywhere: a workflow starts
	// no Notification where nothing would be sent.
	ActivityNotifies = "Notifies"
	// WorkflowChatInbox reads what people write to the Telegram bot and
	// acts on it: one per fleet, ID ChatInboxID, started by the workers
	// whose Telegram channel is configured.
	WorkflowChatInbox = "ChatInbox"
	// ChatInboxID is the ID of the ChatInbox workflow.
	ChatInboxID = "ralph-chat-inbox"
	// SignalChatSent tells the inbox about messages that ask (ChatSent).
	SignalChatSent = "chat-sent"
	// ActivityChatUpdates long-polls the Telegram updates after an offset
	// (ChatPoll), keeping those of the allowed chats (ChatUpdates).
	ActivityChatUpdates = "ChatUpdates"
	// ActivityChatAnswer answers a session's checkpoint through the
	// respond update (ChatAnswer), once per update ID.
	ActivityChatAnswer = "ChatAnswer"
	// ActivityChatReply writes to a chat or answers a button tap
	// (ChatReply).
	ActivityChatReply = "ChatReply"
	// ActivityChatSessions lists the running sessions (ChatSessions).
	ActivityChatSessions = "ChatSessions"
	// ActivityChatSlackReplies reads the replies in the threads of the
	// bot's Slack questions (SlackPoll), those of the workspace's members
	// (SlackReplies).
	ActivityChatSlackReplies = "ChatSlackReplies"
	// ActivityChatRun plans and runs a session on a workspace of the
	// worker's notify.workspaces, for a chat's /run (ChatRun).
	ActivityChatRun = "ChatRun"
	// SignalChatCommand gives the inbox a command that did not come
	// through its own polls: a Slack slash command (ChatUpdate).
	SignalChatCommand = "chat-command"
)

// NotificationID is the workflow ID of the seq-th notification of the
// workflow run runID. It holds the run ID, unique on its own, and not the
// workflow ID, which a replayer does not know: the child's ID must come
// out the same in every replay.
func NotificationID(runID string, event NotifyEvent, seq int) string {
	return fmt.Sprintf("ralph-notify/%s/%s/%d", runID, event, seq)
}

// ChatSent is the data of SignalChatSent: the messages of a notification
// that takes an answer, and what the answer goes to.
type ChatSent struct {
	Key        string        `json:"key"`
	WorkflowID string        `json:"workflow_id"`
	Session    string        `json:"session"`
	Event      NotifyEvent   `json:"event"`
	Checkpoint string        `json:"checkpoint,omitempty"`
	Choices    []string      `json:"choices,omitempty"`
	Messages   []SentMessage `json:"messages"`
}

// ChatPoll is the input of ActivityChatUpdates.
type ChatPoll struct {
	// Offset is the first update ID to read.
	Offset int64 `json:"offset"`
}

// ChatUpdates is the result of ActivityChatUpdates.
type ChatUpdates struct {
	Updates []ChatUpdate `json:"updates,omitempty"`
	// Next is the offset of the next poll.
	Next int64 `json:"next"`
	// Off says Telegram is not configured on the worker: the inbox ends.
	Off bool `json:"off,omitempty"`
}

// ChatUpdate is a message to the bot, or a tap on a button of one of its
// messages, from an allowed chat.
type ChatUpdate struct {
	ID        int64  `json:"id"`
	Chat      int64  `json:"chat"`
	User      string `json:"user"`
	MessageID int64  `json:"message_id"`
	Text      string `json:"text,omitempty"`
	ReplyTo   int64  `json:"reply_to,omitempty"`
	// ReplyToBot says the message replied to is the bot's: perhaps a
	// question the inbox has not heard of yet (false in the updates of
	// workers before it, which the inbox treats as before).
	ReplyToBot bool `json:"reply_to_bot,omitempty"`
	// CallbackID and the tap's button: the key hash of the notification
	// and the index of its choice. A reply to a bot's message with
	// buttons carries their key hash too (without CallbackID): the inbox
	// finds the question by it when it did not hear of that message (a
	// second copy sent after a worker died between the send and its
	// record). Empty in the updates of workers before it.
	CallbackID string `json:"callback_id,omitempty"`
	KeyHash    string `json:"key_hash,omitempty"`
	Choice     int    `json:"choice,omitempty"`
	// Slack is set for a reply in the thread of a Slack message instead.
	Slack *SlackPost `json:"slack,omitempty"`
}

// SlackPost is a message in the thread of a Slack message: its channel,
// its thread's parent (ts) and its own ts.
type SlackPost struct {
	Channel string `json:"channel"`
	Thread  string `json:"thread"`
	TS      string `json:"ts,omitempty"`
}

// ChatAnswer is the input of ActivityChatAnswer.
type ChatAnswer struct {
	WorkflowID string `json:"workflow_id"`
	// UpdateID makes the respond update once per chat update.
	UpdateID string `json:"update_id"`
	Answer   Answer `json:"answer"`
}

// ChatAnswered is the result of ActivityChatAnswer: whether the session
// took the answer, and what to tell the person.
type ChatAnswered struct {
	Taken   bool   `json:"taken"`
	Message string `json:"message"`
}

// ChatReply is the input of ActivityChatReply.
type ChatReply struct {
	Chat    int64  `json:"chat"`
	ReplyTo int64  `json:"reply_to,omitempty"`
	Text    string `json:"text,omitempty"`
	// CallbackID answers a button tap with Text instead.
	CallbackID string `json:"callback_id,omitempty"`
	// Slack posts Text in that Slack thread instead.
	Slack *SlackPost `json:"slack,omitempty"`
}

// ChatRun is the input of ActivityChatRun: /run ALIAS IDEA, by whom and
// through what chat. UpdateID is the chat update's: a retry finds the
// session that update started instead of refusing it as running.
type ChatRun struct {
	Alias    string `json:"alias"`
	Idea     string `json:"idea"`
	By       string `json:"by,omitempty"`
	Via      string `json:"via,omitempty"`
	UpdateID string `json:"update_id"`
}

// ChatRunResult is the result of ActivityChatRun: the session started,
// or why none did (Message says either).
type ChatRunResult struct {
	Started    bool   `json:"started"`
	WorkflowID string `json:"workflow_id,omitempty"`
	Message    string `json:"message"`
}

// ChatSession is a running session as /status lists it.
type ChatSession struct {
	WorkflowID string `json:"workflow_id"`
	Line       string `json:"line"`
}

// ChatTaskQueue is the task queue of the chat activities of base: only
// workers whose Telegram channel is configured serve it.
func ChatTaskQueue(base string) string { return base + "@chat" }

// InboxState is the input of the ChatInbox workflow, carried across
// continue-as-new.
type InboxState struct {
	// Offset is the next Telegram update to read.
	Offset int64 `json:"offset"`
	// Asked are the last messages that ask, newest last.
	Asked []ChatSent `json:"asked,omitempty"`
	// SlackAfter is, by "channel/ts" of a Slack question, the ts of the
	// last reply in its thread that was read.
	SlackAfter map[string]string `json:"slack_after,omitempty"`
	// TelegramOff says no worker reads Telegram: only Slack is polled.
	TelegramOff bool `json:"telegram_off,omitempty"`
	// Held are replies to messages of the bot that the inbox did not know
	// as questions when they came, oldest first: each is answered when
	// its question is told, or told it asks nothing at Until.
	Held []HeldReply `json:"held,omitempty"`
}

// HeldReply is a reply the inbox holds until Until.
type HeldReply struct {
	Update ChatUpdate `json:"update"`
	Until  time.Time  `json:"until"`
}

// SlackPoll is the input of ActivityChatSlackReplies: the threads to
// read, each after the reply last read (SlackPost.TS, "" for all).
type SlackPoll struct {
	Threads []SlackPost `json:"threads"`
}

// SlackReplies is the result of ActivityChatSlackReplies.
type SlackReplies struct {
	// Updates are the members' replies, oldest first in each thread.
	Updates []ChatUpdate `json:"updates,omitempty"`
	// Read are the threads with the last reply read (members' or not).
	Read []SlackPost `json:"read,omitempty"`
	// Off says the worker has no Slack bot.
	Off bool `json:"off,omitempty"`
}
