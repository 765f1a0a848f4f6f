package fakegithub

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"sort"
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

func badJSON() *reply {
	return errorReply(http.StatusBadRequest, "Problems parsing JSON", docsREST)
}

// ServeHTTP answers one API request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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

// route dispatches a request to its endpoint.
func (s *Server) route(r *http.Request, body []byte) *reply {
	segs := splitPath(r.URL)
	if segs == nil {
		return notFound()
	}
	m := r.Method
	switch {
	case len(segs) == 1 && segs[0] == "user" && m == http.MethodGet:
		u := s.user(s.bot)
		u["name"] = s.bot
		return jsonReply(http.StatusOK, u)
	case len(segs) == 1 && segs[0] == "rate_limit" && m == http.MethodGet:
		core := map[string]any{"limit": rateLimit, "remaining": s.rateLeft, "reset": s.rateReset.Unix(), "used": rateLimit - s.rateLeft, "resource": "core"}
		return jsonReply(http.StatusOK, map[string]any{"resources": map[string]any{"core": core}, "rate": core})
	case len(segs) >= 3 && segs[0] == "repos":
		if !strings.EqualFold(segs[1], s.owner) || !strings.EqualFold(segs[2], s.name) {
			return notFound()
		}
		return s.routeRepo(r, segs[3:], body)
	}
	return notFound()
}

// splitPath splits the escaped path into unescaped segments, so that a label
// name containing "/" stays one segment.
func splitPath(u *url.URL) []string {
	raw := strings.Trim(u.EscapedPath(), "/")
	if raw == "" {
		return []string{}
	}
	parts := strings.Split(raw, "/")
	for i, p := range parts {
		v, err := url.PathUnescape(p)
		if err != nil {
			return nil
		}
		parts[i] = v
	}
	return parts
}

func (s *Server) routeRepo(r *http.Request, segs []string, body []byte) *reply {
	m := r.Method
	n := len(segs)
	switch {
	case n == 0 && m == http.MethodGet:
		return jsonReply(http.StatusOK, s.repoJSON(true))

	case n == 1 && segs[0] == "issues":
		switch m {
		case http.MethodGet:
			return s.listIssues(r)
		case http.MethodPost:
			return s.createIssue(body)
		}

	case n == 3 && segs[0] == "issues" && segs[1] == "comments":
		id, err := strconv.ParseInt(segs[2], 10, 64)
		c := s.comments[id]
		if err != nil || c == nil {
			return notFound()
		}
		switch m {
		case http.MethodGet:
			return jsonReply(http.StatusOK, s.commentJSON(c))
		case http.MethodPatch:
			return s.editComment(c, body)
		case http.MethodDelete:
			is := s.issues[c.number-1]
			is.comments = slices.DeleteFunc(is.comments, func(x *comment) bool { return x == c })
			delete(s.comments, id)
			return &reply{status: http.StatusNoContent}
		}

	case n >= 2 && segs[0] == "issues":
		num, err := strconv.Atoi(segs[1])
		is := s.findIssue(num)
		if err != nil || is == nil {
			return notFound()
		}
		return s.routeIssue(r, is, segs[2:], body)

	case n == 1 && segs[0] == "labels":
		switch m {
		case http.MethodGet:
			list := make([]any, 0, len(s.labels))
			for _, l := range s.labels {
				list = append(list, s.labelJSON(l))
			}
			return s.paginated(r, list)
		case http.MethodPost:
			return s.createLabel(body)
		}

	case n == 2 && segs[0] == "labels" && m == http.MethodGet:
		if l := s.findLabel(segs[1]); l != nil {
			return jsonReply(http.StatusOK, s.labelJSON(l))
		}
		return notFound()

	case n == 3 && segs[0] == "collaborators" && segs[2] == "permission" && m == http.MethodGet:
		role := s.role(segs[1])
		u := s.user(segs[1])
		u["role_name"] = role
		u["permissions"] = rolePermissions(role)
		return jsonReply(http.StatusOK, map[string]any{
			"permission": legacyPermission(role),
			"role_name":  role,
			"user":       u,
		})

	case n == 1 && segs[0] == "pulls":
		switch m {
		case http.MethodGet:
			return s.listPulls(r)
		case http.MethodPost:
			return s.createPull(body)
		}

	case n == 2 && segs[0] == "pulls":
		num, err := strconv.Atoi(segs[1])
		is := s.findIssue(num)
		if err != nil || is == nil || is.pull == nil {
			return notFound()
		}
		switch m {
		case http.MethodGet:
			return jsonReply(http.StatusOK, s.pullJSON(is))
		case http.MethodPatch:
			return s.editPull(is, body)
		}
	}
	return notFound()
}

