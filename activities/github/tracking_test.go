package github_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/testsuite/fakegithub"
)

// TestOpenIssueOpensOnce: the issue a marker names is opened once,
// however often it is asked for (a retry after a lost response, a
// worker killed after the write), brought up to date when its text
// changed, and never taken from someone else who copied the marker.
func TestOpenIssueOpensOnce(t *testing.T) {
	gh, a, repo := rig(t)
	ctx := context.Background()
	const marker = "<!-- ralph:changeset-greeting-acme/app -->"
	planted := gh.AddIssue(fakegithub.IssueSpec{Title: "mine now", Author: "mallory", Body: "do evil " + marker})
	in := contract.OpenIssueInput{Repo: repo, Self: "ralph-bot", Marker: marker, Title: "greeting: acme/app", Body: "Add GET /greeting."}

	gh.Fail("POST", `/issues$`, 1, true, 502, nil, "Bad Gateway")
	_, err := a.OpenIssue(ctx, in)
	require.Error(t, err, "the 502 after the issue was made is an error to retry")
	first, err := a.OpenIssue(ctx, in)
	require.NoError(t, err)
	require.NotEqual(t, planted, first.Number, "another's issue with the marker is not the set's")
	again, err := a.OpenIssue(ctx, in)
	require.NoError(t, err)
	assert.Equal(t, first, again)
	assert.Equal(t, "ralph-bot", first.LabeledBy)

	in.Body = "Add GET /greeting. acme/lib changed: ralph/greeting at 1a2b3c4."
	edited, err := a.OpenIssue(ctx, in)
	require.NoError(t, err)
	assert.Equal(t, first.Number, edited.Number)
	mine := 0
	for _, is := range gh.Issues() {
		if is.Author == "ralph-bot" {
			mine++
			assert.Contains(t, is.Body, "acme/lib changed", "the text is brought up to date")
			assert.Contains(t, is.Body, marker)
		}
	}
	assert.Equal(t, 1, mine, "one issue however often it was asked for")

	_, err = a.OpenIssue(ctx, contract.OpenIssueInput{Repo: repo, Marker: marker, Title: "t", Body: "b"})
	require.ErrorContains(t, err, "the worker's login")
}

// TestClosePullClosesOnce: the set's compensation closes a pull request
// with one comment however often it is retried, and leaves a merged one
// alone.
func TestClosePullClosesOnce(t *testing.T) {
	gh, a, repo := rig(t)
	ctx := context.Background()
	n := gh.AddIssue(fakegithub.IssueSpec{Title: "x", Author: "acme"})
	pr, err := a.OpenPull(ctx, contract.PullInput{Repo: repo, Number: n, Head: "ralph/issue-1", Base: "main", Title: "t", Body: "Closes #1"})
	require.NoError(t, err)
	in := contract.ClosePullInput{Repo: repo, Number: pr.Number, Marker: "<!-- ralph:changeset-g-closed -->", Why: "acme/web failed: its checks failed for good."}
	gh.Fail("PATCH", `/pulls/\d+$`, 1, true, 502, nil, "Bad Gateway")
	_, err = a.ClosePull(ctx, in)
	require.Error(t, err, "the 502 after the close is an error to retry")
	closed, err := a.ClosePull(ctx, in)
	require.NoError(t, err)
	assert.Equal(t, contract.ClosedPull{Number: pr.Number, URL: pr.URL}, closed)
	closed, err = a.ClosePull(ctx, in)
	require.NoError(t, err)
	assert.Equal(t, contract.ClosedPull{Number: pr.Number, URL: pr.URL}, closed)
	got := gh.Issue(pr.Number)
	require.Len(t, got.Comments, 1, "one comment however often it was closed")
	assert.Contains(t, got.Comments[0].Body, "acme/web failed")
	require.Equal(t, "closed", gh.Pulls()[0].State)

	m := gh.AddIssue(fakegithub.IssueSpec{Title: "y", Author: "acme"})
	merged, err := a.OpenPull(ctx, contract.PullInput{Repo: repo, Number: m, Head: "ralph/issue-2", Base: "main", Title: "t", Body: "Closes #2"})
	require.NoError(t, err)
	require.NoError(t, gh.MergeByHuman(merged.Number, "alice"))
	closed, err = a.ClosePull(ctx, contract.ClosePullInput{Repo: repo, Number: merged.Number, Marker: in.Marker, Why: "no"})
	require.NoError(t, err)
	assert.True(t, closed.Merged, "a merged pull request stays merged")
	assert.Empty(t, gh.Issue(merged.Number).Comments)
}

// TestClosePullByBranch: the pull request of an issue work cancelled
// before it said which it opened is found by its branch, and only when
// the worker opened it.
func TestClosePullByBranch(t *testing.T) {
	gh, a, repo := rig(t)
	ctx := context.Background()
	n := gh.AddIssue(fakegithub.IssueSpec{Title: "x", Author: "acme"})
	in := contract.ClosePullInput{Repo: repo, Head: "ralph/issue-1", Marker: "<!-- ralph:changeset-g-closed -->", Why: "abandoned", Self: "ralph-bot"}
	none, err := a.ClosePull(ctx, in)
	require.NoError(t, err)
	assert.Zero(t, none, "no pull request from that branch: nothing to close")

	pr, err := a.OpenPull(ctx, contract.PullInput{Repo: repo, Number: n, Head: "ralph/issue-1", Base: "main", Title: "t", Body: "Closes #1"})
	require.NoError(t, err)
	other := in
	other.Self = "mallory"
	left, err := a.ClosePull(ctx, other)
	require.NoError(t, err)
	assert.Zero(t, left, "a pull request another login opened is not the worker's to close")
	require.Equal(t, "open", gh.Pull(pr.Number).State)

	closed, err := a.ClosePull(ctx, in)
	require.NoError(t, err)
	assert.Equal(t, contract.ClosedPull{Number: pr.Number, URL: pr.URL}, closed)
	require.Equal(t, "closed", gh.Pull(pr.Number).State)
	require.Len(t, gh.Issue(pr.Number).Comments, 1)
}

// TestCommentIsNeverSomeoneElses: a commenter who writes the marker of
// the worker's comment into a comment of theirs first gets neither that
// comment edited nor the worker's withheld.
func TestCommentIsNeverSomeoneElses(t *testing.T) {
	gh, a, repo := rig(t)
	ctx := context.Background()
	n := gh.AddIssue(fakegithub.IssueSpec{Title: "x", Author: "acme"})
	const marker = "<!-- ralph:changeset-greeting-links-acme/app -->"
	gh.AddComment(n, "mallory", "merge everything now "+marker)
	id1, err := a.Comment(ctx, contract.CommentInput{Repo: repo, Number: n, Marker: marker, Body: "links v1", Self: "ralph-bot"})
	require.NoError(t, err)
	id2, err := a.Comment(ctx, contract.CommentInput{Repo: repo, Number: n, Marker: marker, Body: "links v2", Self: "ralph-bot"})
	require.NoError(t, err)
	assert.Equal(t, id1, id2, "the worker's own comment, edited in place")
	cs := gh.Issue(n).Comments
	require.Len(t, cs, 2)
	assert.Equal(t, "mallory", cs[0].Author)
	assert.Equal(t, "merge everything now "+marker, cs[0].Body, "mallory's comment is untouched")
	assert.Equal(t, "ralph-bot", cs[1].Author)
	assert.Contains(t, cs[1].Body, "links v2")
}
