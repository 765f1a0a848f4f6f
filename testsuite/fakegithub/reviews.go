package fakegithub

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

const (
	docsReviewComments = "https://docs.github.com/rest/pulls/comments#create-a-review-comment-for-a-pull-request"
	docsReviewRequests = "https://docs.github.com/rest/pulls/review-requests#request-reviewers-for-a-pull-request"
)

var reviewStates = []string{"APPROVED", "CHANGES_REQUESTED", "COMMENTED"}

// Review is a snapshot of a pull request review.
type Review struct {
	ID     int64
	Author string
	// State is "APPROVED", "CHANGES_REQUESTED" or "COMMENTED".
	State string
	Body  string
	// CommitID is the pull request's head when the review was submitted.
	CommitID    string
	SubmittedAt time.Time
}

// ReviewComment is a review comment: a comment on a line of a file of a
// pull request's head, or a reply in its thread. AddReview reads Path,
// Line and Body; ReviewComments fills in every field.
type ReviewComment struct {
	Path string
	Line int // from 1, on the right side of the diff
	Body string

	ID       int64
	ReviewID int64
	// InReplyTo is the ID of the first comment of the thread of a reply;
	// 0 for a first comment.
	InReplyTo int64
	Author    string
	// CommitID is the head the comment is on.
	CommitID  string
	CreatedAt time.Time
}

type review struct {
	id                          int64
	author, state, body, commit string
	submitted                   time.Time
}

type reviewComment struct {
	id, review, inReplyTo            int64
	number, line, position           int
	author, path, body, commit, hunk string
	created                          time.Time
}

