package fakechat_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/testsuite/fakechat"
)

const slackToken = "xoxb-fake-token"

func newSlack(t *testing.T) (*fakechat.Slack, *slack.Client) {
	t.Helper()
	s := fakechat.NewSlack(slackToken, "#ralph")
	t.Cleanup(s.Close)
	return s, slack.New(slackToken, slack.OptionAPIURL(s.APIURL()))
}

// rawPost posts body to url with a content type and an optional bearer
// token, and returns the status and the body of the answer.
func rawPost(t *testing.T, url, contentType, bearer, body string) (int, string) {
	t.Helper()
	headers := map[string]string{"Content-Type": contentType}
	if bearer != "" {
		headers["Authorization"] = "Bearer " + bearer
	}
	status, _, raw := request(t, http.MethodPost, url, body, headers)
	return status, raw
}

func TestSlackPostMessage(t *testing.T) {
	s, api := newSlack(t)
	ctx := context.Background()
	channel, ts, err := api.PostMessageContext(ctx, "#ralph", slack.MsgOptionText("Question <!channel> &lt;b&gt;", false))
	require.NoError(t, err)
	assert.Equal(t, s.ChannelID("ralph"), channel)
	assert.Equal(t, "1700000000.000100", ts)

	_, reply, err := api.PostMessageContext(ctx, channel, slack.MsgOptionText("in the thread", false), slack.MsgOptionTS(ts))
	require.NoError(t, err)
	assert.Equal(t, "1700000000.000200", reply)

	posted := s.Posted()
	require.Len(t, posted, 2)
	assert.Equal(t, "api", posted[0].Via)
	assert.Equal(t, fakechat.SlackBotUserID, posted[0].User)
	assert.Equal(t, []string{"!channel"}, posted[0].Controls, "only what is not escaped is a control sequence")
	assert.Equal(t, slackToken, posted[0].Params["token"])
	assert.Equal(t, ts, posted[1].ThreadTS)

	other := s.AddChannel("other")
	tests := []struct {
		name    string
		channel string
		opts    []slack.MsgOption
		client  *slack.Client
		err     string
	}{
		{"by channel name without #", "other", []slack.MsgOption{slack.MsgOptionText("x", false)}, api, ""},
		{"by channel ID", other, []slack.MsgOption{slack.MsgOptionText("x", false)}, api, ""},
		{"unknown channel", "#nowhere", []slack.MsgOption{slack.MsgOptionText("x", false)}, api, "channel_not_found"},
		{"no text", other, []slack.MsgOption{slack.MsgOptionText(" ", false)}, api, "no_text"},
		{"too long", other, []slack.MsgOption{slack.MsgOptionText(strings.Repeat("a", fakechat.MaxSlackText+1), false)}, api, "msg_too_long"},
		{"unknown thread", other, []slack.MsgOption{slack.MsgOptionText("x", false), slack.MsgOptionTS("1.000001")}, api, "invalid_thread_ts"},
		{"wrong token", other, []slack.MsgOption{slack.MsgOptionText("x", false)}, slack.New("xoxb-wrong", slack.OptionAPIURL(s.APIURL())), "invalid_auth"},
		{"no token", other, []slack.MsgOption{slack.MsgOptionText("x", false)}, slack.New("", slack.OptionAPIURL(s.APIURL())), "not_authed"},
		{"blocks without text", other, []slack.MsgOption{slack.MsgOptionBlocks(slack.NewSectionBlock(slack.NewTextBlockObject("mrkdwn", "*hi*", false, false), nil, nil))}, api, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := len(s.Posted())
			_, _, err := tc.client.PostMessageContext(ctx, tc.channel, tc.opts...)
			if tc.err == "" {
				require.NoError(t, err)
				assert.Len(t, s.Posted(), before+1)
				return
			}
			var se slack.SlackErrorResponse
			require.ErrorAs(t, err, &se)
			assert.Equal(t, tc.err, se.Err)
			assert.Len(t, s.Posted(), before)
		})
	}
}

