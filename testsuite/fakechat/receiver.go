package fakechat

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"slices"
	"strings"
	"time"
)

// The headers of a signed webhook delivery.
const (
	SignatureHeader = "X-Ralph-Signature-256"
	EventHeader     = "X-Ralph-Event"
	DeliveryHeader  = "X-Ralph-Delivery"
)

// Receiver is a running receiver of signed JSON webhooks, such as a
// person's endpoint behind the generic notification webhook.
//
// It takes POST requests on any path whose body is a JSON object, signed
// with SignatureHeader "sha256=<hex HMAC-SHA256 of the raw body>" under its
// secret (checked in constant time), naming the event in EventHeader and
// the delivery in DeliveryHeader. It answers 200 "ok"; 401 for a missing
// or wrong signature, 400 for a missing header or a body that is not a JSON
// object, 415 for a content type other than application/json, 405 for
// another method, 413 for a body over MaxBody; or the status of a scripted
// failure (Fail, FailFor) once the signature and the body are checked.
//
// A delivery ID seen again is answered 200 like the first: a test asserts
// one effect with Accepted and sees the retries with Count and Deliveries.
type Receiver struct {
	c      core
	secret []byte

	deliveries []Delivery
	rejections []Rejection
}

// Delivery is a signed, well-formed request the receiver read.
type Delivery struct {
	ID, Event string
	Header    http.Header
	// Body is the JSON body decoded; Raw the body as it came.
	Body map[string]any
	Raw  []byte
	// Status is what the receiver answered: 200, or a scripted failure's.
	Status int
	Time   time.Time
}

// Rejection is a request the receiver refused before reading it as a
// delivery.
type Rejection struct {
	Status int
	Reason string
	Header http.Header
	Raw    []byte
}

// NewReceiver starts a receiver whose signing secret is secret.
func NewReceiver(secret string) *Receiver {
	r := &Receiver{secret: []byte(secret)}
	r.c.start(r)
	return r
}

// Sign is the SignatureHeader value of body under secret:
// "sha256=" and the hex HMAC-SHA256.
func Sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// URL is the receiver's URL; any path under it is the same endpoint.
func (r *Receiver) URL() string { return r.c.srv.URL + "/hook" }

// Close shuts the receiver down.
func (r *Receiver) Close() { r.c.Close() }

// Fail makes the next n deliveries answer status with no effect (they are
// recorded, with that status).
func (r *Receiver) Fail(status, n int) { r.c.Fail("", status, n) }

// FailFor makes every delivery answer status with no effect for the
// duration d from now.
func (r *Receiver) FailFor(status int, d time.Duration) { r.c.FailFor("", status, d) }

// Deliveries returns every delivery read, retries and failed ones
// included, in order.
func (r *Receiver) Deliveries() []Delivery {
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	return slices.Clone(r.deliveries)
}

// Accepted returns, for each delivery ID answered 200, its first such
// delivery, in the order they were accepted: the effects a receiver that
// drops repeats would have had.
func (r *Receiver) Accepted() []Delivery {
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	var out []Delivery
	for _, d := range r.deliveries {
		if d.Status == http.StatusOK && !slices.ContainsFunc(out, func(o Delivery) bool { return o.ID == d.ID }) {
			out = append(out, d)
		}
	}
	return out
}

// Count counts the deliveries with ID id, failed ones included.
func (r *Receiver) Count(id string) int {
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	n := 0
	for _, d := range r.deliveries {
		if d.ID == id {
			n++
		}
	}
	return n
}

// Rejections returns the requests refused, in order.
func (r *Receiver) Rejections() []Rejection {
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	return slices.Clone(r.rejections)
}

// ServeHTTP answers one delivery.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := readBody(w, req)
	d, status, reason := r.check(req, body, err)
	if status != http.StatusOK {
		r.c.mu.Lock()
		r.rejections = append(r.rejections, Rejection{Status: status, Reason: reason, Header: req.Header.Clone(), Raw: body})
		r.c.mu.Unlock()
		writeBody(w, status, "text/plain; charset=utf-8", []byte(reason))
		return
	}
	if fault, _ := r.c.begin(""); fault != 0 {
		d.Status = fault
	}
	r.c.mu.Lock()
	r.deliveries = append(r.deliveries, d)
	r.c.notify()
	r.c.mu.Unlock()
	if d.Status != http.StatusOK {
		writeBody(w, d.Status, "text/plain; charset=utf-8", []byte(http.StatusText(d.Status)))
		return
	}
	writeBody(w, http.StatusOK, "text/plain; charset=utf-8", []byte("ok"))
}

// check reads a request whose body is body (or readErr) as a delivery, or
// returns the status and reason of its refusal.
func (r *Receiver) check(req *http.Request, body []byte, readErr error) (Delivery, int, string) {
	switch {
	case req.Method != http.MethodPost:
		return Delivery{}, http.StatusMethodNotAllowed, "POST only"
	case errors.Is(readErr, errTooLarge):
		return Delivery{}, http.StatusRequestEntityTooLarge, "body over 1 MiB"
	case readErr != nil:
		return Delivery{}, http.StatusBadRequest, readErr.Error()
	case req.Header.Get(SignatureHeader) == "":
		return Delivery{}, http.StatusUnauthorized, "missing " + SignatureHeader
	case !r.valid(req.Header.Get(SignatureHeader), body):
		return Delivery{}, http.StatusUnauthorized, "bad " + SignatureHeader
	}
	if mediaType, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type")); mediaType != "application/json" {
		return Delivery{}, http.StatusUnsupportedMediaType, "Content-Type is not application/json"
	}
	d := Delivery{
		ID: req.Header.Get(DeliveryHeader), Event: req.Header.Get(EventHeader),
		Header: req.Header.Clone(), Raw: body, Status: http.StatusOK, Time: time.Now(),
	}
	switch {
	case d.ID == "":
		return Delivery{}, http.StatusBadRequest, "missing " + DeliveryHeader
	case d.Event == "":
		return Delivery{}, http.StatusBadRequest, "missing " + EventHeader
	}
	if err := json.Unmarshal(body, &d.Body); err != nil || d.Body == nil {
		return Delivery{}, http.StatusBadRequest, "body is not a JSON object"
	}
	return d, http.StatusOK, ""
}

// valid tells whether signature is "sha256=" and the hex HMAC-SHA256 of
// body under the secret, comparing in constant time.
func (r *Receiver) valid(signature string, body []byte) bool {
	hexSum, ok := strings.CutPrefix(signature, "sha256=")
	if !ok {
		return false
	}
	got, err := hex.DecodeString(hexSum)
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, r.secret)
	mac.Write(body)
	return hmac.Equal(got, mac.Sum(nil))
}