func (s *Server) routeIssue(r *http.Request, is *issue, segs []string, body []byte) *reply {
	m := r.Method
	n := len(segs)
	now := s.now()
	switch {
	case n == 0:
		switch m {
		case http.MethodGet:
			return jsonReply(http.StatusOK, s.issueJSON(is))
		case http.MethodPatch:
			return s.editIssue(is, body)
		}

	case n == 1 && segs[0] == "events" && m == http.MethodGet:
		list := make([]any, 0, len(is.events))
		for _, e := range is.events {
			list = append(list, s.eventJSON(e))
		}
		return s.paginated(r, list)

	case n == 1 && segs[0] == "labels":
		switch m {
		case http.MethodGet:
			return s.paginated(r, s.issueLabelsJSON(is))
		case http.MethodPost, http.MethodPut:
			names, ok := parseLabelNames(body)
			if !ok {
				return badJSON()
			}
			if m == http.MethodPut {
				s.setLabels(is, names, s.bot, now)
			} else {
				for _, name := range names {
					s.addLabel(is, name, s.bot, now)
				}
			}
			return jsonReply(http.StatusOK, s.issueLabelsJSON(is))
		case http.MethodDelete:
			s.setLabels(is, nil, s.bot, now)
			return &reply{status: http.StatusNoContent}
		}

	case n == 2 && segs[0] == "labels" && m == http.MethodDelete:
		if !s.removeLabel(is, segs[1], s.bot, now) {
			return errorReply(http.StatusNotFound, "Label does not exist", "https://docs.github.com/rest/issues/labels#remove-a-label-from-an-issue")
		}
		return jsonReply(http.StatusOK, s.issueLabelsJSON(is))

	case n == 1 && segs[0] == "comments":
		switch m {
		case http.MethodGet:
			since, ok := parseSince(r)
			if !ok {
				return validationFailed(docsREST, map[string]any{"resource": "IssueComment", "code": "invalid", "field": "since"})
			}
			list := make([]any, 0, len(is.comments))
			for _, c := range is.comments {
				if !since.IsZero() && c.updated.Before(since) {
					continue
				}
				list = append(list, s.commentJSON(c))
			}
			return s.paginated(r, list)
		case http.MethodPost:
			var in struct {
				Body *string `json:"body"`
			}
			if json.Unmarshal(body, &in) != nil {
				return badJSON()
			}
			if in.Body == nil || *in.Body == "" {
				return validationFailed(docsREST, missingField("IssueComment", "body"))
			}
			c := s.addComment(is, s.bot, *in.Body)
			rep := jsonReply(http.StatusCreated, s.commentJSON(c))
			rep.header = map[string]string{"Location": s.apiURL("issues/comments/%d", c.id)}
			return rep
		}

	case n == 1 && segs[0] == "assignees" && (m == http.MethodPost || m == http.MethodDelete):
		var in struct {
			Assignees []string `json:"assignees"`
		}
		if json.Unmarshal(body, &in) != nil {
			return badJSON()
		}
		for _, a := range in.Assignees {
			if m == http.MethodPost {
				s.assign(is, a, s.bot, now)
			} else {
				s.unassign(is, a, s.bot, now)
			}
		}
		status := http.StatusOK
		if m == http.MethodPost {
			status = http.StatusCreated
		}
		return jsonReply(status, s.issueJSON(is))

	case n == 1 && segs[0] == "lock":
		switch m {
		case http.MethodPut:
			var in struct {
				LockReason string `json:"lock_reason"`
			}
			if len(bytes.TrimSpace(body)) > 0 && json.Unmarshal(body, &in) != nil {
				return badJSON()
			}
			s.lock(is, in.LockReason, s.bot, now)
			return &reply{status: http.StatusNoContent}
		case http.MethodDelete:
			s.unlock(is, s.bot, now)
			return &reply{status: http.StatusNoContent}
		}
	}
	return notFound()
}

