package fakechat_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/testsuite/fakechat"
)

const secret = "s3cret"

func newReceiver(t *testing.T) *fakechat.Receiver {
	t.Helper()
	r := fakechat.NewReceiver(secret)
	t.Cleanup(r.Close)
	return r
}

// signed are the headers of a good delivery of body.
func signed(body, id string) map[string]string {
	return map[string]string{
		"Content-Type":           "application/json",
		fakechat.SignatureHeader: fakechat.Sign(secret, []byte(body)),
		fakechat.EventHeader:     "question",
		fakechat.DeliveryHeader:  id,
	}
}

func TestReceiverChecksDeliveries(t *testing.T) {
	body := `{"event":"question","session":"acme/widgets#7","text":"Go on?"}`
	with := func(k, v string) map[string]string {
		h := signed(body, "d-1")
		if v == "" {
			delete(h, k)
		} else {
			h[k] = v
		}
		return h
	}
	tests := []struct {
		name    string
		method  string
		body    string
		headers map[string]string
		status  int
	}{
		{"good", http.MethodPost, body, signed(body, "d-1"), 200},
		{"no signature", http.MethodPost, body, with(fakechat.SignatureHeader, ""), 401},
		{"signed under another secret", http.MethodPost, body, with(fakechat.SignatureHeader, fakechat.Sign("other", []byte(body))), 401},
		{"signature of another body", http.MethodPost, body + " ", signed(body, "d-1"), 401},
		{"not hex", http.MethodPost, body, with(fakechat.SignatureHeader, "sha256=zz"), 401},
		{"another algorithm", http.MethodPost, body, with(fakechat.SignatureHeader, strings.Replace(fakechat.Sign(secret, []byte(body)), "sha256", "sha1", 1)), 401},
		{"no delivery ID", http.MethodPost, body, with(fakechat.DeliveryHeader, ""), 400},
		{"no event", http.MethodPost, body, with(fakechat.EventHeader, ""), 400},
		{"not JSON", http.MethodPost, "text", signed("text", "d-1"), 400},
		{"a JSON array", http.MethodPost, "[1]", signed("[1]", "d-1"), 400},
		{"not JSON content", http.MethodPost, body, with("Content-Type", "text/plain"), 415},
		{"GET", http.MethodGet, body, signed(body, "d-1"), 405},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newReceiver(t)
			status, _, _ := request(t, tc.method, r.URL(), tc.body, tc.headers)
			assert.Equal(t, tc.status, status)
			if tc.status != http.StatusOK {
				assert.Empty(t, r.Deliveries())
				require.Len(t, r.Rejections(), 1)
				assert.Equal(t, tc.status, r.Rejections()[0].Status)
				return
			}
			ds := r.Deliveries()
			require.Len(t, ds, 1)
			assert.Equal(t, "d-1", ds[0].ID)
			assert.Equal(t, "question", ds[0].Event)
			assert.Equal(t, "acme/widgets#7", ds[0].Body["session"])
			assert.Equal(t, body, string(ds[0].Raw))
			assert.Empty(t, r.Rejections())
		})
	}
}

func TestReceiverRepeatsAndFailures(t *testing.T) {
	r := newReceiver(t)
	one, two := `{"event":"ended","n":1}`, `{"event":"ended","n":2}`
	r.Fail(http.StatusInternalServerError, 2)
	for range 3 {
		request(t, http.MethodPost, r.URL(), one, signed(one, "d-1"))
	}
	status, _, answer := request(t, http.MethodPost, r.URL(), one, signed(one, "d-1"))
	assert.Equal(t, http.StatusOK, status, "a repeat is answered like the first")
	assert.Equal(t, "ok", answer)
	request(t, http.MethodPost, r.URL(), two, signed(two, "d-2"))

	assert.Equal(t, 4, r.Count("d-1"))
	assert.Equal(t, 1, r.Count("d-2"))
	assert.Zero(t, r.Count("d-3"))
	var statuses []int
	for _, d := range r.Deliveries() {
		statuses = append(statuses, d.Status)
	}
	assert.Equal(t, []int{500, 500, 200, 200, 200}, statuses)
	accepted := r.Accepted()
	require.Len(t, accepted, 2, "one effect per delivery ID")
	assert.Equal(t, "d-1", accepted[0].ID)
	assert.Equal(t, float64(2), accepted[1].Body["n"])

	r.FailFor(http.StatusBadGateway, 300*time.Millisecond)
	status, _, _ = request(t, http.MethodPost, r.URL(), one, signed(one, "d-3"))
	assert.Equal(t, http.StatusBadGateway, status)
	time.Sleep(400 * time.Millisecond)
	status, _, _ = request(t, http.MethodPost, r.URL(), one, signed(one, "d-3"))
	assert.Equal(t, http.StatusOK, status)
	assert.Len(t, r.Accepted(), 3)

	big := `{"a":"` + strings.Repeat("a", fakechat.MaxBody) + `"}`
	status, _, _ = request(t, http.MethodPost, r.URL(), big, signed(big, "d-4"))
	assert.Equal(t, http.StatusRequestEntityTooLarge, status)
}
