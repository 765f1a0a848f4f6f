// Package notify holds the Notification workflow, which sends one
// notification to every chat and webhook channel the worker has, and the
// Notifier that sessions, queues and followers start it with.
package notify

import (
	"fmt"
	"slices"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/words"
)

// versionNotify is the change ID of the notifications sessions, queues
// and followers send (Notification children): 1 starts one for every
// event, 2 only for those the worker sends anywhere (notifies).
const versionNotify = "notify"

// notifyBackstop bounds a Notification whose channel never answers: the
// activity gives up by itself after notify.max-age (default 24h), a
// worker setting the workflow cannot read.
const notifyBackstop = 8 * 24 * time.Hour

// Notification sends one notification to the configured channels (the
// worker's notify.* settings), each channel by an activity of its own,
// retried with backoff until it took the notification or the
// notification is older than notify.max-age. Its ID is NotificationID, one
// per notification of a run, so however often it is started it runs once;
// it outlives the workflow that started it. A notification that asks (a
// question, a plan) is told to the chat inbox as soon as Telegram (or a
// Slack bot) took it, so that the answers given in the chat reach the
// checkpoint.
func Notification(ctx workflow.Context, note contract.Notification) (contract.NotifyResult, error) {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Minute,
		// A worker that dies while it sends (after a channel took the
		// message, before the attempt completed) is seen within this,
		// and the retry tells the inbox: a reply to the question would
		// otherwise wait the whole StartToCloseTimeout. Only the
		// activity's options change: histories replay unchanged.
		HeartbeatTimeout:       20 * time.Second,
		ScheduleToCloseTimeout: notifyBackstop,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    5 * time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    2 * time.Minute,
		},
	})
	channels := []string{contract.ChannelTelegram, contract.ChannelSlack, contract.ChannelWebhook}
	results := make([]contract.NotifyResult, len(channels))
	var errs []error
	wg := workflow.NewWaitGroup(ctx)
	for i, ch := range channels {
		wg.Add(1)
		workflow.Go(ctx, func(gctx workflow.Context) {
			defer wg.Done()
			one := note
			one.Channel = ch
			ao := workflow.GetActivityOptions(actx)
			ao.Summary = fmt.Sprintf("%s to %s: %s", note.Event, ch, words.Clip(note.Text, 60))
			if err := workflow.ExecuteActivity(workflow.WithActivityOptions(gctx, ao), contract.ActivityNotify, one).Get(gctx, &results[i]); err != nil {
				errs = append(errs, err)
				return
			}
			if ch != contract.ChannelWebhook {
				tellInbox(gctx, note, results[i].Sent)
			}
		})
	}
	wg.Wait(ctx)
	var res contract.NotifyResult
	for _, r := range results {
		res.Sent = append(res.Sent, r.Sent...)
		res.GaveUp = append(res.GaveUp, r.GaveUp...)
	}
	if len(res.GaveUp) > 0 {
		// The session's status says so; a workflow that ended hears
		// nothing.
		err := workflow.SignalExternalWorkflow(ctx, note.WorkflowID, "", contract.SignalNotifyGaveUp, contract.NotifyGaveUp{
			Event: note.Event, Text: words.Clip(note.Text, 200), GaveUp: res.GaveUp, At: workflow.Now(ctx),
		}).Get(ctx, nil)
		if err != nil {
			workflow.GetLogger(ctx).Info("could not tell the workflow its notification was given up", "error", err)
		}
	}
	if len(errs) > 0 {
		return res, errs[0]
	}
	return res, nil
}