// parseLabelNames accepts the bodies GitHub accepts for adding or setting
// labels: ["a","b"], {"labels":["a","b"]} and {"labels":[{"name":"a"}]}.
func parseLabelNames(body []byte) ([]string, bool) {
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '{' {
		var in struct {
			Labels json.RawMessage `json:"labels"`
		}
		if json.Unmarshal(body, &in) != nil {
			return nil, false
		}
		body = in.Labels
	}
	if len(body) == 0 || string(body) == "null" {
		return nil, true
	}
	var raw []json.RawMessage
	if json.Unmarshal(body, &raw) != nil {
		return nil, false
	}
	names := make([]string, 0, len(raw))
	for _, item := range raw {
		var name string
		if json.Unmarshal(item, &name) != nil {
			var obj struct {
				Name string `json:"name"`
			}
			if json.Unmarshal(item, &obj) != nil {
				return nil, false
			}
			name = obj.Name
		}
		if name = strings.TrimSpace(name); name != "" {
			names = append(names, name)
		}
	}
	return names, true
}

func parseSince(r *http.Request) (time.Time, bool) {
	v := r.URL.Query().Get("since")
	if v == "" {
		return time.Time{}, true
	}
	t, err := time.Parse(time.RFC3339, v)
	return t, err == nil
}

// paginated answers one page of list with GitHub's Link header: per_page
// (default 30, at most 100) and page (from 1) query parameters; rel="prev",
// "next", "last" and "first" links as GitHub sends them, none when everything
// fits on the first page.
func (s *Server) paginated(r *http.Request, list []any) *reply {
	q := r.URL.Query()
	per := 30
	if v, err := strconv.Atoi(q.Get("per_page")); err == nil && v > 0 {
		per = min(v, 100)
	}
	page := 1
	if v, err := strconv.Atoi(q.Get("page")); err == nil && v > 0 {
		page = min(v, 1_000_000)
	}
	total := len(list)
	last := max(1, (total+per-1)/per)
	lo := min((page-1)*per, total)
	hi := min(lo+per, total)

	link := func(p int, rel string) string {
		q2 := r.URL.Query()
		q2.Set("page", strconv.Itoa(p))
		return fmt.Sprintf("<%s%s?%s>; rel=%q", s.srv.URL, r.URL.EscapedPath(), q2.Encode(), rel)
	}
	var links []string
	if page > 1 {
		links = append(links, link(min(page-1, last), "prev"))
	}
	if page < last {
		links = append(links, link(page+1, "next"), link(last, "last"))
	}
	if page > 1 {
		links = append(links, link(1, "first"))
	}
	rep := jsonReply(http.StatusOK, list[lo:hi])
	if len(links) > 0 {
		rep.header = map[string]string{"Link": strings.Join(links, ", ")}
	}
	return rep
}

// listIssues is GET /repos/{o}/{r}/issues: state, labels, creator, assignee,
// since, sort, direction and pagination. Pull requests are included.
func (s *Server) listIssues(r *http.Request) *reply {
	q := r.URL.Query()
	state := q.Get("state")
	switch state {
	case "":
		state = "open"
	case "open", "closed", "all":
	default:
		return validationFailed(docsREST, map[string]any{"resource": "Issue", "code": "invalid", "field": "state"})
	}
	var want []string
	for _, l := range strings.Split(q.Get("labels"), ",") {
		if l = strings.TrimSpace(l); l != "" {
			want = append(want, l)
		}
	}
	since, ok := parseSince(r)
	if !ok {
		return validationFailed(docsREST, map[string]any{"resource": "Issue", "code": "invalid", "field": "since"})
	}
	creator := q.Get("creator")
	assignee := q.Get("assignee")

	var sel []*issue
	for _, is := range s.issues {
		if state != "all" && is.state != state {
			continue
		}
		if !since.IsZero() && is.updated.Before(since) {
			continue
		}
		if creator != "" && !strings.EqualFold(creator, is.author) {
			continue
		}
		switch assignee {
		case "":
		case "none":
			if len(is.assignees) > 0 {
				continue
			}
		case "*":
			if len(is.assignees) == 0 {
				continue
			}
		default:
			if !containsFold(is.assignees, assignee) {
				continue
			}
		}
		all := true
		for _, l := range want {
			if hasLabel(is, l) < 0 {
				all = false
				break
			}
		}
		if all {
			sel = append(sel, is)
		}
	}
	if rep := sortIssues(sel, q.Get("sort"), q.Get("direction"), "desc"); rep != nil {
		return rep
	}
	list := make([]any, 0, len(sel))
	for _, is := range sel {
		list = append(list, s.issueJSON(is))
	}
	return s.paginated(r, list)
}