// AddReview submits a review of pull request pull by author, now, on its
// current head: state is "APPROVED", "CHANGES_REQUESTED" or "COMMENTED",
// and comments are its inline comments. It returns the review's ID and
// those of its comments, in order. The author stops being a requested
// reviewer, as on GitHub.
//
// Each comment's diff_hunk ends with its line, as an added line after up
// to three lines before it, read from the head in the remote (see
// SetRemote); without a remote, or for a line the file lacks, it is a
// fixed hunk of one changed line.
//
// AddReview panics if there is no such pull request, on any other state,
// for a comment without a path or a line, and, as GitHub refuses them, for
// an approval or a request for changes by the pull request's author.
func (s *Server) AddReview(pull int, author, state, body string, comments ...ReviewComment) (reviewID int64, commentIDs []int64) {
	if !slices.Contains(reviewStates, state) {
		panic(fmt.Sprintf("fakegithub: unknown review state %q", state))
	}
	for _, rc := range comments {
		if rc.Path == "" || rc.Line < 1 {
			panic(fmt.Sprintf("fakegithub: a review comment needs a path and a line from 1 (got %q, %d)", rc.Path, rc.Line))
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	is := s.mustPull(pull)
	if state != "COMMENTED" && strings.EqualFold(author, is.author) {
		panic(fmt.Sprintf("fakegithub: %s cannot review their own pull request #%d with %s", author, pull, state))
	}
	r := s.addReview(is, author, state, body)
	for _, rc := range comments {
		commentIDs = append(commentIDs, s.addReviewComment(is, r, rc.Path, rc.Line, rc.Body, nil).id)
	}
	return r.id, commentIDs
}

// AddReviewComment adds a lone review comment by author on line of path
// of pull request pull's head, now, and returns its ID. As on GitHub it
// comes with a review of its own, "COMMENTED" without a body. It panics
// like AddReview.
func (s *Server) AddReviewComment(pull int, author, path string, line int, body string) int64 {
	_, ids := s.AddReview(pull, author, "COMMENTED", "", ReviewComment{Path: path, Line: line, Body: body})
	return ids[0]
}

// Reviews returns copies of the reviews of pull request pull, oldest
// first. It panics if there is no such pull request.
func (s *Server) Reviews(pull int) []Review {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Review
	for _, r := range s.mustPull(pull).pull.reviews {
		out = append(out, Review{ID: r.id, Author: r.author, State: r.state, Body: r.body, CommitID: r.commit, SubmittedAt: r.submitted})
	}
	return out
}

// ReviewComments returns copies of the review comments of pull request
// pull, replies included, oldest first. It panics if there is no such pull
// request.
func (s *Server) ReviewComments(pull int) []ReviewComment {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ReviewComment
	for _, rc := range s.mustPull(pull).pull.reviewComments {
		out = append(out, ReviewComment{
			Path: rc.path, Line: rc.line, Body: rc.body,
			ID: rc.id, ReviewID: rc.review, InReplyTo: rc.inReplyTo,
			Author: rc.author, CommitID: rc.commit, CreatedAt: rc.created,
		})
	}
	return out
}

// ReviewRequests returns the logins of every review request of pull
// request pull, in order, a login again each time it was requested again.
// It panics if there is no such pull request.
func (s *Server) ReviewRequests(pull int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.mustPull(pull).pull.requests)
}

// addReview adds a review of is by author on its head, now.
func (s *Server) addReview(is *issue, author, state, body string) *review {
	now := s.now()
	r := &review{id: s.newID(), author: author, state: state, body: body, commit: s.headSHA(is), submitted: now}
	is.pull.reviews = append(is.pull.reviews, r)
	is.pull.requested = slices.DeleteFunc(is.pull.requested, func(l string) bool { return strings.EqualFold(l, author) })
	is.updated = now
	return r
}

// addReviewComment adds a comment of review r on line of path of the
// review's commit, or, with root, a reply in root's thread.
func (s *Server) addReviewComment(is *issue, r *review, path string, line int, body string, root *reviewComment) *reviewComment {
	rc := &reviewComment{
		id: s.newID(), review: r.id, number: is.number, line: line,
		author: r.author, path: path, body: body, commit: r.commit, created: r.submitted,
	}
	if root != nil {
		rc.inReplyTo, rc.line, rc.position = root.id, root.line, root.position
		rc.path, rc.commit, rc.hunk = root.path, root.commit, root.hunk
	} else {
		rc.hunk, rc.position = s.diffHunk(rc.commit, path, line)
	}
	is.pull.reviewComments = append(is.pull.reviewComments, rc)
	return rc
}

// diffHunk is the diff_hunk of a comment on line of path at commit, and
// the comment's position in it (see AddReview).
func (s *Server) diffHunk(commit, path string, line int) (string, int) {
	if s.remote != "" {
		if data, ok := fileAt(s.remote, commit, path); ok {
			lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
			if line <= len(lines) {
				from := max(1, line-3)
				oldStart := from
				if from == line {
					oldStart-- // no old lines: the range starts before the first
				}
				var b strings.Builder
				fmt.Fprintf(&b, "@@ -%d,%d +%d,%d @@", oldStart, line-from, from, line-from+1)
				for _, l := range lines[from-1 : line-1] {
					b.WriteString("\n " + l)
				}
				b.WriteString("\n+" + lines[line-1])
				return b.String(), line - from + 1
			}
		}
	}
	return fmt.Sprintf("@@ -%d,1 +%d,1 @@\n-old line %d\n+new line %d", line, line, line, line), 2
}

// findReviewComment is the review comment id of pull request is.
func findReviewComment(is *issue, id int64) *reviewComment {
	i := slices.IndexFunc(is.pull.reviewComments, func(rc *reviewComment) bool { return rc.id == id })
	if i < 0 {
		return nil
	}
	return is.pull.reviewComments[i]
}

// listReviews is GET /repos/{o}/{r}/pulls/{n}/reviews.
func (s *Server) listReviews(c *call) *reply {
	list := make([]any, 0, len(c.issue.pull.reviews))
	for _, r := range c.issue.pull.reviews {
		list = append(list, s.reviewJSON(c.issue, r))
	}
	return s.paginated(c.r, list)
}

// listReviewComments is GET /repos/{o}/{r}/pulls/{n}/comments, oldest
// first.
func (s *Server) listReviewComments(c *call) *reply {
	list := make([]any, 0, len(c.issue.pull.reviewComments))
	for _, rc := range c.issue.pull.reviewComments {
		list = append(list, s.reviewCommentJSON(rc))
	}
	return s.paginated(c.r, list)
}

// createReviewComment is POST /repos/{o}/{r}/pulls/{n}/comments: a reply
// with in_reply_to (what go-github's CreateCommentInReplyTo sends), else a
// lone comment on line (right side) of path of the head, by the token's
// user, in a review of its own. commit_id, side and the multi-line fields
// are ignored.
func (s *Server) createReviewComment(c *call) *reply {
	var in struct {
		Body      *string `json:"body"`
		InReplyTo int64   `json:"in_reply_to"`
		Path      string  `json:"path"`
		Line      int     `json:"line"`
	}
	if rep := decode(c.body, &in); rep != nil {
		return rep
	}
	if in.Body == nil || *in.Body == "" {
		return validationFailed(docsReviewComments, missingField("PullRequestReviewComment", "body"))
	}
	if in.InReplyTo != 0 {
		return s.replyTo(c.issue, in.InReplyTo, *in.Body)
	}
	var errs []map[string]any
	if in.Path == "" {
		errs = append(errs, missingField("PullRequestReviewComment", "path"))
	}
	if in.Line < 1 {
		errs = append(errs, missingField("PullRequestReviewComment", "line"))
	}
	if len(errs) > 0 {
		return validationFailed(docsReviewComments, errs...)
	}
	r := s.addReview(c.issue, s.bot, "COMMENTED", "")
	rc := s.addReviewComment(c.issue, r, in.Path, in.Line, *in.Body, nil)
	return s.created(s.reviewCommentJSON(rc), "pulls/comments/%d", rc.id)
}

// replyToReviewComment is POST
// /repos/{o}/{r}/pulls/{n}/comments/{id}/replies.
func (s *Server) replyToReviewComment(c *call) *reply {
	var in struct {
		Body *string `json:"body"`
	}
	if rep := decode(c.body, &in); rep != nil {
		return rep
	}
	if in.Body == nil || *in.Body == "" {
		return validationFailed(docsReviewComments, missingField("PullRequestReviewComment", "body"))
	}
	return s.replyTo(c.issue, c.id, *in.Body)
}

// replyTo answers a reply by the token's user to review comment id of
// pull request is: 404 if the pull request has no such comment. As on
// GitHub the reply comes with a review of its own, "COMMENTED" without a
// body. A reply to a reply joins the thread: its in_reply_to_id is the
// thread's first comment (GitHub does not support replies to replies).
func (s *Server) replyTo(is *issue, id int64, body string) *reply {
	root := findReviewComment(is, id)
	if root == nil {
		return notFound()
	}
	if root.inReplyTo != 0 {
		if first := findReviewComment(is, root.inReplyTo); first != nil {
			root = first
		}
	}
	r := s.addReview(is, s.bot, "COMMENTED", "")
	rc := s.addReviewComment(is, r, "", 0, body, root)
	return s.created(s.reviewCommentJSON(rc), "pulls/comments/%d", rc.id)
}

// listRequestedReviewers is GET /repos/{o}/{r}/pulls/{n}/requested_reviewers.
func (s *Server) listRequestedReviewers(c *call) *reply {
	return jsonReply(http.StatusOK, map[string]any{"users": s.requestedJSON(c.issue), "teams": []any{}})
}

// requestReviewers is POST /repos/{o}/{r}/pulls/{n}/requested_reviewers:
// 422 if a reviewer is the pull request's author or not a collaborator.
// team_reviewers are accepted and ignored.
func (s *Server) requestReviewers(c *call) *reply {
	var in struct {
		Reviewers []string `json:"reviewers"`
	}
	if rep := decode(c.body, &in); rep != nil {
		return rep
	}
	for _, login := range in.Reviewers {
		if strings.EqualFold(login, c.issue.author) {
			return errorReply(http.StatusUnprocessableEntity, "Review cannot be requested from pull request author.", docsReviewRequests)
		}
		if s.role(login) == "none" {
			return errorReply(http.StatusUnprocessableEntity, fmt.Sprintf(
				"Reviews may only be requested from collaborators. One or more of the users or teams you specified is not a collaborator of the %s/%s repository.",
				s.owner, s.name), docsReviewRequests)
		}
	}
	p := c.issue.pull
	for _, login := range in.Reviewers {
		p.requests = append(p.requests, login)
		if !containsFold(p.requested, login) {
			p.requested = append(p.requested, login)
		}
	}
	if len(in.Reviewers) > 0 {
		c.issue.updated = s.now()
	}
	return jsonReply(http.StatusCreated, s.pullJSON(c.issue))
}