func TestSlackPostMessageJSON(t *testing.T) {
	s, _ := newSlack(t)
	body := `{"channel":"#ralph","text":"fallback","blocks":[{"type":"section","text":{"type":"mrkdwn","text":"*b*"}}]}`
	status, raw := rawPost(t, s.APIURL()+"chat.postMessage", "application/json; charset=utf-8", slackToken, body)
	require.Equal(t, http.StatusOK, status)
	var out struct {
		OK      bool   `json:"ok"`
		Channel string `json:"channel"`
		TS      string `json:"ts"`
		Message struct {
			Text   string            `json:"text"`
			User   string            `json:"user"`
			BotID  string            `json:"bot_id"`
			Blocks []json.RawMessage `json:"blocks"`
		} `json:"message"`
	}
	require.NoError(t, json.Unmarshal([]byte(raw), &out), raw)
	assert.True(t, out.OK)
	assert.Equal(t, s.ChannelID("ralph"), out.Channel)
	assert.Equal(t, "fallback", out.Message.Text)
	assert.Equal(t, fakechat.SlackBotID, out.Message.BotID)
	assert.Len(t, out.Message.Blocks, 1)
	assert.JSONEq(t, `[{"type":"section","text":{"type":"mrkdwn","text":"*b*"}}]`, string(s.Posted()[0].Blocks))

	_, raw = rawPost(t, s.APIURL()+"chat.postMessage", "application/json", "", `{"token":"`+slackToken+`","channel":"#ralph","text":"x"}`)
	assert.JSONEq(t, `{"ok":false,"error":"not_authed"}`, raw, "a JSON body takes the token from the header only")
	_, raw = rawPost(t, s.APIURL()+"chat.postMessage", "application/json", slackToken, `{"channel":"#ralph","blocks":[{"text":"no type"}]}`)
	assert.JSONEq(t, `{"ok":false,"error":"invalid_blocks"}`, raw)
	status, raw = rawPost(t, s.APIURL()+"chat.scheduleMessage", "application/json", slackToken, `{}`)
	assert.Equal(t, http.StatusNotFound, status)
	assert.JSONEq(t, `{"ok":false,"error":"unknown_method","req_method":"chat.scheduleMessage"}`, raw)
	assert.Len(t, s.Posted(), 1)
}

func TestSlackIncomingWebhook(t *testing.T) {
	s, _ := newSlack(t)
	ctx := context.Background()
	require.NoError(t, slack.PostWebhookContext(ctx, s.WebhookURL(), &slack.WebhookMessage{Text: "Session ended <@U123>"}))
	posted := s.Posted()
	require.Len(t, posted, 1)
	assert.Equal(t, "webhook", posted[0].Via)
	assert.Equal(t, s.ChannelID("#ralph"), posted[0].Channel)
	assert.Equal(t, "Session ended <@U123>", posted[0].Text)
	assert.Equal(t, []string{"@U123"}, posted[0].Controls)

	err := slack.PostWebhookContext(ctx, s.WebhookURL(), &slack.WebhookMessage{})
	var sce slack.StatusCodeError
	require.ErrorAs(t, err, &sce)
	assert.Equal(t, http.StatusBadRequest, sce.Code)

	tests := []struct {
		name, url, contentType, body string
		status                       int
		answer                       string
	}{
		{"json", s.WebhookURL(), "application/json", `{"text":"hi","blocks":[{"type":"divider"}]}`, 200, "ok"},
		{"form payload", s.WebhookURL(), "application/x-www-form-urlencoded", `payload=%7B%22text%22%3A%22hi%22%7D`, 200, "ok"},
		{"empty text", s.WebhookURL(), "application/json", `{"text":""}`, 400, "no_text"},
		{"not JSON", s.WebhookURL(), "application/json", `{"text":`, 400, "invalid_payload"},
		{"bad blocks", s.WebhookURL(), "application/json", `{"text":"x","blocks":{"type":"divider"}}`, 400, "invalid_blocks"},
		{"another hook", strings.TrimSuffix(s.WebhookURL(), "1") + "2", "application/json", `{"text":"x"}`, 404, "no_service"},
		{"too large", s.WebhookURL(), "application/json", `{"text":"` + strings.Repeat("a", fakechat.MaxBody) + `"}`, 413, "request_too_large"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, raw := rawPost(t, tc.url, tc.contentType, "", tc.body)
			assert.Equal(t, tc.status, status)
			assert.Equal(t, tc.answer, raw)
		})
	}
	assert.Len(t, s.Posted(), 3)
	assert.Equal(t, 7, s.Calls("webhook"), "the webhook counts the calls that reached it")
}

