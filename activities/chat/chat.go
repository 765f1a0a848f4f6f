// Package chat holds the activities that reach people away from the
// terminal: Notify sends a notification to the configured channels
// (package notify), and the Chat* activities serve the ChatInbox
// workflow, which reads what people write to the Telegram bot and acts on
// it.
package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/words"
	"github.com/durable-ralph/ralph/notify"
)

// PollTimeout is how long one getUpdates waits for an update.
const PollTimeout = 25 * time.Second

// Activities are the chat activities of a worker.
type Activities struct {
	// Notifier sends; nil sends nothing.
	Notifier *notify.Notifier
	// Client answers and lists sessions.
	Client client.Client
	// ChatIDs are the Telegram chats that may answer and command.
	ChatIDs []int64
	// Run plans and runs a session for a chat's /run (the worker's
	// wiring: it reads the worker's notify.workspaces and the
	// workspace's configuration); nil runs none.
	Run func(ctx context.Context, in contract.ChatRun) (contract.ChatRunResult, error)

	ignoredMu sync.Mutex
	ignored   map[int64]bool
}

// Notify sends note to every configured channel that takes its event,
// once per channel however often it is retried.
func (a *Activities) Notify(ctx context.Context, note contract.Notification) (contract.NotifyResult, error) {
	// Beats let a worker's death be seen in the heartbeat timeout the
	// Notification workflow sets, not after the attempt's whole 2 minutes.
	defer activities.HeartbeatWhile(ctx, 5*time.Second)()
	res, err := a.Notifier.Send(ctx, note)
	if err != nil {
		return res, fmt.Errorf("notify %s: %w", note.Key, err)
	}
	return res, nil
}

// Notifies reports whether this worker sends event anywhere. Workflows
// run it as a local activity before they start a Notification.
func (a *Activities) Notifies(_ context.Context, event contract.NotifyEvent) (bool, error) {
	return a.Notifier.Sends(event), nil
}

// telegram is the Telegram client, or nil when Telegram is off.
func (a *Activities) telegram() *notify.Telegram {
	if a.Notifier == nil {
		return nil
	}
	return a.Notifier.Telegram()
}

// ChatUpdates waits for the Telegram updates from poll's offset on and
// returns those from the allowed chats. An update from another chat is
// passed over (and logged once per chat); Off says Telegram is not
// configured here.
func (a *Activities) ChatUpdates(ctx context.Context, poll contract.ChatPoll) (contract.ChatUpdates, error) {
	tg := a.telegram()
	if tg == nil {
		return contract.ChatUpdates{Off: true, Next: poll.Offset}, nil
	}
	defer activities.HeartbeatWhile(ctx, 5*time.Second)()
	ups, err := tg.Updates(ctx, poll.Offset, PollTimeout)
	if err != nil {
		return contract.ChatUpdates{}, fmt.Errorf("read the Telegram updates: %w", err)
	}
	res := contract.ChatUpdates{Next: poll.Offset}
	for _, u := range ups {
		res.Next = max(res.Next, u.ID+1)
		if !slices.Contains(a.ChatIDs, u.ChatID) {
			a.ignore(ctx, u.ChatID)
			continue
		}
		cu := contract.ChatUpdate{ID: u.ID, Chat: u.ChatID, User: u.User, MessageID: u.MessageID, Text: u.Text, ReplyTo: u.ReplyTo, ReplyToBot: u.ReplyToBot, CallbackID: u.CallbackID}
		if cb, ok := notify.ParseCallbackData(u.CallbackData); ok {
			cu.KeyHash, cu.Choice = cb.KeyHash, cb.Choice
		} else if cb, ok := notify.ParseCallbackData(u.ReplyToData); ok {
			cu.KeyHash = cb.KeyHash
		}
		res.Updates = append(res.Updates, cu)
	}
	return res, nil
}

// ignore logs, once per chat and worker, that a chat not in
// notify.telegram.chat-ids wrote to the bot.
func (a *Activities) ignore(ctx context.Context, chat int64) {
	a.ignoredMu.Lock()
	defer a.ignoredMu.Unlock()
	if a.ignored == nil {
		a.ignored = map[int64]bool{}
	}
	if a.ignored[chat] {
		return
	}
	a.ignored[chat] = true
	activity.GetLogger(ctx).Warn("a Telegram chat that is not in notify.telegram.chat-ids wrote to the bot: ignored", "chat", chat)
}

// ChatAnswer answers the pending checkpoint of a session through its
// respond update, whose ID is the chat update's: a retry finds the first
// outcome instead of answering twice. An answer the session refuses
// (answered already, not pending any more) is not an error: Message says
// why.
func (a *Activities) ChatAnswer(ctx context.Context, in contract.ChatAnswer) (contract.ChatAnswered, error) {
	h, err := a.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		UpdateID:     in.UpdateID,
		WorkflowID:   in.WorkflowID,
		UpdateName:   contract.UpdateRespond,
		Args:         []any{in.Answer},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	var res contract.RespondResult
	if err == nil {
		err = h.Get(ctx, &res)
	}
	var notFound *serviceerror.NotFound
	var appErr *temporal.ApplicationError
	switch {
	case err == nil:
		// The workflow says what follows: "answer to cp-3 recorded; the
		// session goes on", "…; the queue stops".
		_, next, ok := strings.Cut(res.Message, "; ")
		if !ok {
			next = "it goes on"
		}
		return contract.ChatAnswered{Taken: true, Message: "Answered (" + in.Answer.Said() + "): " + next + "."}, nil
	case errors.As(err, &notFound):
		return contract.ChatAnswered{Message: "That session is not running any more."}, nil
	case errors.As(err, &appErr):
		return contract.ChatAnswered{Message: "Not taken: " + appErr.Message() + "."}, nil
	}
	return contract.ChatAnswered{}, fmt.Errorf("answer %s: %w", in.WorkflowID, err)
}

