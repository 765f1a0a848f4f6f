// Package inbox holds the ChatInbox workflow: one per worker fleet, it
// reads the replies people give in Telegram and Slack and hands each to
// the checkpoint it answers.
package inbox

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/words"
	"github.com/durable-ralph/ralph/workflows/flow"
)

// Bounds of the chat inbox.
const (
	// inboxAskedLimit is how many asking messages the inbox remembers.
	inboxAskedLimit = 200
	// inboxPollsPerRun bounds the polls of one run before it continues
	// as new.
	inboxPollsPerRun = 300
	// slackPollInterval is how often the threads of the Slack questions
	// are read.
	slackPollInterval = 15 * time.Second
	// slackThreadLimit bounds the threads read each time: the last
	// questions'.
	slackThreadLimit = 10
	// inboxHoldFor is how long a reply to a message of the bot that the
	// inbox does not know waits for its question to be told: a worker
	// that died between sending a question and telling the inbox tells
	// it on its retry, after the person may already have answered.
	inboxHoldFor = 3 * time.Minute
	// inboxHeldLimit bounds the replies held; beyond it the oldest is
	// told at once that it answers nothing.
	inboxHeldLimit = 50
)

// versionHoldReplies is the change ID of the held replies: from 1 on, a
// reply to an unknown message of the bot waits inboxHoldFor for its
// question; before, it was told at once that it answers nothing.
const versionHoldReplies = "inbox-hold-replies"

// versionReplyByButtons is the change ID of replies matched by their
// buttons: from 1 on, a reply to a message of the bot that the inbox does
// not know is matched to its question by the key hash of that message's
// buttons (a second copy, sent after a worker died between the send and
// its record). Before, only the message ID matched. The hash comes from
// the chat activity of workers since the change: an older inbox run may
// have recorded one and decided without it.
const versionReplyByButtons = "inbox-reply-by-buttons"

// chatHelp is what the bot says to what it does not understand.
const chatHelp = "Reply to a question of a session to answer it (approve, reject: why, or your answer), or to a plan to approve it or say what to change. Commands: /run <workspace> <idea> (plans it, and runs the plan you approve); /status; /guide <text>, /pause, /resume, /stop (as a reply to a session's message, or with one session running)."

// ChatInbox reads what the allowed Telegram chats write to the bot, one
// update at a time from a durable offset, and acts on each once: a reply
// to a question (or a tap on one of its buttons) answers the checkpoint
// as starter respond does; /status lists the running sessions; /guide,
// /pause, /resume and /stop signal the session replied to, or the only
// one running. It is one per fleet (ChatInboxID), started by the workers
// whose Telegram channel is configured; its activities run on their
// ChatTaskQueue.
func ChatInbox(ctx workflow.Context, st contract.InboxState) error {
	ib := &inbox{st: st, logger: workflow.GetLogger(ctx)}
	ib.sent = workflow.GetSignalChannelWithOptions(ctx, contract.SignalChatSent, workflow.SignalChannelOptions{
		Description: "Messages of a notification that asks (sent by the Notification workflow)",
	})
	ib.commands = workflow.GetSignalChannelWithOptions(ctx, contract.SignalChatCommand, workflow.SignalChannelOptions{
		Description: "A command from a chat that the inbox does not poll: a Slack slash command such as /run",
	})
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           contract.ChatTaskQueue(workflow.GetInfo(ctx).TaskQueueName),
		StartToCloseTimeout: 2 * time.Minute,
		HeartbeatTimeout:    20 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    time.Minute,
			MaximumAttempts:    10,
		},
	})
	for polls := 0; polls < inboxPollsPerRun && !workflow.GetInfo(ctx).GetContinueAsNewSuggested(); polls++ {
		ib.drain()
		if err := ib.telegram(ctx); err != nil {
			return err
		}
		slackOff, err := ib.slack(ctx)
		if err != nil {
			return err
		}
		if ib.st.TelegramOff && slackOff {
			ib.logger.Info("neither Telegram nor a Slack bot is configured on the worker: the chat inbox ends")
			return nil
		}
	}
	ib.drain()
	for {
		var u contract.ChatUpdate
		if !ib.commands.ReceiveAsync(&u) {
			break
		}
		ib.handle(ctx, u)
	}
	return workflow.NewContinueAsNewError(ctx, ChatInbox, ib.st)
}