// sortIssues sorts by created (default), updated or comments, in direction
// (default def); ties are broken by number in the same direction.
func sortIssues(sel []*issue, by, direction, def string) *reply {
	if direction == "" {
		direction = def
	}
	if direction != "asc" && direction != "desc" {
		return validationFailed(docsREST, map[string]any{"resource": "Issue", "code": "invalid", "field": "direction"})
	}
	key := func(is *issue) int64 { return is.created.Unix() }
	switch by {
	case "", "created":
	case "updated":
		key = func(is *issue) int64 { return is.updated.Unix() }
	case "comments":
		key = func(is *issue) int64 { return int64(len(is.comments)) }
	default:
		return validationFailed(docsREST, map[string]any{"resource": "Issue", "code": "invalid", "field": "sort"})
	}
	sort.SliceStable(sel, func(i, j int) bool {
		a, b := sel[i], sel[j]
		if direction == "desc" {
			a, b = b, a
		}
		if ka, kb := key(a), key(b); ka != kb {
			return ka < kb
		}
		return a.number < b.number
	})
	return nil
}

func (s *Server) createIssue(body []byte) *reply {
	var in struct {
		Title     *string         `json:"title"`
		Body      *string         `json:"body"`
		Labels    json.RawMessage `json:"labels"`
		Assignees []string        `json:"assignees"`
		Assignee  *string         `json:"assignee"`
	}
	if json.Unmarshal(body, &in) != nil {
		return badJSON()
	}
	if in.Title == nil || *in.Title == "" {
		return validationFailed(docsREST, missingField("Issue", "title"))
	}
	labels, ok := parseLabelNames(in.Labels)
	if !ok {
		return badJSON()
	}
	at := s.now()
	is := &issue{
		number: len(s.issues) + 1, title: *in.Title, author: s.bot, state: "open",
		created: at, updated: at,
	}
	is.id = int64(2_000_000_000 + is.number)
	if in.Body != nil {
		is.body = *in.Body
	}
	s.issues = append(s.issues, is)
	for _, l := range labels {
		s.addLabel(is, l, s.bot, at)
	}
	if in.Assignee != nil {
		in.Assignees = append(in.Assignees, *in.Assignee)
	}
	for _, a := range in.Assignees {
		s.assign(is, a, s.bot, at)
	}
	rep := jsonReply(http.StatusCreated, s.issueJSON(is))
	rep.header = map[string]string{"Location": s.apiURL("issues/%d", is.number)}
	return rep
}

func (s *Server) editIssue(is *issue, body []byte) *reply {
	var in struct {
		Title       *string         `json:"title"`
		Body        *string         `json:"body"`
		State       *string         `json:"state"`
		StateReason *string         `json:"state_reason"`
		Labels      json.RawMessage `json:"labels"`
		Assignees   *[]string       `json:"assignees"`
	}
	if json.Unmarshal(body, &in) != nil {
		return badJSON()
	}
	if in.State != nil && *in.State != "open" && *in.State != "closed" {
		return validationFailed(docsREST, map[string]any{"resource": "Issue", "code": "invalid", "field": "state"})
	}
	now := s.now()
	if in.Title != nil {
		s.rename(is, *in.Title, s.bot, now)
	}
	if in.Body != nil && *in.Body != is.body {
		is.body = *in.Body
		is.updated = now
	}
	if in.Labels != nil {
		names, ok := parseLabelNames(in.Labels)
		if !ok {
			return badJSON()
		}
		s.setLabels(is, names, s.bot, now)
	}
	if in.Assignees != nil {
		s.setAssignees(is, *in.Assignees, s.bot, now)
	}
	if in.State != nil {
		reason := "completed"
		if in.StateReason != nil && *in.StateReason != "" {
			reason = *in.StateReason
		}
		s.setState(is, *in.State, reason, s.bot, now)
	}
	return jsonReply(http.StatusOK, s.issueJSON(is))
}

func (s *Server) editComment(c *comment, body []byte) *reply {
	var in struct {
		Body *string `json:"body"`
	}
	if json.Unmarshal(body, &in) != nil {
		return badJSON()
	}
	if in.Body == nil || *in.Body == "" {
		return validationFailed(docsREST, missingField("IssueComment", "body"))
	}
	c.body = *in.Body
	c.updated = s.now()
	c.edits++
	return jsonReply(http.StatusOK, s.commentJSON(c))
}

