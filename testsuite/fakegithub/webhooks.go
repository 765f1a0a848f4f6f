package fakegithub

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"
)

const (
	// hookTimeout bounds one delivery, as GitHub's own timeout does.
	hookTimeout = 5 * time.Second
	// drainTimeout bounds how long Close waits for the queued deliveries.
	drainTimeout = 2 * time.Second
)

// Delivery is a webhook delivery the server sent (see SetWebhook).
type Delivery struct {
	// Event is the X-GitHub-Event: "issues", "issue_comment" or
	// "pull_request"; Action is the payload's action.
	Event, Action string
	// ID is the X-GitHub-Delivery, a fresh UUID for each delivery and the
	// same for its redeliveries.
	ID string
	// Redelivery tells a delivery that Redeliver sent.
	Redelivery bool
	// Status is the receiver's HTTP status, 0 if there was no answer; Err
	// is why there was none.
	Status int
	Err    string
}

// delivery is a queued or sent Delivery, with what it posts.
type delivery struct {
	Delivery
	url, secret string
	body        []byte
}

// webhooks is the delivery queue: one goroutine posts what the server
// queues, in order, without the server's lock. Its own lock guards it.
type webhooks struct {
	client *http.Client
	ctx    context.Context // cancelled when Close stops waiting
	cancel context.CancelFunc
	wake   chan struct{} // a queued delivery or a stop to notice
	done   chan struct{} // closed when the goroutine ends

	mu                sync.Mutex
	started, stopping bool
	queue             []*delivery
	sent              []*delivery // in the order they were sent
}

func newWebhooks() *webhooks {
	ctx, cancel := context.WithCancel(context.Background())
	return &webhooks{
		client: &http.Client{Timeout: hookTimeout},
		ctx:    ctx,
		cancel: cancel,
		wake:   make(chan struct{}, 1),
		done:   make(chan struct{}),
	}
}

// SetWebhook makes the server post a webhook delivery to url for each
// change of an issue or pull request, whether made through the API or
// with a helper such as AddLabel, as GitHub delivers a repository
// webhook's events:
//
//   - "issues": opened, labeled, unlabeled, closed and reopened (the
//     closes of a merge's closing keywords too, see MergeByHuman);
//   - "issue_comment": created, on an issue or a pull request;
//   - "pull_request": opened, labeled, unlabeled, closed (merged or not:
//     see pull_request.merged) and reopened.
//
// The payload has action, the issue (or number and pull_request, whose
// mergeable_state is "unknown" as GitHub has not computed it yet), label
// for labeled and unlabeled, comment, repository and sender (the user who
// made the change). A creation with labels is delivered as opened, then
// labeled for each label. With a non-empty secret, the deliveries carry
// X-Hub-Signature-256 (and X-Hub-Signature), the HMAC of the body.
//
// Deliveries are posted in the order of the changes by one goroutine,
// never holding up a request; each may take 5 s; a failure is recorded
// (see Deliveries), not retried. An empty url sends no more; what is
// queued is still sent.
func (s *Server) SetWebhook(url, secret string) {
	s.mu.Lock()
	s.hookURL, s.hookSecret = url, secret
	s.mu.Unlock()
	if url != "" {
		s.hooks.start()
	}
}

// Deliveries returns the webhook deliveries sent so far, redeliveries
// included, in the order they were sent (see SetWebhook).
func (s *Server) Deliveries() []Delivery {
	h := s.hooks
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Delivery, 0, len(h.sent))
	for _, d := range h.sent {
		out = append(out, d.Delivery)
	}
	return out
}

// Redeliver queues delivery id again, with the same ID, body, URL and
// secret, as GitHub's redelivery does; it is then in Deliveries again,
// with Redelivery set. It panics if no delivery id was sent.
func (s *Server) Redeliver(id string) {
	h := s.hooks
	h.mu.Lock()
	i := slices.IndexFunc(h.sent, func(d *delivery) bool { return d.ID == id })
	if i < 0 {
		h.mu.Unlock()
		panic(fmt.Sprintf("fakegithub: no delivery %q", id))
	}
	d := *h.sent[i]
	h.mu.Unlock()
	d.Redelivery, d.Status, d.Err = true, 0, ""
	h.enqueue(&d)
}

// start starts the goroutine that posts the deliveries, once.
func (h *webhooks) start() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.started || h.stopping {
		return
	}
	h.started = true
	go h.run()
}

// enqueue queues d to be posted, unless the queue was stopped.
func (h *webhooks) enqueue(d *delivery) {
	h.mu.Lock()
	if !h.stopping {
		h.queue = append(h.queue, d)
	}
	h.mu.Unlock()
	h.signal()
}

func (h *webhooks) signal() {
	select {
	case h.wake <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// stop makes the goroutine end once the queue is empty, and waits for it
// at most drainTimeout; after that, what it still posts fails at once.
func (h *webhooks) stop() {
	h.mu.Lock()
	started, stopping := h.started, h.stopping
	h.stopping = true
	h.mu.Unlock()
	if !started || stopping {
		return
	}
	h.signal()
	select {
	case <-h.done:
	case <-time.After(drainTimeout):
		h.cancel()
		<-h.done
	}
	h.cancel()
}

// run posts the queued deliveries until stopped with an empty queue.
func (h *webhooks) run() {
	defer close(h.done)
	for {
		d, ok := h.next()
		if !ok {
			return
		}
		h.post(d)
		h.mu.Lock()
		h.sent = append(h.sent, d)
		h.mu.Unlock()
	}
}

// next waits for the next delivery to post; it is false once the queue is
// stopped and empty.
func (h *webhooks) next() (*delivery, bool) {
	for {
		h.mu.Lock()
		if len(h.queue) > 0 {
			d := h.queue[0]
			h.queue = h.queue[1:]
			h.mu.Unlock()
			return d, true
		}
		stopping := h.stopping
		h.mu.Unlock()
		if stopping {
			return nil, false
		}
		<-h.wake
	}
}

// post posts d with GitHub's headers, and records the answer's status or
// why there is none.
func (h *webhooks) post(d *delivery) {
	req, err := http.NewRequestWithContext(h.ctx, http.MethodPost, d.url, bytes.NewReader(d.body))
	if err != nil {
		d.Err = err.Error()
		return
	}
	hd := req.Header
	hd.Set("Content-Type", "application/json")
	hd.Set("User-Agent", "GitHub-Hookshot/fake")
	hd.Set("X-GitHub-Event", d.Event)
	hd.Set("X-GitHub-Delivery", d.ID)
	hd.Set("X-GitHub-Hook-Installation-Target-Type", "repository")
	if d.secret != "" {
		hd.Set("X-Hub-Signature", "sha1="+hex.EncodeToString(sign(sha1.New, d.secret, d.body)))
		hd.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(sign(sha256.New, d.secret, d.body)))
	}
	resp, err := h.client.Do(req)
	if err != nil {
		d.Err = err.Error()
		return
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	d.Status = resp.StatusCode
}

// sign is the HMAC of body with secret, with the hash of newHash.
func sign(newHash func() hash.Hash, secret string, body []byte) []byte {
	mac := hmac.New(newHash, []byte(secret))
	mac.Write(body)
	return mac.Sum(nil)
}

// newDeliveryID is a random UUID (version 4), as GitHub's delivery GUIDs
// are.
func newDeliveryID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