func TestSlackThreadReplies(t *testing.T) {
	s, api := newSlack(t)
	ctx := context.Background()
	channel, ts, err := api.PostMessageContext(ctx, "#ralph", slack.MsgOptionText("Approve the plan?", false))
	require.NoError(t, err)
	var replies []string
	for _, text := range []string{"approve", "wait", "also this"} {
		r, err := s.Reply(channel, ts, "U0ADA", text)
		require.NoError(t, err)
		replies = append(replies, r)
	}
	_, err = s.Reply(channel, "1.000001", "U0ADA", "x")
	require.Error(t, err)
	_, err = s.Reply("#nowhere", ts, "U0ADA", "x")
	require.Error(t, err)

	msgs, more, next, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: channel, Timestamp: ts})
	require.NoError(t, err)
	assert.False(t, more)
	assert.Empty(t, next)
	require.Len(t, msgs, 4)
	assert.Equal(t, ts, msgs[0].Timestamp, "the parent comes first")
	assert.Equal(t, 3, msgs[0].ReplyCount)
	assert.Equal(t, fakechat.SlackBotID, msgs[0].BotID)
	assert.Equal(t, "U0ADA", msgs[1].User)
	assert.Equal(t, "approve", msgs[1].Text)
	assert.Equal(t, ts, msgs[1].ThreadTimestamp)
	assert.Empty(t, msgs[1].BotID)

	page, more, next, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: channel, Timestamp: ts, Limit: 2})
	require.NoError(t, err)
	assert.True(t, more)
	require.NotEmpty(t, next)
	assert.Len(t, page, 2)
	page, more, _, err = api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: channel, Timestamp: ts, Limit: 2, Cursor: next})
	require.NoError(t, err)
	assert.False(t, more)
	require.Len(t, page, 2)
	assert.Equal(t, replies[1], page[0].Timestamp)

	after, _, _, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: channel, Timestamp: ts, Oldest: replies[0]})
	require.NoError(t, err)
	require.Len(t, after, 3, "the parent and the replies after oldest")
	assert.Equal(t, replies[1], after[1].Timestamp)

	fromReply, _, _, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: channel, Timestamp: replies[2]})
	require.NoError(t, err)
	assert.Len(t, fromReply, 4, "a reply's ts names its thread")

	for _, tc := range []struct{ channel, ts, cursor, err string }{
		{channel, "1.000001", "", "thread_not_found"},
		{"C999", ts, "", "channel_not_found"},
		{channel, ts, "bm9wZQ==", "invalid_cursor"},
	} {
		_, _, _, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: tc.channel, Timestamp: tc.ts, Cursor: tc.cursor})
		var se slack.SlackErrorResponse
		require.ErrorAs(t, err, &se)
		assert.Equal(t, tc.err, se.Err)
	}
	thread := s.Thread("ralph", ts)
	require.Len(t, thread, 4)
	assert.Equal(t, "user", thread[3].Via)
	assert.Len(t, s.Posted(), 1, "replies by people are not posted by the app")
}

