package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"github.com/slack-go/slack"

	"github.com/durable-ralph/ralph/contract"
)

// maxCommandBody bounds the body of a slash command request.
const maxCommandBody = 64 << 10

// SlackCommands serves the slash commands of the Slack app whose bot is
// Slack: a POST, form encoded and signed with the app's signing secret
// (X-Slack-Signature, X-Slack-Request-Timestamp, at most five minutes
// old). A command from the bot's channel (notify.slack.channel), of the
// bot's workspace, by one of its members (not a guest, not a bot) is
// handed to Deliver as a chat update whose text is the command: /run
// with its text, or /TEXT for another command name (/ralph status is
// /status). Others are ignored, logged once per channel; a request that
// is not Slack's is refused.
type SlackCommands struct {
	// Secret is the app's signing secret.
	Secret string
	// Slack is the bot: its workspace, channel and members.
	Slack *Slack
	// Deliver hands the command to the chat inbox.
	Deliver func(ctx context.Context, u contract.ChatUpdate) error
	Log     *slog.Logger

	mu      sync.Mutex
	ignored map[string]bool
}

// ServeHTTP serves one slash command.
func (h *SlackCommands) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST a Slack slash command here", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxCommandBody+1))
	if err != nil || len(body) > maxCommandBody {
		http.Error(w, "the request's body could not be read, or is too large", http.StatusBadRequest)
		return
	}
	sv, err := slack.NewSecretsVerifier(r.Header, h.Secret)
	if err == nil {
		_, _ = sv.Write(body)
		err = sv.Ensure()
	}
	if err != nil {
		h.Log.Warn("a slash command request that Slack did not sign: refused", "error", err)
		http.Error(w, "not signed by Slack", http.StatusUnauthorized)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	cmd, err := slack.SlashCommandParse(r)
	if err != nil {
		http.Error(w, "not a slash command", http.StatusBadRequest)
		return
	}
	ctx := r.Context()
	ok, name, err := h.allowed(ctx, cmd)
	switch {
	case err != nil:
		h.Log.Warn("could not check a slash command's sender", "error", err)
		respond(w, "Ralph could not check who asked: try again in a moment.")
		return
	case !ok:
		w.WriteHeader(http.StatusOK) // ignored: Slack shows nothing
		return
	}
	u := contract.ChatUpdate{User: "@" + name, Text: commandText(cmd),
		Slack: &contract.SlackPost{Channel: cmd.ChannelID, TS: cmd.TriggerID}}
	if err := h.Deliver(ctx, u); err != nil {
		h.Log.Warn("could not hand a slash command to the chat inbox", "error", err)
		respond(w, "Ralph could not take it: its chat inbox did not answer. Try again in a moment.")
		return
	}
	respond(w, "Ralph took it: "+u.Text)
}

// commandText is the inbox's text of cmd: /run ARGS, or /TEXT for the
// app's other command names.
func commandText(cmd slack.SlashCommand) string {
	text := strings.TrimSpace(cmd.Text)
	if cmd.Command == "/run" {
		return strings.TrimSpace("/run " + text)
	}
	return "/" + strings.TrimPrefix(text, "/")
}

// allowed reports whether cmd comes from the bot's channel, of its
// workspace, by a member of it; name is the member's. A command from
// anywhere else is logged once per team and channel.
func (h *SlackCommands) allowed(ctx context.Context, cmd slack.SlashCommand) (ok bool, name string, err error) {
	team, err := h.Slack.team(ctx)
	if err != nil {
		return false, "", err
	}
	where := cmd.TeamID + "/" + cmd.ChannelID
	if cmd.TeamID != team || !h.Slack.isChannel(cmd.ChannelID, cmd.ChannelName) {
		h.ignore(where, "a Slack slash command from a channel that is not notify.slack.channel: ignored")
		return false, "", nil
	}
	member, name, err := h.Slack.Member(ctx, cmd.UserID)
	if err != nil || !member {
		if err == nil {
			h.ignore(where+"/"+cmd.UserID, "a Slack slash command by someone who is not a member of the bot's workspace: ignored")
		}
		return false, "", err
	}
	return true, name, nil
}

// ignore logs msg once per key.
func (h *SlackCommands) ignore(key, msg string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ignored == nil {
		h.ignored = map[string]bool{}
	}
	if !h.ignored[key] {
		h.ignored[key] = true
		h.Log.Warn(msg, "from", key)
	}
}

// isChannel reports whether the channel id, named name, is the one the
// bot posts in: notify.slack.channel is its ID, its name or #name.
func (s *Slack) isChannel(id, name string) bool {
	c := s.channel
	return c != "" && (c == id || strings.TrimPrefix(c, "#") == name && name != "")
}

// respond answers a slash command with text only its sender sees.
func respond(w http.ResponseWriter, text string) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"response_type": "ephemeral", "text": text})
}
