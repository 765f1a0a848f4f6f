// Package scripted is the skeleton of the scripted model APIs that real
// agent CLIs run against in tests (testsuite/modelserver for Claude Code,
// testsuite/responsesapi for Codex, testsuite/geminiapi for the Gemini
// CLI): a server on a loopback port that keeps every request it receives
// and asks a test's script for the reply to each, one request at a time;
// the pieces of their wire formats that are alike (JSON bodies,
// server-sent events, text cut into deltas, token estimates); and the
// texts of Ralph's prompts that the scripts read and answer. Each API
// package keeps only its own wire format: how it decodes a request and
// encodes a reply or an error.
package scripted

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"time"
)

// Record is what a server keeps of every HTTP request it receives,
// whatever the API: the API packages embed it in their Request, next to
// the fields they decode from the body.
type Record struct {
	Time   time.Time
	Method string
	// Path is the URL path; Query is the raw query.
	Path   string
	Query  string
	Header http.Header
	Body   []byte
}

// Read is the record of hr, its whole body read.
func Read(hr *http.Request) Record {
	body, _ := io.ReadAll(hr.Body)
	return Record{
		Time:   time.Now(),
		Method: hr.Method,
		Path:   hr.URL.Path,
		Query:  hr.URL.RawQuery,
		Header: hr.Header.Clone(),
		Body:   body,
	}
}

// Server is a scripted API on a loopback port. It keeps the requests it
// receives, decoded as R, and asks its script for the reply A to those
// the API hands it (Ask). An API package embeds it in its own Server,
// whose handler decodes requests and writes replies.
type Server[R, A any] struct {
	srv    *httptest.Server
	name   string
	script func(*R) A

	scriptMu sync.Mutex // serialises calls of script

	mu       sync.Mutex
	requests []R
	logf     func(format string, args ...any)

	ids atomic.Int64
}

// Start starts a server on 127.0.0.1 that serves requests with handle
// and answers with script; name begins its log lines.
func Start[R, A any](name string, script func(*R) A, handle http.HandlerFunc) *Server[R, A] {
	s := &Server[R, A]{name: name, script: script}
	s.srv = httptest.NewServer(handle)
	return s
}

// URL is the server's base URL.
func (s *Server[R, A]) URL() string { return s.srv.URL }

// Close stops the server, cutting off replies under way.
func (s *Server[R, A]) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// SetLog has every request and reply described to logf (t.Logf, say);
// nil stops it.
func (s *Server[R, A]) SetLog(logf func(format string, args ...any)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logf = logf
}

// Logf describes a request or a reply to the log set by SetLog, if any,
// after the server's name.
func (s *Server[R, A]) Logf(format string, args ...any) {
	s.mu.Lock()
	logf := s.logf
	s.mu.Unlock()
	if logf != nil {
		logf(s.name+": "+format, args...)
	}
}

// Requests lists what the server received so far, oldest first.
func (s *Server[R, A]) Requests() []R {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]R(nil), s.requests...)
}

// Filter lists the requests received so far that keep keeps, oldest
// first.
func (s *Server[R, A]) Filter(keep func(*R) bool) []R {
	var out []R
	for _, r := range s.Requests() {
		if keep(&r) {
			out = append(out, r)
		}
	}
	return out
}

// Keep adds req to the requests received and returns its index, for
// Update.
func (s *Server[R, A]) Keep(req R) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, req)
	return len(s.requests) - 1
}

// Update changes the request kept at index i.
func (s *Server[R, A]) Update(i int, change func(*R)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	change(&s.requests[i])
}

// Ask is the script's reply to req. The script is called for one request
// at a time, so it may keep state without locking.
func (s *Server[R, A]) Ask(req *R) A {
	s.scriptMu.Lock()
	defer s.scriptMu.Unlock()
	return s.script(req)
}

// NextID is a number no earlier call returned, for the ids of replies.
func (s *Server[R, A]) NextID() int64 { return s.ids.Add(1) }
