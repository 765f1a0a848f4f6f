package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/notify"
)

func TestLoadNotifyChatIDs(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		user string
		args []string
		want []int64
	}{
		{name: "default", want: []int64{}},
		{name: "variable", env: map[string]string{"RALPH_NOTIFY_TELEGRAM_CHAT_IDS": "123456789 -1001234567890"}, want: []int64{123456789, -1001234567890}},
		{name: "variable with commas", env: map[string]string{"RALPH_NOTIFY_TELEGRAM_CHAT_IDS": "1,2, 3"}, want: []int64{1, 2, 3}},
		{name: "user file", user: yamlFor("notify.telegram.chat-ids", "[123456789, -1001234567890]"), want: []int64{123456789, -1001234567890}},
		{name: "user file, strings", user: yamlFor("notify.telegram.chat-ids", `["42"]`), want: []int64{42}},
		{name: "flags", args: []string{"--telegram-chat-id", "7", "--telegram-chat-id=-8"}, want: []int64{7, -8}},
		{
			name: "flag over the file", user: yamlFor("notify.telegram.chat-ids", "[1]"),
			args: []string{"--telegram-chat-id", "2"}, want: []int64{2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := load(t, setup(t, tt.user, "", tt.env), tt.args...)
			require.NoError(t, err)
			require.Equal(t, tt.want, cfg.Notify.Telegram.ChatIDs)
		})
	}
}

func TestLoadNotifyInvalid(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{
			name: "unknown event",
			args: []string{"--notify-event", "question", "--notify-event", "Done"},
			want: `invalid notify.events (--notify-event, RALPH_NOTIFY_EVENTS) = "done": must be one of question, plan, ended, failed, limit, pr, host_offline, budget`,
		},
		{
			name: "no event",
			args: []string{"--notify-event", ""},
			want: `invalid notify.events (--notify-event, RALPH_NOTIFY_EVENTS) = "": must name at least one event; to send nothing, configure no channel`,
		},
		{
			name: "chat ID not a number",
			env:  map[string]string{"RALPH_NOTIFY_TELEGRAM_CHAT_IDS": "123 @ralph"},
			want: `invalid notify.telegram.chat-ids (--telegram-chat-id, RALPH_NOTIFY_TELEGRAM_CHAT_IDS) = "123 @ralph": must be a list of whole numbers: @ralph is not one`,
		},
		{
			name: "chat ID 0",
			args: []string{"--telegram-chat-id", "0"},
			want: `invalid notify.telegram.chat-ids (--telegram-chat-id, RALPH_NOTIFY_TELEGRAM_CHAT_IDS) = 0: must be a chat's ID, such as 123456789, not 0`,
		},
		{
			name: "relative API URL",
			args: []string{"--telegram-api-url", "api.telegram.org"},
			want: `invalid notify.telegram.api-url (--telegram-api-url, RALPH_NOTIFY_TELEGRAM_API_URL) = "api.telegram.org": must be an absolute http or https URL, such as https://api.telegram.org`,
		},
		{
			name: "webhook URL scheme",
			env:  map[string]string{"RALPH_NOTIFY_WEBHOOK_URL": "ftp://example.com/hook"},
			want: `invalid notify.webhook.url (--notify-webhook-url, RALPH_NOTIFY_WEBHOOK_URL) = "ftp://example.com/hook": must be an absolute http or https URL, such as https://example.com/hooks/ralph`,
		},
		{
			name: "UI URL",
			args: []string{"--notify-ui-url", "localhost:8233"},
			want: `invalid notify.ui-url (--notify-ui-url, RALPH_NOTIFY_UI_URL) = "localhost:8233": must be an absolute http or https URL, such as http://127.0.0.1:8233`,
		},
		{
			name: "env name",
			args: []string{"--slack-bot-token-env", "xoxb-123"},
			want: `invalid notify.slack.bot-token-env (--slack-bot-token-env, RALPH_NOTIFY_SLACK_BOT_TOKEN_ENV) = "xoxb-123": must be the name of an environment variable: letters, digits and _, not starting with a digit`,
		},
		{
			name: "workspace without a directory",
			args: []string{"--chat-workspace", "api"},
			want: `invalid notify.workspaces (--chat-workspace, RALPH_NOTIFY_WORKSPACES) = "api": must be ALIAS=DIR, such as api=/srv/acme/api`,
		},
		{
			name: "workspace alias",
			env:  map[string]string{"RALPH_NOTIFY_WORKSPACES": "My/API=/srv/api"},
			want: `invalid notify.workspaces (--chat-workspace, RALPH_NOTIFY_WORKSPACES) = "My/API=/srv/api": the alias must be a lower-case word of letters, digits, '-', '_' or '.' (at most 32), such as api`,
		},
		{
			name: "workspace alias twice",
			args: []string{"--chat-workspace", "api=/srv/a", "--chat-workspace", "api=/srv/b"},
			want: `invalid notify.workspaces (--chat-workspace, RALPH_NOTIFY_WORKSPACES) = "api=/srv/b": the alias api is given twice`,
		},
		{
			name: "workspace relative",
			args: []string{"--chat-workspace", "api=srv/api"},
			want: `invalid notify.workspaces (--chat-workspace, RALPH_NOTIFY_WORKSPACES) = "api=srv/api": the directory must be absolute, such as /srv/acme/api`,
		},
		{
			name: "slack commands address",
			args: []string{"--slack-commands-listen", "8091"},
			want: `invalid notify.slack.commands-listen (--slack-commands-listen, RALPH_NOTIFY_SLACK_COMMANDS_LISTEN) = "8091": must be host:port, such as 127.0.0.1:8091`,
		},
		{
			name: "negative max age",
			args: []string{"--notify-max-age", "-1h"},
			want: `invalid notify.max-age (--notify-max-age, RALPH_NOTIFY_MAX_AGE) = -1h: must not be negative (0 = give up at the first failure)`,
		},
		{
			name: "section variable",
			env:  map[string]string{"RALPH_NOTIFY_TELEGRAM": "123"},
			want: "environment variable RALPH_NOTIFY_TELEGRAM is set, but notify.telegram is a group of settings, not a setting: " +
				"unset it and set RALPH_NOTIFY_TELEGRAM_* variables such as RALPH_NOTIFY_TELEGRAM_TOKEN_ENV instead",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := load(t, setup(t, "", "", tt.env), tt.args...)
			require.EqualError(t, err, tt.want)
		})
	}

	t.Run("empty list in a file", func(t *testing.T) {
		isolate(t)
		writeUserFile(t, yamlFor("notify.events", "[]"))
		_, err := load(t, t.TempDir())
		require.EqualError(t, err, `invalid notify.events (--notify-event, RALPH_NOTIFY_EVENTS) = "": must name at least one event; to send nothing, configure no channel`)
	})
}

