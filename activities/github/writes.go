package github

import (
	"context"
	"errors"
	"fmt"
	"strings"

	gh "github.com/google/go-github/v62/github"

	"github.com/durable-ralph/ralph/contract"
)

// SetLabels adds and removes labels of an issue. Both are idempotent, so
// a retry after a lost response changes nothing twice. Labels that the
// repository does not have yet are created by GitHub.
func (a *Activities) SetLabels(ctx context.Context, in contract.LabelsInput) error {
	c, err := a.client(in.Repo)
	if err != nil {
		return err
	}
	if len(in.Add) > 0 {
		if err := c.write(ctx); err != nil {
			return err
		}
		if _, _, err := c.Issues.AddLabelsToIssue(ctx, in.Repo.Owner, in.Repo.Name, in.Number, in.Add); err != nil {
			return c.fail(fmt.Sprintf("label #%d %s", in.Number, strings.Join(in.Add, ", ")), err)
		}
	}
	if len(in.Remove) == 0 {
		return nil
	}
	is, _, err := c.Issues.Get(ctx, in.Repo.Owner, in.Repo.Name, in.Number)
	if err != nil {
		return c.fail(fmt.Sprintf("read issue #%d", in.Number), err)
	}
	for _, name := range in.Remove {
		if !hasLabel(is, name) {
			continue
		}
		if err := c.write(ctx); err != nil {
			return err
		}
		if _, err := c.Issues.RemoveLabelForIssue(ctx, in.Repo.Owner, in.Repo.Name, in.Number, name); err != nil && status(err) != 404 {
			return c.fail(fmt.Sprintf("remove label %s from #%d", name, in.Number), err)
		}
	}
	return nil
}

func hasLabel(is *gh.Issue, name string) bool {
	for _, l := range is.Labels {
		if strings.EqualFold(l.GetName(), name) {
			return true
		}
	}
	return false
}

// Comment writes the queue's progress comment on an issue: it edits the
// comment that carries the issue's marker, or creates it when there is
// none, so that retries and later attempts never add a second one. It
// returns the comment's ID.
func (a *Activities) Comment(ctx context.Context, in contract.CommentInput) (int64, error) {
	c, err := a.client(in.Repo)
	if err != nil {
		return 0, err
	}
	marker := in.Marker
	if marker == "" {
		marker = contract.Marker(in.Number)
	}
	body := marker + "\n" + strings.TrimSpace(in.Body)
	existing, err := c.findComment(ctx, in.Number, marker, in.Self)
	if err != nil {
		return 0, err
	}
	if existing != nil {
		if existing.GetBody() == body {
			return existing.GetID(), nil
		}
		if err := c.write(ctx); err != nil {
			return 0, err
		}
		cm, _, err := c.Issues.EditComment(ctx, in.Repo.Owner, in.Repo.Name, existing.GetID(), &gh.IssueComment{Body: &body})
		if err != nil {
			return 0, c.fail(fmt.Sprintf("edit the comment on #%d", in.Number), err)
		}
		return cm.GetID(), nil
	}
	if err := c.write(ctx); err != nil {
		return 0, err
	}
	cm, _, err := c.Issues.CreateComment(ctx, in.Repo.Owner, in.Repo.Name, in.Number, &gh.IssueComment{Body: &body})
	if err != nil {
		return 0, c.fail(fmt.Sprintf("comment on #%d", in.Number), err)
	}
	return cm.GetID(), nil
}

// findComment is the first comment of the issue that carries marker,
// among self's when self is set.
func (c *client) findComment(ctx context.Context, number int, marker, self string) (*gh.IssueComment, error) {
	opts := &gh.IssueListCommentsOptions{ListOptions: gh.ListOptions{PerPage: 100}}
	for {
		comments, resp, err := c.Issues.ListComments(ctx, c.repo.Owner, c.repo.Name, number, opts)
		if err != nil {
			return nil, c.fail(fmt.Sprintf("list the comments of #%d", number), err)
		}
		for _, cm := range comments {
			if strings.Contains(cm.GetBody(), marker) && (self == "" || botName(cm.GetUser().GetLogin()) == botName(self)) {
				return cm, nil
			}
		}
		if resp.NextPage == 0 {
			return nil, nil
		}
		opts.Page = resp.NextPage
	}
}

// OpenPull opens the pull request of an issue's branch, exactly once: it
// looks for an open pull request from the branch first and updates it,
// and takes GitHub's 422 "already exists" for a lookup.
func (a *Activities) OpenPull(ctx context.Context, in contract.PullInput) (contract.Pull, error) {
	c, err := a.client(in.Repo)
	if err != nil {
		return contract.Pull{}, err
	}
	if pr, err := c.findPull(ctx, in); err != nil || pr != nil {
		if pr != nil {
			return c.updatePull(ctx, in, pr)
		}
		return contract.Pull{}, err
	}
	if err := c.write(ctx); err != nil {
		return contract.Pull{}, err
	}
	pr, _, err := c.PullRequests.Create(ctx, in.Repo.Owner, in.Repo.Name, &gh.NewPullRequest{
		Title: &in.Title, Head: &in.Head, Base: &in.Base, Body: &in.Body, Draft: &in.Draft,
	})
	if status(err) == 422 && alreadyExists(err) {
		existing, ferr := c.findPull(ctx, in)
		if ferr != nil {
			return contract.Pull{}, ferr
		}
		if existing != nil {
			return c.updatePull(ctx, in, existing)
		}
	}
	if err != nil {
		return contract.Pull{}, c.fail(fmt.Sprintf("open the pull request of %s", in.Head), err)
	}
	return contract.Pull{Number: pr.GetNumber(), URL: pr.GetHTMLURL(), Created: true}, nil
}

func (c *client) findPull(ctx context.Context, in contract.PullInput) (*gh.PullRequest, error) {
	prs, _, err := c.PullRequests.List(ctx, in.Repo.Owner, in.Repo.Name, &gh.PullRequestListOptions{
		State: "open", Head: in.Repo.Owner + ":" + in.Head, Base: in.Base,
	})
	if err != nil {
		return nil, c.fail("list pull requests of "+in.Head, err)
	}
	for _, pr := range prs {
		if pr.GetHead().GetRef() == in.Head {
			return pr, nil
		}
	}
	return nil, nil
}

func (c *client) updatePull(ctx context.Context, in contract.PullInput, pr *gh.PullRequest) (contract.Pull, error) {
	out := contract.Pull{Number: pr.GetNumber(), URL: pr.GetHTMLURL()}
	if pr.GetBody() == in.Body && pr.GetTitle() == in.Title {
		return out, nil
	}
	if err := c.write(ctx); err != nil {
		return contract.Pull{}, err
	}
	if _, _, err := c.PullRequests.Edit(ctx, in.Repo.Owner, in.Repo.Name, pr.GetNumber(), &gh.PullRequest{Title: &in.Title, Body: &in.Body}); err != nil {
		return contract.Pull{}, c.fail(fmt.Sprintf("update pull request #%d", pr.GetNumber()), err)
	}
	return out, nil
}

// alreadyExists reports GitHub's 422 for a second pull request from the
// same head.
func alreadyExists(err error) bool {
	var er *gh.ErrorResponse
	if !errors.As(err, &er) {
		return false
	}
	text := er.Message + errorDetails(er)
	return strings.Contains(strings.ToLower(text), "already exists")
}
