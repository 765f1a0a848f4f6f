package fakegithub

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

const (
	rateLimit = 5000

	docsREST          = "https://docs.github.com/rest"
	docsPrimaryRate   = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-primary-rate-limits"
	docsSecondaryRate = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"
	docsCreatePull    = "https://docs.github.com/rest/pulls/pulls#create-a-pull-request"
	docsValidation    = "https://docs.github.com/rest"
)

// reply is an answer before it is written.
type reply struct {
	status int
	header map[string]string
	body   any // marshalled as JSON; nil means no body
}

func jsonReply(status int, body any) *reply { return &reply{status: status, body: body} }

// errorReply is GitHub's error body.
func errorReply(status int, message, doc string) *reply {
	return &reply{status: status, body: map[string]any{
		"message":           message,
		"documentation_url": doc,
		"status":            strconv.Itoa(status),
	}}
}

func notFound() *reply { return errorReply(http.StatusNotFound, "Not Found", docsREST) }

// validationFailed is GitHub's 422 with an errors array.
func validationFailed(doc string, errs ...map[string]any) *reply {
	list := make([]any, 0, len(errs))
	for _, e := range errs {
		list = append(list, e)
	}
	return &reply{status: http.StatusUnprocessableEntity, body: map[string]any{
		"message":           "Validation Failed",
		"errors":            list,
		"documentation_url": doc,
		"status":            "422",
	}}
}

func missingField(resource, field string) map[string]any {
	return map[string]any{"resource": resource, "code": "missing_field", "field": field}
}

// invalid is GitHub's 422 for a field of resource whose value it does not
// take.
func invalid(resource, field string) *reply {
	return validationFailed(docsREST, map[string]any{"resource": resource, "code": "invalid", "field": field})
}

func badJSON() *reply {
	return errorReply(http.StatusBadRequest, "Problems parsing JSON", docsREST)
}

// ServeHTTP answers one API request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, logsPath) {
		s.serveLog(w, r)
		return
	}
	h := s.takeHold(r)
	if h == nil {
		s.serve(w, r)
		return
	}
	// The request takes effect now; its answer waits for the test.
	rec := httptest.NewRecorder()
	s.serve(rec, r)
	close(h.done)
	<-h.release
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)

	s.mu.Lock()
	defer s.mu.Unlock()

	now := time.Now()
	if now.After(s.rateReset) {
		s.rateLeft = rateLimit
		s.rateReset = now.Add(time.Hour).Truncate(time.Second)
	}

	var rep *reply
	switch {
	case !s.authorized(r):
		rep = errorReply(http.StatusUnauthorized, "Bad credentials", docsREST)
	case s.rateLeft <= 0:
		rep = errorReply(http.StatusForbidden, fmt.Sprintf("API rate limit exceeded for user ID %d.", userID(s.bot)), docsPrimaryRate)
	default:
		s.rateLeft--
		if f := s.takeFailure(r); f != nil {
			if f.after {
				s.route(r, body)
			}
			rep = f.reply()
		} else {
			rep = s.route(r, body)
		}
	}

	s.requestN++
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("X-GitHub-Media-Type", "github.v3; format=json")
	h.Set("X-GitHub-Api-Version-Selected", "2022-11-28")
	h.Set("X-GitHub-Request-Id", fmt.Sprintf("FAKE:%06X", s.requestN))
	h.Set("X-RateLimit-Limit", strconv.Itoa(rateLimit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(s.rateLeft))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(s.rateReset.Unix(), 10))
	h.Set("X-RateLimit-Used", strconv.Itoa(rateLimit-s.rateLeft))
	h.Set("X-RateLimit-Resource", "core")
	for k, v := range rep.header {
		h.Set(k, v)
	}

	var out []byte
	if rep.body != nil {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(rep.body); err != nil {
			panic(fmt.Sprintf("fakegithub: encoding reply: %v", err))
		}
		out = bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	}
	if out == nil {
		h.Del("Content-Type")
	} else {
		h.Set("Content-Length", strconv.Itoa(len(out)))
	}

	s.requests = append(s.requests, Request{
		Method: r.Method,
		Path:   r.URL.Path,
		Query:  r.URL.RawQuery,
		Body:   string(body),
		Status: rep.status,
		Time:   now,
	})

	w.WriteHeader(rep.status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(out)
	}
}

func (s *Server) authorized(r *http.Request) bool {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if !ok || (!strings.EqualFold(scheme, "bearer") && !strings.EqualFold(scheme, "token")) {
		return false
	}
	return strings.TrimSpace(tok) == s.token
}

// hold is a request whose answer waits (see Hold).
type hold struct {
	method        string
	path          *regexp.Regexp
	done, release chan struct{}
}

// takeHold consumes the first matching Hold rule.
func (s *Server) takeHold(r *http.Request) *hold {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, h := range s.holds {
		if strings.EqualFold(h.method, r.Method) && h.path.MatchString(r.URL.Path) {
			s.holds = slices.Delete(s.holds, i, i+1)
			return h
		}
	}
	return nil
}

// takeFailure consumes one use of the first matching Fail rule.
func (s *Server) takeFailure(r *http.Request) *failure {
	for i, f := range s.failures {
		if f.method != "" && f.method != "*" && !strings.EqualFold(f.method, r.Method) {
			continue
		}
		if !f.path.MatchString(r.URL.Path) {
			continue
		}
		f.count--
		if f.count <= 0 {
			s.failures = slices.Delete(s.failures, i, i+1)
		}
		return f
	}
	return nil
}

func (f *failure) reply() *reply {
	doc := docsREST
	msg := strings.ToLower(f.message)
	switch {
	case strings.Contains(msg, "secondary rate limit"), strings.Contains(msg, "abuse"):
		doc = docsSecondaryRate
	case strings.Contains(msg, "rate limit"):
		doc = docsPrimaryRate
	}
	rep := errorReply(f.status, f.message, doc)
	rep.header = f.headers
	return rep
}
