package notify

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/slack-go/slack"

	"github.com/durable-ralph/ralph/contract"
)

// DefaultSlackAPIURL is the base URL of Slack's Web API.
const DefaultSlackAPIURL = slack.APIURL

// maxReplyPages bounds the pages of a thread Replies reads.
const maxReplyPages = 10

// Slack is the Slack channel, through github.com/slack-go/slack: an
// incoming webhook that posts in the channel it was made for, or a bot
// that posts in a channel (chat.postMessage) and reads the replies in
// its messages' threads (conversations.replies). A bot wins when both are
// configured: Slack answers it with the message's ID.
type Slack struct {
	webhookURL string
	client     *http.Client
	// api and channel are the bot's; api is nil without one.
	api     *slack.Client
	channel string
	// teamOnce is the bot's workspace, once asked.
	teamOnce slackTeam
}

// newSlack returns the Slack channel s configures, making its requests
// with client.
func newSlack(s SlackSettings, client *http.Client) *Slack {
	sl := &Slack{webhookURL: s.WebhookURL, client: client}
	if s.Bot() {
		apiURL := s.APIURL
		if apiURL == "" {
			apiURL = DefaultSlackAPIURL
		}
		if !strings.HasSuffix(apiURL, "/") {
			apiURL += "/"
		}
		sl.api = slack.New(s.BotToken, slack.OptionAPIURL(apiURL), slack.OptionHTTPClient(client))
		sl.channel = s.Channel
	}
	return sl
}

// slackEscape escapes the three characters Slack's mrkdwn reads as
// markup: with them escaped, text can make no link, mention (<!channel>,
// <@U…>) or command. Slack has no escape for *, _ and ~: they may still
// make text bold or italic, which is harmless.
var slackEscape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace

// slackLinkURL is u as the target of a mrkdwn link: escaped, and without
// the | that would end it.
var slackLinkURL = strings.NewReplacer("&", "&amp;", "<", "%3C", ">", "%3E", "|", "%7C").Replace

// markup is how s writes messages: mrkdwn, with the line that says how to
// answer only for a bot, whose threads are read.
func (s *Slack) markup() markup {
	mk := markup{
		escape: slackEscape,
		bold:   func(t string) string { return "*" + t + "*" },
		link:   func(u, text string) string { return "<" + slackLinkURL(u) + "|" + slackEscape(text) + ">" },
	}
	if s.api != nil {
		mk.answer = "Reply in this message's thread to answer."
	}
	return mk
}

func (s *Slack) dest() string { return contract.ChannelSlack }

// send posts m by the bot, or else by the incoming webhook.
func (s *Slack) send(ctx context.Context, m *message) (contract.SentMessage, error) {
	text := m.render(s.markup())
	if s.api != nil {
		channel, ts, err := s.api.PostMessageContext(ctx, s.channel,
			slack.MsgOptionText(text, false), slack.MsgOptionDisableLinkUnfurl(), slack.MsgOptionDisableMediaUnfurl())
		if err != nil {
			return contract.SentMessage{}, fmt.Errorf("slack chat.postMessage: %w", withoutURL(err))
		}
		return contract.SentMessage{Channel: contract.ChannelSlack, Chat: channel, MessageID: ts}, nil
	}
	no := false
	err := slack.PostWebhookCustomHTTPContext(ctx, s.webhookURL, s.client,
		&slack.WebhookMessage{Text: text, UnfurlLinks: &no, UnfurlMedia: &no})
	if err != nil {
		return contract.SentMessage{}, fmt.Errorf("slack incoming webhook: %w", withoutURL(err))
	}
	return contract.SentMessage{Channel: contract.ChannelSlack}, nil
}

// slackBadTokens are the errors of a token Slack refuses.
var slackBadTokens = []string{"invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired"}

// Check asks Slack whether it takes the bot's token (auth.test). A token
// Slack refuses is an error that errors.Is ErrBadToken. Without a bot
// there is nothing to check: an incoming webhook has no token.
func (s *Slack) Check(ctx context.Context) error {
	if s.api == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	_, err := s.api.AuthTestContext(ctx)
	var se slack.SlackErrorResponse
	if errors.As(err, &se) && slices.Contains(slackBadTokens, se.Err) {
		return fmt.Errorf("%w: slack auth.test: %w", ErrBadToken, err)
	}
	if err != nil {
		return fmt.Errorf("slack auth.test: %w", withoutURL(err))
	}
	return nil
}

// Reply is a message in the thread of a message the bot posted.
type Reply struct {
	// User is the Slack user ID of its author; BotID is set instead for
	// a bot's.
	User  string
	BotID string
	Text  string
	// TS is the message's ID.
	TS string
}

// Replies returns the replies in the thread of the bot's message ts in
// channel (a channel ID, contract.SentMessage.Chat), after oldest ("" for
// all), oldest first, without the message itself.
func (s *Slack) Replies(ctx context.Context, channel, ts, oldest string) ([]Reply, error) {
	if s.api == nil {
		return nil, errors.New("slack: replies need a bot token (notify.slack.bot-token-env)")
	}
	var replies []Reply
	cursor := ""
	for range maxReplyPages {
		msgs, more, next, err := s.api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
			ChannelID: channel, Timestamp: ts, Cursor: cursor, Oldest: oldest,
		})
		if err != nil {
			return nil, fmt.Errorf("slack conversations.replies: %w", withoutURL(err))
		}
		for _, m := range msgs {
			if m.Timestamp != ts {
				replies = append(replies, Reply{User: m.User, BotID: m.BotID, Text: m.Text, TS: m.Timestamp})
			}
		}
		if !more || next == "" {
			break
		}
		cursor = next
	}
	return replies, nil
}
