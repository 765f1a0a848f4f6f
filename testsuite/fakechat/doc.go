// Package fakechat holds local fakes of the chat services notifications go
// to, served over HTTP on 127.0.0.1 for end-to-end tests: the Telegram Bot
// API (Telegram), Slack's incoming webhooks and Web API (Slack), and a
// receiver of signed JSON webhooks (Receiver).
//
// Each fake speaks its service's wire format (paths, parameters in JSON,
// URL-encoded or multipart bodies, the JSON of answers and errors, status
// codes), so that an unmodified client such as github.com/go-telegram/bot or
// github.com/slack-go/slack, pointed at its URL, works against it. Each one
// validates what the real service refuses and a test relies on being refused
// (Telegram's parsing of HTML and MarkdownV2, the lengths of texts and
// callback data, Slack's tokens and channels, the webhook's signature),
// records what it received for a test to inspect, lets a test play the
// people on the other side (a reply, a command, a button pressed), and can
// be scripted to fail: Fail answers the next calls of a method with an error
// status, FailFor does so for a while, and Hold keeps the answer of a call
// whose effect is done until the test releases it.
//
// Every fake is safe for concurrent use, refuses bodies over 1 MiB with 413,
// and ends its long polls and held answers when closed.
package fakechat
