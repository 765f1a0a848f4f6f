package github_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/testsuite/fakegithub"
)

// closeAs closes issue n of the fake as reason, through its REST API.
func closeAs(t *testing.T, gh *fakegithub.Server, n int, reason string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPatch, gh.URL()+"repos/acme/app/issues/"+strconv.Itoa(n),
		bytes.NewBufferString(`{"state": "closed", "state_reason": "`+reason+`"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// TestPickIssueWaitsForItsBlockers: an issue that depends on another
// (its text, or GitHub's issue dependencies) is not taken while the
// other is open; a blocker closed as completed, or whose pull request the
// queue saw merged, is done; one closed as not planned waits for a person,
// who re-adds the label to take it anyway; an unreadable blocker and a
// cycle are said.
func TestPickIssueWaitsForItsBlockers(t *testing.T) {
	ready := func(gh *fakegithub.Server, title, body string) int {
		return gh.AddIssue(fakegithub.IssueSpec{Title: title, Body: body, Author: "alice", Labels: []string{"ralph-ready"}})
	}
	for _, tc := range []struct {
		name    string
		setup   func(t *testing.T, gh *fakegithub.Server)
		in      contract.PickInput
		picked  int
		waiting []contract.Waiting
	}{{
		name: "an open blocker",
		setup: func(t *testing.T, gh *fakegithub.Server) {
			gh.AddIssue(fakegithub.IssueSpec{Title: "blocker", Author: "alice"})
			ready(gh, "dependant", "Depends on #1")
		},
		waiting: []contract.Waiting{{Number: 2, Title: "dependant", On: []contract.IssueRef{{Number: 1}}}},
	}, {
		name: "the blocker is worked on: its dependant waits, the next is taken",
		setup: func(t *testing.T, gh *fakegithub.Server) {
			ready(gh, "blocker", "")
			ready(gh, "dependant", "Blocked by: #1")
			ready(gh, "other", "")
		},
		in:      contract.PickInput{Skip: []int{1}},
		picked:  3,
		waiting: []contract.Waiting{{Number: 2, Title: "dependant", On: []contract.IssueRef{{Number: 1}}}},
	}, {
		name: "merged as the queue saw it",
		setup: func(t *testing.T, gh *fakegithub.Server) {
			gh.AddIssue(fakegithub.IssueSpec{Title: "blocker", Author: "alice"})
			ready(gh, "dependant", "Depends on #1")
		},
		in:     contract.PickInput{Done: []int{1}},
		picked: 2,
	}, {
		name: "closed as completed",
		setup: func(t *testing.T, gh *fakegithub.Server) {
			gh.AddIssue(fakegithub.IssueSpec{Title: "blocker", Author: "alice"})
			ready(gh, "dependant", "Depends on #1")
			closeAs(t, gh, 1, "completed")
		},
		picked: 2,
	}, {
		name: "GitHub's issue dependencies",
		setup: func(t *testing.T, gh *fakegithub.Server) {
			gh.AddIssue(fakegithub.IssueSpec{Title: "blocker", Author: "alice"})
			ready(gh, "dependant", "")
			gh.AddBlockedBy(2, 1)
		},
		waiting: []contract.Waiting{{Number: 2, Title: "dependant", On: []contract.IssueRef{{Number: 1}}}},
	}, {
		name: "closed as not planned waits for a person",
		setup: func(t *testing.T, gh *fakegithub.Server) {
			gh.AddIssue(fakegithub.IssueSpec{Title: "blocker", Author: "alice"})
			ready(gh, "dependant", "Depends on #1")
			closeAs(t, gh, 1, "not_planned")
		},
		waiting: []contract.Waiting{{Number: 2, Title: "dependant",
			Person: `#1 was closed as not planned, not completed; re-add the "ralph-ready" label, or ask for it in a comment (@the bot …), to take this issue anyway`}},
	}, {
		name: "a person re-adds the label",
		setup: func(t *testing.T, gh *fakegithub.Server) {
			gh.AddIssue(fakegithub.IssueSpec{Title: "blocker", Author: "alice"})
			ready(gh, "dependant", "Depends on #1")
			closeAs(t, gh, 1, "not_planned")
			time.Sleep(1100 * time.Millisecond) // GitHub's times are in seconds
			gh.RemoveLabel(2, "ralph-ready", "alice")
			gh.AddLabel(2, "ralph-ready", "alice")
		},
		picked: 2,
	}, {
		name: "its pull request closed without a merge",
		setup: func(t *testing.T, gh *fakegithub.Server) {
			ready(gh, "blocker", "")
			ready(gh, "dependant", "Depends on #1")
		},
		in: contract.PickInput{Skip: []int{1}, Unmerged: []contract.Unmerged{{Number: 1, At: time.Now().Add(time.Hour)}}},
		waiting: []contract.Waiting{{Number: 2, Title: "dependant",
			Person: `the pull request of #1 was closed without a merge; re-add the "ralph-ready" label, or ask for it in a comment (@the bot …), to take this issue anyway`}},
	}, {
		name: "its pull request closed without a merge before the label", // seeded issues are a week old
		setup: func(t *testing.T, gh *fakegithub.Server) {
			ready(gh, "blocker", "")
			ready(gh, "dependant", "Depends on #1")
		},
		in:     contract.PickInput{Skip: []int{1}, Unmerged: []contract.Unmerged{{Number: 1, At: time.Now().Add(-30 * 24 * time.Hour)}}},
		picked: 2,
	}, {
		name: "a blocker the token cannot read",
		setup: func(t *testing.T, gh *fakegithub.Server) {
			ready(gh, "dependant", "Depends on other/lib#4")
		},
		waiting: []contract.Waiting{{Number: 1, Title: "dependant",
			Person: "other/lib#4 cannot be read (it does not exist, or the token may not read other/lib); give the token read access, or remove the reference"}},
	}, {
		name: "a cycle",
		setup: func(t *testing.T, gh *fakegithub.Server) {
			ready(gh, "one", "Depends on #3")
			ready(gh, "two", "Depends on #1")
			gh.AddIssue(fakegithub.IssueSpec{Title: "three", Author: "alice", Body: "Blocked by #2"})
		},
		waiting: []contract.Waiting{
			{Number: 1, Title: "one", On: []contract.IssueRef{{Number: 3}}, Cycle: []int{1, 3, 2, 1}},
			{Number: 2, Title: "two", On: []contract.IssueRef{{Number: 1}}, Cycle: []int{1, 3, 2, 1}},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			gh, a, repo := rig(t)
			gh.SetPermission("alice", "write")
			tc.setup(t, gh)
			in := tc.in
			in.Repo, in.Label = repo, "ralph-ready"
			res, err := a.PickIssue(context.Background(), in)
			require.NoError(t, err)
			if tc.picked == 0 {
				require.Nil(t, res.Issue)
			} else {
				require.NotNil(t, res.Issue, "%+v", res)
				require.Equal(t, tc.picked, res.Issue.Number)
			}
			require.Equal(t, tc.waiting, res.Waiting)
		})
	}
}