func (s *Server) createLabel(body []byte) *reply {
	var in struct {
		Name        string `json:"name"`
		Color       string `json:"color"`
		Description string `json:"description"`
	}
	if json.Unmarshal(body, &in) != nil {
		return badJSON()
	}
	if in.Name == "" {
		return validationFailed(docsREST, missingField("Label", "name"))
	}
	if s.findLabel(in.Name) != nil {
		return validationFailed(docsREST, map[string]any{"resource": "Label", "code": "already_exists", "field": "name"})
	}
	l := s.ensureLabel(in.Name)
	if in.Color != "" {
		l.color = strings.TrimPrefix(strings.ToLower(in.Color), "#")
	}
	l.description = in.Description
	rep := jsonReply(http.StatusCreated, s.labelJSON(l))
	rep.header = map[string]string{"Location": s.apiURL("labels/%s", url.PathEscape(l.name))}
	return rep
}

// splitHead splits a head of "owner:branch" or "branch" (the repository
// owner's).
func (s *Server) splitHead(head string) (owner, branch string) {
	if o, b, ok := strings.Cut(head, ":"); ok {
		return o, b
	}
	return s.owner, head
}

func (s *Server) openPullFor(headOwner, head, base string, except *issue) *issue {
	for _, is := range s.issues {
		if is == except || is.pull == nil || is.state != "open" {
			continue
		}
		if strings.EqualFold(is.pull.headOwner, headOwner) && is.pull.head == head && is.pull.base == base {
			return is
		}
	}
	return nil
}

func alreadyExists(headOwner, head string) *reply {
	return validationFailed(docsCreatePull, map[string]any{
		"resource": "PullRequest",
		"code":     "custom",
		"message":  fmt.Sprintf("A pull request already exists for %s:%s.", headOwner, head),
	})
}

// createPull is POST /repos/{o}/{r}/pulls.
func (s *Server) createPull(body []byte) *reply {
	var in struct {
		Title *string `json:"title"`
		Head  string  `json:"head"`
		Base  string  `json:"base"`
		Body  *string `json:"body"`
		Draft bool    `json:"draft"`
	}
	if json.Unmarshal(body, &in) != nil {
		return badJSON()
	}
	var errs []map[string]any
	if in.Base == "" {
		errs = append(errs, missingField("PullRequest", "base"))
	}
	if in.Head == "" {
		errs = append(errs, missingField("PullRequest", "head"))
	}
	if in.Title == nil || *in.Title == "" {
		errs = append(errs, missingField("PullRequest", "title"))
	}
	if len(errs) > 0 {
		return validationFailed(docsCreatePull, errs...)
	}
	owner, head := s.splitHead(in.Head)
	if strings.EqualFold(owner, s.owner) && head == in.Base {
		return validationFailed(docsCreatePull, map[string]any{
			"resource": "PullRequest", "code": "custom",
			"message": fmt.Sprintf("No commits between %s and %s", in.Base, head),
		})
	}
	if s.openPullFor(owner, head, in.Base, nil) != nil {
		return alreadyExists(owner, head)
	}
	at := s.now()
	is := &issue{
		number: len(s.issues) + 1, title: *in.Title, author: s.bot, state: "open",
		created: at, updated: at,
		pull: &pull{headOwner: owner, head: head, base: in.Base, draft: in.Draft},
	}
	is.id = int64(2_000_000_000 + is.number)
	if in.Body != nil {
		is.body = *in.Body
	}
	s.issues = append(s.issues, is)
	rep := jsonReply(http.StatusCreated, s.pullJSON(is))
	rep.header = map[string]string{"Location": s.apiURL("pulls/%d", is.number)}
	return rep
}

// editPull is PATCH /repos/{o}/{r}/pulls/{n}: title, body, state, base.
func (s *Server) editPull(is *issue, body []byte) *reply {
	var in struct {
		Title *string `json:"title"`
		Body  *string `json:"body"`
		State *string `json:"state"`
		Base  *string `json:"base"`
	}
	if json.Unmarshal(body, &in) != nil {
		return badJSON()
	}
	if in.State != nil && *in.State != "open" && *in.State != "closed" {
		return validationFailed(docsREST, map[string]any{"resource": "PullRequest", "code": "invalid", "field": "state"})
	}
	base := is.pull.base
	if in.Base != nil && *in.Base != "" {
		base = *in.Base
	}
	willBeOpen := is.state == "open"
	if in.State != nil {
		willBeOpen = *in.State == "open"
	}
	if willBeOpen && s.openPullFor(is.pull.headOwner, is.pull.head, base, is) != nil {
		return alreadyExists(is.pull.headOwner, is.pull.head)
	}
	now := s.now()
	is.pull.edits++
	if in.Title != nil {
		s.rename(is, *in.Title, s.bot, now)
	}
	if in.Body != nil && *in.Body != is.body {
		is.body = *in.Body
		is.updated = now
	}
	if base != is.pull.base {
		is.pull.base = base
		is.updated = now
	}
	if in.State != nil {
		s.setState(is, *in.State, "", s.bot, now)
	}
	return jsonReply(http.StatusOK, s.pullJSON(is))
}

