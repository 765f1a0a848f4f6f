package github_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/activities/github"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/testsuite/fakegithub"
)

// TestPickIssueSpanningRepositories: an issue whose Repos: line names
// several repositories is taken with them, in their order, only when the
// person who made it ready may write every one: an issue cannot set the
// worker to work where its author may not. A line that makes no set is
// said.
func TestPickIssueSpanningRepositories(t *testing.T) {
	app, lib := fakegithub.New("acme", "app", token, "ralph-bot"), fakegithub.New("acme", "lib", token, "ralph-bot")
	t.Cleanup(app.Close)
	t.Cleanup(lib.Close)
	hub := fakegithub.NewHub(app, lib)
	t.Cleanup(hub.Close)
	a := &github.Activities{WriteInterval: -1, Getenv: func(k string) string {
		if k == "GITHUB_TOKEN" {
			return token
		}
		return ""
	}}
	repo := contract.Repo{Owner: "acme", Name: "app", APIURL: hub.URL()}
	app.SetPermission("alice", "write")
	app.SetPermission("bob", "write")
	lib.SetPermission("alice", "write")
	lib.SetPermission("bob", "read")
	ready := func(title, body, by string) int {
		return app.AddIssue(fakegithub.IssueSpec{Title: title, Body: body, Author: by, Labels: []string{"ralph-ready"}})
	}
	ready("bad line", "Repos: acme/lib", "alice")
	ready("bob's", "Repos: acme/lib, acme/app", "bob")
	want := ready("alice's", "Change both.\n\nRepos: acme/lib, acme/app", "alice")

	res, err := a.PickIssue(context.Background(), contract.PickInput{Repo: repo, Label: "ralph-ready"})
	require.NoError(t, err)
	require.NotNil(t, res.Issue)
	require.Equal(t, want, res.Issue.Number)
	require.Equal(t, []contract.ChangeSetMember{{Repo: "acme/lib"}, {Repo: "acme/app", After: []string{"acme/lib"}}}, res.Issue.Repos)
	reasons := map[string]string{}
	for _, s := range res.Skipped {
		reasons[s.Title] = s.Reason
	}
	require.Contains(t, reasons["bad line"], "its Repos: line: ")
	require.Contains(t, reasons["bad line"], "a change set spans two or more")
	require.Contains(t, reasons["bob's"], "@bob, who made it ready, may not write acme/lib (permission read)")
}
