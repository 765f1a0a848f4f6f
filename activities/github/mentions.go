package github

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	gh "github.com/google/go-github/v62/github"

	"github.com/durable-ralph/ralph/contract"
)

// instructionLimit bounds the instruction taken from one comment.
const instructionLimit = 4000

// mentionOf is the instruction of a comment that asks bot for work:
// "@bot <instruction>" at the start of one of its lines (the text from
// there to the comment's end); ok is false when it does not. The text is
// cleaned of hidden text first, so a mention in an HTML comment asks
// nothing.
func mentionOf(body, bot string) (instruction string, ok bool) {
	name := "@" + botName(bot)
	if name == "@" {
		return "", false
	}
	lines := strings.Split(Clean(body), "\n")
	for i, line := range lines {
		trimmed := strings.TrimSpace(line)
		if len(trimmed) < len(name) || !strings.EqualFold(trimmed[:len(name)], name) {
			continue
		}
		rest := trimmed[len(name):]
		if strings.HasPrefix(strings.ToLower(rest), "[bot]") {
			rest = rest[len("[bot]"):]
		}
		if rest != "" && !strings.ContainsAny(rest[:1], " \t:,") {
			continue // "@ralph-bot2": another login
		}
		text := strings.TrimSpace(strings.TrimLeft(rest, " \t:,") + "\n" + strings.Join(lines[i+1:], "\n"))
		return clip(text, instructionLimit), true
	}
	return "", false
}

// mentions reads the repository's comments created since scan.Since, in
// order, for those that ask the bot for work: each until the queue hands
// back its ID as taken (Handled), with why it is ignored when its
// author may not write or its issue is closed. newest is the time of the
// newest comment read.
func (c *client) mentions(ctx context.Context, scan contract.MentionScan, perms permissions) (asked []contract.Mention, newest time.Time, err error) {
	newest = scan.Since
	since := scan.Since
	opts := &gh.IssueListCommentsOptions{Sort: gh.String("created"), Direction: gh.String("asc"), Since: &since,
		ListOptions: gh.ListOptions{PerPage: 100}}
	for page := 0; page < maxListPages; page++ {
		comments, resp, err := c.Issues.ListComments(ctx, c.repo.Owner, c.repo.Name, 0, opts)
		if err != nil {
			return nil, newest, c.fail("list comments", err)
		}
		for _, cm := range comments {
			created := cm.GetCreatedAt().Time
			if created.After(newest) {
				newest = created
			}
			// GitHub's times are in seconds: a comment of the second a
			// look ended is read again, and Handled says it was taken.
			if created.Before(scan.Since) || slices.Contains(scan.Handled, cm.GetID()) || botName(cm.GetUser().GetLogin()) == botName(scan.Bot) {
				continue
			}
			text, ok := mentionOf(cm.GetBody(), scan.Bot)
			if !ok {
				continue
			}
			m, err := c.mention(ctx, cm, text, scan.Trusted, perms)
			if err != nil {
				return nil, newest, err
			}
			asked = append(asked, m)
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	return asked, newest, nil
}

// mention is the comment cm that asks for text, with its issue.
func (c *client) mention(ctx context.Context, cm *gh.IssueComment, text string, trusted []string, perms permissions) (contract.Mention, error) {
	url := cm.GetIssueURL()
	n, _ := strconv.Atoi(url[strings.LastIndex(url, "/")+1:])
	m := contract.Mention{CommentID: cm.GetID(), CreatedAt: cm.GetCreatedAt().Time, Number: n, Author: cm.GetUser().GetLogin(), Instruction: text}
	why, err := distrust(ctx, perms, cm.GetUser(), trusted)
	if err != nil {
		return m, err
	}
	if why != "" {
		m.Ignored = why
		return m, nil
	}
	is, _, err := c.Issues.Get(ctx, c.repo.Owner, c.repo.Name, n)
	if err != nil {
		return m, c.fail(fmt.Sprintf("read #%d", n), err)
	}
	m.Title, m.PullRequest = is.GetTitle(), is.IsPullRequest()
	switch {
	case is.GetState() != "open":
		m.Ignored = "the issue is closed"
	case is.GetLocked():
		m.Ignored = "the issue is locked"
	case m.PullRequest:
		m.Pull, err = c.mentionPull(ctx, n)
	}
	return m, err
}

// mentionPull is pull request n as a mention on it needs it: its
// branches, whether its head is in another repository (a fork), who
// opened it and its text, cleaned of hidden text.
func (c *client) mentionPull(ctx context.Context, n int) (*contract.MentionPull, error) {
	pr, _, err := c.PullRequests.Get(ctx, c.repo.Owner, c.repo.Name, n)
	if err != nil {
		return nil, c.fail(fmt.Sprintf("read pull request #%d", n), err)
	}
	head := pr.GetHead().GetRepo().GetFullName()
	return &contract.MentionPull{
		Head: pr.GetHead().GetRef(), Base: pr.GetBase().GetRef(),
		Fork:   !strings.EqualFold(head, c.repo.Owner+"/"+c.repo.Name),
		Author: pr.GetUser().GetLogin(), URL: pr.GetHTMLURL(),
		Body: clip(Clean(pr.GetBody()), instructionLimit),
	}, nil
}
