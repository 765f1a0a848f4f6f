package testsuite_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/testsuite/fakechat"
)

// TestReplyToACopyOfAQuestion: a worker that died between sending a
// question to Telegram and writing down that it did sends it again on
// its retry, and the inbox is told of that second copy only. A reply to
// the first copy (here posted as the bot would have, with the same text
// and buttons) answers the question all the same, once: the inbox finds
// it by the key hash its buttons carry. A person's message is not read
// for buttons.
func TestReplyToACopyOfAQuestion(t *testing.T) {
	cr := newChatRig(t)
	r := newRepo(t, map[string]string{"prd.json": threeStoryPRD, "progress.txt": ""})
	se := newStarterEnv(t, rawScenario(t, map[string]any{
		"steps": []any{
			map[string]any{"checkpoint": map[string]any{
				"type": "decision", "question": "Which database should widgets live in?", "options": []string{"postgres", "sqlite"},
			}, "text": "I need a decision first."},
			map[string]any{"auto": true},
		},
		"repeat": "auto",
	}))
	se.env = append(se.env, cr.env...)
	id := sessionIDOf(r.Dir)
	startDevWorker(t, se)
	code, out := starter(t, se, "run", "--dev", r.Dir)
	require.Equal(t, 0, code, out)

	var question fakechat.Message
	waitFor(t, 2*time.Minute, "the question on Telegram", func() bool {
		qs := cr.botMessages(tgChat, "Which database")
		if len(qs) == 0 {
			return false
		}
		question = qs[0]
		return true
	})
	require.NotEmpty(t, question.Keyboard)
	copyID := sendAsBot(t, cr.tg.URL(), question)

	alice := fakechat.User{ID: 7, FirstName: "Alice", Username: "alice"}
	reply, err := cr.tg.UserReply(tgChat, alice, copyID, "sqlite")
	require.NoError(t, err)
	waitFor(t, time.Minute, "the answer confirmed under the reply", func() bool {
		for _, m := range cr.tg.Sent(tgChat) {
			if m.ReplyTo == reply {
				return true
			}
		}
		return false
	})
	c := se.dial(t)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var res contract.SessionResult
	require.NoError(t, c.GetWorkflow(ctx, id, "").Get(ctx, &res))
	require.Equal(t, contract.ReasonComplete, res.Reason, res.Message)
	prompt := sessionPrompt(t, r.Dir, id, 2)
	require.Contains(t, string(prompt), "sqlite", "the answer reached the next iteration")
	for _, m := range cr.tg.Sent(tgChat) {
		require.NotContains(t, m.Plain, "not a question of a Ralph session", "the reply to the copy was taken")
	}
	replayFrom(t, se, id)
	replayAs(t, c, contract.ChatInboxID, "inbox-reply-by-buttons")
}

// sendAsBot posts m again through the Bot API, as the bot, with the same
// text and buttons: the copy a worker that died sent. It returns the new
// message's ID.
func sendAsBot(t *testing.T, apiURL string, m fakechat.Message) int {
	t.Helper()
	body, err := json.Marshal(map[string]any{
		"chat_id": m.ChatID, "text": m.Text, "parse_mode": m.ParseMode,
		"reply_markup": map[string]any{"inline_keyboard": m.Keyboard},
	})
	require.NoError(t, err)
	resp, err := http.Post(apiURL+"/bot"+tgToken+"/sendMessage", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct {
		OK     bool `json:"ok"`
		Result struct {
			MessageID int `json:"message_id"`
		} `json:"result"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.True(t, out.OK)
	return out.Result.MessageID
}
