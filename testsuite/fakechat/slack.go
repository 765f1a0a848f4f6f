package fakechat

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The fake Slack workspace and its app.
const (
	SlackTeamID    = "T0FAKETEAM"
	SlackTeamName  = "Fake Workspace"
	SlackBotUserID = "U0RALPHBOT"
	SlackBotID     = "B0RALPHBOT"
	SlackAppID     = "A0RALPHAPP"
	// slackHookBotID is the bot of the incoming webhook's messages.
	slackHookBotID = "B0WEBHOOK0"
)

// MaxSlackText is the most characters chat.postMessage takes in text.
const MaxSlackText = 40000

// Slack is a running fake of a Slack workspace for one app: its incoming
// webhook (WebhookURL) and its Web API (APIURL) with the methods
// chat.postMessage, conversations.replies, auth.test and users.info.
//
// API calls take form, multipart or JSON bodies; the token comes from
// "Authorization: Bearer" (or, in a form, the token field, as slack-go
// sends it). Errors are Slack's: HTTP 200 with {"ok":false,"error":...}
// ("not_authed", "invalid_auth", "channel_not_found", "no_text", ...), 404
// {"ok":false,"error":"unknown_method"} for another method. Fail, FailFor,
// Hold and Calls take the API method's name, or "webhook" for the incoming
// webhook.
//
// Messages get increasing timestamps ("1700000000.000100", ...), unique in
// the workspace.
type Slack struct {
	core
	token    string
	hookPath string

	channels []*slackChannel
	users    map[string]SlackUser
	messages []*slackMessage // every message, in the order it was posted
	nextTS   int
}

// SlackMessage is a snapshot of a message in a channel.
type SlackMessage struct {
	// Via is how it came: "api" (chat.postMessage), "webhook" (the incoming
	// webhook) or "user" (Reply).
	Via string
	// Channel is the channel's ID.
	Channel string
	TS      string
	// ThreadTS is the ts of the thread's parent for a reply; "" otherwise.
	ThreadTS string
	// User is the author's user ID: SlackBotUserID for "api", "" for
	// "webhook".
	User   string
	Text   string
	Blocks json.RawMessage
	// Params are the parameters of the call that posted it (or the members
	// of the webhook's JSON), objects as JSON text.
	Params map[string]string
	// Controls are the control sequences of Text, what is between "<" and
	// ">": "!channel", "@U123", "#C123", "https://x|label". Escaped text
	// ("&lt;") has none.
	Controls []string
	Time     time.Time
}

// SlackUser is a user users.info describes.
type SlackUser struct {
	ID, Name, RealName string
	// TeamID is the user's workspace; "" means the fake's (SlackTeamID).
	// Another makes an external user, as from a shared channel.
	TeamID string
	// IsBot makes a bot user; Deleted a deactivated account.
	IsBot, Deleted bool
}

type slackChannel struct {
	id, name string
}

type slackMessage struct {
	channel  *slackChannel
	ts       string
	threadTS string
	via      string
	user     string
	text     string
	blocks   json.RawMessage
	params   params
	time     time.Time
}

// NewSlack starts a fake workspace whose app's bot token is token, with one
// channel named channel (without "#"), where its incoming webhook posts.
// The bot user (SlackBotUserID) is known to users.info.
func NewSlack(token, channel string) *Slack {
	s := &Slack{
		token:    token,
		hookPath: "/services/" + SlackTeamID + "/" + slackHookBotID + "/fakehooksecret0000000001",
		users:    map[string]SlackUser{},
	}
	s.AddChannel(channel)
	s.users[SlackBotUserID] = SlackUser{ID: SlackBotUserID, Name: "ralph", RealName: "Ralph", TeamID: SlackTeamID, IsBot: true}
	s.start(s)
	return s
}

// APIURL is the base URL of the Web API, with the trailing slash slack-go's
// OptionAPIURL needs, in place of "https://slack.com/api/".
func (s *Slack) APIURL() string { return s.srv.URL + "/api/" }

// WebhookURL is the URL of the incoming webhook.
func (s *Slack) WebhookURL() string { return s.srv.URL + s.hookPath }

// AddChannel adds a public channel named name (a leading "#" is dropped)
// and returns its ID; for an existing name, it returns its ID.
func (s *Slack) AddChannel(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	name = strings.TrimPrefix(name, "#")
	if c := s.channel(name); c != nil {
		return c.id
	}
	c := &slackChannel{id: fmt.Sprintf("C%09d", len(s.channels)+1), name: name}
	s.channels = append(s.channels, c)
	return c.id
}

// ChannelID returns the ID of the channel named name ("#name" too), or "".
func (s *Slack) ChannelID(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.channel(name); c != nil {
		return c.id
	}
	return ""
}

// AddUser makes users.info describe u (replacing a user with its ID).
func (s *Slack) AddUser(u SlackUser) {
	if u.TeamID == "" {
		u.TeamID = SlackTeamID
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[u.ID] = u
}

// Posted returns the messages the app posted, through the API or the
// incoming webhook, in order.
func (s *Slack) Posted() []SlackMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []SlackMessage
	for _, m := range s.messages {
		if m.via != "user" {
			out = append(out, m.snapshot())
		}
	}
	return out
}