// tellInbox tells the chat inbox about the Telegram messages of note when
// it asks, so that a reply to one answers its checkpoint.
func tellInbox(ctx workflow.Context, note contract.Notification, sent []contract.SentMessage) {
	sent = slices.DeleteFunc(slices.Clone(sent), func(m contract.SentMessage) bool { return m.MessageID == "" })
	if note.Checkpoint == "" || len(sent) == 0 {
		return
	}
	err := workflow.SignalExternalWorkflow(ctx, contract.ChatInboxID, "", contract.SignalChatSent, contract.ChatSent{
		Key: note.Key, WorkflowID: note.WorkflowID, Session: note.Session, Event: note.Event,
		Checkpoint: note.Checkpoint, Choices: note.Choices, Messages: sent,
	}).Get(ctx, nil)
	if err != nil {
		workflow.GetLogger(ctx).Warn("the chat inbox does not run: answers in the chat will not be taken", "error", err)
	}
}

// notifies asks the worker, by a local activity, whether it sends event
// anywhere: with no channel configured a notification costs one marker,
// not a workflow and its activities. An error sends nothing.
func notifies(ctx workflow.Context, event contract.NotifyEvent) bool {
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		ScheduleToCloseTimeout: 10 * time.Second,
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 3},
	})
	var ok bool
	if err := workflow.ExecuteLocalActivity(lctx, contract.ActivityNotifies, event).Get(ctx, &ok); err != nil {
		workflow.GetLogger(ctx).Warn("could not ask whether the worker notifies", "event", event, "error", err)
		return false
	}
	return ok
}

// Notifier sends a workflow run's notifications, each a Notification
// child started and not waited for. The zero Notifier names no workflow
// and logs to the workflow's logger.
type Notifier struct {
	// Session names the workflow for a person.
	Session string
	Logger  log.Logger
	// seq numbers this run's notifications.
	seq int
	// asked numbers this run's notifications that take an answer.
	asked int
}

// Send starts the Notification of event, saying text (and details),
// asking cp when it is not nil. Histories recorded before notifications
// existed send none.
func (n *Notifier) Send(ctx workflow.Context, event contract.NotifyEvent, text string, details []string, cp *contract.Checkpoint) {
	n.SendNote(ctx, contract.Notification{Event: event, Text: text, Details: details}, cp)
}

// SendNote starts the Notification note (its event, text, details and
// URL), asking cp when it is not nil.
func (n *Notifier) SendNote(ctx workflow.Context, note contract.Notification, cp *contract.Checkpoint) {
	v := workflow.GetVersion(ctx, versionNotify, workflow.DefaultVersion, 2)
	if v < 1 || (v >= 2 && !notifies(ctx, note.Event)) {
		return
	}
	info := workflow.GetInfo(ctx)
	n.seq++
	event, text := note.Event, note.Text
	note.Key = contract.NotifyKey(info.WorkflowExecution.ID, info.WorkflowExecution.RunID, event, n.seq)
	note.Session, note.WorkflowID, note.RunID, note.At = n.Session, info.WorkflowExecution.ID, info.WorkflowExecution.RunID, workflow.Now(ctx)
	if cp != nil {
		n.asked++
		note.Question, note.Checkpoint = n.asked, cp.ID
		note.Choices = cp.Options
		if len(note.Choices) == 0 && (cp.Kind != contract.KindAgent || cp.Type == "human-verify") {
			note.Choices = []string{"approve", "reject"}
		}
	}
	// A context of its own: a notification of a session that is being
	// cancelled still goes out.
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	cctx := workflow.WithChildOptions(dctx, workflow.ChildWorkflowOptions{
		WorkflowID:            contract.NotificationID(note.RunID, note.Event, n.seq),
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_ABANDON,
		StaticSummary:         fmt.Sprintf("%s %s: %s", n.Session, event, words.Clip(text, 60)),
	})
	err := workflow.ExecuteChildWorkflow(cctx, Notification, note).GetChildWorkflowExecution().Get(dctx, nil)
	if err != nil {
		n.logger(ctx).Warn("could not start a notification", "event", event, "error", err)
	}
}

// logger is n.Logger, or the workflow's.
func (n *Notifier) logger(ctx workflow.Context) log.Logger {
	if n.Logger != nil {
		return n.Logger
	}
	return workflow.GetLogger(ctx)
}
