package github

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"

	gh "github.com/google/go-github/v62/github"
	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/contract"
)

// Preflight checks, before a queue takes its first issue, that the token
// can read the repository, push to it and read and write its issues; for
// a GitHub App, that its installation has every permission the queue
// needs and may access the repository (preflightApp). A missing
// permission fails the queue with a message naming it.
func (a *Activities) Preflight(ctx context.Context, repo contract.Repo) (contract.PreflightResult, error) {
	c, err := a.client(repo)
	if err != nil {
		return contract.PreflightResult{}, err
	}
	if c.app != nil {
		return c.preflightApp(ctx)
	}
	r, _, err := c.Repositories.Get(ctx, repo.Owner, repo.Name)
	if err != nil {
		return contract.PreflightResult{}, c.fail("read the repository", err)
	}
	var missing []string
	if !r.GetPermissions()["push"] {
		missing = append(missing, "push (contents: write) to open branches")
	}
	if !r.GetHasIssues() {
		missing = append(missing, "issues, which are disabled in the repository's settings")
	}
	if _, _, err := c.Issues.ListByRepo(ctx, repo.Owner, repo.Name, &gh.IssueListByRepoOptions{ListOptions: gh.ListOptions{PerPage: 1}}); err != nil {
		if status(err) == 403 || status(err) == 404 {
			missing = append(missing, "issues: read and write")
		} else {
			return contract.PreflightResult{}, c.fail("list issues", err)
		}
	}
	if len(missing) > 0 {
		return contract.PreflightResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("the GitHub token in %s cannot work the queue of %s: it lacks %s", c.tokenFrom, repo.FullName(), strings.Join(missing, "; ")), contract.ErrTypeGitHubPreflight, nil)
	}
	res := contract.PreflightResult{FullName: r.GetFullName(), DefaultBranch: r.GetDefaultBranch(), CloneURL: r.GetCloneURL()}
	if u, _, err := c.Users.Get(ctx, ""); err == nil {
		res.Login = u.GetLogin()
	}
	return res, nil
}

// maxListPages bounds the listing: 500 labelled issues is a queue for
// weeks.
const maxListPages = 5

// PickIssue lists the open issues with the ready label, oldest first, and
// returns the first one the queue may take: not a pull request, not
// locked, assigned to nobody, labelled by someone whose permission on
// the repository is write, maintain or admin now, and blocked by no open
// issue (dependencies.wait); those that are are listed as waiting. The
// issues in.Skip names are passed over.
func (a *Activities) PickIssue(ctx context.Context, in contract.PickInput) (contract.PickResult, error) {
	c, err := a.client(in.Repo)
	if err != nil {
		return contract.PickResult{}, err
	}
	all, err := c.labelled(ctx, in.Label)
	if err != nil {
		return contract.PickResult{}, err
	}
	res := contract.PickResult{Labelled: len(all)}
	perms := permissions{c: c, known: map[string]string{}}
	deps := newDependencies(c, in, all)
	for _, is := range all {
		skip := func(reason string) {
			res.Skipped = append(res.Skipped, contract.Skipped{Number: is.GetNumber(), Title: is.GetTitle(), Reason: reason})
		}
		switch {
		case slices.Contains(in.Skip, is.GetNumber()):
			continue // the queue works on it already
		case is.IsPullRequest():
			skip("a pull request, not an issue")
			continue
		case is.GetState() != "open":
			skip("closed")
			continue
		case is.GetLocked():
			skip("locked")
			continue
		case len(is.Assignees) > 0 || is.Assignee != nil:
			skip("assigned to " + assignees(is))
			continue
		}
		by, labelledAt, err := c.labeler(ctx, is.GetNumber(), in.Label)
		if err != nil {
			return contract.PickResult{}, err
		}
		if by == "" {
			skip(fmt.Sprintf("nobody is recorded as adding the %q label", in.Label))
			continue
		}
		ok, level, err := perms.canWrite(ctx, by)
		if err != nil {
			return contract.PickResult{}, err
		}
		if !ok {
			skip(fmt.Sprintf("the %q label was added by @%s, whose permission is %s, not write", in.Label, by, level))
			continue
		}
		w, err := deps.wait(ctx, is, labelledAt)
		if err != nil {
			return contract.PickResult{}, err
		}
		if w != nil {
			res.Waiting = append(res.Waiting, *w)
			continue
		}
		members, err := reposIn(is.GetBody())
		if err == nil && members != nil {
			err = a.mayWriteAll(ctx, in.Repo, members, by)
		}
		if err != nil {
			skip("its Repos: line: " + err.Error())
			continue
		}
		res.Issue = &contract.Issue{Number: is.GetNumber(), Title: is.GetTitle(), URL: is.GetHTMLURL(), LabeledBy: by, Repos: members}
		break
	}
	if res.Issue == nil && in.Mentions != nil {
		if res.Asked, res.ScannedTo, err = c.mentions(ctx, *in.Mentions, perms); err != nil {
			return contract.PickResult{}, err
		}
	}
	return res, nil
}

// labelled are the open issues that carry label, oldest first.
func (c *client) labelled(ctx context.Context, label string) ([]*gh.Issue, error) {
	var all []*gh.Issue
	opts := &gh.IssueListByRepoOptions{
		State: "open", Labels: []string{label}, Sort: "created", Direction: "asc",
		ListOptions: gh.ListOptions{PerPage: 100},
	}
	for page := 0; page < maxListPages; page++ {
		issues, resp, err := c.Issues.ListByRepo(ctx, c.repo.Owner, c.repo.Name, opts)
		if err != nil {
			return nil, c.fail("list issues", err)
		}
		all = append(all, issues...)
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].GetCreatedAt().Before(all[j].GetCreatedAt().Time) })
	return all, nil
}

func assignees(is *gh.Issue) string {
	var names []string
	for _, u := range is.Assignees {
		names = append(names, "@"+u.GetLogin())
	}
	if len(names) == 0 && is.Assignee != nil {
		names = append(names, "@"+is.Assignee.GetLogin())
	}
	return strings.Join(names, ", ")
}

// labeler is who last added label to the issue, and when, from its
// events.
func (c *client) labeler(ctx context.Context, number int, label string) (string, time.Time, error) {
	opts := &gh.ListOptions{PerPage: 100}
	by, at := "", time.Time{}
	for {
		events, resp, err := c.Issues.ListIssueEvents(ctx, c.repo.Owner, c.repo.Name, number, opts)
		if err != nil {
			return "", at, c.fail(fmt.Sprintf("list the events of #%d", number), err)
		}
		for _, e := range events {
			if e.GetEvent() == "labeled" && strings.EqualFold(e.GetLabel().GetName(), label) {
				by, at = e.GetActor().GetLogin(), e.GetCreatedAt().Time
			}
		}
		if resp.NextPage == 0 {
			return by, at, nil
		}
		opts.Page = resp.NextPage
	}
}

// permissions caches users' permission levels for one activity.
type permissions struct {
	c     *client
	known map[string]string
}

// canWrite reports whether login may write to the repository now (the
// legacy level "write" covers the write and maintain roles).
func (p permissions) canWrite(ctx context.Context, login string) (bool, string, error) {
	level, ok := p.known[login]
	if !ok {
		lvl, _, err := p.c.Repositories.GetPermissionLevel(ctx, p.c.repo.Owner, p.c.repo.Name, login)
		switch {
		case status(err) == 404:
			level = "none"
		case err != nil:
			return false, "", p.c.fail("read the permission of @"+login, err)
		default:
			level = lvl.GetPermission()
		}
		p.known[login] = level
	}
	return level == "admin" || level == "write", level, nil
}

// maxComments bounds the comments read of one issue.
const maxComments = 300

// ReadIssue reads an issue for the agent's prompt. Its text is untrusted:
// comments from people without write access are left out, and HTML
// comments and invisible or bidirectional-control characters are removed
// from all of it.
func (a *Activities) ReadIssue(ctx context.Context, in contract.ReadInput) (contract.IssueText, error) {
	c, err := a.client(in.Repo)
	if err != nil {
		return contract.IssueText{}, err
	}
	is, _, err := c.Issues.Get(ctx, in.Repo.Owner, in.Repo.Name, in.Number)
	if err != nil {
		return contract.IssueText{}, c.fail(fmt.Sprintf("read issue #%d", in.Number), err)
	}
	out := contract.IssueText{Number: in.Number, Title: Clean(is.GetTitle()), URL: is.GetHTMLURL()}
	for _, l := range is.Labels {
		out.Labels = append(out.Labels, Clean(l.GetName()))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", oneLine(out.Title))
	fmt.Fprintf(&b, "GitHub issue #%d of %s", in.Number, in.Repo.FullName())
	if out.URL != "" {
		fmt.Fprintf(&b, " (%s)", out.URL)
	}
	b.WriteString("\n")
	if len(out.Labels) > 0 {
		fmt.Fprintf(&b, "Labels: %s\n", strings.Join(out.Labels, ", "))
	}
	body := strings.TrimSpace(Clean(is.GetBody()))
	if body == "" {
		body = "(no description)"
	}
	fmt.Fprintf(&b, "\n%s\n", body)

	perms := permissions{c: c, known: map[string]string{}}
	opts := &gh.IssueListCommentsOptions{Sort: gh.String("created"), Direction: gh.String("asc"), ListOptions: gh.ListOptions{PerPage: 100}}
	var kept []string
	seen := 0
	for seen < maxComments {
		comments, resp, err := c.Issues.ListComments(ctx, in.Repo.Owner, in.Repo.Name, in.Number, opts)
		if err != nil {
			return contract.IssueText{}, c.fail(fmt.Sprintf("list the comments of #%d", in.Number), err)
		}
		for _, cm := range comments {
			seen++
			if strings.Contains(cm.GetBody(), contract.Marker(in.Number)) {
				continue // the queue's own progress comment
			}
			ok, _, err := perms.canWrite(ctx, cm.GetUser().GetLogin())
			if err != nil {
				return contract.IssueText{}, err
			}
			text := strings.TrimSpace(Clean(cm.GetBody()))
			if !ok || text == "" {
				out.Dropped++
				continue
			}
			kept = append(kept, fmt.Sprintf("### @%s, %s\n\n%s\n", cm.GetUser().GetLogin(), cm.GetCreatedAt().Format(time.DateOnly), text))
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	if len(kept) > 0 {
		b.WriteString("\n## Comments from maintainers\n\n")
		b.WriteString(strings.Join(kept, "\n"))
	}
	out.Comments = len(kept)
	out.Markdown = b.String()
	return out, nil
}

var htmlComment = regexp.MustCompile(`(?s)<!--.*?(-->|$)`)

// Clean removes what a reader of the rendered issue does not see but an
// agent would: HTML comments, and invisible, formatting and bidirectional
// control characters (Unicode category Cf, such as zero-width spaces and
// RLO, and control characters other than newline and tab).
func Clean(s string) string {
	return visible(htmlComment.ReplaceAllString(s, ""))
}

// visible removes invisible, formatting and bidirectional-control
// characters (Unicode category Cf), control characters other than
// newline and tab, and the bytes of invalid UTF-8.
func visible(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return r
		case r == '\r':
			return -1
		case unicode.Is(unicode.Cf, r), unicode.IsControl(r):
			return -1
		case r == unicode.ReplacementChar:
			return -1
		}
		return r
	}, s)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
