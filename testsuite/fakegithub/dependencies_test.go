package fakegithub_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-github/v62/github"
	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/testsuite/fakegithub"
)

// dependencyIssue is an issue with its issue_dependencies_summary, which
// go-github v62 does not know.
type dependencyIssue struct {
	github.Issue
	Summary struct {
		BlockedBy      int `json:"blocked_by"`
		Blocking       int `json:"blocking"`
		TotalBlockedBy int `json:"total_blocked_by"`
		TotalBlocking  int `json:"total_blocking"`
	} `json:"issue_dependencies_summary"`
}

// do makes the request method path (of the repository's API) with body
// through c, decoding the answer into out.
func do(t *testing.T, c *github.Client, method, path string, body, out any) (*github.Response, error) {
	t.Helper()
	req, err := c.NewRequest(method, fmt.Sprintf("repos/%s/%s/%s", owner, repo, path), body)
	require.NoError(t, err)
	return c.Do(context.Background(), req, out)
}

func issueID(t *testing.T, c *github.Client, n int) int64 {
	t.Helper()
	is, _, err := c.Issues.Get(context.Background(), owner, repo, n)
	require.NoError(t, err)
	return is.GetID()
}

func TestAddBlockedBy(t *testing.T) {
	s := newServer(t)
	c := client(t, s, token)
	n := s.AddIssue(fakegithub.IssueSpec{Title: "blocked"})
	b := s.AddIssue(fakegithub.IssueSpec{Title: "blocker"})
	id := issueID(t, c, b)

	var got dependencyIssue
	resp, err := do(t, c, http.MethodPost, fmt.Sprintf("issues/%d/dependencies/blocked_by", n), map[string]any{"issue_id": id}, &got)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	require.Equal(t, b, got.GetNumber())
	require.Equal(t, 1, got.Summary.Blocking)
	require.Equal(t, 1, got.Summary.TotalBlocking)
	require.Equal(t, []int{b}, s.BlockedBy(n))

	for _, tc := range []struct {
		name   string
		number int
		body   string
		status int
	}{
		{"already blocking", n, fmt.Sprintf(`{"issue_id":%d}`, id), http.StatusUnprocessableEntity},
		{"itself", n, fmt.Sprintf(`{"issue_id":%d}`, issueID(t, c, n)), http.StatusUnprocessableEntity},
		{"no issue_id", n, `{}`, http.StatusUnprocessableEntity},
		{"null issue_id", n, `{"issue_id":null}`, http.StatusUnprocessableEntity},
		{"unknown issue_id", n, `{"issue_id":42}`, http.StatusUnprocessableEntity},
		{"the number, not the id", n, fmt.Sprintf(`{"issue_id":%d}`, b), http.StatusUnprocessableEntity},
		{"not a number", n, `{"issue_id":"x"}`, http.StatusUnprocessableEntity},
		{"not JSON", n, `{`, http.StatusBadRequest},
		{"unknown issue", 99, fmt.Sprintf(`{"issue_id":%d}`, id), http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, fmt.Sprintf("%srepos/%s/%s/issues/%d/dependencies/blocked_by", s.URL(), owner, repo, tc.number), strings.NewReader(tc.body))
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+token)
			_, err = c.Do(context.Background(), req, nil)
			er := requireAPIError(t, err, tc.status, map[int]string{
				http.StatusUnprocessableEntity: "Validation Failed",
				http.StatusBadRequest:          "Problems parsing JSON",
				http.StatusNotFound:            "Not Found",
			}[tc.status])
			if tc.status == http.StatusUnprocessableEntity {
				require.Len(t, er.Errors, 1)
				require.Equal(t, "issue_id", er.Errors[0].Field)
			}
			require.Equal(t, []int{b}, s.BlockedBy(n))
		})
	}
}

func TestListAndRemoveBlockedBy(t *testing.T) {
	s := newServer(t)
	c := client(t, s, token)
	n := s.AddIssue(fakegithub.IssueSpec{Title: "blocked"})
	var blockers []int
	for i := range 3 {
		blockers = append(blockers, s.AddIssue(fakegithub.IssueSpec{Title: fmt.Sprint("blocker ", i)}))
		s.AddBlockedBy(n, blockers[i])
	}
	s.AddBlockedBy(n, blockers[0]) // already: nothing changes
	require.Equal(t, blockers, s.BlockedBy(n))
	s.SetState(blockers[2], "closed", "alice")

	var page []*github.Issue
	path := fmt.Sprintf("issues/%d/dependencies/blocked_by", n)
	resp, err := do(t, c, http.MethodGet, path+"?per_page=2", nil, &page)
	require.NoError(t, err)
	require.Equal(t, blockers[:2], numbers(page))
	require.Equal(t, 2, resp.NextPage)
	resp, err = do(t, c, http.MethodGet, path+"?per_page=2&page=2", nil, &page)
	require.NoError(t, err)
	require.Equal(t, blockers[2:], numbers(page))
	require.Zero(t, resp.NextPage)

	summary := func(n int) dependencyIssue {
		var is dependencyIssue
		_, err := do(t, c, http.MethodGet, fmt.Sprintf("issues/%d", n), nil, &is)
		require.NoError(t, err)
		return is
	}
	got := summary(n).Summary
	require.Equal(t, 2, got.BlockedBy, "open blockers")
	require.Equal(t, 3, got.TotalBlockedBy)
	require.Zero(t, got.TotalBlocking)
	got = summary(blockers[2]).Summary
	require.Equal(t, 1, got.Blocking)
	require.Equal(t, 1, got.TotalBlocking)
	require.Zero(t, got.TotalBlockedBy)

	id := issueID(t, c, blockers[1])
	var removed github.Issue
	resp, err = do(t, c, http.MethodDelete, fmt.Sprintf("%s/%d", path, id), nil, &removed)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, blockers[1], removed.GetNumber())
	require.Equal(t, []int{blockers[0], blockers[2]}, s.BlockedBy(n))
	require.Zero(t, summary(blockers[1]).Summary.TotalBlocking)

	for _, tc := range []struct{ name, path string }{
		{"not a blocker any more", fmt.Sprintf("%s/%d", path, id)},
		{"never a blocker", fmt.Sprintf("%s/%d", path, issueID(t, c, n))},
		{"unknown issue", fmt.Sprintf("issues/99/dependencies/blocked_by/%d", id)},
		{"not an id", path + "/x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := do(t, c, http.MethodDelete, tc.path, nil, nil)
			requireAPIError(t, err, http.StatusNotFound, "Not Found")
		})
	}
	_, err = do(t, c, http.MethodGet, "issues/99/dependencies/blocked_by", nil, nil)
	requireAPIError(t, err, http.StatusNotFound, "Not Found")
}
