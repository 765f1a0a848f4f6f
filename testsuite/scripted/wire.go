package scripted

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// EventStream is the Content-Type of a stream of server-sent events.
const EventStream = "text/event-stream; charset=utf-8"

// WriteBody writes a whole response: status, body and its Content-Type
// and Content-Length.
func WriteBody(w http.ResponseWriter, status int, contentType string, body []byte) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// WriteJSON writes v as an application/json response.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	WriteBody(w, status, "application/json", JSON(v))
}

// JSON is v marshalled; "{}" for nil or for what does not marshal.
func JSON(v any) []byte {
	if v == nil {
		return []byte("{}")
	}
	b, err := json.Marshal(v)
	if err != nil {
		return []byte("{}")
	}
	return b
}

// Events writes server-sent events, flushing each as it goes.
type Events struct {
	w  http.ResponseWriter
	fl http.Flusher
}

// StartEvents begins a stream of events on w: status 200 with the
// headers already set on w.
func StartEvents(w http.ResponseWriter) *Events {
	fl, _ := w.(http.Flusher)
	w.WriteHeader(http.StatusOK)
	return &Events{w: w, fl: fl}
}

// Send writes one event named event whose data is v in JSON.
func (e *Events) Send(event string, v any) {
	e.write(fmt.Sprintf("event: %s\ndata: %s\n\n", event, JSON(v)))
}

// Data writes one event of data only, v in JSON, ended by CRLFs as
// Google's APIs end theirs.
func (e *Events) Data(v any) {
	e.write(fmt.Sprintf("data: %s\r\n\r\n", JSON(v)))
}

func (e *Events) write(s string) {
	_, _ = e.w.Write([]byte(s))
	if e.fl != nil {
		e.fl.Flush()
	}
}

// Wait waits for d, or until ctx ends (false): a slow model whose client
// may go away.
func Wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// CutOff ends the response at once, unfinished, like a dropped
// connection.
func CutOff() { panic(http.ErrAbortHandler) }

// EstimateTokens is a rough token count for n bytes of text.
func EstimateTokens(n int) int { return n/4 + 1 }

// Split cuts s into pieces of at most n bytes, as the APIs stream text in
// deltas, not splitting a UTF-8 character; nil for "".
func Split(s string, n int) []string {
	var out []string
	for len(s) > n {
		i := n
		for i > 0 && s[i]&0xC0 == 0x80 {
			i--
		}
		if i == 0 {
			i = n
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

// Texts is the text of raw, message content that is a string or a list
// of parts: the string, or the text of each part that keep keeps.
func Texts(raw json.RawMessage, keep func(typ, text string) bool) []string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return nil
	}
	var out []string
	for _, p := range parts {
		if keep(p.Type, p.Text) {
			out = append(out, p.Text)
		}
	}
	return out
}