// listPulls is GET /repos/{o}/{r}/pulls: state, head ("owner:branch"; as on
// GitHub a head without an owner filters nothing), base, sort, direction and
// pagination.
func (s *Server) listPulls(r *http.Request) *reply {
	q := r.URL.Query()
	state := q.Get("state")
	switch state {
	case "":
		state = "open"
	case "open", "closed", "all":
	default:
		return validationFailed(docsREST, map[string]any{"resource": "PullRequest", "code": "invalid", "field": "state"})
	}
	headOwner, head, byHead := strings.Cut(q.Get("head"), ":")
	base := q.Get("base")
	var sel []*issue
	for _, is := range s.issues {
		if is.pull == nil || (state != "all" && is.state != state) {
			continue
		}
		if byHead && (!strings.EqualFold(is.pull.headOwner, headOwner) || is.pull.head != head) {
			continue
		}
		if base != "" && is.pull.base != base {
			continue
		}
		sel = append(sel, is)
	}
	by := q.Get("sort")
	def := "desc"
	if by != "" && by != "created" {
		def = "asc"
	}
	if by == "popularity" || by == "long-running" {
		by = "comments"
	}
	if rep := sortIssues(sel, by, q.Get("direction"), def); rep != nil {
		return rep
	}
	list := make([]any, 0, len(sel))
	for _, is := range sel {
		list = append(list, s.pullJSON(is))
	}
	return s.paginated(r, list)
}

// ---- JSON shapes ----

func ts(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.RFC3339)
}

// apiURL is an API URL of the repository: apiURL("issues/%d", 1).
func (s *Server) apiURL(format string, args ...any) string {
	return fmt.Sprintf("%srepos/%s/%s/", s.URL(), s.owner, s.name) + fmt.Sprintf(format, args...)
}

// htmlURL is a web URL of the repository, on the fake's host.
func (s *Server) htmlURL(format string, args ...any) string {
	return fmt.Sprintf("%s%s/%s/", s.URL(), s.owner, s.name) + fmt.Sprintf(format, args...)
}

func (s *Server) user(login string) map[string]any {
	typ := "User"
	if strings.HasSuffix(login, "[bot]") {
		typ = "Bot"
	}
	id := userID(login)
	return map[string]any{
		"login":       login,
		"id":          id,
		"node_id":     fmt.Sprintf("U_fake%d", id),
		"avatar_url":  fmt.Sprintf("%savatars/u/%d", s.URL(), id),
		"gravatar_id": "",
		"url":         s.URL() + "users/" + url.PathEscape(login),
		"html_url":    s.URL() + url.PathEscape(login),
		"type":        typ,
		"site_admin":  false,
	}
}

func (s *Server) userOrNil(login string) any {
	if login == "" {
		return nil
	}
	return s.user(login)
}

func (s *Server) repoJSON(withPermissions bool) map[string]any {
	full := s.owner + "/" + s.name
	repo := map[string]any{
		"id":                userID(full) + 500_000_000,
		"node_id":           "R_fake" + full,
		"name":              s.name,
		"full_name":         full,
		"owner":             s.user(s.owner),
		"private":           false,
		"visibility":        "public",
		"fork":              false,
		"archived":          false,
		"disabled":          false,
		"description":       nil,
		"html_url":          s.URL() + full,
		"url":               s.URL() + "repos/" + full,
		"clone_url":         s.URL() + full + ".git",
		"git_url":           "git://127.0.0.1/" + full + ".git",
		"ssh_url":           "git@127.0.0.1:" + full + ".git",
		"default_branch":    DefaultBranch,
		"has_issues":        s.hasIssues,
		"has_projects":      true,
		"has_wiki":          true,
		"open_issues_count": s.openIssues(),
		"created_at":        ts(s.seedBase),
		"updated_at":        ts(s.seedBase),
		"pushed_at":         ts(s.seedBase),
	}
	if withPermissions {
		role := s.role(s.bot)
		repo["permissions"] = map[string]any{
			"admin":    s.push && role == "admin",
			"maintain": s.push && (role == "admin" || role == "maintain"),
			"push":     s.push,
			"triage":   s.push,
			"pull":     true,
		}
	}
	return repo
}

