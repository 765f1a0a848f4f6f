package config

import (
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/notify"
)

// NotifySettings are the settings of a notify.Notifier that c configures,
// with the tokens, the Slack webhook's URL and the webhook's secret read
// by getenv from the variables notify.* names (nil is [os.Getenv]).
// Telegram is on when its token is set and it has chats, Slack when its
// webhook's URL is set or its bot token and channel are, the webhook when
// its URL is set.
func (c Config) NotifySettings(getenv func(string) string) notify.Settings {
	if getenv == nil {
		getenv = os.Getenv
	}
	env := func(name string) string { return strings.TrimSpace(getenv(name)) }
	n := c.Notify
	events := make([]contract.NotifyEvent, len(n.Events))
	for i, e := range n.Events {
		events[i] = contract.NotifyEvent(e)
	}
	return notify.Settings{
		Events:    events,
		MaxAge:    n.MaxAge,
		UIURL:     c.notifyUIURL(),
		Namespace: c.Dev.Namespace,
		StateDir:  c.Dev.StateDir,
		Telegram: notify.TelegramSettings{
			Token:    env(n.Telegram.TokenEnv),
			TokenEnv: n.Telegram.TokenEnv,
			ChatIDs:  n.Telegram.ChatIDs,
			APIURL:   n.Telegram.APIURL,
		},
		Slack: notify.SlackSettings{
			WebhookURL:    env(n.Slack.WebhookURLEnv),
			WebhookURLEnv: n.Slack.WebhookURLEnv,
			BotToken:      env(n.Slack.BotTokenEnv),
			BotTokenEnv:   n.Slack.BotTokenEnv,
			Channel:       n.Slack.Channel,
			APIURL:        n.Slack.APIURL,
		},
		Webhook: notify.WebhookSettings{
			URL:       n.Webhook.URL,
			Secret:    env(n.Webhook.SecretEnv),
			SecretEnv: n.Webhook.SecretEnv,
		},
	}
}

// notifyUIURL is notify.ui-url, or else the dev server's UI, as the dev
// server serves it (an unspecified dev.ip is this machine); "" when the
// dev server has no UI.
func (c Config) notifyUIURL() string {
	if c.Notify.UIURL != "" || c.Dev.UIPort == 0 {
		return c.Notify.UIURL
	}
	host := c.Dev.IP
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, strconv.Itoa(c.Dev.UIPort))
}
