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
// closed or merged already, changes nothing more. Without a number it
// closes the open pull request of in.Head that in.Self opened, if there
// is one. It reports the pull request and whether it was merged.
func (a *Activities) ClosePull(ctx context.Context, in contract.ClosePullInput) (contract.ClosedPull, error) {
	c, err := a.client(in.Repo)
	if err != nil {
		return contract.ClosedPull{}, err
	}
	var pr *gh.PullRequest
	if in.Number == 0 {
		if pr, err = c.findPull(ctx, contract.PullInput{Repo: in.Repo, Head: in.Head}); err != nil || pr == nil {
			return contract.ClosedPull{}, err
		}
		if in.Self != "" && !strings.EqualFold(pr.GetUser().GetLogin(), in.Self) {
			// Someone else's pull request from that branch is theirs.
			return contract.ClosedPull{}, nil
		}
		in.Number = pr.GetNumber()
	} else if pr, _, err = c.PullRequests.Get(ctx, in.Repo.Owner, in.Repo.Name, in.Number); err != nil {
		return contract.ClosedPull{}, c.fail(fmt.Sprintf("read pull request #%d", in.Number), err)
	}
	out := contract.ClosedPull{Number: in.Number, URL: pr.GetHTMLURL(), Merged: pr.GetMerged()}
	if pr.GetMerged() || pr.GetState() == "closed" {
		return out, nil
	}
	if _, err := a.Comment(ctx, contract.CommentInput{Repo: in.Repo, Number: in.Number, Marker: in.Marker, Body: in.Why, Self: in.Self}); err != nil {
		return contract.ClosedPull{}, err
	}
	if err := c.write(ctx); err != nil {
		return contract.ClosedPull{}, err
	}
	closed := "closed"
	if _, _, err := c.PullRequests.Edit(ctx, in.Repo.Owner, in.Repo.Name, in.Number, &gh.PullRequest{State: &closed}); err != nil {
		return contract.ClosedPull{}, c.fail(fmt.Sprintf("close pull request #%d", in.Number), err)
	}
	return out, nil
}

// CloseIssue closes an issue as completed: that a merged change set came
// from. One that is closed already is left as it is.
func (a *Activities) CloseIssue(ctx context.Context, in contract.ReadInput) error {
	c, err := a.client(in.Repo)
	if err != nil {
		return err
	}
	is, _, err := c.Issues.Get(ctx, in.Repo.Owner, in.Repo.Name, in.Number)
	if err != nil {
		return c.fail(fmt.Sprintf("read issue #%d", in.Number), err)
	}
	if is.GetState() == "closed" {
		return nil
	}
	if err := c.write(ctx); err != nil {
		return err
	}
	closed, reason := "closed", "completed"
	if _, _, err := c.Issues.Edit(ctx, in.Repo.Owner, in.Repo.Name, in.Number, &gh.IssueRequest{State: &closed, StateReason: &reason}); err != nil {
		return c.fail(fmt.Sprintf("close issue #%d", in.Number), err)
	}
	return nil
}
