package fakegithub

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// call is a request routed to an endpoint, with what the wildcards of the
// endpoint's path named.
type call struct {
	r    *http.Request
	body []byte
	// issue is the issue of {issue}, or the pull request of {pull}.
	issue *issue
	// comment is the comment of {comment}, commentID its id.
	comment   *comment
	commentID int64
	// name is the segment of {name}: a label or a login.
	name string
	// id is the number of {id}: of a check run, a job or a review
	// comment.
	id int64
	// ref is the git ref of {ref}: a SHA or a branch name.
	ref string
}

// route is one endpoint: a method and a path whose segments are literal or
// wildcards, and the function that answers it.
type route struct {
	method string
	path   string
	answer func(s *Server, c *call) *reply
}

// routes are the endpoints the server answers. The wildcards are {owner}
// and {repo} (the server's repository, any case), {issue} (the number of
// an issue or pull request), {pull} (of a pull request), {comment} (the id
// of an issue comment), {name}, {id} (a number) and {ref} (a SHA or a
// branch name: one or more segments, as a branch name may hold "/"). A
// request that matches none is 404.
var routes = []route{
	{http.MethodGet, "user", (*Server).getUser},
	{http.MethodGet, "rate_limit", (*Server).getRateLimit},
	{http.MethodGet, "repos/{owner}/{repo}", (*Server).getRepo},
	{http.MethodGet, "repos/{owner}/{repo}/issues", (*Server).listIssues},
	{http.MethodPost, "repos/{owner}/{repo}/issues", (*Server).createIssue},
	{http.MethodGet, "repos/{owner}/{repo}/issues/comments", (*Server).listRepoComments},
	{http.MethodGet, "repos/{owner}/{repo}/issues/comments/{comment}", (*Server).getComment},
	{http.MethodPatch, "repos/{owner}/{repo}/issues/comments/{comment}", (*Server).editComment},
	{http.MethodDelete, "repos/{owner}/{repo}/issues/comments/{comment}", (*Server).deleteComment},
	{http.MethodGet, "repos/{owner}/{repo}/issues/{issue}", (*Server).getIssue},
	{http.MethodPatch, "repos/{owner}/{repo}/issues/{issue}", (*Server).editIssue},
	{http.MethodGet, "repos/{owner}/{repo}/issues/{issue}/events", (*Server).listEvents},
	{http.MethodGet, "repos/{owner}/{repo}/issues/{issue}/labels", (*Server).listIssueLabels},
	{http.MethodPost, "repos/{owner}/{repo}/issues/{issue}/labels", (*Server).addIssueLabels},
	{http.MethodPut, "repos/{owner}/{repo}/issues/{issue}/labels", (*Server).setIssueLabels},
	{http.MethodDelete, "repos/{owner}/{repo}/issues/{issue}/labels", (*Server).clearIssueLabels},
	{http.MethodDelete, "repos/{owner}/{repo}/issues/{issue}/labels/{name}", (*Server).removeIssueLabel},
	{http.MethodGet, "repos/{owner}/{repo}/issues/{issue}/comments", (*Server).listComments},
	{http.MethodPost, "repos/{owner}/{repo}/issues/{issue}/comments", (*Server).createComment},
	{http.MethodPost, "repos/{owner}/{repo}/issues/{issue}/assignees", (*Server).addAssignees},
	{http.MethodDelete, "repos/{owner}/{repo}/issues/{issue}/assignees", (*Server).removeAssignees},
	{http.MethodGet, "repos/{owner}/{repo}/issues/{issue}/dependencies/blocked_by", (*Server).listBlockedBy},
	{http.MethodPost, "repos/{owner}/{repo}/issues/{issue}/dependencies/blocked_by", (*Server).addBlockedBy},
	{http.MethodDelete, "repos/{owner}/{repo}/issues/{issue}/dependencies/blocked_by/{id}", (*Server).removeBlockedBy},
	{http.MethodPut, "repos/{owner}/{repo}/issues/{issue}/lock", (*Server).lockIssue},
	{http.MethodDelete, "repos/{owner}/{repo}/issues/{issue}/lock", (*Server).unlockIssue},
	{http.MethodGet, "repos/{owner}/{repo}/labels", (*Server).listLabels},
	{http.MethodPost, "repos/{owner}/{repo}/labels", (*Server).createLabel},
	{http.MethodGet, "repos/{owner}/{repo}/labels/{name}", (*Server).getLabel},
	{http.MethodGet, "repos/{owner}/{repo}/collaborators/{name}/permission", (*Server).getPermission},
	{http.MethodGet, "repos/{owner}/{repo}/pulls", (*Server).listPulls},
	{http.MethodPost, "repos/{owner}/{repo}/pulls", (*Server).createPull},
	{http.MethodGet, "repos/{owner}/{repo}/pulls/{pull}", (*Server).getPull},
	{http.MethodPatch, "repos/{owner}/{repo}/pulls/{pull}", (*Server).editPull},
	{http.MethodGet, "repos/{owner}/{repo}/pulls/{pull}/merge", (*Server).isMerged},
	{http.MethodPut, "repos/{owner}/{repo}/pulls/{pull}/merge", (*Server).mergePull},
	{http.MethodGet, "repos/{owner}/{repo}/pulls/{pull}/reviews", (*Server).listReviews},
	{http.MethodGet, "repos/{owner}/{repo}/pulls/{pull}/comments", (*Server).listReviewComments},
	{http.MethodPost, "repos/{owner}/{repo}/pulls/{pull}/comments", (*Server).createReviewComment},
	{http.MethodPost, "repos/{owner}/{repo}/pulls/{pull}/comments/{id}/replies", (*Server).replyToReviewComment},
	{http.MethodGet, "repos/{owner}/{repo}/pulls/{pull}/requested_reviewers", (*Server).listRequestedReviewers},
	{http.MethodPost, "repos/{owner}/{repo}/pulls/{pull}/requested_reviewers", (*Server).requestReviewers},
	{http.MethodGet, "repos/{owner}/{repo}/commits/{ref}/check-runs", (*Server).listCheckRuns},
	{http.MethodGet, "repos/{owner}/{repo}/commits/{ref}/status", (*Server).getCombinedStatus},
	{http.MethodGet, "repos/{owner}/{repo}/check-runs/{id}", (*Server).getCheckRun},
	{http.MethodGet, "repos/{owner}/{repo}/actions/jobs/{id}/logs", (*Server).getJobLogs},
}

