package github

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/durable-ralph/ralph/contract"
)

// reposRE finds an issue's "Repos:" line: the repositories one change
// spans.
var reposRE = regexp.MustCompile(`(?im)^[ \t]*(?:[-*+][ \t]+)?\**repos\**[ \t]*:\**[ \t]*(.*)$`)

// maxSetRepos bounds the repositories one issue may name.
const maxSetRepos = 10

// reposIn are the members of the change set an issue's body asks for
// with a line such as
//
//	Repos: acme/api, acme/web
//
// (each repository after the one before it, in the order written: web's
// work starts once api's pull request is open and is told what it
// changed) or, where the order is not a chain,
//
//	Repos: acme/lib, acme/api after acme/lib, acme/web after acme/lib
//
// (api and web side by side once lib's is open). None is nil; a line
// that does not name at least two repositories in a valid order is an
// error saying why.
func reposIn(body string) ([]contract.ChangeSetMember, error) {
	m := reposRE.FindStringSubmatch(codeRE.ReplaceAllString(body, ""))
	if m == nil {
		return nil, nil
	}
	var members []contract.ChangeSetMember
	chain := true
	for _, item := range strings.Split(strings.TrimSpace(strings.Trim(m[1], "*")), ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		repo, after, ordered := strings.Cut(item, " after ")
		member := contract.ChangeSetMember{Repo: strings.TrimSpace(repo)}
		if ordered {
			chain = false
			for _, a := range strings.Split(after, " and ") {
				member.After = append(member.After, strings.TrimSpace(a))
			}
		}
		members = append(members, member)
	}
	switch {
	case len(members) < 2:
		return nil, fmt.Errorf("%q names %d repositories: a change set spans two or more (take the line out to work on this repository alone)", strings.TrimSpace(m[0]), len(members))
	case len(members) > maxSetRepos:
		return nil, fmt.Errorf("it names %d repositories: at most %d", len(members), maxSetRepos)
	}
	if chain {
		for i := 1; i < len(members); i++ {
			members[i].After = []string{members[i-1].Repo}
		}
	}
	// The spec's own checks: repositories, each once, an order without a
	// cycle.
	spec := contract.ChangeSetSpec{Name: "issue", Task: "the issue", Members: members}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	return members, nil
}

// mayWriteAll checks that login, who made an issue of repo ready, may
// write every repository of members: an issue cannot set the worker's
// token to work where its author may not (the error says where).
func (a *Activities) mayWriteAll(ctx context.Context, repo contract.Repo, members []contract.ChangeSetMember, login string) error {
	for _, m := range members {
		owner, name, _ := strings.Cut(m.Repo, "/")
		if strings.EqualFold(owner, repo.Owner) && strings.EqualFold(name, repo.Name) {
			continue // checked as the queue's own
		}
		r := repo
		r.Owner, r.Name = owner, name
		c, err := a.client(r)
		if err != nil {
			return err
		}
		ok, level, err := permissions{c: c, known: map[string]string{}}.canWrite(ctx, login)
		switch {
		case err != nil:
			return fmt.Errorf("could not read the permission of @%s on %s: %w", login, m.Repo, err)
		case !ok:
			return fmt.Errorf("@%s, who made it ready, may not write %s (permission %s)", login, m.Repo, level)
		}
	}
	return nil
}