// telegram reads and acts on the Telegram updates, waiting for them
// (a long poll), unless no worker reads Telegram.
func (ib *inbox) telegram(ctx workflow.Context) error {
	if ib.st.TelegramOff {
		// Slack alone: its threads are read every slackPollInterval.
		return ib.serveUntil(ctx, workflow.NewTimer(ctx, slackPollInterval)).Get(ctx, nil)
	}
	var ups contract.ChatUpdates
	poll := workflow.ExecuteActivity(ctx, contract.ActivityChatUpdates, contract.ChatPoll{Offset: ib.st.Offset})
	if err := ib.serveUntil(ctx, poll).Get(ctx, &ups); err != nil {
		if temporal.IsCanceledError(err) {
			return err
		}
		ib.logger.Warn("could not read the Telegram updates: trying again", "error", err)
		return workflow.Sleep(ctx, 30*time.Second)
	}
	if ups.Off {
		ib.st.TelegramOff = true
		return nil
	}
	ib.drain()
	ib.settleHeld(ctx)
	for _, u := range ups.Updates {
		ib.handle(ctx, u)
	}
	ib.st.Offset = max(ib.st.Offset, ups.Next)
	return nil
}

// slack reads and acts on the replies in the threads of the last Slack
// questions, at most every slackPollInterval; off says no worker has a
// Slack bot.
func (ib *inbox) slack(ctx workflow.Context) (off bool, err error) {
	now := workflow.Now(ctx)
	if now.Sub(ib.slackAt) < slackPollInterval {
		return false, nil
	}
	ib.slackAt = now
	threads := ib.slackThreads()
	if len(threads) == 0 && !ib.st.TelegramOff {
		return false, nil
	}
	var res contract.SlackReplies
	if err := workflow.ExecuteActivity(ctx, contract.ActivityChatSlackReplies, contract.SlackPoll{Threads: threads}).Get(ctx, &res); err != nil {
		if temporal.IsCanceledError(err) {
			return false, err
		}
		ib.logger.Warn("could not read the Slack threads: trying again", "error", err)
		return false, nil
	}
	if res.Off {
		return true, nil
	}
	for _, u := range res.Updates {
		if cs := ib.asking(u.Slack.Channel, u.Slack.Thread); cs != nil {
			ib.answer(ctx, u, cs, chatAnswer(*cs, u.Text))
		}
	}
	if ib.st.SlackAfter == nil {
		ib.st.SlackAfter = map[string]string{}
	}
	for _, th := range res.Read {
		ib.st.SlackAfter[th.Channel+"/"+th.Thread] = th.TS
	}
	return false, nil
}

// slackThreads are the threads of the last slackThreadLimit Slack
// questions, each after the reply last read.
func (ib *inbox) slackThreads() []contract.SlackPost {
	var out []contract.SlackPost
	for i := len(ib.st.Asked) - 1; i >= 0 && len(out) < slackThreadLimit; i-- {
		for _, m := range ib.st.Asked[i].Messages {
			if m.Channel == contract.ChannelSlack {
				out = append(out, contract.SlackPost{Channel: m.Chat, Thread: m.MessageID, TS: ib.st.SlackAfter[m.Chat+"/"+m.MessageID]})
			}
		}
	}
	return out
}

// inbox is one run of the chat inbox.
type inbox struct {
	st   contract.InboxState
	sent workflow.ReceiveChannel
	// commands are the Slack slash commands (SignalChatCommand).
	commands workflow.ReceiveChannel
	logger   log.Logger
	// slackAt is when the Slack threads were last read.
	slackAt time.Time
	// holds caches GetVersion(versionHoldReplies) of this run.
	holds *bool
	// byButtons caches GetVersion(versionReplyByButtons) of this run.
	byButtons *bool
}

// serveUntil acts on the slash commands that come until f is ready, and
// returns f.
func (ib *inbox) serveUntil(ctx workflow.Context, f workflow.Future) workflow.Future {
	for !f.IsReady() {
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(f, func(workflow.Future) {})
		sel.AddReceive(ib.commands, func(c workflow.ReceiveChannel, _ bool) {
			var u contract.ChatUpdate
			c.Receive(ctx, &u)
			ib.drain()
			ib.handle(ctx, u)
		})
		sel.Select(ctx)
	}
	return f
}

