package github

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	gh "github.com/google/go-github/v62/github"
	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/contract"
)

const (
	// MaxFeedback bounds the feedback of one reading of a pull request,
	// and MaxIgnored the comments it ignores: the oldest come first, the
	// rest with a later reading, once the follower addressed these.
	MaxFeedback = 50
	MaxIgnored  = 50
	// maxPages bounds each listing of one reading of a pull request:
	// 2,000 check runs, statuses, reviews or comments of each kind.
	maxPages = 20
	// diffHunkLimit caps the diff hunk an inline comment brings, of
	// which the end, where the commented line is, is kept.
	diffHunkLimit = 2 << 10
	// hiddenMarker starts the hidden line of everything the queue
	// writes.
	hiddenMarker = "<!-- ralph:"
)

// pages gathers a listing of up to maxPages pages of 100, from the first.
func pages[T any](list func(gh.ListOptions) ([]T, *gh.Response, error)) ([]T, error) {
	var all []T
	opts := gh.ListOptions{PerPage: 100}
	for range maxPages {
		items, resp, err := list(opts)
		if err != nil {
			return nil, err
		}
		all = append(all, items...)
		if resp == nil || resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	return all, nil
}

// PullState reads what a pull request needs now: its state, the checks
// of its head (the output of failed ones redacted and cut to
// contract.FailedCheckOutputLimit together), whether people with write
// access approved it or asked for changes, and the feedback no round
// answered yet.
//
// Feedback is what people whose permission is write, maintain or admin
// now, and the bots of in.TrustedBots, said: reviews that ask for
// changes or comment with a text, inline review comments (replies
// included) and conversation comments, oldest first, at most
// MaxFeedback of them, each cleaned of hidden text and clipped to
// contract.FeedbackBodyLimit. What in.Self wrote, what carries the
// queue's hidden marker and the IDs of in.Addressed are left out; what
// others said is Ignored, with the reason, at most MaxIgnored of it.
//
// A pull request that is closed (merged or not) is read no further than
// its state. Requests counts the HTTP requests the reading sent, the
// download of job logs included.
func (a *Activities) PullState(ctx context.Context, in contract.PullStateInput) (contract.PullState, error) {
	c, err := a.client(in.Repo)
	if err != nil {
		return contract.PullState{}, err
	}
	pr, _, err := c.PullRequests.Get(ctx, in.Repo.Owner, in.Repo.Name, in.Number)
	if err != nil {
		return contract.PullState{}, c.fail(fmt.Sprintf("read pull request #%d", in.Number), err)
	}
	out := contract.PullState{
		State:          pr.GetState(),
		Merged:         pr.GetMerged(),
		MergedBy:       pr.GetMergedBy().GetLogin(),
		Head:           pr.GetHead().GetSHA(),
		HeadRef:        pr.GetHead().GetRef(),
		Mergeable:      pr.Mergeable,
		MergeableState: pr.GetMergeableState(),
	}
	if out.State != "open" {
		out.Requests = c.requests()
		return out, nil
	}
	if out.Checks, err = c.checks(ctx, out.Head); err != nil {
		return contract.PullState{}, err
	}
	perms := permissions{c: c, known: map[string]string{}}
	reviews, err := pages(func(opts gh.ListOptions) ([]*gh.PullRequestReview, *gh.Response, error) {
		return c.PullRequests.ListReviews(ctx, in.Repo.Owner, in.Repo.Name, in.Number, &opts)
	})
	if err != nil {
		return contract.PullState{}, c.fail(fmt.Sprintf("list the reviews of #%d", in.Number), err)
	}
	if out.Approved, out.ChangesRequested, err = decision(ctx, perms, reviews); err != nil {
		return contract.PullState{}, err
	}
	inline, err := c.reviewComments(ctx, in.Number)
	if err != nil {
		return contract.PullState{}, err
	}
	comments, err := c.issueComments(ctx, in.Number)
	if err != nil {
		return contract.PullState{}, err
	}
	out.Feedback, out.Ignored, err = sift(ctx, perms, in, said(reviews, inline, comments))
	if err != nil {
		return contract.PullState{}, err
	}
	out.Requests = c.requests()
	return out, nil
}

// issueComments lists the comments of issue (or pull request) number,
// oldest first: its conversation, not the inline review comments.
func (c *client) issueComments(ctx context.Context, number int) ([]*gh.IssueComment, error) {
	all, err := pages(func(opts gh.ListOptions) ([]*gh.IssueComment, *gh.Response, error) {
		return c.Issues.ListComments(ctx, c.repo.Owner, c.repo.Name, number, &gh.IssueListCommentsOptions{
			Sort: gh.String("created"), Direction: gh.String("asc"), ListOptions: opts,
		})
	})
	if err != nil {
		return nil, c.fail(fmt.Sprintf("list the comments of #%d", number), err)
	}
	return all, nil
}

// reviewComments lists the inline review comments of pull request
// number, oldest first.
func (c *client) reviewComments(ctx context.Context, number int) ([]*gh.PullRequestComment, error) {
	all, err := pages(func(opts gh.ListOptions) ([]*gh.PullRequestComment, *gh.Response, error) {
		return c.PullRequests.ListComments(ctx, c.repo.Owner, c.repo.Name, number, &gh.PullRequestListCommentsOptions{
			Sort: "created", Direction: "asc", ListOptions: opts,
		})
	})
	if err != nil {
		return nil, c.fail(fmt.Sprintf("list the review comments of #%d", number), err)
	}
	return all, nil
}

// decision is what the latest reviews of people with write access say:
// approved when one approves and none asks for changes. A person's
// latest approval or request for changes counts; a comment changes
// nothing, and a dismissed review withdraws the person's decision.
func decision(ctx context.Context, perms permissions, reviews []*gh.PullRequestReview) (approved, changes bool, err error) {
	reviews = slices.Clone(reviews)
	slices.SortStableFunc(reviews, func(a, b *gh.PullRequestReview) int {
		return a.GetSubmittedAt().Compare(b.GetSubmittedAt().Time)
	})
	latest := map[string]string{}
	var order []string
	for _, r := range reviews {
		login := r.GetUser().GetLogin()
		switch r.GetState() {
		case "APPROVED", "CHANGES_REQUESTED":
			if _, ok := latest[login]; !ok {
				order = append(order, login)
			}
			latest[login] = r.GetState()
		case "DISMISSED":
			latest[login] = ""
		}
	}
	for _, login := range order {
		state := latest[login]
		if state == "" || login == "" {
			continue
		}
		ok, _, err := perms.canWrite(ctx, login)
		if err != nil {
			return false, false, err
		}
		if !ok {
			continue
		}
		approved = approved || state == "APPROVED"
		changes = changes || state == "CHANGES_REQUESTED"
	}
	return approved && !changes, changes, nil
}

// remark is something said on a pull request, before it is sifted.
type remark struct {
	fb   contract.Feedback
	user *gh.User
	at   time.Time
	// raw is the text as written.
	raw string
}

// said gathers what the reviews and comments of a pull request say,
// oldest first: reviews that ask for changes or comment with a text,
// inline comments and conversation comments.
func said(reviews []*gh.PullRequestReview, inline []*gh.PullRequestComment, comments []*gh.IssueComment) []remark {
	var out []remark
	for _, r := range reviews {
		state := r.GetState()
		if (state != "CHANGES_REQUESTED" && state != "COMMENTED") || strings.TrimSpace(r.GetBody()) == "" {
			continue
		}
		out = append(out, remark{
			fb:   contract.Feedback{ID: r.GetID(), Kind: contract.FeedbackReview, State: state, URL: r.GetHTMLURL()},
			user: r.GetUser(), at: r.GetSubmittedAt().Time, raw: r.GetBody(),
		})
	}
	for _, cm := range inline {
		line := cm.GetLine()
		if line == 0 {
			line = cm.GetOriginalLine()
		}
		out = append(out, remark{
			fb: contract.Feedback{ID: cm.GetID(), Kind: contract.FeedbackInline, Path: cm.GetPath(), Line: line,
				DiffHunk: tail(cm.GetDiffHunk(), diffHunkLimit), URL: cm.GetHTMLURL()},
			user: cm.GetUser(), at: cm.GetCreatedAt().Time, raw: cm.GetBody(),
		})
	}
	for _, cm := range comments {
		out = append(out, remark{
			fb:   contract.Feedback{ID: cm.GetID(), Kind: contract.FeedbackComment, URL: cm.GetHTMLURL()},
			user: cm.GetUser(), at: cm.GetCreatedAt().Time, raw: cm.GetBody(),
		})
	}
	slices.SortStableFunc(out, func(a, b remark) int {
		return cmp.Or(a.at.Compare(b.at), cmp.Compare(a.fb.ID, b.fb.ID))
	})
	return out
}

// sift sorts what was said into feedback and what is ignored, and why
// (see PullState).
func sift(ctx context.Context, perms permissions, in contract.PullStateInput, said []remark) ([]contract.Feedback, []contract.Ignored, error) {
	addressed := make(map[string]bool, len(in.Addressed))
	for _, key := range in.Addressed {
		addressed[key] = true
	}
	var feedback []contract.Feedback
	var ignored []contract.Ignored
	for _, r := range said {
		login := r.user.GetLogin()
		if addressed[contract.FeedbackKey(r.fb.Kind, r.fb.ID)] || strings.Contains(r.raw, hiddenMarker) ||
			(in.Self != "" && botName(login) == botName(in.Self)) {
			continue
		}
		text := strings.TrimSpace(Clean(r.raw))
		if text == "" {
			continue
		}
		why, err := distrust(ctx, perms, r.user, in.TrustedBots)
		if err != nil {
			return nil, nil, err
		}
		if why != "" {
			if len(ignored) < MaxIgnored {
				ignored = append(ignored, contract.Ignored{ID: r.fb.ID, Author: login, Kind: r.fb.Kind, Why: why})
			}
			continue
		}
		fb := r.fb
		fb.Author = login
		fb.Body = clip(text, contract.FeedbackBodyLimit)
		feedback = append(feedback, fb)
		if len(feedback) == MaxFeedback {
			break
		}
	}
	return feedback, ignored, nil
}

// distrust says why what u wrote is no feedback, "" when it is: u is a
// bot of trusted or has write access now.
func distrust(ctx context.Context, perms permissions, u *gh.User, trusted []string) (string, error) {
	login := u.GetLogin()
	switch {
	case login == "":
		return "no author (a deleted account)", nil
	case slices.ContainsFunc(trusted, func(b string) bool { return botName(b) == botName(login) }):
		return "", nil
	case u.GetType() == "Bot" || strings.HasSuffix(strings.ToLower(login), "[bot]"):
		return "bot not in queue.trusted-bots", nil
	}
	ok, level, err := perms.canWrite(ctx, login)
	switch {
	case err != nil:
		return "", err
	case ok:
		return "", nil
	case level == "none":
		return "no access to the repository", nil
	}
	return level + " permission", nil
}

// botName is a login as a bot list names it: lower case, without
// "[bot]".
func botName(login string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(login)), "[bot]")
}

