package github

import (
	"context"
	"fmt"
	"strings"

	gh "github.com/google/go-github/v62/github"
	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/contract"
)

// OpenIssue returns the issue of in.Repo that the worker opened for what
// in.Marker names (a change set's member), or opens it: once however
// often it is retried, since it looks first among the issues the worker's
// own login opened, open or closed, for the one whose body carries the
// marker. An issue of anyone else that carries the marker is never taken.
// The body is brought up to date when it changed.
func (a *Activities) OpenIssue(ctx context.Context, in contract.OpenIssueInput) (contract.Issue, error) {
	if in.Self == "" || in.Marker == "" {
		return contract.Issue{}, temporal.NewNonRetryableApplicationError(
			"open an issue: the worker's login and the issue's marker are needed to open it once", contract.ErrTypeGitHubInvalid, nil)
	}
	c, err := a.client(in.Repo)
	if err != nil {
		return contract.Issue{}, err
	}
	body := strings.TrimSpace(in.Body) + "\n\n" + in.Marker
	is, err := c.ownIssue(ctx, in.Self, in.Marker)
	if err != nil {
		return contract.Issue{}, err
	}
	if is == nil {
		if err := c.write(ctx); err != nil {
			return contract.Issue{}, err
		}
		req := &gh.IssueRequest{Title: &in.Title, Body: &body}
		if len(in.Labels) > 0 {
			req.Labels = &in.Labels
		}
		if is, _, err = c.Issues.Create(ctx, in.Repo.Owner, in.Repo.Name, req); err != nil {
			return contract.Issue{}, c.fail("open an issue in "+in.Repo.FullName(), err)
		}
	} else if is.GetBody() != body || is.GetTitle() != in.Title {
		if err := c.write(ctx); err != nil {
			return contract.Issue{}, err
		}
		if is, _, err = c.Issues.Edit(ctx, in.Repo.Owner, in.Repo.Name, is.GetNumber(), &gh.IssueRequest{Title: &in.Title, Body: &body}); err != nil {
			return contract.Issue{}, c.fail(fmt.Sprintf("edit issue #%d", is.GetNumber()), err)
		}
	}
	return contract.Issue{Number: is.GetNumber(), Title: is.GetTitle(), URL: is.GetHTMLURL(), LabeledBy: in.Self}, nil
}

// ownIssue is the issue (not a pull request) that login opened in c's
// repository whose body carries marker, or nil.
func (c *client) ownIssue(ctx context.Context, login, marker string) (*gh.Issue, error) {
	opts := &gh.IssueListByRepoOptions{Creator: login, State: "all", ListOptions: gh.ListOptions{PerPage: 100}}
	for page := 0; page < maxListPages*4; page++ {
		list, resp, err := c.Issues.ListByRepo(ctx, c.repo.Owner, c.repo.Name, opts)
		if err != nil {
			return nil, c.fail("list the issues of "+c.repo.FullName(), err)
		}
		for _, is := range list {
			if !is.IsPullRequest() && strings.EqualFold(is.GetUser().GetLogin(), login) && strings.Contains(is.GetBody(), marker) {
				return is, nil
			}
		}
		if resp.NextPage == 0 {
			return nil, nil
		}
		opts.Page = resp.NextPage
	}
	return nil, nil
}

// ClosePull closes an open pull request, first commenting why (one
// comment, found again by in.Marker): a retry, or a pull request that is
// closed or merged already, changes nothing more. It reports whether
// the pull request is closed unmerged now.
func (a *Activities) ClosePull(ctx context.Context, in contract.ClosePullInput) (bool, error) {
	c, err := a.client(in.Repo)
	if err != nil {
		return false, err
	}
	pr, _, err := c.PullRequests.Get(ctx, in.Repo.Owner, in.Repo.Name, in.Number)
	if err != nil {
		return false, c.fail(fmt.Sprintf("read pull request #%d", in.Number), err)
	}
	if pr.GetMerged() {
		return false, nil
	}
	if pr.GetState() == "closed" {
		return true, nil
	}
	if _, err := a.Comment(ctx, contract.CommentInput{Repo: in.Repo, Number: in.Number, Marker: in.Marker, Body: in.Why, Self: in.Self}); err != nil {
		return false, err
	}
	if err := c.write(ctx); err != nil {
		return false, err
	}
	closed := "closed"
	if _, _, err := c.PullRequests.Edit(ctx, in.Repo.Owner, in.Repo.Name, in.Number, &gh.PullRequest{State: &closed}); err != nil {
		return false, c.fail(fmt.Sprintf("close pull request #%d", in.Number), err)
	}
	return true, nil
}
