// Package notify tells people away from the terminal what their sessions
// do: it sends each notification (contract.Notification) to the
// configured channels, Telegram, Slack and a generic signed webhook, once
// per channel however often it is retried, and it holds the clients the
// answers come back through (Telegram updates, Slack thread replies).
//
// A Notifier records every message a channel took, with the message's ID,
// in notify-sent.log in the state directory before Send returns, so that
// a retry, a restarted worker or a replayed workflow finds it there and
// sends nothing twice. Telegram and Slack take no idempotency key: a
// crash inside the HTTP call itself, after the channel took the message
// and before it was recorded, may still send it twice. The webhook
// carries the key as X-Ralph-Delivery, so its receiver can drop a repeat.
//
// Package notify knows nothing of Temporal: an activity wraps Send.
package notify

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/durable-ralph/ralph/contract"
)

// requestTimeout bounds one request to a channel's API, besides the
// long-poll time of a getUpdates.
const requestTimeout = 30 * time.Second

// Settings configure a Notifier: which events it sends, over which
// channels, and where it records what it sent.
type Settings struct {
	// Events are the events sent; nil is every event.
	Events []contract.NotifyEvent
	// MaxAge is how old a notification may be before a channel that
	// fails to take it is given up.
	MaxAge time.Duration
	// UIURL is the base URL of the Temporal UI that messages link to,
	// such as http://127.0.0.1:8233; "" links nowhere.
	UIURL string
	// Namespace is the Temporal namespace of the workflows, for the
	// links; "" is "default".
	Namespace string
	// StateDir is the directory of the record of sent messages,
	// SentFileName.
	StateDir string

	Telegram TelegramSettings
	Slack    SlackSettings
	Webhook  WebhookSettings

	// HTTPClient makes the requests; nil is a client of its own.
	HTTPClient *http.Client
}

// TelegramSettings configure the Telegram channel: a bot that writes to
// chats.
type TelegramSettings struct {
	// Token is the bot's token; TokenEnv names the variable it came from,
	// for messages.
	Token    string
	TokenEnv string
	// ChatIDs are the chats that receive the messages.
	ChatIDs []int64
	// APIURL is the Bot API server; "" is https://api.telegram.org.
	APIURL string
}

// On reports whether Telegram is configured: a token and a chat.
func (t TelegramSettings) On() bool { return t.Token != "" && len(t.ChatIDs) > 0 }

// SlackSettings configure the Slack channel: an incoming webhook, or a
// bot token and a channel, which Slack answers with the message's ID so
// that replies in its thread can be read.
type SlackSettings struct {
	// WebhookURL is the incoming webhook's URL; WebhookURLEnv names the
	// variable it came from.
	WebhookURL    string
	WebhookURLEnv string
	// BotToken is the bot's token (xoxb-…); BotTokenEnv names the
	// variable it came from.
	BotToken    string
	BotTokenEnv string
	// Channel is the channel the bot posts in, such as #ralph or its ID.
	Channel string
	// APIURL is the Web API's base URL; "" is https://slack.com/api/.
	APIURL string
}

// Bot reports whether Slack is reached as a bot: a token and a channel.
// A bot wins over the incoming webhook.
func (s SlackSettings) Bot() bool { return s.BotToken != "" && s.Channel != "" }

// On reports whether Slack is configured.
func (s SlackSettings) On() bool { return s.Bot() || s.WebhookURL != "" }

// WebhookSettings configure the generic webhook.
type WebhookSettings struct {
	// URL receives a JSON POST (Payload) per notification; "" is off.
	URL string
	// Secret signs each POST (X-Ralph-Signature-256); "" leaves them
	// unsigned. SecretEnv names the variable it came from.
	Secret    string
	SecretEnv string
}

// On reports whether any channel is configured.
func (s Settings) On() bool { return s.Telegram.On() || s.Slack.On() || s.Webhook.URL != "" }

// Secrets are the secrets of s as NAME=value entries, for the worker's
// redactor: the tokens, the Slack webhook's URL and the webhook's secret.
func (s Settings) Secrets() []string {
	var out []string
	for _, kv := range [][2]string{
		{s.Telegram.TokenEnv, s.Telegram.Token},
		{s.Slack.WebhookURLEnv, s.Slack.WebhookURL},
		{s.Slack.BotTokenEnv, s.Slack.BotToken},
		{s.Webhook.SecretEnv, s.Webhook.Secret},
	} {
		if kv[1] != "" {
			out = append(out, kv[0]+"="+kv[1])
		}
	}
	return out
}

