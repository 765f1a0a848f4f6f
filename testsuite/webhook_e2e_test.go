package testsuite_test

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
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/testsuite/fakegithub"
)

const webhookSecret = "e2e-webhook-secret-0123456789abcdef"

// postDelivery posts an event's payload to the worker's webhook at url,
// signed with secret, and returns the status and body of the answer.
func postDelivery(t *testing.T, url, secret, event, delivery string, payload any) (int, string) {
	t.Helper()
	body, err := json.Marshal(payload)
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", event)
	req.Header.Set("X-GitHub-Delivery", delivery)
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(answer)
}

// signalsOf counts the signals called name in every run of the workflow
// id.
func signalsOf(t *testing.T, c client.Client, id, name string) int {
	t.Helper()
	n := 0
	for _, run := range workflowRuns(t, c, id) {
		it := c.GetWorkflowHistory(context.Background(), id, run, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			e, err := it.Next()
			require.NoError(t, err)
			if e.GetWorkflowExecutionSignaledEventAttributes().GetSignalName() == name {
				n++
			}
		}
	}
	return n
}

// TestWebhookWakesTheQueue: a queue that polls once an hour takes a newly
// labelled issue within seconds of the signed issues/labeled delivery
// the worker gets; a delivery with a wrong signature is refused and wakes
// nothing, and the same delivery sent twice pokes the queue once. A
// worker asked to serve webhooks without a secret does not start.
func TestWebhookWakesTheQueue(t *testing.T) {
	qr := newQueueRig(t)
	gh := qr.gh
	gh.SetPermission("alice", "write")

	// No secret, no listener: the worker refuses to start at all.
	refused := startProc(t, qr.worker, bins.worker, "--dev", "--github-webhook-listen", "127.0.0.1:0")
	require.NotEqual(t, 0, refused.wait(t, time.Minute))
	require.Contains(t, refused.Output(), "RALPH_GITHUB_WEBHOOK_SECRET (github.webhook-secret-env) is empty")

	env := append(append([]string(nil), qr.worker...), "RALPH_GITHUB_WEBHOOK_SECRET="+webhookSecret)
	w := startProc(t, env, bins.worker, "--dev", "--github-webhook-listen", "127.0.0.1:0")
	waitFor(t, time.Minute, "the worker", func() bool { return strings.Contains(w.Output(), "Worker polling") })
	m := regexp.MustCompile(`GitHub webhook:\s+(http://\S+)`).FindStringSubmatch(w.Output())
	require.NotNil(t, m, w.Output())
	url := m[1]

	follow := qr.starter(t, "queue", "--follow", "--poll-interval", "1h", qr.clone.Dir)
	waitFor(t, time.Minute, "the queue to go idle", func() bool { return strings.Contains(follow.Output(), "idle: no ready issue") })

	n := gh.AddIssue(fakegithub.IssueSpec{Title: "Add a greeting", Author: "alice", Labels: []string{"ralph-ready"}})
	// The payload's text is the worker's to check, never to log.
	payload := map[string]any{
		"action": "labeled",
		"issue": map[string]any{"number": n, "title": "payload-text-never-logged", "state": "open",
			"labels": []any{map[string]any{"name": "ralph-ready"}}, "user": map[string]any{"login": "alice"}},
		"label":      map[string]any{"name": "ralph-ready"},
		"repository": map[string]any{"name": "app", "full_name": "acme/app", "owner": map[string]any{"login": "acme"}},
		"sender":     map[string]any{"login": "alice"},
	}
	const delivery = "1b7f3c52-0a4e-11f1-8e2d-5a1c0e9b7d21"

	status, body := postDelivery(t, url, "not the secret", "issues", delivery, payload)
	require.Equal(t, http.StatusUnauthorized, status, body)
	time.Sleep(2 * time.Second)
	require.NotContains(t, follow.Output(), fmt.Sprintf("picked #%d", n), "a delivery with a wrong signature wakes nothing")

	sent := time.Now()
	status, body = postDelivery(t, url, webhookSecret, "issues", delivery, payload)
	require.Equal(t, http.StatusAccepted, status, body)
	require.Contains(t, body, contract.SignalPoke)
	waitFor(t, 10*time.Second, "the issue's session", func() bool {
		return strings.Contains(follow.Output(), fmt.Sprintf("#%d: session", n))
	})
	took := time.Since(sent)
	t.Logf("figure: label to session start with a webhook: %s", took.Round(10*time.Millisecond))
	var first time.Time
	waitFor(t, time.Minute, "the issue's first agent run", func() bool {
		for _, c := range calls(t, qr.se.env) {
			if strings.Contains(c.Prompt, "Add a greeting") {
				first = c.Time
				return true
			}
		}
		return false
	})
	fmt.Printf("FIGURE label_to_first_prompt_seconds %.2f (webhook delivery to the agent's first start)\n", first.Sub(sent).Seconds())

	// GitHub's redelivery of the same delivery has no effect.
	status, body = postDelivery(t, url, webhookSecret, "issues", delivery, payload)
	require.Equal(t, http.StatusAccepted, status, body)
	require.Contains(t, body, "duplicate")
	c := qr.client(t)
	require.Equal(t, 1, signalsOf(t, c, contract.QueueWorkflowID(testHost, "acme", "app"), contract.SignalPoke))

	out := w.Output()
	require.Contains(t, out, "delivery="+delivery)
	require.Contains(t, out, "status=401")
	require.Regexp(t, `status=202 event=issues delivery=`+delivery+` repository=acme/app signalled=poke→`, out)
	require.NotContains(t, out, "payload-text-never-logged")
	require.NotContains(t, out, webhookSecret)
}