func TestNotifySettings(t *testing.T) {
	isolate(t)
	cfg, err := load(t, t.TempDir(), "--notify-event", "question", "--notify-event", "PR",
		"--telegram-chat-id", "42", "--slack-channel", "#ralph", "--notify-webhook-url", "https://example.com/hook",
		"--dev-ip", "0.0.0.0", "--dev-ui-port", "9233", "--namespace", "ralph")
	require.NoError(t, err)
	env := map[string]string{
		"RALPH_TELEGRAM_TOKEN":  " 123:abc\n",
		"RALPH_SLACK_BOT_TOKEN": "xoxb-1",
		"RALPH_NOTIFY_SECRET":   "s3cret",
	}
	s := cfg.NotifySettings(func(name string) string { return env[name] })
	require.Equal(t, notify.Settings{
		Events:    []contract.NotifyEvent{contract.NotifyQuestion, contract.NotifyPR},
		MaxAge:    24 * time.Hour,
		UIURL:     "http://127.0.0.1:9233",
		Namespace: "ralph",
		StateDir:  cfg.Dev.StateDir,
		Telegram:  notify.TelegramSettings{Token: "123:abc", TokenEnv: "RALPH_TELEGRAM_TOKEN", ChatIDs: []int64{42}, APIURL: "https://api.telegram.org"},
		Slack: notify.SlackSettings{
			WebhookURLEnv: "RALPH_SLACK_WEBHOOK", BotToken: "xoxb-1", BotTokenEnv: "RALPH_SLACK_BOT_TOKEN",
			Channel: "#ralph", APIURL: "https://slack.com/api/",
		},
		Webhook: notify.WebhookSettings{URL: "https://example.com/hook", Secret: "s3cret", SecretEnv: "RALPH_NOTIFY_SECRET"},
	}, s)
	require.True(t, s.Telegram.On())
	require.True(t, s.Slack.Bot())

	// Nothing set: every channel is off.
	isolate(t)
	cfg, err = load(t, t.TempDir(), "--notify-ui-url", "https://temporal.example.com")
	require.NoError(t, err)
	s = cfg.NotifySettings(func(string) string { return "" })
	require.False(t, s.On())
	require.Equal(t, "https://temporal.example.com", s.UIURL)
	require.Len(t, s.Events, len(contract.NotifyEvents))

	// Without a UI, messages link nowhere.
	cfg, err = load(t, t.TempDir(), "--dev-ui-port", "0")
	require.NoError(t, err)
	require.Empty(t, cfg.NotifySettings(nil).UIURL)
}
