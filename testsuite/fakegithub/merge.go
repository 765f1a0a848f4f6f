package fakegithub

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

const docsMerge = "https://docs.github.com/rest/pulls/pulls#merge-a-pull-request"

var mergeMethods = []string{"merge", "squash", "rebase"}

// RequireReviews makes the repository require an approving review before
// a merge, as a branch protection rule does.
//
// The mergeable_state of a pull request follows these rules, the first
// that applies:
//
//   - closed (merged or not): "unknown", and mergeable is null;
//   - SetConflict's override if set, else with the remote (see SetRemote)
//     a merge of the head into the base that conflicts: "dirty", and
//     mergeable is false (true otherwise);
//   - a draft: "draft";
//   - with required reviews, no approval among the latest reviews of the
//     users with write access (each user's latest review that approves or
//     requests changes counts), or one of them requests changes:
//     "blocked";
//   - checks of the head failing or pending: "blocked" with required
//     checks (see RequireChecks), else "unstable". A check fails if a
//     completed check run's conclusion is failure, cancelled, timed_out or
//     action_required, or the latest status of a context is failure or
//     error; it is pending if a check run is not completed or the latest
//     status of a context is pending;
//   - otherwise "clean".
//
// The fake never says "behind" (it has no rule that requires an up to
// date branch) and, unlike GitHub, never computes mergeable lazily: it is
// never null for an open pull request.
func (s *Server) RequireReviews(require bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requireReviews = require
}

// RequireChecks makes the repository require the checks of a pull
// request's head to pass before a merge, as a branch protection rule
// does: failing or pending checks block it (see RequireReviews), and so
// does a head without any check yet.
func (s *Server) RequireChecks(require bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requireChecks = require
}

// SetConflict overrides whether pull request pull conflicts with its base
// (see RequireReviews), for good. It panics if there is no such pull
// request.
func (s *Server) SetConflict(pull int, conflict bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mustPull(pull).pull.conflict = &conflict
}

// ClosePull closes pull request pull without merging it, as login, now.
// It panics if there is no such pull request.
func (s *Server) ClosePull(pull int, login string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setState(s.mustPull(pull), "closed", "", login, s.now())
}

// MergeByHuman merges pull request pull as login with the merge method
// "merge", whatever its mergeable_state (as a person allowed to bypass
// the rules would), moving the base branch in the remote if there is one.
// It fails if the pull request is closed or, with the remote, if its head
// does not merge into its base. It panics if there is no such pull
// request.
//
// A merge into the default branch, this one or the REST API's, closes
// each open issue that the pull request's body names after one of
// GitHub's closing keywords (close, closes, closed, fix, fixes, fixed,
// resolve, resolves, resolved; any case, an optional colon) as #N,
// owner/name#N of this repository or the URL of its issue N: closed as
// completed by the merger, with a "closed" event whose commit is the
// merge commit.
func (s *Server) MergeByHuman(pull int, login string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	is := s.mustPull(pull)
	if is.state != "open" {
		return fmt.Errorf("merge #%d: the pull request is closed", pull)
	}
	if _, err := s.merge(is, s.headSHA(is), "merge", nil, nil, login); err != nil {
		return fmt.Errorf("merge #%d: %w", pull, err)
	}
	return nil
}

// headSHA is the commit of the head of pull request is: the one it was
// merged at, else where its branch points now.
func (s *Server) headSHA(is *issue) string {
	if is.pull.merged {
		return is.pull.mergedHead
	}
	return s.branchSHA(is.pull.headOwner, is.pull.head)
}

// baseSHA is the commit of the base of pull request is: the one it was
// merged into, else where its branch points now.
func (s *Server) baseSHA(is *issue) string {
	if is.pull.merged {
		return is.pull.mergedBase
	}
	return s.branchSHA(s.owner, is.pull.base)
}

// mergeability is the mergeable and mergeable_state of pull request is,
// whose head and base are at commits head and base (see RequireReviews).
func (s *Server) mergeability(is *issue, head, base string) (mergeable any, state string) {
	p := is.pull
	if is.state != "open" {
		return nil, "unknown"
	}
	conflict := s.conflicts(base, head)
	if p.conflict != nil {
		conflict = *p.conflict
	}
	switch {
	case conflict:
		return false, "dirty"
	case p.draft:
		return true, "draft"
	case s.requireReviews && !s.approved(is):
		return true, "blocked"
	}
	switch {
	case s.checksState(head) == "success":
		return true, "clean"
	case s.requireChecks:
		return true, "blocked"
	}
	return true, "unstable"
}