// clip keeps the start of a comment's text in at most limit bytes,
// saying so when it cut.
func clip(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	note := fmt.Sprintf("\n\n[clipped: the comment is %d bytes long; read it whole on GitHub]", len(s))
	keep := max(limit-len(note), 0)
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return s[:keep] + note
}

// ReplyToComment replies to an inline review comment, exactly once: a
// reply that carries contract.ReplyMarker(in.CommentID) ends it. GitHub
// takes replies to a thread's first comment only, so the reply to a
// reply goes to its thread. A comment that no longer exists (a person
// deleted it) needs no answer: that is no error.
func (a *Activities) ReplyToComment(ctx context.Context, in contract.ReplyInput) error {
	c, err := a.client(in.Repo)
	if err != nil {
		return err
	}
	comments, err := c.reviewComments(ctx, in.Pull)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(comments, func(cm *gh.PullRequestComment) bool { return cm.GetID() == in.CommentID })
	var target *gh.PullRequestComment
	if i >= 0 {
		target = comments[i]
	} else {
		// Beyond the listing's pages, or deleted.
		target, _, err = c.PullRequests.GetComment(ctx, in.Repo.Owner, in.Repo.Name, in.CommentID)
		if status(err) == 404 {
			return nil
		}
		if err != nil {
			return c.fail(fmt.Sprintf("read review comment %d", in.CommentID), err)
		}
	}
	thread := target.GetInReplyTo()
	if thread == 0 {
		thread = target.GetID()
	}
	marker := contract.ReplyMarker(in.CommentID)
	for _, cm := range comments {
		if cm.GetInReplyTo() == thread && strings.Contains(cm.GetBody(), marker) {
			return nil
		}
	}
	if err := c.write(ctx); err != nil {
		return err
	}
	body := marker + "\n" + strings.TrimSpace(in.Body)
	_, _, err = c.PullRequests.CreateCommentInReplyTo(ctx, in.Repo.Owner, in.Repo.Name, in.Pull, body, thread)
	if err != nil && status(err) != 404 {
		return c.fail(fmt.Sprintf("reply to review comment %d on #%d", in.CommentID, in.Pull), err)
	}
	return nil
}