// rolePermissions is the permissions object of a user with role.
func rolePermissions(role string) map[string]bool {
	rank := map[string]int{"admin": 5, "maintain": 4, "write": 3, "triage": 2, "read": 1}[role]
	return map[string]bool{
		"admin":    rank >= 5,
		"maintain": rank >= 4,
		"push":     rank >= 3,
		"triage":   rank >= 2,
		"pull":     rank >= 1,
	}
}

func (s *Server) openIssues() int {
	n := 0
	for _, is := range s.issues {
		if is.state == "open" {
			n++
		}
	}
	return n
}

func (s *Server) labelJSON(l *label) map[string]any {
	var desc any
	if l.description != "" {
		desc = l.description
	}
	return map[string]any{
		"id":          l.id,
		"node_id":     fmt.Sprintf("LA_fake%d", l.id),
		"url":         s.apiURL("labels/%s", url.PathEscape(l.name)),
		"name":        l.name,
		"color":       l.color,
		"default":     false,
		"description": desc,
	}
}

func (s *Server) issueLabelsJSON(is *issue) []any {
	names := s.sortedLabels(is)
	out := make([]any, 0, len(names))
	for _, n := range names {
		out = append(out, s.labelJSON(s.ensureLabel(n)))
	}
	return out
}

func (s *Server) association(login string) string {
	switch {
	case strings.EqualFold(login, s.owner):
		return "OWNER"
	case s.role(login) != "none":
		return "COLLABORATOR"
	}
	return "NONE"
}

func (s *Server) issueJSON(is *issue) map[string]any {
	assignees := make([]any, 0, len(is.assignees))
	for _, a := range is.assignees {
		assignees = append(assignees, s.user(a))
	}
	var assignee any
	if len(is.assignees) > 0 {
		assignee = s.user(is.assignees[0])
	}
	var reason, lockReason any
	if is.stateReason != "" {
		reason = is.stateReason
	}
	if is.lockReason != "" {
		lockReason = is.lockReason
	}
	out := map[string]any{
		"url":                s.apiURL("issues/%d", is.number),
		"repository_url":     strings.TrimSuffix(s.apiURL(""), "/"),
		"labels_url":         s.apiURL("issues/%d/labels{/name}", is.number),
		"comments_url":       s.apiURL("issues/%d/comments", is.number),
		"events_url":         s.apiURL("issues/%d/events", is.number),
		"timeline_url":       s.apiURL("issues/%d/timeline", is.number),
		"html_url":           s.htmlURL("issues/%d", is.number),
		"id":                 is.id,
		"node_id":            fmt.Sprintf("I_fake%d", is.id),
		"number":             is.number,
		"title":              is.title,
		"user":               s.user(is.author),
		"labels":             s.issueLabelsJSON(is),
		"state":              is.state,
		"state_reason":       reason,
		"locked":             is.locked,
		"active_lock_reason": lockReason,
		"assignee":           assignee,
		"assignees":          assignees,
		"milestone":          nil,
		"comments":           len(is.comments),
		"created_at":         ts(is.created),
		"updated_at":         ts(is.updated),
		"closed_at":          ts(is.closed),
		"closed_by":          s.userOrNil(is.closedBy),
		"author_association": s.association(is.author),
		"body":               is.body,
		"reactions": map[string]any{
			"url": s.apiURL("issues/%d/reactions", is.number), "total_count": 0,
			"+1": 0, "-1": 0, "laugh": 0, "hooray": 0, "confused": 0, "heart": 0, "rocket": 0, "eyes": 0,
		},
		"performed_via_github_app": nil,
	}
	if is.pull != nil {
		out["html_url"] = s.htmlURL("pull/%d", is.number)
		out["draft"] = is.pull.draft
		out["pull_request"] = map[string]any{
			"url":       s.apiURL("pulls/%d", is.number),
			"html_url":  s.htmlURL("pull/%d", is.number),
			"diff_url":  s.htmlURL("pull/%d.diff", is.number),
			"patch_url": s.htmlURL("pull/%d.patch", is.number),
			"merged_at": nil,
		}
	}
	return out
}

