package notify

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/slack-go/slack"
)

// slackTeam caches the bot's workspace (auth.test), which Member compares
// a user's with.
type slackTeam struct {
	mu sync.Mutex
	id string
}

// team is the ID of the bot's workspace.
func (s *Slack) team(ctx context.Context) (string, error) {
	s.teamOnce.mu.Lock()
	defer s.teamOnce.mu.Unlock()
	if s.teamOnce.id != "" {
		return s.teamOnce.id, nil
	}
	r, err := s.api.AuthTestContext(ctx)
	if err != nil {
		return "", fmt.Errorf("slack auth.test: %w", withoutURL(err))
	}
	s.teamOnce.id = r.TeamID
	return r.TeamID, nil
}

// Member reports whether the Slack user is a person of the bot's
// workspace: not a bot or an app, not deactivated, of the bot's team
// (not a guest from a connected workspace). name is the user's name.
func (s *Slack) Member(ctx context.Context, user string) (ok bool, name string, err error) {
	if s.api == nil {
		return false, "", errors.New("slack: members need a bot token (notify.slack.bot-token-env)")
	}
	team, err := s.team(ctx)
	if err != nil {
		return false, "", err
	}
	u, err := s.api.GetUserInfoContext(ctx, user)
	var se slack.SlackErrorResponse
	if errors.As(err, &se) && se.Err == "user_not_found" {
		return false, "", nil
	}
	if err != nil {
		return false, "", fmt.Errorf("slack users.info: %w", withoutURL(err))
	}
	return !u.IsBot && !u.Deleted && u.ID != "USLACKBOT" && u.TeamID == team, u.Name, nil
}

// PostInThread posts text, escaped, in the thread of the message ts in
// channel, or in the channel itself when ts is "".
func (s *Slack) PostInThread(ctx context.Context, channel, ts, text string) error {
	if s.api == nil {
		return errors.New("slack: posting in a thread needs a bot token (notify.slack.bot-token-env)")
	}
	opts := []slack.MsgOption{slack.MsgOptionText(slackEscape(text), false)}
	if ts != "" {
		opts = append(opts, slack.MsgOptionTS(ts))
	}
	_, _, err := s.api.PostMessageContext(ctx, channel, opts...)
	if err != nil {
		return fmt.Errorf("slack chat.postMessage: %w", withoutURL(err))
	}
	return nil
}

// SlackUnescape is text of a Slack message as its author wrote it: Slack
// sends &, < and > escaped.
func SlackUnescape(text string) string { return slackUnescape.Replace(text) }

var slackUnescape = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&")