// route answers a request with the first endpoint it matches.
func (s *Server) route(r *http.Request, body []byte) *reply {
	segs := splitPath(r.URL)
	if segs == nil {
		return notFound()
	}
	for _, rt := range routes {
		if rt.method != r.Method {
			continue
		}
		if c, ok := s.match(rt.path, segs); ok {
			c.r, c.body = r, body
			return rt.answer(s, c)
		}
	}
	return notFound()
}

// match reports whether the path segs matches pattern, and what its
// wildcards named.
func (s *Server) match(pattern string, segs []string) (*call, bool) {
	pat := strings.Split(pattern, "/")
	if i := slices.Index(pat, "{ref}"); i >= 0 && len(segs) >= len(pat) {
		// {ref} takes the segments the others leave, joined.
		n := len(segs) - len(pat) + 1
		segs = slices.Concat(segs[:i], []string{strings.Join(segs[i:i+n], "/")}, segs[i+n:])
	}
	if len(pat) != len(segs) {
		return nil, false
	}
	c := &call{}
	for i, p := range pat {
		if !s.bind(c, p, segs[i]) {
			return nil, false
		}
	}
	return c, true
}

// bind matches one segment seg of a path to the segment p of a pattern,
// setting in c what a wildcard names.
func (s *Server) bind(c *call, p, seg string) bool {
	switch p {
	case "{owner}":
		return strings.EqualFold(seg, s.owner)
	case "{repo}":
		return strings.EqualFold(seg, s.name)
	case "{issue}", "{pull}":
		num, err := strconv.Atoi(seg)
		c.issue = s.findIssue(num)
		return err == nil && c.issue != nil && (p == "{issue}" || c.issue.pull != nil)
	case "{comment}":
		id, err := strconv.ParseInt(seg, 10, 64)
		c.commentID, c.comment = id, s.comments[id]
		return err == nil && c.comment != nil
	case "{name}":
		c.name = seg
		return true
	case "{id}":
		id, err := strconv.ParseInt(seg, 10, 64)
		c.id = id
		return err == nil
	case "{ref}":
		c.ref = seg
		return seg != ""
	}
	return p == seg
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

// noContent is an answer of 204 without a body.
func noContent() *reply { return &reply{status: http.StatusNoContent} }

// decode decodes a JSON body into in; the answer is GitHub's to a body
// that is not JSON, nil when it is.
func decode(body []byte, in any) *reply {
	if json.Unmarshal(body, in) != nil {
		return badJSON()
	}
	return nil
}

func (s *Server) getUser(*call) *reply {
	u := s.user(s.bot)
	u["name"] = s.bot
	return jsonReply(http.StatusOK, u)
}

func (s *Server) getRateLimit(*call) *reply {
	core := map[string]any{"limit": rateLimit, "remaining": s.rateLeft, "reset": s.rateReset.Unix(), "used": rateLimit - s.rateLeft, "resource": "core"}
	return jsonReply(http.StatusOK, map[string]any{"resources": map[string]any{"core": core}, "rate": core})
}

func (s *Server) getRepo(*call) *reply { return jsonReply(http.StatusOK, s.repoJSON(true)) }

func (s *Server) getComment(c *call) *reply {
	return jsonReply(http.StatusOK, s.commentJSON(c.comment))
}

func (s *Server) deleteComment(c *call) *reply {
	is := s.issues[c.comment.number-1]
	is.comments = slices.DeleteFunc(is.comments, func(x *comment) bool { return x == c.comment })
	delete(s.comments, c.commentID)
	return noContent()
}

func (s *Server) getIssue(c *call) *reply { return jsonReply(http.StatusOK, s.issueJSON(c.issue)) }

func (s *Server) listEvents(c *call) *reply {
	list := make([]any, 0, len(c.issue.events))
	for _, e := range c.issue.events {
		list = append(list, s.eventJSON(e))
	}
	return s.paginated(c.r, list)
}

func (s *Server) listIssueLabels(c *call) *reply {
	return s.paginated(c.r, s.issueLabelsJSON(c.issue))
}

func (s *Server) addIssueLabels(c *call) *reply {
	return s.changeIssueLabels(c, func(names []string, now time.Time) {
		for _, name := range names {
			s.addLabel(c.issue, name, s.bot, now)
		}
	})
}

func (s *Server) setIssueLabels(c *call) *reply {
	return s.changeIssueLabels(c, func(names []string, now time.Time) {
		s.setLabels(c.issue, names, s.bot, now)
	})
}

// changeIssueLabels changes the labels of the call's issue with the names
// of its body (parseLabelNames) and answers the labels it then has.
func (s *Server) changeIssueLabels(c *call, change func(names []string, now time.Time)) *reply {
	names, ok := parseLabelNames(c.body)
	if !ok {
		return badJSON()
	}
	change(names, s.now())
	return jsonReply(http.StatusOK, s.issueLabelsJSON(c.issue))
}

func (s *Server) clearIssueLabels(c *call) *reply {
	s.setLabels(c.issue, nil, s.bot, s.now())
	return noContent()
}

func (s *Server) removeIssueLabel(c *call) *reply {
	if !s.removeLabel(c.issue, c.name, s.bot, s.now()) {
		return errorReply(http.StatusNotFound, "Label does not exist", "https://docs.github.com/rest/issues/labels#remove-a-label-from-an-issue")
	}
	return jsonReply(http.StatusOK, s.issueLabelsJSON(c.issue))
}

func (s *Server) listComments(c *call) *reply {
	since, ok := parseSince(c.r)
	if !ok {
		return invalid("IssueComment", "since")
	}
	list := make([]any, 0, len(c.issue.comments))
	for _, cm := range c.issue.comments {
		if !since.IsZero() && cm.updated.Before(since) {
			continue
		}
		list = append(list, s.commentJSON(cm))
	}
	return s.paginated(c.r, list)
}

// listRepoComments lists the comments of every issue and pull request of
// the repository, as GitHub does: sorted by created (default) or updated,
// asc (default) or desc, those updated at or after since.
func (s *Server) listRepoComments(c *call) *reply {
	since, ok := parseSince(c.r)
	if !ok {
		return invalid("IssueComment", "since")
	}
	q := c.r.URL.Query()
	by, dir := q.Get("sort"), q.Get("direction")
	if (by != "" && by != "created" && by != "updated") || (dir != "" && dir != "asc" && dir != "desc") {
		return invalid("IssueComment", "sort")
	}
	var all []*comment
	for _, is := range s.issues {
		for _, cm := range is.comments {
			if since.IsZero() || !cm.updated.Before(since) {
				all = append(all, cm)
			}
		}
	}
	key := func(cm *comment) time.Time {
		if by == "updated" {
			return cm.updated
		}
		return cm.created
	}
	slices.SortStableFunc(all, func(a, b *comment) int {
		if c := key(a).Compare(key(b)); c != 0 {
			return c
		}
		return int(a.id - b.id)
	})
	if dir == "desc" {
		slices.Reverse(all)
	}
	list := make([]any, 0, len(all))
	for _, cm := range all {
		list = append(list, s.commentJSON(cm))
	}
	return s.paginated(c.r, list)
}

func (s *Server) createComment(c *call) *reply {
	text, rep := commentBody(c.body)
	if rep != nil {
		return rep
	}
	cm := s.addComment(c.issue, s.bot, text)
	return s.created(s.commentJSON(cm), "issues/comments/%d", cm.id)
}

func (s *Server) addAssignees(c *call) *reply {
	return s.changeAssignees(c, http.StatusCreated, s.assign)
}

func (s *Server) removeAssignees(c *call) *reply {
	return s.changeAssignees(c, http.StatusOK, s.unassign)
}

// changeAssignees assigns or unassigns the assignees of the call's body
// and answers the issue with status.
func (s *Server) changeAssignees(c *call, status int, change func(is *issue, login, actor string, at time.Time)) *reply {
	var in struct {
		Assignees []string `json:"assignees"`
	}
	if rep := decode(c.body, &in); rep != nil {
		return rep
	}
	now := s.now()
	for _, a := range in.Assignees {
		change(c.issue, a, s.bot, now)
	}
	return jsonReply(status, s.issueJSON(c.issue))
}

func (s *Server) lockIssue(c *call) *reply {
	var in struct {
		LockReason string `json:"lock_reason"`
	}
	if len(bytes.TrimSpace(c.body)) > 0 && json.Unmarshal(c.body, &in) != nil {
		return badJSON()
	}
	s.lock(c.issue, in.LockReason, s.bot, s.now())
	return noContent()
}

func (s *Server) unlockIssue(c *call) *reply {
	s.unlock(c.issue, s.bot, s.now())
	return noContent()
}

func (s *Server) listLabels(c *call) *reply {
	list := make([]any, 0, len(s.labels))
	for _, l := range s.labels {
		list = append(list, s.labelJSON(l))
	}
	return s.paginated(c.r, list)
}

func (s *Server) getLabel(c *call) *reply {
	if l := s.findLabel(c.name); l != nil {
		return jsonReply(http.StatusOK, s.labelJSON(l))
	}
	return notFound()
}

func (s *Server) getPermission(c *call) *reply {
	role := s.role(c.name)
	u := s.user(c.name)
	u["role_name"] = role
	u["permissions"] = rolePermissions(role)
	return jsonReply(http.StatusOK, map[string]any{
		"permission": legacyPermission(role),
		"role_name":  role,
		"user":       u,
	})
}

func (s *Server) getPull(c *call) *reply { return jsonReply(http.StatusOK, s.pullJSON(c.issue)) }