func (s *Server) commentJSON(c *comment) map[string]any {
	return map[string]any{
		"id":                       c.id,
		"node_id":                  fmt.Sprintf("IC_fake%d", c.id),
		"url":                      s.apiURL("issues/comments/%d", c.id),
		"html_url":                 s.htmlURL("issues/%d#issuecomment-%d", c.number, c.id),
		"issue_url":                s.apiURL("issues/%d", c.number),
		"user":                     s.user(c.author),
		"created_at":               ts(c.created),
		"updated_at":               ts(c.updated),
		"author_association":       s.association(c.author),
		"body":                     c.body,
		"performed_via_github_app": nil,
	}
}

func (s *Server) eventJSON(e *event) map[string]any {
	out := map[string]any{
		"id":                       e.id,
		"node_id":                  fmt.Sprintf("E_fake%d", e.id),
		"url":                      s.apiURL("issues/events/%d", e.id),
		"actor":                    s.user(e.actor),
		"event":                    e.event,
		"commit_id":                nil,
		"commit_url":               nil,
		"created_at":               ts(e.created),
		"performed_via_github_app": nil,
	}
	switch e.event {
	case "labeled", "unlabeled":
		out["label"] = map[string]any{"name": e.label, "color": e.labelColor}
	case "assigned", "unassigned":
		out["assignee"] = s.user(e.assignee)
		out["assigner"] = s.user(e.actor)
	case "locked":
		if e.lockReason != "" {
			out["lock_reason"] = e.lockReason
		} else {
			out["lock_reason"] = nil
		}
	case "renamed":
		out["rename"] = map[string]any{"from": e.renameFrom, "to": e.rename}
	}
	return out
}

func sha(s string) string {
	h := sha1.Sum([]byte(s))
	return hex.EncodeToString(h[:])
}

func (s *Server) pullJSON(is *issue) map[string]any {
	p := is.pull
	repo := s.repoJSON(false)
	headRepo := any(repo)
	if !strings.EqualFold(p.headOwner, s.owner) {
		headRepo = nil // a fork the fake does not model
	}
	issueJSON := s.issueJSON(is)
	out := map[string]any{
		"url":                 s.apiURL("pulls/%d", is.number),
		"id":                  is.id + 1_000_000_000,
		"node_id":             fmt.Sprintf("PR_fake%d", is.id),
		"html_url":            s.htmlURL("pull/%d", is.number),
		"diff_url":            s.htmlURL("pull/%d.diff", is.number),
		"patch_url":           s.htmlURL("pull/%d.patch", is.number),
		"issue_url":           s.apiURL("issues/%d", is.number),
		"commits_url":         s.apiURL("pulls/%d/commits", is.number),
		"review_comments_url": s.apiURL("pulls/%d/comments", is.number),
		"comments_url":        s.apiURL("issues/%d/comments", is.number),
		"statuses_url":        s.apiURL("statuses/%s", sha(p.headOwner+":"+p.head)),
		"number":              is.number,
		"state":               is.state,
		"locked":              is.locked,
		"title":               is.title,
		"user":                s.user(is.author),
		"body":                is.body,
		"labels":              issueJSON["labels"],
		"milestone":           nil,
		"active_lock_reason":  issueJSON["active_lock_reason"],
		"created_at":          ts(is.created),
		"updated_at":          ts(is.updated),
		"closed_at":           ts(is.closed),
		"merged_at":           nil,
		"merge_commit_sha":    nil,
		"assignee":            issueJSON["assignee"],
		"assignees":           issueJSON["assignees"],
		"requested_reviewers": []any{},
		"requested_teams":     []any{},
		"head": map[string]any{
			"label": p.headOwner + ":" + p.head,
			"ref":   p.head,
			"sha":   sha(p.headOwner + ":" + p.head),
			"user":  s.user(p.headOwner),
			"repo":  headRepo,
		},
		"base": map[string]any{
			"label": s.owner + ":" + p.base,
			"ref":   p.base,
			"sha":   sha(s.owner + ":" + p.base),
			"user":  s.user(s.owner),
			"repo":  repo,
		},
		"author_association":    s.association(is.author),
		"auto_merge":            nil,
		"draft":                 p.draft,
		"merged":                false,
		"mergeable":             nil,
		"rebaseable":            nil,
		"mergeable_state":       "unknown",
		"merged_by":             nil,
		"comments":              len(is.comments),
		"review_comments":       0,
		"maintainer_can_modify": false,
		"commits":               1,
		"additions":             1,
		"deletions":             0,
		"changed_files":         1,
	}
	return out
}

func containsFold(list []string, v string) bool {
	for _, x := range list {
		if strings.EqualFold(x, v) {
			return true
		}
	}
	return false
}
