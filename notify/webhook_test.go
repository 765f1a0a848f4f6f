package notify

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/contract"
)

func TestWebhookDelivery(t *testing.T) {
	w := newWorld(t, false)
	n := notifier(t, w.settings, nil)
	note := question(time.Now())
	note.Event, note.Choices, note.Question, note.Details = contract.NotifyPR, nil, 0, nil
	_, err := n.Send(context.Background(), note)
	require.NoError(t, err)

	d := w.recv.received()[0]
	require.Equal(t, "application/json", d.Header.Get("Content-Type"))
	require.Equal(t, "pr", d.Header.Get(HeaderEvent))
	require.Equal(t, note.Key, d.Header.Get(HeaderDelivery))
	mac := hmac.New(sha256.New, []byte(webhookSecret))
	mac.Write(d.Body)
	require.Equal(t, "sha256="+hex.EncodeToString(mac.Sum(nil)), d.Header.Get(HeaderSignature))

	var fields map[string]any
	require.NoError(t, json.Unmarshal(d.Body, &fields))
	for _, k := range []string{"event", "session", "workflow_id", "run_id", "text", "details", "choices", "question", "url", "ui_url", "at", "key"} {
		require.Contains(t, fields, k)
	}
	require.Equal(t, []any{}, fields["details"], "lists are [] rather than null")
	require.Equal(t, []any{}, fields["choices"])
}

func TestWebhookUnsigned(t *testing.T) {
	w := newWorld(t, false)
	w.recv.secret = nil
	w.settings.Webhook.Secret = ""
	n := notifier(t, w.settings, nil)
	_, err := n.Send(context.Background(), question(time.Now()))
	require.NoError(t, err)
	require.Empty(t, w.recv.received()[0].Header.Values(HeaderSignature))
}

func TestVerify(t *testing.T) {
	secret, body := []byte(webhookSecret), []byte(`{"event":"question"}`)
	good := Sign(secret, body)
	tests := []struct {
		name      string
		secret    []byte
		body      []byte
		signature string
		want      bool
	}{
		{"good", secret, body, good, true},
		{"other body", secret, []byte(`{"event":"ended"}`), good, false},
		{"other secret", []byte("another secret"), body, good, false},
		{"missing", secret, body, "", false},
		{"no prefix", secret, body, good[len("sha256="):], false},
		{"upper case hex", secret, body, "sha256=" + string(upper(good[len("sha256="):])), false},
		{"cut short", secret, body, good[:len(good)-2], false},
		{"no secret", nil, body, Sign(nil, body), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, Verify(tc.secret, tc.body, tc.signature))
		})
	}
}

// upper is s with its letters in upper case.
func upper(s string) []byte {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return b
}

func TestWebhookRefusedSignature(t *testing.T) {
	w := newWorld(t, false)
	w.settings.Webhook.Secret = "not the receiver's"
	n := notifier(t, w.settings, nil)
	_, err := n.Send(context.Background(), question(time.Now()))
	require.ErrorContains(t, err, "notify over webhook: webhook: the receiver answered 401 Unauthorized")
	require.NotContains(t, err.Error(), "not the receiver's")
}
