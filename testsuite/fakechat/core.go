package fakechat

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// MaxBody is the largest request body a fake reads; a larger one is
// answered 413.
const MaxBody = 1 << 20

// errTooLarge is the error of a body over MaxBody.
var errTooLarge = errors.New("request body over 1 MiB")

// core is what every fake has: its HTTP server, one lock over its state,
// the calls it counted, and the failures and holds a test scripted.
type core struct {
	srv     *httptest.Server
	closing chan struct{} // closed by Close
	once    sync.Once

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every change of state
	calls   map[string]int
	faults  []*fault
	holds   []*Hold
}

// fault is a scripted failure: calls of method ("" for any) are answered
// status, the next left of them or every one until until.
type fault struct {
	method string
	status int
	left   int
	until  time.Time
}

// Hold is a call whose effect is done but whose answer waits for the test:
// it lets a test stop a client between the service's change and the
// client's learning of it. See Telegram.Hold and Slack.Hold.
type Hold struct {
	method   string
	reached  chan struct{}
	released chan struct{}
	once     sync.Once
}

// Reached is closed once the held call has had its effect.
func (h *Hold) Reached() <-chan struct{} { return h.reached }

// Release lets the held call answer. It may be called more than once.
func (h *Hold) Release() { h.once.Do(func() { close(h.released) }) }

// start serves h on a new local server.
func (c *core) start(h http.Handler) {
	c.closing = make(chan struct{})
	c.changed = make(chan struct{})
	c.calls = map[string]int{}
	c.srv = httptest.NewServer(h)
}

// Close shuts the server down. Calls waiting in a long poll or a Hold
// answer at once.
func (c *core) Close() {
	c.once.Do(func() { close(c.closing) })
	c.srv.Close()
}

// Calls counts the calls of method (case-insensitively) that reached it
// with a valid token (the incoming webhook needs none), failed and held
// ones included.
func (c *core) Calls(method string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[strings.ToLower(method)]
}

// Fail makes the next n calls of method (case-insensitively; "" for any)
// answer status with no effect. Rules apply in the order they were added.
func (c *core) Fail(method string, status, n int) {
	if n <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.faults = append(c.faults, &fault{method: method, status: status, left: n})
}

// FailFor makes every call of method (case-insensitively; "" for any)
// answer status with no effect for the duration d from now.
func (c *core) FailFor(method string, status int, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.faults = append(c.faults, &fault{method: method, status: status, until: time.Now().Add(d)})
}

// Hold makes the next call of method (case-insensitively) have its effect
// and then wait to answer until the returned Hold is released, the client
// gives up, or the server closes. A call that Fail answers is not held.
func (c *core) Hold(method string) *Hold {
	h := &Hold{method: method, reached: make(chan struct{}), released: make(chan struct{})}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.holds = append(c.holds, h)
	return h
}

// begin counts a call of method and returns the status of the fault that
// answers it (0 for none) or else the hold that delays its answer (nil for
// none).
func (c *core) begin(method string) (int, *Hold) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[strings.ToLower(method)]++
	now := time.Now()
	for i := 0; i < len(c.faults); i++ {
		f := c.faults[i]
		if !f.until.IsZero() && now.After(f.until) {
			c.faults = append(c.faults[:i], c.faults[i+1:]...)
			i--
			continue
		}
		if f.method != "" && !strings.EqualFold(f.method, method) {
			continue
		}
		if f.until.IsZero() {
			if f.left--; f.left <= 0 {
				c.faults = append(c.faults[:i], c.faults[i+1:]...)
			}
		}
		return f.status, nil
	}
	for i, h := range c.holds {
		if strings.EqualFold(h.method, method) {
			c.holds = append(c.holds[:i], c.holds[i+1:]...)
			return 0, h
		}
	}
	return 0, nil
}

// await marks h reached and waits for its release, the end of ctx or the
// server's closing. A nil h returns at once.
func (c *core) await(ctx context.Context, h *Hold) {
	if h == nil {
		return
	}
	close(h.reached)
	select {
	case <-h.released:
	case <-ctx.Done():
	case <-c.closing:
	}
}

// notify wakes whoever waits for a change of state. The caller holds mu.
func (c *core) notify() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// readBody reads r's body, at most MaxBody bytes (errTooLarge beyond).
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return nil, errTooLarge
	}
	if err != nil {
		return nil, fmt.Errorf("reading the request body: %w", err)
	}
	return b, nil
}

// writeBody writes an answer with its content type.
func writeBody(w http.ResponseWriter, status int, contentType string, body []byte) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// gatewayPage is the HTML page a proxy in front of a service answers
// with on a 5xx status, as nginx does in front of the Bot API and Slack's
// load balancers do.
func gatewayPage(status int) []byte {
	title := fmt.Sprintf("%d %s", status, http.StatusText(status))
	return []byte("<html>\r\n<head><title>" + title + "</title></head>\r\n<body>\r\n<center><h1>" +
		title + "</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n")
}