// drain takes the asking messages told since.
func (ib *inbox) drain() {
	var cs contract.ChatSent
	for ib.sent.ReceiveAsync(&cs) {
		ib.st.Asked = append(ib.st.Asked, cs)
		if n := len(ib.st.Asked); n > inboxAskedLimit {
			ib.st.Asked = slices.Clone(ib.st.Asked[n-inboxAskedLimit:])
		}
		cs = contract.ChatSent{}
	}
}

// asking finds the asking message of chat with ID id (a Telegram
// chat's, or a Slack channel's ts).
func (ib *inbox) asking(chat, id string) *contract.ChatSent {
	for i := len(ib.st.Asked) - 1; i >= 0; i-- {
		for _, sm := range ib.st.Asked[i].Messages {
			if sm.Chat == chat && sm.MessageID == id {
				return &ib.st.Asked[i]
			}
		}
	}
	return nil
}

// repliedTo finds the asking message the reply u replies to: by its
// message ID, else, from version 1 of versionReplyByButtons, by the key
// hash its buttons carry (a copy of the question whose sending the inbox
// was not told of).
func (ib *inbox) repliedTo(ctx workflow.Context, u contract.ChatUpdate) *contract.ChatSent {
	if cs := ib.asking(strconv.FormatInt(u.Chat, 10), strconv.FormatInt(u.ReplyTo, 10)); cs != nil {
		return cs
	}
	if u.KeyHash == "" || !ib.matchesButtons(ctx) {
		return nil
	}
	return ib.byKeyHash(u.KeyHash)
}

// matchesButtons reports whether this run finds a reply's question by
// the key hash of the replied message's buttons (GetVersion
// versionReplyByButtons, asked once per run, and only for such a reply).
func (ib *inbox) matchesButtons(ctx workflow.Context) bool {
	if ib.byButtons == nil {
		on := workflow.GetVersion(ctx, versionReplyByButtons, workflow.DefaultVersion, 1) == 1
		ib.byButtons = &on
	}
	return *ib.byButtons
}

// byKeyHash finds the asking notification whose key has hash h.
func (ib *inbox) byKeyHash(h string) *contract.ChatSent {
	for i := len(ib.st.Asked) - 1; i >= 0; i-- {
		if contract.KeyHash(ib.st.Asked[i].Key) == h {
			return &ib.st.Asked[i]
		}
	}
	return nil
}

// handle acts on one update.
func (ib *inbox) handle(ctx workflow.Context, u contract.ChatUpdate) {
	switch {
	case u.CallbackID != "":
		ib.tapped(ctx, u)
	case strings.HasPrefix(strings.TrimSpace(u.Text), "/"):
		var target string
		if u.ReplyTo != 0 {
			if cs := ib.repliedTo(ctx, u); cs != nil {
				target = cs.WorkflowID
			}
		}
		ib.command(ctx, u, target)
	case u.ReplyTo != 0:
		cs := ib.repliedTo(ctx, u)
		switch {
		case cs != nil:
			ib.answer(ctx, u, cs, chatAnswer(*cs, u.Text))
		case u.ReplyToBot && ib.holdsReplies(ctx):
			ib.hold(ctx, u)
		default:
			ib.reply(ctx, u, notAQuestion)
		}
	default:
		ib.reply(ctx, u, chatHelp)
	}
}

// notAQuestion is what the bot says to a reply to a message that asks
// nothing.
const notAQuestion = "That message is not a question of a Ralph session. " + chatHelp

// holdsReplies reports whether this run holds replies to unknown messages
// of the bot (GetVersion versionHoldReplies, asked once per run).
func (ib *inbox) holdsReplies(ctx workflow.Context) bool {
	if ib.holds == nil {
		on := workflow.GetVersion(ctx, versionHoldReplies, workflow.DefaultVersion, 1) == 1
		ib.holds = &on
	}
	return *ib.holds
}

// hold keeps u until its question is told or inboxHoldFor has passed;
// beyond inboxHeldLimit the oldest held reply is told it answers nothing.
func (ib *inbox) hold(ctx workflow.Context, u contract.ChatUpdate) {
	ib.st.Held = append(ib.st.Held, contract.HeldReply{Update: u, Until: workflow.Now(ctx).Add(inboxHoldFor)})
	if len(ib.st.Held) > inboxHeldLimit {
		oldest := ib.st.Held[0]
		ib.st.Held = slices.Clone(ib.st.Held[1:])
		ib.reply(ctx, oldest.Update, notAQuestion)
	}
}

