package config

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
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

// aliasPattern is what a workspace alias of notify.workspaces may be: a
// short lower-case word, as a chat's /run names it.
var aliasPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,31}$`)

// Workspace is the directory notify.workspaces names alias (any case),
// and whether it names one.
func (n NotifyConfig) Workspace(alias string) (string, bool) {
	alias = strings.ToLower(alias)
	for _, w := range n.Workspaces {
		if a, dir, ok := strings.Cut(w, "="); ok && a == alias {
			return dir, true
		}
	}
	return "", false
}

// Aliases are the aliases of notify.workspaces, in the order given.
func (n NotifyConfig) Aliases() []string {
	var out []string
	for _, w := range n.Workspaces {
		a, _, _ := strings.Cut(w, "=")
		out = append(out, a)
	}
	return out
}

// validateWorkspaces checks notify.workspaces: each ALIAS=DIR with a
// lower-case alias, given once, and an absolute directory.
func (n NotifyConfig) validateWorkspaces(v *validation) {
	seen := map[string]bool{}
	for _, w := range n.Workspaces {
		alias, dir, ok := strings.Cut(w, "=")
		switch {
		case !ok:
			v.check("notify.workspaces", true, w, "must be ALIAS=DIR, such as api=/srv/acme/api")
		case !aliasPattern.MatchString(alias):
			v.check("notify.workspaces", true, w, "the alias must be a lower-case word of letters, digits, '-', '_' or '.' (at most 32), such as api")
		case seen[alias]:
			v.check("notify.workspaces", true, w, "the alias "+alias+" is given twice")
		case !filepath.IsAbs(dir):
			v.check("notify.workspaces", true, w, "the directory must be absolute, such as /srv/acme/api")
		}
		seen[alias] = true
	}
}