// approved reports whether the latest reviews of the users with write
// access to pull request is approve it, and none requests changes.
func (s *Server) approved(is *issue) bool {
	latest := map[string]string{}
	for _, r := range is.pull.reviews {
		if r.state == "COMMENTED" || !rolePermissions(s.role(r.author))["push"] {
			continue
		}
		latest[strings.ToLower(r.author)] = r.state
	}
	for _, st := range latest {
		if st == "CHANGES_REQUESTED" {
			return false
		}
	}
	return len(latest) > 0
}

func notMergeable() *reply {
	return errorReply(http.StatusMethodNotAllowed, "Pull Request is not mergeable", docsMerge)
}

// mergePull is PUT /repos/{o}/{r}/pulls/{n}/merge: 422 for an unknown
// merge_method, 405 for a closed (or merged) pull request or one whose
// mergeable_state is neither clean nor unstable, 409 if sha is given and
// is not the head, else the merge, by the token's user.
func (s *Server) mergePull(c *call) *reply {
	is := c.issue
	var in struct {
		CommitTitle   string  `json:"commit_title"`
		CommitMessage *string `json:"commit_message"`
		SHA           string  `json:"sha"`
		MergeMethod   string  `json:"merge_method"`
	}
	if len(bytes.TrimSpace(c.body)) > 0 && json.Unmarshal(c.body, &in) != nil {
		return badJSON()
	}
	method := in.MergeMethod
	if method == "" {
		method = "merge"
	}
	if !slices.Contains(mergeMethods, method) {
		return invalid("PullRequest", "merge_method")
	}
	if is.state != "open" {
		return notMergeable()
	}
	head, base := s.headSHA(is), s.baseSHA(is)
	if in.SHA != "" && in.SHA != head {
		return errorReply(http.StatusConflict, "Head branch was modified. Review and try the merge again.", docsMerge)
	}
	// mergeability may let a scripted CI run, and others meanwhile: the
	// pull request may be closed after.
	if _, state := s.mergeability(is, head, base); is.state != "open" || state != "clean" && state != "unstable" {
		return notMergeable()
	}
	var title *string
	if in.CommitTitle != "" {
		title = &in.CommitTitle
	}
	commit, err := s.merge(is, head, method, title, in.CommitMessage, s.bot)
	switch {
	case errors.Is(err, errConflict):
		return notMergeable()
	case errors.Is(err, errBaseMoved):
		return errorReply(http.StatusConflict, "Base branch was modified. Review and try the merge again.", docsMerge)
	case err != nil:
		return errorReply(http.StatusInternalServerError, fmt.Sprintf("Server Error: %v", err), docsMerge)
	}
	return jsonReply(http.StatusOK, map[string]any{"sha": commit, "merged": true, "message": "Pull Request successfully merged"})
}

// isMerged is GET /repos/{o}/{r}/pulls/{n}/merge: 204 if merged, else 404.
func (s *Server) isMerged(c *call) *reply {
	if c.issue.pull.merged {
		return noContent()
	}
	return notFound()
}

// merge merges pull request is, at commit head, by method as login, now,
// and returns the merge commit: in the remote if there is one (see
// gitMerge), else a fake one. title and message are the commit's, GitHub's
// default when nil. Without the remote, or when it lacks the head or the
// base, nothing moves. The pull request is then merged and closed, with a
// "merged" and a "closed" event, and, merged into the default branch, it
// closes the issues its body names with a closing keyword (see
// closeReferenced).
func (s *Server) merge(is *issue, head, method string, title, message *string, login string) (string, error) {
	p := is.pull
	defTitle, defMessage := fmt.Sprintf("Merge pull request #%d from %s/%s", is.number, p.headOwner, p.head), is.title
	if method != "merge" {
		defTitle, defMessage = fmt.Sprintf("%s (#%d)", is.title, is.number), ""
	}
	if title == nil {
		title = &defTitle
	}
	if message == nil {
		message = &defMessage
	}
	base := s.baseSHA(is)
	commit := sha(fmt.Sprintf("%s:%s:%s", method, base, head))
	if s.remote != "" && hasCommit(s.remote, base) && hasCommit(s.remote, head) {
		var err error
		if commit, err = gitMerge(s.remote, p.base, base, head, method, *title, *message, login); err != nil {
			return "", err
		}
	}
	now := s.now()
	p.merged, p.mergedAt, p.mergedBy, p.mergeMethod = true, now, login, method
	p.mergeCommit, p.mergedHead, p.mergedBase = commit, head, base
	is.events = append(is.events, &event{id: s.newID(), event: "merged", actor: login, commit: commit, created: now})
	s.setState(is, "closed", "", login, now)
	s.closeReferenced(is, commit, login, now)
	return commit, nil
}