// Notices are the lines a worker prints when it starts about settings
// that leave a channel off or weaker than meant.
func (s Settings) Notices() []string {
	var out []string
	if s.Telegram.Token != "" && len(s.Telegram.ChatIDs) == 0 {
		out = append(out, fmt.Sprintf("notify: %s is set but notify.telegram.chat-ids is empty: no Telegram messages", s.Telegram.TokenEnv))
	}
	if s.Slack.BotToken != "" && s.Slack.Channel == "" {
		out = append(out, fmt.Sprintf("notify: %s is set but notify.slack.channel is empty: the Slack bot does not post", s.Slack.BotTokenEnv))
	}
	if s.Webhook.URL != "" && s.Webhook.Secret == "" {
		out = append(out, fmt.Sprintf("warning: notify: %s is empty: the webhook's POSTs are not signed", s.Webhook.SecretEnv))
	}
	return out
}

// A target is one place a notification goes: a Telegram chat, the Slack
// channel or the webhook.
type target interface {
	// dest names the target in the record and in errors:
	// "telegram:<chat>", "slack" or "webhook".
	dest() string
	// send sends m and returns the message the channel took.
	send(ctx context.Context, m *message) (contract.SentMessage, error)
}

// Notifier sends notifications to the configured channels. A nil
// Notifier, or one with no channel, sends nothing. It is safe for
// concurrent use.
type Notifier struct {
	settings Settings
	redact   func(string) string
	// scrub removes the channels' own secrets from errors.
	scrub    *strings.Replacer
	targets  []target
	telegram *Telegram
	slack    *Slack
	sent     *sentRecord
}

// New returns the Notifier s configures, with its record of sent
// messages opened. redact removes secrets from the agent's text before it
// leaves the worker; nil leaves text as it is. With no channel
// configured, New returns a Notifier that sends nothing and opens no
// file.
func New(s Settings, redact func(string) string) (*Notifier, error) {
	if redact == nil {
		redact = func(s string) string { return s }
	}
	n := &Notifier{settings: s, redact: redact}
	if !s.On() {
		return n, nil
	}
	if s.StateDir == "" {
		return nil, errors.New("notify: no state directory for the record of sent messages")
	}
	if s.Namespace == "" {
		n.settings.Namespace = "default"
	}
	if s.HTTPClient == nil {
		n.settings.HTTPClient = &http.Client{}
	}
	n.scrub = scrubber(s)
	n.addTargets()
	sent, err := openSent(filepath.Join(s.StateDir, SentFileName), KeepSent)
	if err != nil {
		return nil, err
	}
	n.sent = sent
	return n, nil
}

// scrubber removes the secrets of s from text: the values of
// s.Secrets, and the webhook's URL, which may hold a token too (Discord's
// and ntfy's do). Values too short to be secrets are left, as package
// redact leaves them.
func scrubber(s Settings) *strings.Replacer {
	values := []string{s.Webhook.URL}
	for _, kv := range s.Secrets() {
		_, v, _ := strings.Cut(kv, "=")
		values = append(values, v)
	}
	var pairs []string
	for _, v := range values {
		if len(v) >= 8 {
			pairs = append(pairs, v, "[redacted]")
		}
	}
	return strings.NewReplacer(pairs...)
}

// addTargets makes the clients and targets of the configured channels.
func (n *Notifier) addTargets() {
	s := n.settings
	if s.Telegram.On() {
		n.telegram = NewTelegram(s.Telegram.Token, s.Telegram.APIURL, s.HTTPClient)
		for _, id := range s.Telegram.ChatIDs {
			n.targets = append(n.targets, &telegramTarget{bot: n.telegram, chat: id})
		}
	}
	if s.Slack.On() {
		n.slack = newSlack(s.Slack, s.HTTPClient)
		n.targets = append(n.targets, n.slack)
	}
	if s.Webhook.URL != "" {
		n.targets = append(n.targets, &webhookTarget{url: s.Webhook.URL, secret: []byte(s.Webhook.Secret), client: s.HTTPClient})
	}
}

// Telegram is the Telegram bot, or nil when Telegram is off.
func (n *Notifier) Telegram() *Telegram {
	if n == nil {
		return nil
	}
	return n.telegram
}

// SlackBot reports whether Slack is reached as a bot, whose threads can
// be read.
func (n *Notifier) SlackBot() bool { return n != nil && n.settings.Slack.Bot() }

// Slack is the Slack client, or nil when Slack is off.
func (n *Notifier) Slack() *Slack {
	if n == nil {
		return nil
	}
	return n.slack
}

// Close closes the record of sent messages.
func (n *Notifier) Close() error {
	if n == nil || n.sent == nil {
		return nil
	}
	return n.sent.close()
}