// settleHeld answers the held replies whose question is now told, tells
// those whose time is up that they answer nothing, and keeps the rest, in
// the order they came.
func (ib *inbox) settleHeld(ctx workflow.Context) {
	if len(ib.st.Held) == 0 {
		return
	}
	now := workflow.Now(ctx)
	held := ib.st.Held
	ib.st.Held = nil
	for _, h := range held {
		u := h.Update
		if cs := ib.repliedTo(ctx, u); cs != nil {
			ib.answer(ctx, u, cs, chatAnswer(*cs, u.Text))
		} else if !now.Before(h.Until) {
			ib.reply(ctx, u, notAQuestion)
		} else {
			ib.st.Held = append(ib.st.Held, h)
		}
	}
}

// tapped answers with the choice of a tapped button.
func (ib *inbox) tapped(ctx workflow.Context, u contract.ChatUpdate) {
	cs := ib.byKeyHash(u.KeyHash)
	if cs == nil || u.Choice < 0 || u.Choice >= len(cs.Choices) {
		ib.run(ctx, contract.ActivityChatReply, contract.ChatReply{CallbackID: u.CallbackID, Text: "This question is not known any more."})
		return
	}
	res := ib.answer(ctx, u, cs, chatAnswer(*cs, cs.Choices[u.Choice]))
	ib.run(ctx, contract.ActivityChatReply, contract.ChatReply{CallbackID: u.CallbackID, Text: res.Message})
}

// chatAnswer reads text as the answer to the checkpoint cs asks: on a
// plan, anything but an approval is the change asked for.
func chatAnswer(cs contract.ChatSent, text string) contract.Answer {
	if len(text) > contract.MessageLimit-64 {
		text = words.Cut(text, contract.MessageLimit-64)
	}
	ans := contract.Checkpoint{ID: cs.Checkpoint, Options: cs.Choices}.AnswerFrom(text)
	if cs.Event == contract.NotifyPlan && !ans.Approve && !ans.Reject {
		ans = contract.Answer{ID: cs.Checkpoint, Reject: true, Reason: ans.Answer}
	}
	ans.Via = "Telegram"
	return ans
}

// answer gives ans to the session cs asks for, and tells the chat what
// became of it.
func (ib *inbox) answer(ctx workflow.Context, u contract.ChatUpdate, cs *contract.ChatSent, ans contract.Answer) contract.ChatAnswered {
	ans.By, ans.Via = u.User, via(u)
	var res contract.ChatAnswered
	err := workflow.ExecuteActivity(ctx, contract.ActivityChatAnswer, contract.ChatAnswer{
		WorkflowID: cs.WorkflowID, UpdateID: updateID(u), Answer: ans,
	}).Get(ctx, &res)
	if err != nil {
		res.Message = "Could not answer: " + flow.RootMessage(err)
	}
	if u.CallbackID == "" {
		ib.reply(ctx, u, fmt.Sprintf("%s (%s)", res.Message, cs.Session))
	}
	return res
}

// command acts on a /command, on the session target when it is known.
func (ib *inbox) command(ctx workflow.Context, u contract.ChatUpdate, target string) {
	name, arg, _ := strings.Cut(strings.TrimSpace(u.Text), " ")
	name, _, _ = strings.Cut(strings.ToLower(name), "@") // /status@ralph_bot
	arg = strings.TrimSpace(arg)
	signal, payload := "", any(nil)
	switch name {
	case "/status":
		ib.status(ctx, u)
		return
	case "/run":
		ib.runIdea(ctx, u, arg)
		return
	case "/guide":
		if arg == "" {
			ib.reply(ctx, u, "Say what: /guide <text>.")
			return
		}
		signal, payload = contract.SignalGuide, words.Cut(arg, contract.MessageLimit-64)
	case "/pause":
		signal = contract.SignalPause
	case "/resume":
		signal = contract.SignalResume
	case "/stop":
		signal, payload = contract.SignalStop, contract.StopSignal{Reason: "stopped from " + via(u) + " by " + u.User}
	default:
		ib.reply(ctx, u, "Unknown command "+words.Clip(name, 40)+". "+chatHelp)
		return
	}
	if target == "" {
		var ok bool
		if target, ok = ib.onlySession(ctx, u); !ok {
			return
		}
	}
	if err := workflow.SignalExternalWorkflow(ctx, target, "", signal, payload).Get(ctx, nil); err != nil {
		ib.reply(ctx, u, fmt.Sprintf("Could not send %s to %s: %s", name, target, flow.RootMessage(err)))
		return
	}
	ib.reply(ctx, u, fmt.Sprintf("Sent %s to %s.", name, target))
}

