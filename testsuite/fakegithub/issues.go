package fakegithub

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

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

// paginated answers one page of list with GitHub's Link header (see page).
func (s *Server) paginated(r *http.Request, list []any) *reply {
	items, header := s.page(r, list)
	rep := jsonReply(http.StatusOK, items)
	rep.header = header
	return rep
}

// page is the page of list that r asks for, and the headers that go with
// it: per_page (default 30, at most 100) and page (from 1) query
// parameters; a Link header with rel="prev", "next", "last" and "first"
// links as GitHub sends them, none when everything fits on the first page.
func (s *Server) page(r *http.Request, list []any) ([]any, map[string]string) {
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
	if len(links) == 0 {
		return list[lo:hi], nil
	}
	return list[lo:hi], map[string]string{"Link": strings.Join(links, ", ")}
}

// listIssues is GET /repos/{o}/{r}/issues: state, labels, creator, assignee,
// since, sort, direction and pagination. Pull requests are included.
func (s *Server) listIssues(c *call) *reply {
	r := c.r
	q := r.URL.Query()
	state, rep := listState(q.Get("state"), "Issue")
	if rep != nil {
		return rep
	}
	var want []string
	for _, l := range strings.Split(q.Get("labels"), ",") {
		if l = strings.TrimSpace(l); l != "" {
			want = append(want, l)
		}
	}
	since, ok := parseSince(r)
	if !ok {
		return invalid("Issue", "since")
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

// listState is the state a list asks for: "open" (the default), "closed"
// or "all"; else the answer to a list of resource that asks for another.
func listState(state, resource string) (string, *reply) {
	switch state {
	case "":
		return "open", nil
	case "open", "closed", "all":
		return state, nil
	}
	return "", invalid(resource, "state")
}

// sortIssues sorts by created (default), updated or comments, in direction
// (default def); ties are broken by number in the same direction.
func sortIssues(sel []*issue, by, direction, def string) *reply {
	if direction == "" {
		direction = def
	}
	if direction != "asc" && direction != "desc" {
		return invalid("Issue", "direction")
	}
	key := func(is *issue) int64 { return is.created.Unix() }
	switch by {
	case "", "created":
	case "updated":
		key = func(is *issue) int64 { return is.updated.Unix() }
	case "comments":
		key = func(is *issue) int64 { return int64(len(is.comments)) }
	default:
		return invalid("Issue", "sort")
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

func (s *Server) createIssue(c *call) *reply {
	var in struct {
		Title     *string         `json:"title"`
		Body      *string         `json:"body"`
		Labels    json.RawMessage `json:"labels"`
		Assignees []string        `json:"assignees"`
		Assignee  *string         `json:"assignee"`
	}
	if rep := decode(c.body, &in); rep != nil {
		return rep
	}
	if in.Title == nil || *in.Title == "" {
		return validationFailed(docsREST, missingField("Issue", "title"))
	}
	labels, ok := parseLabelNames(in.Labels)
	if !ok {
		return badJSON()
	}
	is := s.newIssue(*in.Title, in.Body, nil)
	if in.Assignee != nil {
		in.Assignees = append(in.Assignees, *in.Assignee)
	}
	s.quietly(func() {
		for _, l := range labels {
			s.addLabel(is, l, s.bot, is.created)
		}
		for _, a := range in.Assignees {
			s.assign(is, a, s.bot, is.created)
		}
	})
	s.hookCreation(is)
	return s.created(s.issueJSON(is), "issues/%d", is.number)
}

// newIssue adds an issue, or a pull request with p, that the bot opens
// now.
func (s *Server) newIssue(title string, body *string, p *pull) *issue {
	at := s.now()
	is := &issue{
		number: len(s.issues) + 1, title: title, author: s.bot, state: "open",
		created: at, updated: at, pull: p,
	}
	is.id = int64(2_000_000_000 + is.number)
	if body != nil {
		is.body = *body
	}
	s.issues = append(s.issues, is)
	return is
}

// created is GitHub's 201 with v and the Location of the API URL
// apiURL(format, args...).
func (s *Server) created(v any, format string, args ...any) *reply {
	rep := jsonReply(http.StatusCreated, v)
	rep.header = map[string]string{"Location": s.apiURL(format, args...)}
	return rep
}

// editText sets the title and the body of is that a request gives, if it
// gives them.
func (s *Server) editText(is *issue, title, body *string, now time.Time) {
	if title != nil {
		s.rename(is, *title, s.bot, now)
	}
	if body != nil && *body != is.body {
		is.body = *body
		is.updated = now
	}
}

func (s *Server) editIssue(c *call) *reply {
	is := c.issue
	var in struct {
		Title       *string         `json:"title"`
		Body        *string         `json:"body"`
		State       *string         `json:"state"`
		StateReason *string         `json:"state_reason"`
		Labels      json.RawMessage `json:"labels"`
		Assignees   *[]string       `json:"assignees"`
	}
	if rep := decode(c.body, &in); rep != nil {
		return rep
	}
	if in.State != nil && *in.State != "open" && *in.State != "closed" {
		return invalid("Issue", "state")
	}
	now := s.now()
	s.editText(is, in.Title, in.Body, now)
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

func (s *Server) editComment(c *call) *reply {
	text, rep := commentBody(c.body)
	if rep != nil {
		return rep
	}
	c.comment.body = text
	c.comment.updated = s.now()
	c.comment.edits++
	return jsonReply(http.StatusOK, s.commentJSON(c.comment))
}

// commentBody is the body of a comment as a request gives it, or the
// answer to a request that gives none.
func commentBody(body []byte) (string, *reply) {
	var in struct {
		Body *string `json:"body"`
	}
	if rep := decode(body, &in); rep != nil {
		return "", rep
	}
	if in.Body == nil || *in.Body == "" {
		return "", validationFailed(docsREST, missingField("IssueComment", "body"))
	}
	return *in.Body, nil
}

func (s *Server) createLabel(c *call) *reply {
	var in struct {
		Name        string `json:"name"`
		Color       string `json:"color"`
		Description string `json:"description"`
	}
	if rep := decode(c.body, &in); rep != nil {
		return rep
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
	return s.created(s.labelJSON(l), "labels/%s", url.PathEscape(l.name))
}
