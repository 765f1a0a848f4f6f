package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
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
	a := &chat.Activities{Notifier: n, Client: c, ChatIDs: s.Telegram.ChatIDs}
	if len(cfg.Notify.Workspaces) > 0 {
		cdc, err := LoadCodec(cfg)
		if err != nil {
			return nil, err
		}
		r := &ChatRunner{Client: c, TaskQueue: cfg.TaskQueue, Notify: cfg.Notify, Host: cfg.Worker.HostID,
			Load: func(dir string) (config.Config, error) { return config.Load(nil, dir) }}
		if cdc != nil {
			r.Converter = cdc.DataConverter()
		}
		a.Run = r.Run
		fmt.Fprintf(out, "Chat: /run may plan in %s.\n", strings.Join(cfg.Notify.Aliases(), ", "))
	}
	return a, nil
}

// StartChatInbox starts the fleet's chat inbox when a reads answers (a
// Telegram bot, a Slack bot); one that runs is left running.
func StartChatInbox(ctx context.Context, c client.Client, taskQueue string, a *chat.Activities) error {
	if a == nil || !a.Inbox() {
		return nil
	}
	_, err := c.ExecuteWorkflow(ctx, inboxStartOptions(taskQueue), inbox.ChatInbox, contract.InboxState{})
	if err != nil {
		return fmt.Errorf("start the chat inbox: %w", err)
	}
	return nil
}

// SlackCommandsPath is where the worker takes the Slack app's slash
// commands (notify.slack.commands-listen).
const SlackCommandsPath = "/slack/commands"

// ServeSlackCommands serves the Slack app's slash commands on cfg's
// notify.slack.commands-listen until stop is called: each one signed with
// the app's signing secret (notify.slack.signing-secret-env) and sent
// from the bot's channel is handed to the chat inbox, started if it
// does not run. It needs a's Slack bot; it returns the address it
// listens on.
func ServeSlackCommands(c client.Client, cfg config.Config, a *chat.Activities, log *slog.Logger) (stop func(), addr string, err error) {
	env := cfg.Notify.Slack.SigningSecretEnv
	secret := os.Getenv(env)
	switch {
	case secret == "":
		return nil, "", fmt.Errorf("notify.slack.commands-listen is set but the environment variable %s (notify.slack.signing-secret-env) is empty: "+
			"set it to the Slack app's signing secret, or unset notify.slack.commands-listen", env)
	case a == nil || a.Notifier == nil || !a.Notifier.SlackBot():
		return nil, "", errors.New("notify.slack.commands-listen is set but Slack has no bot: set the bot token (notify.slack.bot-token-env) and notify.slack.channel")
	}
	h := &notify.SlackCommands{Secret: secret, Slack: a.Notifier.Slack(), Log: log,
		Deliver: func(ctx context.Context, u contract.ChatUpdate) error {
			_, err := c.SignalWithStartWorkflow(ctx, contract.ChatInboxID, contract.SignalChatCommand, u, inboxStartOptions(cfg.TaskQueue), inbox.ChatInbox, contract.InboxState{})
			return err
		}}
	ln, err := net.Listen("tcp", cfg.Notify.Slack.CommandsListen)
	if err != nil {
		return nil, "", fmt.Errorf("notify.slack.commands-listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle(SlackCommandsPath, h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second, MaxHeaderBytes: 64 << 10}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("slack commands server", "error", err)
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, ln.Addr().String(), nil
}

// inboxStartOptions are the options the chat inbox starts with.
func inboxStartOptions(taskQueue string) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{
		ID:                       contract.ChatInboxID,
		TaskQueue:                taskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		StaticSummary:            "Ralph's chat inbox: answers and commands from Telegram and Slack",
	}
}
