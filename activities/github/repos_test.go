package github

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/contract"
)

func TestReposIn(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []contract.ChangeSetMember
		err        string
	}{
		{name: "none", body: "Add a greeting.\n\nDepends on #1"},
		{name: "a chain in the order written", body: "Add a greeting endpoint and show it.\n\nRepos: acme/api, acme/web\n",
			want: []contract.ChangeSetMember{{Repo: "acme/api"}, {Repo: "acme/web", After: []string{"acme/api"}}}},
		{name: "bold, in a list", body: "- **Repos:** acme/lib, acme/api, acme/web",
			want: []contract.ChangeSetMember{{Repo: "acme/lib"}, {Repo: "acme/api", After: []string{"acme/lib"}}, {Repo: "acme/web", After: []string{"acme/api"}}}},
		{name: "an order of its own", body: "repos: acme/lib, acme/api after acme/lib, acme/web after acme/lib and acme/api",
			want: []contract.ChangeSetMember{{Repo: "acme/lib"}, {Repo: "acme/api", After: []string{"acme/lib"}}, {Repo: "acme/web", After: []string{"acme/lib", "acme/api"}}}},
		{name: "in code it is not meant", body: "```\nRepos: acme/api, acme/web\n```"},
		{name: "one repository", body: "Repos: acme/api", err: "names 1 repositories: a change set spans two or more"},
		{name: "twice", body: "Repos: acme/api, acme/API", err: "a repository is in a set once"},
		{name: "not a repository", body: "Repos: acme/api, the web app", err: `"the web app" is not a GitHub repository`},
		{name: "a cycle", body: "Repos: acme/api after acme/web, acme/web after acme/api", err: "the order has a cycle"},
		{name: "after one not in the set", body: "Repos: acme/api, acme/web after acme/lib", err: `"acme/lib" is not a repository of this set`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := reposIn(tc.body)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}