// RequestReviewers asks in.Reviewers to review a pull request (again).
// GitHub takes a second request for a review as the first, so a retry
// changes nothing. GitHub refuses the whole request (422) when one of the
// reviewers is the pull request's author or no collaborator: each is then
// asked alone, and those GitHub refuses are left out. Only when GitHub
// refuses them all is that an error, not retryable, naming each and why;
// when some were asked, the others are dropped without a word.
func (a *Activities) RequestReviewers(ctx context.Context, in contract.ReviewersInput) error {
	var logins []string
	for _, r := range in.Reviewers {
		r = strings.TrimPrefix(strings.TrimSpace(r), "@")
		if r != "" && !slices.ContainsFunc(logins, func(l string) bool { return strings.EqualFold(l, r) }) {
			logins = append(logins, r)
		}
	}
	if len(logins) == 0 {
		return nil
	}
	c, err := a.client(in.Repo)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("ask %s to review #%d", strings.Join(logins, ", "), in.Pull)
	err = c.requestReviews(ctx, in.Pull, logins)
	if err == nil {
		return nil
	}
	if status(err) != 422 {
		return c.fail(what, err)
	}
	var refused []string
	if len(logins) == 1 {
		refused = append(refused, fmt.Sprintf("@%s: %s", logins[0], refusal(err)))
	} else {
		for _, login := range logins {
			err := c.requestReviews(ctx, in.Pull, []string{login})
			switch {
			case status(err) == 422:
				refused = append(refused, fmt.Sprintf("@%s: %s", login, refusal(err)))
			case err != nil:
				return c.fail(fmt.Sprintf("ask @%s to review #%d", login, in.Pull), err)
			}
		}
	}
	if len(refused) < len(logins) {
		return nil
	}
	return temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("GitHub %s (%s): it refused every reviewer: %s", what, in.Repo.FullName(), strings.Join(refused, "; ")),
		contract.ErrTypeGitHubInvalid, nil)
}

