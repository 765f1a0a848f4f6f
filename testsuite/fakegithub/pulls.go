package fakegithub

import (
	"fmt"
	"net/http"
	"strings"
)

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
func (s *Server) createPull(c *call) *reply {
	var in struct {
		Title *string `json:"title"`
		Head  string  `json:"head"`
		Base  string  `json:"base"`
		Body  *string `json:"body"`
		Draft bool    `json:"draft"`
	}
	if rep := decode(c.body, &in); rep != nil {
		return rep
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
	is := s.newIssue(*in.Title, in.Body, &pull{headOwner: owner, head: head, base: in.Base, draft: in.Draft})
	s.hookCreation(is)
	return s.created(s.pullJSON(is), "pulls/%d", is.number)
}

// editPull is PATCH /repos/{o}/{r}/pulls/{n}: title, body, state, base.
func (s *Server) editPull(c *call) *reply {
	is := c.issue
	var in struct {
		Title *string `json:"title"`
		Body  *string `json:"body"`
		State *string `json:"state"`
		Base  *string `json:"base"`
	}
	if rep := decode(c.body, &in); rep != nil {
		return rep
	}
	if in.State != nil && ((*in.State != "open" && *in.State != "closed") || (*in.State == "open" && is.pull.merged)) {
		return invalid("PullRequest", "state") // a merged pull request cannot be reopened
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
	s.editText(is, in.Title, in.Body, now)
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
func (s *Server) listPulls(c *call) *reply {
	r := c.r
	q := r.URL.Query()
	state, rep := listState(q.Get("state"), "PullRequest")
	if rep != nil {
		return rep
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