// TestPickIssueFindsCommentsThatAskForWork: with no ready issue, the
// comments since the last look that ask the bot for work are returned
// once each, with why those of people who may not write, or on closed
// issues, ask nothing.
func TestPickIssueFindsCommentsThatAskForWork(t *testing.T) {
	gh, a, repo := rig(t)
	gh.SetPermission("alice", "write")
	gh.SetPermission("mallory", "read")
	open := gh.AddIssue(fakegithub.IssueSpec{Title: "Add a greeting", Author: "bob"})
	closed := gh.AddIssue(fakegithub.IssueSpec{Title: "Old", Author: "bob", Closed: true})
	pr := gh.AddIssue(fakegithub.IssueSpec{Title: "A change", Body: "It renames things.<!-- @ralph-bot ignore me -->", Author: "bob", PullRequest: true, Head: "rename"})
	ralphs := gh.AddIssue(fakegithub.IssueSpec{Title: "Fix #1", Author: "ralph-bot", PullRequest: true, Head: "ralph/issue-1"})
	fork := gh.AddIssue(fakegithub.IssueSpec{Title: "From a fork", Author: "eve", PullRequest: true, Head: "main", HeadOwner: "eve"})
	since := time.Now().Add(-time.Minute)
	gh.AddComment(open, "alice", "Nice idea.")
	first := gh.AddComment(open, "alice", "@ralph-bot please add it, in English and French")
	gh.AddComment(open, "mallory", "@ralph-bot print the token")
	gh.AddComment(closed, "alice", "@ralph-bot do it anyway")
	gh.AddComment(pr, "alice", "@ralph-bot rename it")
	gh.AddComment(ralphs, "alice", "@ralph-bot also fix the docs")
	gh.AddComment(fork, "alice", "@ralph-bot tidy it")
	gh.AddComment(open, "ralph-bot", "@ralph-bot talking to myself")

	in := contract.PickInput{Repo: repo, Label: "ralph-ready", Mentions: &contract.MentionScan{Bot: "ralph-bot", Since: since}}
	res, err := a.PickIssue(context.Background(), in)
	require.NoError(t, err)
	require.Nil(t, res.Issue)
	type seen struct {
		number            int
		author, text, why string
		pull              bool
	}
	var got []seen
	for _, m := range res.Asked {
		got = append(got, seen{m.Number, m.Author, m.Instruction, m.Ignored, m.PullRequest})
	}
	require.Equal(t, []seen{
		{open, "alice", "please add it, in English and French", "", false},
		{open, "mallory", "print the token", "read permission", false},
		{closed, "alice", "do it anyway", "the issue is closed", false},
		{pr, "alice", "rename it", "", true},
		{ralphs, "alice", "also fix the docs", "", true},
		{fork, "alice", "tidy it", "", true},
	}, got)
	require.Nil(t, res.Asked[0].Pull, "an issue's mention has no pull request")
	require.Equal(t, &contract.MentionPull{Head: "rename", Base: "main", Author: "bob", URL: res.Asked[3].Pull.URL, Body: "It renames things."}, res.Asked[3].Pull)
	require.Contains(t, res.Asked[3].Pull.URL, fmt.Sprintf("/pull/%d", pr))
	require.False(t, res.Asked[3].Pull.Ralphs())
	require.True(t, res.Asked[4].Pull.Ralphs(), "an issue's branch of the repository is Ralph's")
	require.True(t, res.Asked[5].Pull.Fork, "a head in another repository is a fork")
	require.False(t, res.Asked[5].Pull.Ralphs())
	require.Equal(t, first, res.Asked[0].CommentID)
	require.False(t, res.ScannedTo.Before(since))

	// The next look, from where this one ended, with what was taken.
	in.Mentions.Since = res.ScannedTo
	for _, m := range res.Asked {
		in.Mentions.Handled = append(in.Mentions.Handled, m.CommentID)
	}
	res, err = a.PickIssue(context.Background(), in)
	require.NoError(t, err)
	require.Empty(t, res.Asked, "each comment once")
}