// requestReviews asks logins to review pull request number.
func (c *client) requestReviews(ctx context.Context, number int, logins []string) error {
	if err := c.write(ctx); err != nil {
		return err
	}
	_, _, err := c.PullRequests.RequestReviewers(ctx, c.repo.Owner, c.repo.Name, number, gh.ReviewersRequest{Reviewers: logins})
	return err
}

// refusal is GitHub's message of an error response.
func refusal(err error) string {
	var er *gh.ErrorResponse
	if !errors.As(err, &er) {
		return err.Error()
	}
	return er.Message + errorDetails(er)
}

// MergePull merges a pull request at in.Head with in.Method, once: a
// pull request that is merged already (a retry after a lost answer, or a
// person was quicker) is merged, with its merge commit, and a closed one
// is refused ("closed"), as is one whose head is no longer in.Head. When
// GitHub will not merge (405: not mergeable, a review or check missing;
// 409: the head moved), its reason is Refused and no error: the workflow
// decides what next. Other failures are errors.
func (a *Activities) MergePull(ctx context.Context, in contract.MergeInput) (contract.MergeResult, error) {
	c, err := a.client(in.Repo)
	if err != nil {
		return contract.MergeResult{}, err
	}
	read := func() (*gh.PullRequest, error) {
		pr, _, err := c.PullRequests.Get(ctx, in.Repo.Owner, in.Repo.Name, in.Pull)
		if err != nil {
			return nil, c.fail(fmt.Sprintf("read pull request #%d", in.Pull), err)
		}
		return pr, nil
	}
	pr, err := read()
	if err != nil {
		return contract.MergeResult{}, err
	}
	switch head := pr.GetHead().GetSHA(); {
	case pr.GetMerged():
		return contract.MergeResult{Merged: true, SHA: pr.GetMergeCommitSHA()}, nil
	case pr.GetState() == "closed":
		return contract.MergeResult{Refused: "closed"}, nil
	case in.Head != "" && head != in.Head:
		return contract.MergeResult{Refused: fmt.Sprintf("the head moved to %s", contract.ShortSHA(head))}, nil
	}
	if err := c.write(ctx); err != nil {
		return contract.MergeResult{}, err
	}
	m, _, err := c.PullRequests.Merge(ctx, in.Repo.Owner, in.Repo.Name, in.Pull, "", &gh.PullRequestOptions{
		CommitTitle: in.Title, SHA: in.Head, MergeMethod: in.Method,
	})
	if s := status(err); s == 405 || s == 409 {
		if pr, rerr := read(); rerr == nil && pr.GetMerged() {
			return contract.MergeResult{Merged: true, SHA: pr.GetMergeCommitSHA()}, nil
		}
		return contract.MergeResult{Refused: refusal(err)}, nil
	}
	if err != nil {
		return contract.MergeResult{}, c.fail(fmt.Sprintf("merge pull request #%d", in.Pull), err)
	}
	if !m.GetMerged() {
		return contract.MergeResult{Refused: m.GetMessage()}, nil
	}
	return contract.MergeResult{Merged: true, SHA: m.GetSHA()}, nil
}
