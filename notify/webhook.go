package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/durable-ralph/ralph/contract"
)

// Headers of a webhook POST.
const (
	// HeaderEvent is the notification's event.
	HeaderEvent = "X-Ralph-Event"
	// HeaderDelivery is the notification's key, the same in every retry:
	// a receiver drops a delivery whose key it had.
	HeaderDelivery = "X-Ralph-Delivery"
	// HeaderSignature is "sha256=" and the hex HMAC-SHA256 of the body
	// with the secret (Sign); absent without a secret.
	HeaderSignature = "X-Ralph-Signature-256"
)

// Payload is the JSON body of a webhook POST: a notification, with the
// agent's text redacted and clipped as in every channel.
type Payload struct {
	Event      contract.NotifyEvent `json:"event"`
	Session    string               `json:"session"`
	WorkflowID string               `json:"workflow_id"`
	RunID      string               `json:"run_id"`
	// Text is what happened, in one line.
	Text string `json:"text"`
	// Details are further lines; Choices the answers a question offers.
	// Both are [] when there are none.
	Details []string `json:"details"`
	Choices []string `json:"choices"`
	// Question is the checkpoint a question asks; 0 for other events.
	Question int `json:"question"`
	// URL is the event's link (the pull request); UIURL the workflow's
	// page in the Temporal UI. Either may be "".
	URL   string `json:"url"`
	UIURL string `json:"ui_url"`
	// At is when the event happened.
	At time.Time `json:"at"`
	// Key is the notification's key, as in HeaderDelivery.
	Key string `json:"key"`
}

// payload is m as a webhook's Payload.
func (m *message) payload() Payload {
	p := Payload{
		Event: m.event, Session: m.session, WorkflowID: m.workflowID, RunID: m.runID,
		Text: m.text, Details: m.details, Choices: m.choices, Question: m.question,
		URL: m.url, UIURL: m.uiURL, At: m.at, Key: m.key,
	}
	if p.Details == nil {
		p.Details = []string{}
	}
	if p.Choices == nil {
		p.Choices = []string{}
	}
	return p
}

// Sign is the value of HeaderSignature for body: "sha256=" and the hex
// HMAC-SHA256 of body with secret.
func Sign(secret, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// Verify reports whether signature, the value of HeaderSignature, is
// body's with secret. It compares in constant time; an empty secret or
// signature never verifies.
func Verify(secret, body []byte, signature string) bool {
	if len(secret) == 0 || !strings.HasPrefix(signature, "sha256=") {
		return false
	}
	return hmac.Equal([]byte(signature), []byte(Sign(secret, body)))
}

// webhookTarget is the generic webhook.
type webhookTarget struct {
	url    string
	secret []byte
	client *http.Client
}

func (w *webhookTarget) dest() string { return contract.ChannelWebhook }

// send POSTs m's Payload; any 2xx answer takes it.
func (w *webhookTarget) send(ctx context.Context, m *message) (contract.SentMessage, error) {
	body, err := json.Marshal(m.payload())
	if err != nil {
		return contract.SentMessage{}, fmt.Errorf("webhook: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return contract.SentMessage{}, fmt.Errorf("webhook: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "durable-ralph")
	req.Header.Set(HeaderEvent, string(m.event))
	req.Header.Set(HeaderDelivery, m.key)
	if len(w.secret) > 0 {
		req.Header.Set(HeaderSignature, Sign(w.secret, body))
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return contract.SentMessage{}, fmt.Errorf("webhook: %w", withoutURL(err))
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return contract.SentMessage{}, fmt.Errorf("webhook: the receiver answered %s", resp.Status)
	}
	return contract.SentMessage{Channel: contract.ChannelWebhook}, nil
}
