package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/durable-ralph/ralph/activities/chat"
	"github.com/durable-ralph/ralph/config"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/notify"
	"github.com/durable-ralph/ralph/redact"
	"github.com/durable-ralph/ralph/workflows/inbox"
)

// NewChat returns the chat activities cfg configures (notify.*): the
// notifier, with the worker's secrets redacted from what it sends, and
// the Telegram chats that may answer. It says on out what leaves a
// channel off, and checks the bots' tokens once: a wrong token is said,
// not fatal, so the sessions run on and the notifications wait.
func NewChat(ctx context.Context, cfg config.Config, c client.Client, out io.Writer) (*chat.Activities, error) {
	s := cfg.NotifySettings(os.Getenv)
	for _, n := range s.Notices() {
		fmt.Fprintln(out, n)
	}
	agent := NewAgent(cfg)
	red := redact.New(append(os.Environ(), agent.Env...), agent.Secrets...)
	n, err := notify.New(s, red.String)
	if err != nil {
		return nil, err
	}
	if s.On() {
		cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		if err := n.Check(cctx); err != nil {
			fmt.Fprintf(out, "warning: %v\n", err)
		}
	}
	return &chat.Activities{Notifier: n, Client: c, ChatIDs: s.Telegram.ChatIDs}, nil
}

// StartChatInbox starts the fleet's chat inbox when a reads answers (a
// Telegram bot, a Slack bot); one that runs is left running.
func StartChatInbox(ctx context.Context, c client.Client, taskQueue string, a *chat.Activities) error {
	if a == nil || !a.Inbox() {
		return nil
	}
	_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       contract.ChatInboxID,
		TaskQueue:                taskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		StaticSummary:            "Ralph's Telegram inbox: answers and commands from the chats",
	}, inbox.ChatInbox, contract.InboxState{})
	if err != nil {
		return fmt.Errorf("start the chat inbox: %w", err)
	}
	return nil
}
