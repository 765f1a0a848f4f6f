package testsuite_test

import (
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/testsuite/fakechat"
)

// slackSigningSecret signs the fake Slack's slash commands.
const slackSigningSecret = "e2e-slack-signing-secret-0123456789"

// TestRunFromAChat: /run ALIAS IDEA in the allowed Telegram chat plans
// the idea in the workspace the worker's notify.workspaces names ALIAS;
// the plan comes to the chat, and a reply that approves it runs the
// stories to the end. From a chat that is not allowed it starts nothing
// and is answered nothing; an alias the worker does not know is said,
// with the known ones. A Slack slash command, signed, from the bot's
// channel, is acted on while the session runs (it says one runs there);
// one from another channel or wrongly signed changes nothing. The worker
// is killed with SIGKILL after the /run was taken, while the planner
// runs: the session goes on, one plan message, no second session. (A
// kill between the plan's send and its record could send a second copy;
// a reply to either answers it: TestChatInboxHoldsARepliedQuestion...)
func TestRunFromAChat(t *testing.T) {
	cr := newChatRig(t)
	r := newRepo(t, map[string]string{"README.md": "# Widgets\n"})
	se := newStarterEnv(t, rawScenario(t, map[string]any{
		"steps":  []any{map[string]any{"auto": true}},
		"repeat": "auto",
		"roles":  map[string]any{"planner": []any{map[string]any{"write": map[string]string{"prd.json": planTwoStories}, "text": "Planned.", "sleep_ms": 5000}}},
	}))
	se.env = append(se.env, cr.env...)
	se.env = append(se.env, "RALPH_NOTIFY_WORKSPACES=widgets="+r.Dir+" docs=/srv/docs",
		"RALPH_SLACK_SIGNING_SECRET="+slackSigningSecret)
	id := sessionIDOf(r.Dir)
	w := startProc(t, se.env, bins.worker, "--dev", "--slack-commands-listen", "127.0.0.1:0")
	waitFor(t, 2*time.Minute, "the worker's slash command endpoint", func() bool { return strings.Contains(w.Output(), "Slack commands:") })
	require.Contains(t, w.Output(), "Chat: /run may plan in widgets, docs.")
	t.Cleanup(func() {
		if t.Failed() {
			for _, msg := range cr.tg.Messages(tgChat) {
				t.Logf("chat: %d %s reply-to %d: %s", msg.MessageID, msg.From.Username, msg.ReplyTo, msg.Plain)
			}
			for _, msg := range cr.slack.Posted() {
				t.Logf("slack: %s %s thread %q: %s", msg.Via, msg.Channel, msg.ThreadTS, msg.Text)
			}
			t.Logf("worker:\n%s", w.Output())
		}
	})

	// Not allowed: another chat.
	mallory := fakechat.User{ID: 9, FirstName: "Mallory", Username: "mallory"}
	cr.tg.UserMessage(tgOtherChat, mallory, "/run widgets delete everything")
	alice := fakechat.User{ID: 7, FirstName: "Alice", Username: "alice"}
	cr.tg.UserMessage(tgChat, alice, "/run nope something")
	waitFor(t, time.Minute, "the unknown alias said", func() bool {
		return len(cr.botMessages(tgChat, `No workspace is called "nope" here: the workspaces are widgets, docs.`)) == 1
	})
	require.Empty(t, cr.tg.Sent(tgOtherChat), "a chat that is not allowed hears nothing")
	code, out := starter(t, se, "list", "--dev")
	require.Equal(t, 0, code, out)
	require.NotContains(t, out, id, "the other chat's /run started nothing")

	asked := time.Now()
	cr.tg.UserMessage(tgChat, alice, "/run widgets a catalogue of widgets")
	waitFor(t, time.Minute, "the bot to say it plans", func() bool { return len(cr.botMessages(tgChat, "Planning in widgets (session "+id+")")) == 1 })
	// The worker dies; the session does not.
	require.NoError(t, w.cmd.Process.Signal(syscall.SIGKILL))
	w.wait(t, time.Minute)
	w = startProc(t, se.env, bins.worker, "--dev", "--slack-commands-listen", "127.0.0.1:0")
	waitFor(t, 2*time.Minute, "the worker again", func() bool { return strings.Contains(w.Output(), "Slack commands:") })
	m := regexp.MustCompile(`Slack commands:\s+(http://\S+)`).FindStringSubmatch(w.Output())
	require.NotNil(t, m, w.Output())
	slashURL := m[1]

	var plan fakechat.Message
	waitFor(t, 2*time.Minute, "the plan in the chat", func() bool {
		ps := cr.botMessages(tgChat, "2. US-002 Add a widget")
		if len(ps) == 0 {
			return false
		}
		plan = ps[0]
		return true
	})
	t.Logf("figure: /run in Telegram to the plan in the chat: %s", time.Since(asked).Round(10*time.Millisecond))

	// Slack: from the bot's channel, a session already runs there; from
	// another channel or unsigned, nothing.
	channel := cr.slack.ChannelID("ralph")
	cr.slack.AddUser(fakechat.SlackUser{ID: "UCAROL", Name: "carol"})
	other := cr.slack.AddChannel("random")
	code, body, err := fakechat.SendSlashCommand(slashURL, "wrong-secret", fakechat.SlashCommand{Command: "/run", Text: "widgets x", ChannelID: channel, ChannelName: "ralph", UserID: "UCAROL"}, time.Now())
	require.NoError(t, err)
	require.Equal(t, 401, code, body)
	code, body, err = fakechat.SendSlashCommand(slashURL, slackSigningSecret, fakechat.SlashCommand{Command: "/run", Text: "widgets x", ChannelID: other, ChannelName: "random", UserID: "UCAROL"}, time.Now())
	require.NoError(t, err)
	require.Equal(t, 200, code)
	require.Empty(t, body, "another channel is ignored")
	code, body, err = fakechat.SendSlashCommand(slashURL, slackSigningSecret, fakechat.SlashCommand{Command: "/run", Text: "widgets a second idea", ChannelID: channel, ChannelName: "ralph", UserID: "UCAROL", UserName: "carol"}, time.Now())
	require.NoError(t, err)
	require.Equal(t, 200, code)
	require.Contains(t, body, "Ralph took it: /run widgets a second idea")
	waitFor(t, time.Minute, "the answer in the Slack channel", func() bool { return len(cr.slackPosts("A session already runs in widgets ("+id+")")) == 1 })

	_, err = cr.tg.UserReply(tgChat, alice, plan.MessageID, "approve")
	require.NoError(t, err)
	waitFor(t, 3*time.Minute, "the end in the chat", func() bool { return len(cr.botMessages(tgChat, "Ended")) == 1 })
	require.Len(t, cr.botMessages(tgChat, "2. US-002 Add a widget"), 1, "one plan message, whatever the kill")
	require.Equal(t, 2, strings.Count(r.read("prd.json"), `"passes": true`))
	prompt := sessionPrompt(t, r.Dir, id, 1)
	require.Contains(t, string(prompt), "## Role: planner")
	require.Contains(t, string(prompt), "a catalogue of widgets")
	require.NotContains(t, string(prompt), "a second idea")
	replayFrom(t, se, id)
	c := se.dial(t)
	defer c.Close()
	replayAs(t, c, contract.ChatInboxID, "inbox")
}