func TestSlackAuthAndUsers(t *testing.T) {
	s, api := newSlack(t)
	ctx := context.Background()
	auth, err := api.AuthTestContext(ctx)
	require.NoError(t, err)
	assert.Equal(t, fakechat.SlackBotUserID, auth.UserID)
	assert.Equal(t, fakechat.SlackTeamID, auth.TeamID)
	assert.Equal(t, fakechat.SlackBotID, auth.BotID)
	_, err = slack.New("xoxb-wrong", slack.OptionAPIURL(s.APIURL())).AuthTestContext(ctx)
	require.EqualError(t, err, "invalid_auth")

	s.AddUser(fakechat.SlackUser{ID: "U0ADA", Name: "ada"})
	s.AddUser(fakechat.SlackUser{ID: "U0BOT2", Name: "otherbot", IsBot: true})
	s.AddUser(fakechat.SlackUser{ID: "U0EXT", Name: "ext", TeamID: "T0ELSEWHERE"})
	s.AddUser(fakechat.SlackUser{ID: "U0GONE", Name: "gone", Deleted: true})
	tests := []struct {
		id             string
		team           string
		bot, deleted   bool
		stranger       bool
		err            string
		wantRealNameAs string
	}{
		{id: "U0ADA", team: fakechat.SlackTeamID, wantRealNameAs: "ada"},
		{id: "U0BOT2", team: fakechat.SlackTeamID, bot: true, wantRealNameAs: "otherbot"},
		{id: "U0EXT", team: "T0ELSEWHERE", stranger: true, wantRealNameAs: "ext"},
		{id: "U0GONE", team: fakechat.SlackTeamID, deleted: true, wantRealNameAs: "gone"},
		{id: fakechat.SlackBotUserID, team: fakechat.SlackTeamID, bot: true, wantRealNameAs: "Ralph"},
		{id: "U0NOBODY", err: "user_not_found"},
	}
	for _, tc := range tests {
		t.Run(tc.id, func(t *testing.T) {
			u, err := api.GetUserInfoContext(ctx, tc.id)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.id, u.ID)
			assert.Equal(t, tc.team, u.TeamID)
			assert.Equal(t, tc.bot, u.IsBot)
			assert.Equal(t, tc.deleted, u.Deleted)
			assert.Equal(t, tc.stranger, u.IsStranger)
			assert.Equal(t, tc.wantRealNameAs, u.RealName)
		})
	}
}

func TestSlackFailures(t *testing.T) {
	s, api := newSlack(t)
	ctx := context.Background()
	s.Fail("chat.postMessage", http.StatusInternalServerError, 2)
	for range 2 {
		_, _, err := api.PostMessageContext(ctx, "#ralph", slack.MsgOptionText("x", false))
		var sce slack.StatusCodeError
		require.ErrorAs(t, err, &sce)
		assert.Equal(t, http.StatusInternalServerError, sce.Code)
	}
	_, _, err := api.PostMessageContext(ctx, "#ralph", slack.MsgOptionText("x", false))
	require.NoError(t, err)
	assert.Len(t, s.Posted(), 1)
	assert.Equal(t, 3, s.Calls("chat.postMessage"))

	s.FailFor("webhook", http.StatusServiceUnavailable, 300*time.Millisecond)
	err = slack.PostWebhookContext(ctx, s.WebhookURL(), &slack.WebhookMessage{Text: "x"})
	var sce slack.StatusCodeError
	require.ErrorAs(t, err, &sce)
	assert.Equal(t, http.StatusServiceUnavailable, sce.Code)
	_, err = api.AuthTestContext(ctx)
	require.NoError(t, err, "only the webhook fails")
	time.Sleep(400 * time.Millisecond)
	require.NoError(t, slack.PostWebhookContext(ctx, s.WebhookURL(), &slack.WebhookMessage{Text: "x"}))

	s.Fail("", http.StatusTooManyRequests, 1)
	_, err = api.AuthTestContext(ctx)
	var rle *slack.RateLimitedError
	require.ErrorAs(t, err, &rle)
	assert.Equal(t, time.Second, rle.RetryAfter)

	h := s.Hold("chat.postMessage")
	done := make(chan error, 1)
	go func() {
		_, _, err := api.PostMessageContext(ctx, "#ralph", slack.MsgOptionText("held", false))
		done <- err
	}()
	<-h.Reached()
	assert.Len(t, s.Posted(), 3, "the effect is done before the answer")
	h.Release()
	require.NoError(t, <-done)

	status, _ := rawPost(t, s.APIURL()+"chat.postMessage", "application/x-www-form-urlencoded", slackToken,
		"channel=ralph&text="+strings.Repeat("a", fakechat.MaxBody))
	assert.Equal(t, http.StatusRequestEntityTooLarge, status)
}
