package notify_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/notify"
	"github.com/durable-ralph/ralph/testsuite/fakechat"
)

// TestSlackCommands: a signed /run from the bot's channel by a member is
// handed to the inbox with who sent it and its trigger; a command from
// another channel, another workspace or by a guest is ignored (logged
// once each, nothing handed on, nothing said); an unsigned, wrongly
// signed or stale request is refused; /ralph TEXT is /TEXT.
func TestSlackCommands(t *testing.T) {
	const secret = "8f742231b10e8888abcd99yyyzzz85a5"
	sl := fakechat.NewSlack("xoxb-test", "#ralph")
	t.Cleanup(sl.Close)
	sl.AddUser(fakechat.SlackUser{ID: "UALICE", Name: "alice"})
	sl.AddUser(fakechat.SlackUser{ID: "UGUEST", Name: "guest", TeamID: "TOTHER"})
	other := sl.AddChannel("random")
	n, err := notify.New(notify.Settings{Events: contract.NotifyEvents, StateDir: t.TempDir(), Slack: notify.SlackSettings{BotToken: "xoxb-test", Channel: "#ralph", APIURL: sl.APIURL()}}, nil)
	require.NoError(t, err)
	var got []contract.ChatUpdate
	var logs bytes.Buffer
	h := &notify.SlackCommands{Secret: secret, Slack: n.Slack(), Log: slog.New(slog.NewTextHandler(&logs, nil)),
		Deliver: func(_ context.Context, u contract.ChatUpdate) error { got = append(got, u); return nil }}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	channel := sl.ChannelID("ralph")
	send := func(cmd fakechat.SlashCommand, key string, at time.Time) (int, string) {
		code, body, err := fakechat.SendSlashCommand(srv.URL, key, cmd, at)
		require.NoError(t, err)
		return code, body
	}
	now := time.Now()

	code, body := send(fakechat.SlashCommand{Command: "/run", Text: " api Add a /health endpoint ", ChannelID: channel, ChannelName: "ralph", UserID: "UALICE", UserName: "alice", TriggerID: "t-1"}, secret, now)
	require.Equal(t, 200, code)
	require.Contains(t, body, `"response_type":"ephemeral"`)
	require.Contains(t, body, "Ralph took it: /run api Add a /health endpoint")
	require.Equal(t, []contract.ChatUpdate{{User: "@alice", Text: "/run api Add a /health endpoint", Slack: &contract.SlackPost{Channel: channel, TS: "t-1"}}}, got)

	code, _ = send(fakechat.SlashCommand{Command: "/ralph", Text: "status", ChannelID: channel, ChannelName: "ralph", UserID: "UALICE", UserName: "alice"}, secret, now)
	require.Equal(t, 200, code)
	require.Equal(t, "/status", got[1].Text, "/ralph status is /status")

	for _, c := range []struct {
		name string
		cmd  fakechat.SlashCommand
	}{
		{"another channel", fakechat.SlashCommand{Command: "/run", Text: "api x", ChannelID: other, ChannelName: "random", UserID: "UALICE"}},
		{"another workspace", fakechat.SlashCommand{Command: "/run", Text: "api x", TeamID: "TOTHER", ChannelID: channel, ChannelName: "ralph", UserID: "UALICE"}},
		{"a guest", fakechat.SlashCommand{Command: "/run", Text: "api x", ChannelID: channel, ChannelName: "ralph", UserID: "UGUEST"}},
	} {
		for range 2 {
			code, body := send(c.cmd, secret, now)
			require.Equal(t, 200, code, c.name)
			require.Empty(t, body, c.name+": ignored, nothing said")
		}
	}
	require.Len(t, got, 2, "nothing from elsewhere is handed on")
	require.Equal(t, 3, bytes.Count(logs.Bytes(), []byte("ignored")), "each is logged once:\n"+logs.String())

	for _, c := range []struct {
		name string
		key  string
		at   time.Time
	}{
		{"wrong secret", "not-the-secret", now},
		{"ten minutes old", secret, now.Add(-10 * time.Minute)},
	} {
		code, _ := send(fakechat.SlashCommand{Command: "/run", Text: "api x", ChannelID: channel, ChannelName: "ralph", UserID: "UALICE"}, c.key, c.at)
		require.Equal(t, 401, code, c.name)
	}
	require.Len(t, got, 2, "a request Slack did not sign is refused")
}