// ChatReply writes in.Text to the chat, as a reply when in.ReplyTo is
// set, or answers the button tap in.CallbackID with it, or posts it in
// the Slack thread in.Slack.
func (a *Activities) ChatReply(ctx context.Context, in contract.ChatReply) error {
	if in.Slack != nil {
		if sl := a.slack(); sl != nil {
			return sl.PostInThread(ctx, in.Slack.Channel, in.Slack.Thread, in.Text)
		}
		return nil
	}
	tg := a.telegram()
	if tg == nil {
		return nil
	}
	if in.CallbackID != "" {
		if err := tg.AnswerCallback(ctx, in.CallbackID, words.Clip(in.Text, 190)); err != nil {
			return fmt.Errorf("answer the button tap: %w", err)
		}
		return nil
	}
	_, err := tg.SendMessage(ctx, notify.TelegramMessage{ChatID: in.Chat, Text: words.Cut(in.Text, 4000), ReplyTo: in.ReplyTo})
	if err != nil {
		return fmt.Errorf("reply in chat %d: %w", in.Chat, err)
	}
	return nil
}

// ChatSessions lists the running sessions, newest first, each with a
// line of what it does.
func (a *Activities) ChatSessions(ctx context.Context) ([]contract.ChatSession, error) {
	resp, err := a.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Query: "WorkflowType = '" + contract.WorkflowSession + "' AND ExecutionStatus = 'Running'",
	})
	if err != nil {
		return nil, fmt.Errorf("list the running sessions: %w", err)
	}
	var out []contract.ChatSession
	for _, e := range resp.GetExecutions() {
		if e.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			continue
		}
		id := e.GetExecution().GetWorkflowId()
		line := id
		if f := e.GetSearchAttributes().GetIndexedFields(); f != nil {
			var status string
			var iteration int64
			if p := f[contract.SearchRalphStatus]; p != nil {
				_ = json.Unmarshal(p.GetData(), &status)
			}
			if p := f[contract.SearchRalphIteration]; p != nil {
				_ = json.Unmarshal(p.GetData(), &iteration)
			}
			if status != "" {
				line += fmt.Sprintf(": %s, iteration %d", status, iteration)
			}
		}
		out = append(out, contract.ChatSession{WorkflowID: id, Line: line})
	}
	sort.SliceStable(out, func(i, j int) bool { return strings.Compare(out[i].WorkflowID, out[j].WorkflowID) < 0 })
	return out, nil
}

// ChatRun starts what a chat's /run asks for, through a.Run. A refusal
// (an alias the worker does not know, a session running there) is not an
// error: Message says why.
func (a *Activities) ChatRun(ctx context.Context, in contract.ChatRun) (contract.ChatRunResult, error) {
	if a.Run == nil {
		return contract.ChatRunResult{Message: "This worker runs nothing from the chat: it has no notify.workspaces."}, nil
	}
	return a.Run(ctx, in)
}

// slack is the Slack bot, or nil without one.
func (a *Activities) slack() *notify.Slack {
	if a.Notifier == nil || !a.Notifier.SlackBot() {
		return nil
	}
	return a.Notifier.Slack()
}

// ChatSlackReplies reads the replies in the threads of poll after the
// last one read, and returns those by members of the bot's workspace
// (notify.Slack.Member); the others are passed over and logged.
func (a *Activities) ChatSlackReplies(ctx context.Context, poll contract.SlackPoll) (contract.SlackReplies, error) {
	sl := a.slack()
	if sl == nil {
		return contract.SlackReplies{Off: true}, nil
	}
	var res contract.SlackReplies
	for _, th := range poll.Threads {
		replies, err := sl.Replies(ctx, th.Channel, th.Thread, th.TS)
		if err != nil {
			return contract.SlackReplies{}, fmt.Errorf("read the thread %s/%s: %w", th.Channel, th.Thread, err)
		}
		read := th
		for _, r := range replies {
			if r.TS == th.TS {
				continue // Slack's oldest is inclusive
			}
			read.TS = r.TS
			if r.BotID != "" || r.User == "" {
				continue
			}
			ok, name, err := sl.Member(ctx, r.User)
			if err != nil {
				return contract.SlackReplies{}, err
			}
			if !ok {
				activity.GetLogger(ctx).Warn("a Slack reply by someone who is not a member of the bot's workspace: ignored", "user", r.User)
				continue
			}
			res.Updates = append(res.Updates, contract.ChatUpdate{User: "@" + name, Text: notify.SlackUnescape(r.Text),
				Slack: &contract.SlackPost{Channel: th.Channel, Thread: th.Thread, TS: r.TS}})
		}
		res.Read = append(res.Read, read)
	}
	return res, nil
}

// Inbox reports whether people can answer through a: a Telegram bot or a
// Slack bot is configured.
func (a *Activities) Inbox() bool { return a.telegram() != nil || a.slack() != nil }
