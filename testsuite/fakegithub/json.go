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
		"clone_url":         s.cloneURL(),
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
		"performed_via_github_app":   nil,
		"issue_dependencies_summary": s.dependenciesJSON(is),
	}
	if is.pull != nil {
		out["html_url"] = s.htmlURL("pull/%d", is.number)
		out["draft"] = is.pull.draft
		out["pull_request"] = map[string]any{
			"url":       s.apiURL("pulls/%d", is.number),
			"html_url":  s.htmlURL("pull/%d", is.number),
			"diff_url":  s.htmlURL("pull/%d.diff", is.number),
			"patch_url": s.htmlURL("pull/%d.patch", is.number),
			"merged_at": ts(is.pull.mergedAt),
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
	if e.commit != "" {
		out["commit_id"] = e.commit
		out["commit_url"] = s.apiURL("commits/%s", e.commit)
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

// pullJSON is the pull request is, with its heads read and its mergeable
// state computed now: it may release s.mu while a scripted CI runs (see
// runCI).
func (s *Server) pullJSON(is *issue) map[string]any {
	head, base := s.headSHA(is), s.baseSHA(is)
	mergeable, mergeableState := s.mergeability(is, head, base)
	return s.pullObject(is, head, base, mergeable, mergeableState)
}

// pullHookJSON is the pull request is as a webhook delivery gives it: its
// mergeability not computed yet (null and "unknown"), as GitHub computes
// it lazily. It never releases s.mu.
func (s *Server) pullHookJSON(is *issue) map[string]any {
	return s.pullObject(is, s.headSHA(is), s.baseSHA(is), nil, "unknown")
}

// pullObject is the pull request is whose head and base are at commits
// head and base, with its mergeable and mergeable_state.
func (s *Server) pullObject(is *issue, head, base string, mergeable any, mergeableState string) map[string]any {
	p := is.pull
	var mergeCommit any
	if p.merged {
		mergeCommit = p.mergeCommit
	}
	repo := s.repoJSON(false)
	headRepo := any(repo)
	if !strings.EqualFold(p.headOwner, s.owner) {
		headRepo = nil // a fork the fake does not model
	}
	issueJSON := s.issueJSON(is)
	return map[string]any{
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
		"statuses_url":          s.apiURL("statuses/%s", head),
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
		"merged_at":             ts(p.mergedAt),
		"merge_commit_sha":      mergeCommit,
		"assignee":              issueJSON["assignee"],
		"assignees":             issueJSON["assignees"],
		"requested_reviewers":   s.requestedJSON(is),
		"requested_teams":       []any{},
		"head":                  s.branchJSON(p.headOwner, p.head, head, headRepo),
		"base":                  s.branchJSON(s.owner, p.base, base, repo),
		"author_association":    s.association(is.author),
		"auto_merge":            nil,
		"draft":                 p.draft,
		"merged":                p.merged,
		"mergeable":             mergeable,
		"rebaseable":            mergeable,
		"mergeable_state":       mergeableState,
		"merged_by":             s.userOrNil(p.mergedBy),
		"comments":              len(is.comments),
		"review_comments":       len(p.reviewComments),
		"maintainer_can_modify": false,
		"commits":               1,
		"additions":             1,
		"deletions":             0,
		"changed_files":         1,
	}
}

// branchJSON is the head or base of a pull request: branch ref of owner's
// repository repo, at commit.
func (s *Server) branchJSON(owner, ref, commit string, repo any) map[string]any {
	return map[string]any{
		"label": owner + ":" + ref,
		"ref":   ref,
		"sha":   commit,
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

func (s *Server) requestedJSON(is *issue) []any {
	out := make([]any, 0, len(is.pull.requested))
	for _, login := range is.pull.requested {
		out = append(out, s.user(login))
	}
	return out
}

func nilIfEmpty(v string) any {
	if v == "" {
		return nil
	}
	return v
}

// pullsAt are the pull_requests of a check run on commit sha: the open
// pull requests whose head it is, in the short form GitHub gives them.
func (s *Server) pullsAt(sha string) []any {
	out := []any{}
	for _, is := range s.issues {
		if is.pull == nil || is.state != "open" || !strings.EqualFold(is.pull.headOwner, s.owner) {
			continue
		}
		head := s.headSHA(is)
		if head != sha {
			continue
		}
		repo := map[string]any{"id": userID(s.owner+"/"+s.name) + 500_000_000, "url": s.URL() + "repos/" + s.owner + "/" + s.name, "name": s.name}
		out = append(out, map[string]any{
			"url":    s.apiURL("pulls/%d", is.number),
			"id":     is.id + 1_000_000_000,
			"number": is.number,
			"head":   map[string]any{"ref": is.pull.head, "sha": head, "repo": repo},
			"base":   map[string]any{"ref": is.pull.base, "sha": s.baseSHA(is), "repo": repo},
		})
	}
	return out
}

// appJSON is the GitHub App of slug; github-actions is GitHub's own.
func (s *Server) appJSON(slug string) map[string]any {
	id, name, owner := userID("app:"+slug), slug, s.user(s.owner)
	if slug == actionsApp {
		id, name, owner = 15368, "GitHub Actions", s.user("github")
		owner["type"] = "Organization"
	}
	return map[string]any{
		"id":           id,
		"slug":         slug,
		"node_id":      fmt.Sprintf("A_fake%d", id),
		"owner":        owner,
		"name":         name,
		"description":  "",
		"external_url": s.URL() + "apps/" + slug,
		"html_url":     s.URL() + "apps/" + slug,
		"created_at":   ts(s.seedBase),
		"updated_at":   ts(s.seedBase),
		"permissions":  map[string]any{"checks": "write", "metadata": "read", "statuses": "write"},
		"events":       []any{},
	}
}

// checkRunJSON is check run cr of the open pull requests pulls (see
// pullsAt). An Actions run links to its job, whose ID is the run's.
func (s *Server) checkRunJSON(cr *checkRun, pulls []any) map[string]any {
	suite := userID("suite:"+cr.sha+":"+cr.run.App) + 3_000_000_000
	html := s.htmlURL("runs/%d", cr.id)
	if cr.run.App == actionsApp {
		html = s.htmlURL("actions/runs/%d/job/%d", suite, cr.id)
	}
	return map[string]any{
		"id":           cr.id,
		"head_sha":     cr.sha,
		"node_id":      fmt.Sprintf("CR_fake%d", cr.id),
		"external_id":  "",
		"url":          s.apiURL("check-runs/%d", cr.id),
		"html_url":     html,
		"details_url":  html,
		"status":       cr.run.Status,
		"conclusion":   nilIfEmpty(cr.run.Conclusion),
		"started_at":   ts(cr.started),
		"completed_at": ts(cr.completed),
		"output": map[string]any{
			"title":             nilIfEmpty(cr.run.Title),
			"summary":           nilIfEmpty(cr.run.Summary),
			"text":              nilIfEmpty(cr.run.Text),
			"annotations_count": 0,
			"annotations_url":   s.apiURL("check-runs/%d/annotations", cr.id),
		},
		"name":          cr.run.Name,
		"check_suite":   map[string]any{"id": suite},
		"app":           s.appJSON(cr.run.App),
		"pull_requests": pulls,
	}
}

// statusJSON is commit status st of commit sha.
func (s *Server) statusJSON(sha string, st *status) map[string]any {
	creator := s.user(s.owner)
	return map[string]any{
		"url":         s.apiURL("statuses/%s", sha),
		"avatar_url":  creator["avatar_url"],
		"id":          st.id,
		"node_id":     fmt.Sprintf("SC_fake%d", st.id),
		"state":       st.state,
		"description": nilIfEmpty(st.description),
		"target_url":  nil,
		"context":     st.context,
		"created_at":  ts(st.created),
		"updated_at":  ts(st.created),
		"creator":     creator,
	}
}

func (s *Server) reviewJSON(is *issue, r *review) map[string]any {
	html := s.htmlURL("pull/%d#pullrequestreview-%d", is.number, r.id)
	pr := s.apiURL("pulls/%d", is.number)
	return map[string]any{
		"id":                 r.id,
		"node_id":            fmt.Sprintf("PRR_fake%d", r.id),
		"user":               s.user(r.author),
		"body":               r.body,
		"state":              r.state,
		"html_url":           html,
		"pull_request_url":   pr,
		"author_association": s.association(r.author),
		"_links": map[string]any{
			"html":         map[string]any{"href": html},
			"pull_request": map[string]any{"href": pr},
		},
		"submitted_at": ts(r.submitted),
		"commit_id":    r.commit,
	}
}

// reviewCommentJSON is review comment rc; in_reply_to_id is only in a
// reply, as on GitHub.
func (s *Server) reviewCommentJSON(rc *reviewComment) map[string]any {
	self := s.apiURL("pulls/comments/%d", rc.id)
	html := s.htmlURL("pull/%d#discussion_r%d", rc.number, rc.id)
	pr := s.apiURL("pulls/%d", rc.number)
	out := map[string]any{
		"url":                    self,
		"pull_request_review_id": rc.review,
		"id":                     rc.id,
		"node_id":                fmt.Sprintf("PRRC_fake%d", rc.id),
		"diff_hunk":              rc.hunk,
		"path":                   rc.path,
		"position":               rc.position,
		"original_position":      rc.position,
		"commit_id":              rc.commit,
		"original_commit_id":     rc.commit,
		"user":                   s.user(rc.author),
		"body":                   rc.body,
		"created_at":             ts(rc.created),
		"updated_at":             ts(rc.created),
		"html_url":               html,
		"pull_request_url":       pr,
		"author_association":     s.association(rc.author),
		"_links": map[string]any{
			"self":         map[string]any{"href": self},
			"html":         map[string]any{"href": html},
			"pull_request": map[string]any{"href": pr},
		},
		"reactions": map[string]any{
			"url": s.apiURL("pulls/comments/%d/reactions", rc.id), "total_count": 0,
			"+1": 0, "-1": 0, "laugh": 0, "hooray": 0, "confused": 0, "heart": 0, "rocket": 0, "eyes": 0,
		},
		"start_line":          nil,
		"original_start_line": nil,
		"start_side":          nil,
		"line":                rc.line,
		"original_line":       rc.line,
		"side":                "RIGHT",
		"subject_type":        "line",
	}
	if rc.inReplyTo != 0 {
		out["in_reply_to_id"] = rc.inReplyTo
	}
	return out
}