// runUsage is what the bot says to a /run without a workspace or an idea.
const runUsage = "Say where and what: /run <workspace> <idea>, such as /run api Add a /health endpoint. The workspaces are those of the worker's notify.workspaces."

// runIdea acts on /run ALIAS IDEA: the worker plans the idea in the
// workspace its configuration names ALIAS, and the plan comes to the
// chats to approve before anything runs.
func (ib *inbox) runIdea(ctx workflow.Context, u contract.ChatUpdate, arg string) {
	alias, idea, _ := strings.Cut(arg, " ")
	idea = strings.TrimSpace(idea)
	if alias == "" || idea == "" {
		ib.reply(ctx, u, runUsage)
		return
	}
	in := contract.ChatRun{Alias: strings.ToLower(alias), Idea: words.Cut(idea, contract.MessageLimit), By: u.User, Via: via(u), UpdateID: updateID(u)}
	var res contract.ChatRunResult
	if err := workflow.ExecuteActivity(ctx, contract.ActivityChatRun, in).Get(ctx, &res); err != nil {
		res.Message = "Could not start it: " + flow.RootMessage(err)
	}
	ib.reply(ctx, u, res.Message)
}

// via names the chat u came from.
func via(u contract.ChatUpdate) string {
	if u.Slack != nil {
		return "Slack"
	}
	return "Telegram"
}

// updateID names u for the updates and starts it causes, the same on
// every retry.
func updateID(u contract.ChatUpdate) string {
	if u.Slack != nil {
		return "slack-" + u.Slack.Channel + "-" + u.Slack.TS
	}
	return fmt.Sprintf("telegram-%d", u.ID)
}

// onlySession is the one running session, or says why there is none.
func (ib *inbox) onlySession(ctx workflow.Context, u contract.ChatUpdate) (string, bool) {
	var list []contract.ChatSession
	if err := workflow.ExecuteActivity(ctx, contract.ActivityChatSessions).Get(ctx, &list); err != nil {
		ib.reply(ctx, u, "Could not list the sessions: "+flow.RootMessage(err))
		return "", false
	}
	if len(list) != 1 {
		ib.reply(ctx, u, fmt.Sprintf("%s run: reply to a message of the one you mean.", words.Count(len(list), "session")))
		return "", false
	}
	return list[0].WorkflowID, true
}

// status lists the running sessions, one line each.
func (ib *inbox) status(ctx workflow.Context, u contract.ChatUpdate) {
	var list []contract.ChatSession
	if err := workflow.ExecuteActivity(ctx, contract.ActivityChatSessions).Get(ctx, &list); err != nil {
		ib.reply(ctx, u, "Could not list the sessions: "+flow.RootMessage(err))
		return
	}
	if len(list) == 0 {
		ib.reply(ctx, u, "No session runs.")
		return
	}
	var b strings.Builder
	b.WriteString(words.Count(len(list), "session") + " running:\n")
	for _, s := range list {
		b.WriteString("• " + s.Line + "\n")
	}
	ib.reply(ctx, u, strings.TrimSuffix(b.String(), "\n"))
}

// reply writes text in u's chat, as a reply to u's message (in its
// thread, on Slack).
func (ib *inbox) reply(ctx workflow.Context, u contract.ChatUpdate, text string) {
	ib.run(ctx, contract.ActivityChatReply, contract.ChatReply{Chat: u.Chat, ReplyTo: u.MessageID, Text: text, Slack: u.Slack})
}

// run runs a chat activity whose failure is only logged: a reply that
// cannot be written must not hold the inbox up.
func (ib *inbox) run(ctx workflow.Context, name string, in any) {
	if err := workflow.ExecuteActivity(ctx, name, in).Get(ctx, nil); err != nil {
		ib.logger.Warn("chat activity failed", "activity", name, "error", err)
	}
}
