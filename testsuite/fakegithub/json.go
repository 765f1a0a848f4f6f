package fakegithub

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
	"time"
)

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
		"url":                   s.apiURL("pulls/%d", is.number),
		"id":                    is.id + 1_000_000_000,
		"node_id":               fmt.Sprintf("PR_fake%d", is.id),
		"html_url":              s.htmlURL("pull/%d", is.number),
		"diff_url":              s.htmlURL("pull/%d.diff", is.number),
		"patch_url":             s.htmlURL("pull/%d.patch", is.number),
		"issue_url":             s.apiURL("issues/%d", is.number),
		"commits_url":           s.apiURL("pulls/%d/commits", is.number),
		"review_comments_url":   s.apiURL("pulls/%d/comments", is.number),
		"comments_url":          s.apiURL("issues/%d/comments", is.number),
		"statuses_url":          s.apiURL("statuses/%s", sha(p.headOwner+":"+p.head)),
		"number":                is.number,
		"state":                 is.state,
		"locked":                is.locked,
		"title":                 is.title,
		"user":                  s.user(is.author),
		"body":                  is.body,
		"labels":                issueJSON["labels"],
		"milestone":             nil,
		"active_lock_reason":    issueJSON["active_lock_reason"],
		"created_at":            ts(is.created),
		"updated_at":            ts(is.updated),
		"closed_at":             ts(is.closed),
		"merged_at":             nil,
		"merge_commit_sha":      nil,
		"assignee":              issueJSON["assignee"],
		"assignees":             issueJSON["assignees"],
		"requested_reviewers":   []any{},
		"requested_teams":       []any{},
		"head":                  s.branchJSON(p.headOwner, p.head, headRepo),
		"base":                  s.branchJSON(s.owner, p.base, repo),
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

// branchJSON is the head or base of a pull request: branch ref of owner's
// repository repo.
func (s *Server) branchJSON(owner, ref string, repo any) map[string]any {
	return map[string]any{
		"label": owner + ":" + ref,
		"ref":   ref,
		"sha":   sha(owner + ":" + ref),
		"user":  s.user(owner),
		"repo":  repo,
	}
}

func containsFold(list []string, v string) bool {
	for _, x := range list {
		if strings.EqualFold(x, v) {
			return true
		}
	}
	return false
}