// Thread returns the message ts of channel (an ID or a name) and the
// replies in its thread, in order; nil if there is no such message.
func (s *Slack) Thread(channel, ts string) []SlackMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.channel(channel)
	if c == nil {
		return nil
	}
	parent := s.find(c, ts)
	if parent == nil {
		return nil
	}
	out := []SlackMessage{parent.snapshot()}
	for _, m := range s.replies(parent) {
		out = append(out, m.snapshot())
	}
	return out
}

// Reply makes user (a user ID) answer in the thread of message threadTS of
// channel (an ID or a name) and returns the reply's ts. It fails if there
// is no such message.
func (s *Slack) Reply(channel, threadTS, user, text string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.channel(channel)
	if c == nil {
		return "", fmt.Errorf("no channel %q", channel)
	}
	parent := s.find(c, threadTS)
	if parent == nil {
		return "", fmt.Errorf("channel %s has no message %s", c.id, threadTS)
	}
	if parent.threadTS != "" {
		threadTS = parent.threadTS
	}
	m := s.post(&slackMessage{channel: c, via: "user", user: user, text: text, threadTS: threadTS})
	return m.ts, nil
}

// channel finds a channel by ID or name. The caller holds mu.
func (s *Slack) channel(ref string) *slackChannel {
	name := strings.TrimPrefix(ref, "#")
	for _, c := range s.channels {
		if c.id == ref || c.name == name {
			return c
		}
	}
	return nil
}

// find returns message ts of channel c, or nil. The caller holds mu.
func (s *Slack) find(c *slackChannel, ts string) *slackMessage {
	for _, m := range s.messages {
		if m.channel == c && m.ts == ts {
			return m
		}
	}
	return nil
}

// replies returns the replies in the thread of parent, in order. The caller
// holds mu.
func (s *Slack) replies(parent *slackMessage) []*slackMessage {
	var out []*slackMessage
	for _, m := range s.messages {
		if m.channel == parent.channel && m.threadTS == parent.ts && m != parent {
			out = append(out, m)
		}
	}
	return out
}

// post gives m the next timestamp and keeps it. The caller holds mu.
func (s *Slack) post(m *slackMessage) *slackMessage {
	s.nextTS++
	m.ts = fmt.Sprintf("%d.%06d", 1_700_000_000+s.nextTS/10_000, s.nextTS%10_000*100)
	m.time = time.Now()
	s.messages = append(s.messages, m)
	s.notify()
	return m
}

// wire is m as the Web API gives it. The caller holds mu.
func (s *Slack) wire(m *slackMessage) map[string]any {
	out := map[string]any{"type": "message", "ts": m.ts, "text": m.text}
	switch m.via {
	case "webhook":
		out["subtype"], out["bot_id"] = "bot_message", slackHookBotID
	case "api":
		out["user"], out["bot_id"], out["app_id"], out["team"] = SlackBotUserID, SlackBotID, SlackAppID, SlackTeamID
	default:
		out["user"], out["team"] = m.user, SlackTeamID
		if u, ok := s.users[m.user]; ok {
			out["team"] = u.TeamID
		}
	}
	if m.blocks != nil {
		out["blocks"] = m.blocks
	}
	if m.threadTS != "" {
		out["thread_ts"] = m.threadTS
		if parent := s.find(m.channel, m.threadTS); parent != nil {
			out["parent_user_id"] = s.wire(parent)["user"]
		}
	}
	if replies := s.replies(m); len(replies) > 0 {
		var users []string
		for _, r := range replies {
			if !slices.Contains(users, r.user) {
				users = append(users, r.user)
			}
		}
		out["thread_ts"], out["reply_count"], out["reply_users"] = m.ts, len(replies), users
		out["reply_users_count"], out["latest_reply"] = len(users), replies[len(replies)-1].ts
	}
	return out
}

// controls matches Slack's control sequences in text.
var controls = regexp.MustCompile(`<([^<>]+)>`)

func (m *slackMessage) snapshot() SlackMessage {
	out := SlackMessage{
		Via: m.via, Channel: m.channel.id, TS: m.ts, ThreadTS: m.threadTS, User: m.user,
		Text: m.text, Blocks: slices.Clone(m.blocks), Params: maps.Clone(m.params), Time: m.time,
	}
	for _, c := range controls.FindAllStringSubmatch(m.text, -1) {
		out.Controls = append(out.Controls, c[1])
	}
	return out
}

// tsMicros is a Slack timestamp in microseconds, for comparisons; ok is
// false if ts is not one.
func tsMicros(ts string) (int64, bool) {
	secs, frac, _ := strings.Cut(ts, ".")
	s, err := strconv.ParseInt(secs, 10, 64)
	if err != nil || len(frac) > 6 {
		return 0, false
	}
	us := int64(0)
	if frac != "" {
		if us, err = strconv.ParseInt(frac+strings.Repeat("0", 6-len(frac)), 10, 64); err != nil {
			return 0, false
		}
	}
	return s*1_000_000 + us, true
}
