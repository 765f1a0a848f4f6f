package fakegithub_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/google/go-github/v62/github"
	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/testsuite/fakegithub"
)

func TestClosingKeywordForms(t *testing.T) {
	for _, tc := range []struct {
		name   string
		body   func(s *fakegithub.Server) string
		closed bool
	}{
		{"closes", func(*fakegithub.Server) string { return "Closes #1" }, true},
		{"colon", func(*fakegithub.Server) string { return "fixes: #1" }, true},
		{"upper case", func(*fakegithub.Server) string { return "RESOLVED #1" }, true},
		{"close", func(*fakegithub.Server) string { return "This will close #1." }, true},
		{"fixed in a line", func(*fakegithub.Server) string { return "Some text.\n\n- fixed #1\n" }, true},
		{"owner/name", func(*fakegithub.Server) string { return "Resolves ACME/Widgets#1" }, true},
		{"github.com URL", func(*fakegithub.Server) string { return "Fixes https://github.com/acme/widgets/issues/1" }, true},
		{"fake host URL", func(s *fakegithub.Server) string { return "closes " + s.URL() + "acme/widgets/issues/1" }, true},
		{"no keyword", func(*fakegithub.Server) string { return "See #1" }, false},
		{"inside a word", func(*fakegithub.Server) string { return "Encloses #1" }, false},
		{"another repository", func(*fakegithub.Server) string { return "Closes acme/other#1" }, false},
		{"another host", func(*fakegithub.Server) string { return "Closes https://example.com/acme/widgets/issues/1" }, false},
		{"another number", func(*fakegithub.Server) string { return "Closes #12" }, false},
		{"no space", func(*fakegithub.Server) string { return "Closes#1" }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t)
			n := s.AddIssue(fakegithub.IssueSpec{Title: "bug"})
			pr := s.AddIssue(fakegithub.IssueSpec{Title: "fix", Body: tc.body(s), PullRequest: true})
			require.NoError(t, s.MergeByHuman(pr, "alice"))
			want := "open"
			if tc.closed {
				want = "closed"
			}
			require.Equal(t, want, s.Issue(n).State)
		})
	}
}

func TestClosingKeywordsOnMerge(t *testing.T) {
	ctx := context.Background()
	s := newServer(t)
	c := client(t, s, token)
	one := s.AddIssue(fakegithub.IssueSpec{Title: "one"})
	two := s.AddIssue(fakegithub.IssueSpec{Title: "two"})
	mentioned := s.AddIssue(fakegithub.IssueSpec{Title: "mentioned"})
	other := s.AddIssue(fakegithub.IssueSpec{Title: "other", PullRequest: true})
	dropped := s.AddIssue(fakegithub.IssueSpec{Title: "dropped"})
	_, _, err := c.Issues.Edit(ctx, owner, repo, dropped, &github.IssueRequest{State: github.String("closed"), StateReason: github.String("not_planned")})
	require.NoError(t, err)

	pr, _, err := c.PullRequests.Create(ctx, owner, repo, &github.NewPullRequest{
		Title: github.String("Fix"), Head: github.String("fix"), Base: github.String("main"),
		Body: github.String("Closes #1\n\nFixes #2\n\nSee #3. Closes #4, closes #5."),
	})
	require.NoError(t, err)
	res, _, err := c.PullRequests.Merge(ctx, owner, repo, pr.GetNumber(), "", nil)
	require.NoError(t, err)

	for _, n := range []int{one, two} {
		is, _, err := c.Issues.Get(ctx, owner, repo, n)
		require.NoError(t, err)
		require.Equal(t, "closed", is.GetState(), "#%d", n)
		require.Equal(t, "completed", is.GetStateReason())
		require.Equal(t, bot, is.GetClosedBy().GetLogin())
		events, _, err := c.Issues.ListIssueEvents(ctx, owner, repo, n, nil)
		require.NoError(t, err)
		require.Len(t, events, 1)
		require.Equal(t, "closed", events[0].GetEvent())
		require.Equal(t, bot, events[0].GetActor().GetLogin())
		require.Equal(t, res.GetSHA(), events[0].GetCommitID())
		require.Equal(t, res.GetSHA(), s.Issue(n).Events[0].CommitID)
	}
	require.Equal(t, "open", s.Issue(mentioned).State, "named without a keyword")
	require.Equal(t, "open", s.Issue(other).State, "a pull request is not closed")
	require.Equal(t, "not_planned", s.Issue(dropped).StateReason, "a closed issue stays as it was")
	require.Len(t, s.Issue(dropped).Events, 1)

	t.Run("a base that is not the default branch", func(t *testing.T) {
		n := s.AddIssue(fakegithub.IssueSpec{Title: "later"})
		rel, _, err := c.PullRequests.Create(ctx, owner, repo, &github.NewPullRequest{
			Title: github.String("Backport"), Head: github.String("backport"), Base: github.String("release"),
			Body: github.String("Closes #" + strconv.Itoa(n)),
		})
		require.NoError(t, err)
		require.NoError(t, s.MergeByHuman(rel.GetNumber(), "alice"))
		require.True(t, s.Pull(rel.GetNumber()).Merged)
		require.Equal(t, "open", s.Issue(n).State)
		require.Empty(t, s.Issue(n).Events)
	})
}