// Check asks the channels with a token whether they take it: Telegram's
// getMe, Slack's auth.test. A wrong token is an error that says so
// (errors.Is ErrBadToken), for the worker to print once when it starts.
func (n *Notifier) Check(ctx context.Context) error {
	if n == nil {
		return nil
	}
	var errs []error
	if n.telegram != nil {
		_, err := n.telegram.Check(ctx)
		if errors.Is(err, ErrBadToken) {
			err = fmt.Errorf("the bot token in %s is wrong (%w): copy the token @BotFather gave the bot", n.settings.Telegram.TokenEnv, err)
		}
		if err != nil {
			errs = append(errs, n.scrubbed(fmt.Errorf("notify: Telegram: %w", err)))
		}
	}
	if n.slack != nil {
		err := n.slack.Check(ctx)
		if errors.Is(err, ErrBadToken) {
			err = fmt.Errorf("the bot token in %s is wrong (%w): copy the Bot User OAuth Token of the Slack app", n.settings.Slack.BotTokenEnv, err)
		}
		if err != nil {
			errs = append(errs, n.scrubbed(fmt.Errorf("notify: Slack: %w", err)))
		}
	}
	return errors.Join(errs...)
}

// ErrBadToken is a token a channel refused.
var ErrBadToken = errors.New("token refused")

// Send sends note to every configured channel, if the settings' events
// take its event, and returns the messages the channels took. A channel
// that has note's key recorded as sent is not sent it again: its recorded
// message is in the result. When a channel fails, Send returns an error
// naming it, after the others took theirs; a retry sends only what is
// missing. When note is older than the settings' MaxAge, a channel that
// fails is given up instead (NotifyResult.GaveUp) and Send does not fail.
// A zero note.At is as old as can be. A note.Channel sends to that
// channel's targets only.
func (n *Notifier) Send(ctx context.Context, note contract.Notification) (contract.NotifyResult, error) {
	var res contract.NotifyResult
	if n == nil || len(n.targets) == 0 || !n.takes(note.Event) {
		return res, nil
	}
	if note.Key == "" {
		return res, errors.New("notify: the notification has no key")
	}
	m := n.prepare(note)
	results := make([]sendResult, len(n.targets))
	var wg sync.WaitGroup
	for i, t := range n.targets {
		if note.Channel != "" && channelOf(t.dest()) != note.Channel {
			results[i] = sendResult{skipped: true}
			continue
		}
		wg.Go(func() { results[i] = n.sendTo(ctx, t, m) })
	}
	wg.Wait()
	giveUp := time.Since(note.At) > n.settings.MaxAge
	var errs []error
	for i, r := range results {
		switch {
		case r.skipped:
		case r.err == nil:
			res.Sent = append(res.Sent, r.sent)
		case giveUp && !r.recordErr:
			res.GaveUp = append(res.GaveUp, n.scrubbed(fmt.Errorf("%s: %w", n.targets[i].dest(), r.err)).Error())
		default:
			errs = append(errs, n.scrubbed(fmt.Errorf("notify over %s: %w", n.targets[i].dest(), r.err)))
		}
	}
	return res, errors.Join(errs...)
}

// sendResult is what sendTo did.
type sendResult struct {
	sent contract.SentMessage
	err  error
	// recordErr marks an error of the record, not of the channel: the
	// channel took the message, and a retry may send it again.
	recordErr bool
	// skipped marks a target of another channel than the one asked for.
	skipped bool
}

// sendTo sends m to t unless the record has it sent, and records what t
// took.
func (n *Notifier) sendTo(ctx context.Context, t target, m *message) sendResult {
	if sent, ok := n.sent.get(m.key, t.dest()); ok {
		return sendResult{sent: sent.SentMessage}
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	sent, err := t.send(ctx, m)
	if err != nil {
		return sendResult{err: err}
	}
	if err := n.sent.put(t.dest(), m.sentOf(sent)); err != nil {
		return sendResult{err: err, recordErr: true}
	}
	return sendResult{sent: sent}
}

// Sends reports whether n sends event anywhere: a channel is configured
// and notify.events takes the event.
func (n *Notifier) Sends(event contract.NotifyEvent) bool {
	return n != nil && len(n.targets) > 0 && n.takes(event)
}

// takes reports whether the settings' events take event.
func (n *Notifier) takes(event contract.NotifyEvent) bool {
	return n.settings.Events == nil || slices.Contains(n.settings.Events, event)
}

// scrubbed is err with the channels' secrets removed from its text (a
// URL in a transport error may hold one), and then the worker's.
func (n *Notifier) scrubbed(err error) error {
	msg := err.Error()
	if n.scrub != nil {
		msg = n.scrub.Replace(msg)
	}
	return &scrubbedError{msg: n.redact(msg), err: err}
}

// scrubbedError is an error whose text had secrets removed. It unwraps
// to the original for errors.Is, such as ErrBadToken.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }
