package github

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	gh "github.com/google/go-github/v62/github"

	"github.com/durable-ralph/ralph/contract"
)

// Bounds of what one look at the queue reads of dependencies.
const (
	// maxRefs bounds the dependencies taken of one issue.
	maxRefs = 20
	// maxDepth bounds how far a dependency cycle is looked for.
	maxDepth = 10
	// maxReads bounds the issues read for dependencies in one look.
	maxReads = 60
)

var (
	// dependsRE finds a dependency phrase and what follows it on its
	// line.
	dependsRE = regexp.MustCompile(`(?i)\b(?:depends[ \t-]+on|blocked[ \t-]+by)\b:?(.*)$`)
	// refRE finds an issue reference: a URL of an issue, owner/name#N or
	// #N.
	refRE = regexp.MustCompile(`https?://github\.com/([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+)/issues/(\d+)|(?:([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+))?#(\d+)\b`)
	// listItemRE is an item of a list or a task list.
	listItemRE = regexp.MustCompile(`^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s*)?`)
	// codeRE is what GitHub does not read as references: code blocks,
	// code spans and HTML comments.
	codeRE = regexp.MustCompile("(?s)```.*?```|~~~.*?~~~|`[^`\n]*`|<!--.*?-->")
)

// dependsOn are the issues body says its issue depends on: "Depends on
// #1", "Blocked by acme/lib#4, #7", or such a phrase ending its line
// ("Depends on:", "## Blocked by") followed by a list or a task list of
// references. References to repo are the repository's own (Owner empty).
func dependsOn(body string, repo contract.Repo) []contract.IssueRef {
	lines := strings.Split(codeRE.ReplaceAllString(body, ""), "\n")
	var refs []contract.IssueRef
	for i := 0; i < len(lines); i++ {
		m := dependsRE.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		found := refsIn(m[1], repo)
		if len(found) == 0 && strings.TrimSpace(strings.Trim(m[1], ":#* \t")) == "" {
			// A heading: the list under it.
			for i+1 < len(lines) && (strings.TrimSpace(lines[i+1]) == "" && len(found) == 0 || listItemRE.MatchString(lines[i+1])) {
				i++
				found = append(found, refsIn(listItemRE.ReplaceAllString(lines[i], ""), repo)...)
			}
		}
		for _, r := range found {
			if !slices.Contains(refs, r) && len(refs) < maxRefs {
				refs = append(refs, r)
			}
		}
	}
	return refs
}

// refsIn are the issue references in text, up to the end of its
// sentence.
func refsIn(text string, repo contract.Repo) []contract.IssueRef {
	if i := strings.IndexAny(text, ";"); i >= 0 {
		text = text[:i]
	}
	if i := strings.Index(text, ". "); i >= 0 {
		text = text[:i]
	}
	var refs []contract.IssueRef
	for _, loc := range refRE.FindAllStringSubmatchIndex(text, -1) {
		if loc[0] > 0 {
			if c := text[loc[0]-1]; c == '&' || c == '_' || c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' {
				continue // "&#39;", "abc#1": not a reference
			}
		}
		group := func(k int) string {
			if loc[2*k] < 0 {
				return ""
			}
			return text[loc[2*k]:loc[2*k+1]]
		}
		owner, name, num := group(1), group(2), group(3)
		if num == "" {
			owner, name, num = group(4), group(5), group(6)
		}
		n, err := strconv.Atoi(num)
		if err != nil || n < 1 {
			continue
		}
		refs = append(refs, issueRef(repo, owner, name, n))
	}
	return refs
}

// issueRef is issue n of owner/name, as a reference from repo.
func issueRef(repo contract.Repo, owner, name string, n int) contract.IssueRef {
	if owner == "" || strings.EqualFold(owner, repo.Owner) && strings.EqualFold(name, repo.Name) {
		return contract.IssueRef{Number: n}
	}
	return contract.IssueRef{Owner: owner, Name: name, Number: n}
}

// dependencies reads what ready issues depend on, for one look at the
// queue: the references in their text and GitHub's issue dependencies
// (blocked by), and the state of each blocker.
type dependencies struct {
	c     *client
	label string
	// bot is the login a comment asks for work with.
	bot string
	// done are the repository's issues whose pull requests the queue saw
	// merged, unmerged those it saw closed without a merge.
	done     []int
	unmerged []contract.Unmerged
	issues   map[contract.IssueRef]*gh.Issue
	// unreadable says why an issue could not be read.
	unreadable map[contract.IssueRef]string
	blockers   map[int][]contract.IssueRef
	reads      int
}

func newDependencies(c *client, in contract.PickInput, listed []*gh.Issue) *dependencies {
	d := &dependencies{c: c, label: in.Label, bot: "the bot", done: in.Done, unmerged: in.Unmerged, issues: map[contract.IssueRef]*gh.Issue{},
		unreadable: map[contract.IssueRef]string{}, blockers: map[int][]contract.IssueRef{}}
	for _, is := range listed {
		d.issues[contract.IssueRef{Number: is.GetNumber()}] = is
	}
	if in.Mentions != nil && in.Mentions.Bot != "" {
		d.bot = in.Mentions.Bot
	}
	return d
}

// wait says what the ready issue is, labelled at labelledAt, waits for:
// nil when nothing. A blocker counts as done when it is closed as
// completed, or its pull request was merged (done); one closed otherwise
// (not planned, a duplicate), or whose pull request was closed without a
// merge (unmerged), waits for a person, who re-adds the label to take the
// issue anyway.
func (d *dependencies) wait(ctx context.Context, is *gh.Issue, labelledAt time.Time) (*contract.Waiting, error) {
	refs, err := d.blockersOf(ctx, is)
	if err != nil || len(refs) == 0 {
		return nil, err
	}
	w := contract.Waiting{Number: is.GetNumber(), Title: is.GetTitle()}
	var person []string
	for _, ref := range refs {
		if ref.Owner == "" && slices.Contains(d.done, ref.Number) {
			continue
		}
		if i := slices.IndexFunc(d.unmerged, func(u contract.Unmerged) bool { return ref.Owner == "" && u.Number == ref.Number }); i >= 0 {
			if !labelledAt.After(d.unmerged[i].At) {
				person = append(person, fmt.Sprintf("the pull request of %s was closed without a merge; re-add the %q label, or ask for it in a comment (@%s …), to take this issue anyway", ref, d.label, botName(d.bot)))
			}
			continue
		}
		b, err := d.issue(ctx, ref)
		if err != nil {
			return nil, err
		}
		switch reason := b.GetStateReason(); {
		case b == nil:
			person = append(person, d.unreadable[ref])
		case b.GetState() == "open":
			w.On = append(w.On, ref)
		case reason == "" || reason == "completed":
		case b.GetClosedAt().Before(labelledAt):
			// A person labelled the issue again after its blocker closed.
		default:
			person = append(person, fmt.Sprintf("%s was closed as %s, not completed; re-add the %q label, or ask for it in a comment (@%s …), to take this issue anyway",
				ref, strings.ReplaceAll(reason, "_", " "), d.label, botName(d.bot)))
		}
	}
	w.Person = strings.Join(person, "; ")
	if len(w.On) > 0 {
		if w.Cycle, err = d.cycle(ctx, w.Number); err != nil {
			return nil, err
		}
	}
	if len(w.On) == 0 && w.Person == "" {
		return nil, nil
	}
	return &w, nil
}

// blockersOf are the issues is depends on: its text's references and
// GitHub's blocked-by list, itself left out.
func (d *dependencies) blockersOf(ctx context.Context, is *gh.Issue) ([]contract.IssueRef, error) {
	n := is.GetNumber()
	if refs, ok := d.blockers[n]; ok {
		return refs, nil
	}
	refs := dependsOn(is.GetBody(), d.c.repo)
	api, err := d.blockedBy(ctx, n)
	if err != nil {
		return nil, err
	}
	for _, r := range api {
		if !slices.Contains(refs, r) && len(refs) < maxRefs {
			refs = append(refs, r)
		}
	}
	refs = slices.DeleteFunc(refs, func(r contract.IssueRef) bool { return r == contract.IssueRef{Number: n} })
	d.blockers[n] = refs
	return refs, nil
}

// blockedBy is GitHub's list of the issues that block issue n (issue
// dependencies); none where the API is not there (GitHub Enterprise
// Server before it) or the token may not read it.
func (d *dependencies) blockedBy(ctx context.Context, n int) ([]contract.IssueRef, error) {
	c := d.c
	d.reads++
	req, err := c.NewRequest("GET", fmt.Sprintf("repos/%s/%s/issues/%d/dependencies/blocked_by?per_page=100", c.repo.Owner, c.repo.Name, n), nil)
	if err != nil {
		return nil, err
	}
	var list []*gh.Issue
	if _, err := c.Do(ctx, req, &list); err != nil {
		switch status(err) {
		case 403, 404, 410:
			return nil, nil
		}
		return nil, c.fail(fmt.Sprintf("list what blocks #%d", n), err)
	}
	var refs []contract.IssueRef
	for _, b := range list {
		owner, name := repoOfURL(b.GetRepositoryURL())
		refs = append(refs, issueRef(c.repo, owner, name, b.GetNumber()))
		d.issues[refs[len(refs)-1]] = b
	}
	return refs, nil
}

// repoOfURL is the owner and name of a repository's API URL
// (…/repos/acme/app), "" when it is not one.
func repoOfURL(url string) (owner, name string) {
	parts := strings.Split(strings.TrimRight(url, "/"), "/")
	if len(parts) < 3 || parts[len(parts)-3] != "repos" {
		return "", ""
	}
	return parts[len(parts)-2], parts[len(parts)-1]
}

// issue reads the issue ref names, nil when it cannot be read (the reason
// is in unreadable).
func (d *dependencies) issue(ctx context.Context, ref contract.IssueRef) (*gh.Issue, error) {
	if is, ok := d.issues[ref]; ok {
		return is, nil
	}
	if _, ok := d.unreadable[ref]; ok {
		return nil, nil
	}
	owner, name := ref.Owner, ref.Name
	if owner == "" {
		owner, name = d.c.repo.Owner, d.c.repo.Name
	}
	d.reads++
	is, _, err := d.c.Issues.Get(ctx, owner, name, ref.Number)
	switch status(err) {
	case 0:
	case 403, 404, 410:
		d.unreadable[ref] = fmt.Sprintf("%s cannot be read (it does not exist, or the token may not read %s/%s); give the token read access, or remove the reference", ref, owner, name)
		return nil, nil
	default:
		return nil, d.c.fail(fmt.Sprintf("read %s", ref), err)
	}
	d.issues[ref] = is
	return is, nil
}

// cycle is the dependency cycle through issue start, along open issues of
// the repository, from start back to it; nil when there is none (or it is
// longer than maxDepth, or the look read maxReads issues).
func (d *dependencies) cycle(ctx context.Context, start int) ([]int, error) {
	path := []int{start}
	seen := map[int]bool{start: true}
	var visit func(n int) (bool, error)
	visit = func(n int) (bool, error) {
		if len(path) > maxDepth {
			return false, nil
		}
		next, err := d.openBlockers(ctx, n)
		if err != nil {
			return false, err
		}
		for _, m := range next {
			if m == start {
				path = append(path, start)
				return true, nil
			}
			if seen[m] {
				continue
			}
			seen[m] = true
			path = append(path, m)
			if found, err := visit(m); found || err != nil {
				return found, err
			}
			path = path[:len(path)-1]
		}
		return false, nil
	}
	found, err := visit(start)
	if !found || err != nil {
		return nil, err
	}
	return lowestFirst(path), nil
}

// lowestFirst is the cycle path (its first issue again at its end) from
// its lowest number, so that every issue of a cycle tells the same one.
func lowestFirst(path []int) []int {
	ring := path[:len(path)-1]
	low := slices.Index(ring, slices.Min(ring))
	out := append(slices.Clone(ring[low:]), ring[:low]...)
	return append(out, out[0])
}

// openBlockers are the open issues of the repository that issue n
// depends on (not those the queue saw merged).
func (d *dependencies) openBlockers(ctx context.Context, n int) ([]int, error) {
	is, err := d.issue(ctx, contract.IssueRef{Number: n})
	if err != nil || is == nil || d.reads > maxReads {
		return nil, err
	}
	refs, err := d.blockersOf(ctx, is)
	if err != nil {
		return nil, err
	}
	var open []int
	for _, r := range refs {
		if r.Owner != "" || slices.Contains(d.done, r.Number) {
			continue
		}
		b, err := d.issue(ctx, r)
		if err != nil {
			return nil, err
		}
		if b != nil && b.GetState() == "open" {
			open = append(open, r.Number)
		}
	}
	return open, nil
}
