package fakegithub

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"
)

const docsDependencies = "https://docs.github.com/rest/issues/issue-dependencies"

// AddBlockedBy makes issue blocker block issue number, now, as
// POST /repos/{o}/{r}/issues/{number}/dependencies/blocked_by does. It does
// nothing if blocker already blocks it, and panics if either issue does not
// exist or they are the same.
func (s *Server) AddBlockedBy(number, blocker int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	is, b := s.mustIssue(number), s.mustIssue(blocker)
	if is == b {
		panic(fmt.Sprintf("fakegithub: #%d cannot block itself", number))
	}
	if !slices.Contains(is.blockedBy, b) {
		s.block(is, b, s.now())
	}
}

// BlockedBy returns the numbers of the issues that block issue number, in
// the order they were added. It panics if there is no such issue.
func (s *Server) BlockedBy(number int) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int
	for _, b := range s.mustIssue(number).blockedBy {
		out = append(out, b.number)
	}
	return out
}

// block makes blocker block the issue is, at at.
func (s *Server) block(is, blocker *issue, at time.Time) {
	is.blockedBy = append(is.blockedBy, blocker)
	blocker.blocking = append(blocker.blocking, is)
	is.updated, blocker.updated = at, at
}

// unblock makes blocker no longer block the issue is, at at.
func (s *Server) unblock(is, blocker *issue, at time.Time) {
	is.blockedBy = slices.DeleteFunc(is.blockedBy, func(x *issue) bool { return x == blocker })
	blocker.blocking = slices.DeleteFunc(blocker.blocking, func(x *issue) bool { return x == is })
	is.updated, blocker.updated = at, at
}

// issueByID is the issue (or pull request) whose database id is id, nil
// if there is none.
func (s *Server) issueByID(id int64) *issue {
	for _, is := range s.issues {
		if is.id == id {
			return is
		}
	}
	return nil
}

// dependenciesJSON is the issue_dependencies_summary of the issue is: how
// many issues block it and how many it blocks, open ones and in all.
func (s *Server) dependenciesJSON(is *issue) map[string]any {
	open := func(list []*issue) int {
		n := 0
		for _, x := range list {
			if x.state == "open" {
				n++
			}
		}
		return n
	}
	return map[string]any{
		"blocked_by":       open(is.blockedBy),
		"blocking":         open(is.blocking),
		"total_blocked_by": len(is.blockedBy),
		"total_blocking":   len(is.blocking),
	}
}

// listBlockedBy is GET /repos/{o}/{r}/issues/{n}/dependencies/blocked_by:
// the issues that block the issue, paginated.
func (s *Server) listBlockedBy(c *call) *reply {
	list := make([]any, 0, len(c.issue.blockedBy))
	for _, b := range c.issue.blockedBy {
		list = append(list, s.issueJSON(b))
	}
	return s.paginated(c.r, list)
}

// addBlockedBy is POST /repos/{o}/{r}/issues/{n}/dependencies/blocked_by
// with {"issue_id": id}: 201 with the issue of database id id, which then
// blocks the issue; 422 if issue_id is missing, names no issue, names
// the issue itself, or one that already blocks it.
func (s *Server) addBlockedBy(c *call) *reply {
	var in struct {
		IssueID json.RawMessage `json:"issue_id"`
	}
	if rep := decode(c.body, &in); rep != nil {
		return rep
	}
	if in.IssueID == nil || string(in.IssueID) == "null" {
		return validationFailed(docsDependencies, missingField("IssueDependency", "issue_id"))
	}
	id, err := strconv.ParseInt(string(in.IssueID), 10, 64)
	b := s.issueByID(id)
	switch {
	case err != nil || b == nil:
		return validationFailed(docsDependencies, map[string]any{"resource": "IssueDependency", "code": "invalid", "field": "issue_id"})
	case b == c.issue:
		return validationFailed(docsDependencies, map[string]any{"resource": "IssueDependency", "code": "custom", "field": "issue_id", "message": "An issue cannot be blocked by itself"})
	case slices.Contains(c.issue.blockedBy, b):
		return validationFailed(docsDependencies, map[string]any{"resource": "IssueDependency", "code": "already_exists", "field": "issue_id"})
	}
	s.block(c.issue, b, s.now())
	return s.created(s.issueJSON(b), "issues/%d/dependencies/blocked_by", c.issue.number)
}

// removeBlockedBy is
// DELETE /repos/{o}/{r}/issues/{n}/dependencies/blocked_by/{id}: 200 with
// the issue of database id id, which no longer blocks the issue; 404 if it
// did not.
func (s *Server) removeBlockedBy(c *call) *reply {
	i := slices.IndexFunc(c.issue.blockedBy, func(b *issue) bool { return b.id == c.id })
	if i < 0 {
		return notFound()
	}
	b := c.issue.blockedBy[i]
	s.unblock(c.issue, b, s.now())
	return jsonReply(http.StatusOK, s.issueJSON(b))
}
