package fakegithub_test

import (
	"context"
	"crypto/sha1"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/testsuite/fakegithub"
)

const (
	owner = "acme"
	repo  = "widgets"
	token = "ghp_faketoken"
	bot   = "ralph-bot"
)

func newServer(t *testing.T) *fakegithub.Server {
	t.Helper()
	s := fakegithub.New(owner, repo, token, bot)
	t.Cleanup(s.Close)
	return s
}

// client is a go-github client for s, configured the way the queue does it.
func client(t *testing.T, s *fakegithub.Server, tok string) *github.Client {
	t.Helper()
	u, err := url.Parse(s.URL())
	require.NoError(t, err)
	c := github.NewClient(nil).WithAuthToken(tok)
	c.BaseURL = u
	c.UploadURL = u
	return c
}

// requireAPIError requires err to be GitHub's error response with status
// and message, and returns it.
func requireAPIError(t *testing.T, err error, status int, message string) *github.ErrorResponse {
	t.Helper()
	var er *github.ErrorResponse
	require.ErrorAs(t, err, &er)
	assert.Equal(t, status, er.Response.StatusCode)
	assert.Equal(t, message, er.Message)
	return er
}

func numbers(issues []*github.Issue) []int {
	out := make([]int, 0, len(issues))
	for _, is := range issues {
		out = append(out, is.GetNumber())
	}
	return out
}

func labelNames(labels []*github.Label) []string {
	out := make([]string, 0, len(labels))
	for _, l := range labels {
		out = append(out, l.GetName())
	}
	return out
}

func TestURLAndUser(t *testing.T) {
	s := newServer(t)
	assert.Regexp(t, `^http://127\.0\.0\.1:\d+/$`, s.URL())

	u, resp, err := client(t, s, token).Users.Get(context.Background(), "")
	require.NoError(t, err)
	assert.Equal(t, bot, u.GetLogin())
	assert.Equal(t, "User", u.GetType())
	assert.NotZero(t, u.GetID())
	assert.Equal(t, 5000, resp.Rate.Limit)
	assert.Equal(t, 4999, resp.Rate.Remaining)
	assert.Equal(t, "core", resp.Header.Get("X-RateLimit-Resource"))
	assert.Equal(t, "1", resp.Header.Get("X-RateLimit-Used"))
	assert.True(t, resp.Rate.Reset.After(time.Now()))

	_, resp, err = client(t, s, token).Users.Get(context.Background(), "")
	require.NoError(t, err)
	assert.Equal(t, 4998, resp.Rate.Remaining, "remaining decrements")
}

func TestAuthorization(t *testing.T) {
	s := newServer(t)
	for _, tc := range []struct {
		name, header string
		status       int
	}{
		{"bearer", "Bearer " + token, http.StatusOK},
		{"token", "token " + token, http.StatusOK},
		{"wrong token", "Bearer nope", http.StatusUnauthorized},
		{"no scheme", token, http.StatusUnauthorized},
		{"missing", "", http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, s.URL()+"user", nil)
			require.NoError(t, err)
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, tc.status, resp.StatusCode)
		})
	}

	_, _, err := client(t, s, "bad-token").Issues.ListByRepo(context.Background(), owner, repo, nil)
	er := requireAPIError(t, err, http.StatusUnauthorized, "Bad credentials")
	assert.NotEmpty(t, er.DocumentationURL)
}

func TestRepository(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	c := client(t, s, token)

	r, _, err := c.Repositories.Get(ctx, owner, repo)
	require.NoError(t, err)
	assert.Equal(t, owner+"/"+repo, r.GetFullName())
	assert.Equal(t, repo, r.GetName())
	assert.Equal(t, owner, r.GetOwner().GetLogin())
	assert.Equal(t, "main", r.GetDefaultBranch())
	assert.False(t, r.GetPrivate())
	assert.True(t, r.GetHasIssues())
	assert.True(t, r.GetPermissions()["push"])
	assert.True(t, r.GetPermissions()["pull"])
	assert.Equal(t, s.URL()+owner+"/"+repo, r.GetHTMLURL())
	assert.Equal(t, s.URL()+owner+"/"+repo+".git", r.GetCloneURL())

	s.SetTokenPermissions(false, false)
	r, _, err = c.Repositories.Get(ctx, owner, repo)
	require.NoError(t, err)
	assert.False(t, r.GetHasIssues())
	assert.False(t, r.GetPermissions()["push"])
	assert.True(t, r.GetPermissions()["pull"])

	_, _, err = c.Repositories.Get(ctx, owner, "other")
	requireAPIError(t, err, http.StatusNotFound, "Not Found")
}

func TestUnknownRoute(t *testing.T) {
	s := newServer(t)
	c := client(t, s, token)
	for _, path := range []string{"nope", "repos/" + owner + "/" + repo + "/nope", "repos/" + owner + "/" + repo + "/issues/99"} {
		t.Run(path, func(t *testing.T) {
			req, err := c.NewRequest(http.MethodGet, path, nil)
			require.NoError(t, err)
			_, err = c.Do(context.Background(), req, nil)
			requireAPIError(t, err, http.StatusNotFound, "Not Found")
		})
	}
}

func TestListIssues(t *testing.T) {
	s := newServer(t)
	n1 := s.AddIssue(fakegithub.IssueSpec{Title: "one", Body: "first", Author: "alice", Labels: []string{"ralph"}})
	n2 := s.AddIssue(fakegithub.IssueSpec{Title: "two", Author: "bob"})
	n3 := s.AddIssue(fakegithub.IssueSpec{Title: "pr", Labels: []string{"ralph"}, PullRequest: true})
	n4 := s.AddIssue(fakegithub.IssueSpec{Title: "four", Labels: []string{"ralph", "urgent"}, Assignees: []string{"carol"}})
	n5 := s.AddIssue(fakegithub.IssueSpec{Title: "five", Labels: []string{"ralph"}, Closed: true})
	n6 := s.AddIssue(fakegithub.IssueSpec{Title: "six", Labels: []string{"Ralph"}, Locked: true})
	require.Equal(t, []int{1, 2, 3, 4, 5, 6}, []int{n1, n2, n3, n4, n5, n6})

	oldest := func(o github.IssueListByRepoOptions) *github.IssueListByRepoOptions {
		o.Sort, o.Direction = "created", "asc"
		return &o
	}
	for _, tc := range []struct {
		name string
		opts *github.IssueListByRepoOptions
		want []int
	}{
		{"default: open, newest first", nil, []int{6, 4, 3, 2, 1}},
		{"label, oldest first", oldest(github.IssueListByRepoOptions{Labels: []string{"ralph"}}), []int{1, 3, 4, 6}},
		{"all labels must match", oldest(github.IssueListByRepoOptions{Labels: []string{"ralph", "urgent"}}), []int{4}},
		{"closed", oldest(github.IssueListByRepoOptions{State: "closed"}), []int{5}},
		{"all states", oldest(github.IssueListByRepoOptions{State: "all", Labels: []string{"ralph"}}), []int{1, 3, 4, 5, 6}},
		{"creator", oldest(github.IssueListByRepoOptions{Creator: "bob"}), []int{2}},
		{"assignee", oldest(github.IssueListByRepoOptions{Assignee: "carol"}), []int{4}},
		{"no label matches", oldest(github.IssueListByRepoOptions{Labels: []string{"nothing"}}), []int{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := client(t, s, token).Issues.ListByRepo(context.Background(), owner, repo, tc.opts)
			require.NoError(t, err)
			assert.Equal(t, tc.want, numbers(got))
		})
	}

	got, _, err := client(t, s, token).Issues.ListByRepo(context.Background(), owner, repo,
		oldest(github.IssueListByRepoOptions{Labels: []string{"ralph"}}))
	require.NoError(t, err)
	require.Len(t, got, 4)
	one, pr, four, six := got[0], got[1], got[2], got[3]

	assert.False(t, one.IsPullRequest())
	assert.Equal(t, "one", one.GetTitle())
	assert.Equal(t, "first", one.GetBody())
	assert.Equal(t, "open", one.GetState())
	assert.Equal(t, "alice", one.GetUser().GetLogin())
	assert.Equal(t, "User", one.GetUser().GetType())
	assert.Equal(t, []string{"ralph"}, labelNames(one.Labels))
	assert.NotZero(t, one.Labels[0].GetID())
	assert.NotEmpty(t, one.Labels[0].GetColor())
	assert.Equal(t, s.URL()+owner+"/"+repo+"/issues/1", one.GetHTMLURL())
	assert.Equal(t, s.URL()+"repos/"+owner+"/"+repo+"/issues/1", one.GetURL())
	assert.NotZero(t, one.GetID())
	assert.False(t, one.GetCreatedAt().IsZero())
	assert.Equal(t, time.Minute, pr.GetCreatedAt().Sub(one.GetCreatedAt().Time)/2, "seeded one minute apart")

	assert.True(t, pr.IsPullRequest())
	assert.Equal(t, s.URL()+"repos/"+owner+"/"+repo+"/pulls/3", pr.GetPullRequestLinks().GetURL())

	assert.Equal(t, []string{"ralph", "urgent"}, labelNames(four.Labels))
	require.Len(t, four.Assignees, 1)
	assert.Equal(t, "carol", four.Assignees[0].GetLogin())
	assert.Equal(t, "carol", four.GetAssignee().GetLogin())

	assert.True(t, six.GetLocked())
	assert.Equal(t, []string{"ralph"}, labelNames(six.Labels), "labels are case-insensitive; the first spelling wins")

	is, _, err := client(t, s, token).Issues.Get(context.Background(), owner, repo, 5)
	require.NoError(t, err)
	assert.Equal(t, "closed", is.GetState())
	assert.Equal(t, "completed", is.GetStateReason())
	assert.False(t, is.GetClosedAt().IsZero())

	snap := s.Issue(4)
	assert.Equal(t, "four", snap.Title)
	assert.Equal(t, "open", snap.State)
	assert.Equal(t, []string{"ralph", "urgent"}, snap.Labels)
	assert.Equal(t, []string{"carol"}, snap.Assignees)
}

func TestListIssuesSortUpdated(t *testing.T) {
	s := newServer(t)
	for i := 0; i < 3; i++ {
		s.AddIssue(fakegithub.IssueSpec{Title: fmt.Sprint(i)})
	}
	s.AddComment(1, "alice", "bump")
	got, _, err := client(t, s, token).Issues.ListByRepo(context.Background(), owner, repo,
		&github.IssueListByRepoOptions{Sort: "updated", Direction: "desc"})
	require.NoError(t, err)
	assert.Equal(t, []int{1, 3, 2}, numbers(got))
	assert.Equal(t, 1, got[0].GetComments())
}

func TestPagination(t *testing.T) {
	s := newServer(t)
	for i := 1; i <= 7; i++ {
		n := s.AddIssue(fakegithub.IssueSpec{Title: fmt.Sprintf("issue %d", i), Labels: []string{"ralph"}})
		s.AddComment(n, "alice", fmt.Sprintf("comment %d", i))
		s.AddComment(1, "alice", fmt.Sprintf("on one %d", i))
		s.AddLabel(1, fmt.Sprintf("l%d", i), "alice")
	}
	ctx := context.Background()
	c := client(t, s, token)

	t.Run("issues", func(t *testing.T) {
		opts := &github.IssueListByRepoOptions{Labels: []string{"ralph"}, Sort: "created", Direction: "asc",
			ListOptions: github.ListOptions{PerPage: 3}}
		var all []int
		var pages []int
		for {
			got, resp, err := c.Issues.ListByRepo(ctx, owner, repo, opts)
			require.NoError(t, err)
			all = append(all, numbers(got)...)
			pages = append(pages, len(got))
			if opts.Page == 0 {
				assert.Equal(t, 3, resp.LastPage)
				assert.Equal(t, 2, resp.NextPage)
				assert.Contains(t, resp.Header.Get("Link"), `rel="next"`)
				assert.Contains(t, resp.Header.Get("Link"), `labels=ralph`)
			}
			if resp.NextPage == 0 {
				assert.Equal(t, 2, resp.PrevPage)
				assert.Equal(t, 1, resp.FirstPage)
				break
			}
			opts.Page = resp.NextPage
		}
		assert.Equal(t, []int{1, 2, 3, 4, 5, 6, 7}, all)
		assert.Equal(t, []int{3, 3, 1}, pages)
	})

	t.Run("single page has no Link", func(t *testing.T) {
		_, resp, err := c.Issues.ListByRepo(ctx, owner, repo, nil)
		require.NoError(t, err)
		assert.Empty(t, resp.Header.Get("Link"))
		assert.Zero(t, resp.NextPage)
	})

	t.Run("comments", func(t *testing.T) {
		opts := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 2}}
		var bodies []string
		for {
			got, resp, err := c.Issues.ListComments(ctx, owner, repo, 1, opts)
			require.NoError(t, err)
			for _, cm := range got {
				bodies = append(bodies, cm.GetBody())
			}
			if resp.NextPage == 0 {
				break
			}
			opts.Page = resp.NextPage
		}
		assert.Equal(t, []string{"comment 1", "on one 1", "on one 2", "on one 3", "on one 4", "on one 5", "on one 6", "on one 7"}, bodies)
	})

	t.Run("events", func(t *testing.T) {
		opts := &github.ListOptions{PerPage: 5}
		var labels []string
		for {
			got, resp, err := c.Issues.ListIssueEvents(ctx, owner, repo, 1, opts)
			require.NoError(t, err)
			for _, e := range got {
				labels = append(labels, e.GetLabel().GetName())
			}
			if resp.NextPage == 0 {
				break
			}
			opts.Page = resp.NextPage
		}
		assert.Equal(t, []string{"ralph", "l1", "l2", "l3", "l4", "l5", "l6", "l7"}, labels)
	})
}

func TestEvents(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	c := client(t, s, token)
	n := s.AddIssue(fakegithub.IssueSpec{Title: "t", Author: "mallory", Labels: []string{"ralph", "bug"}, LabeledBy: "alice"})
	s.AddLabel(n, "ready", "bob")
	s.AddLabel(n, "ready", "bob") // already there: no event
	_, err := c.Issues.RemoveLabelForIssue(ctx, owner, repo, n, "bug")
	require.NoError(t, err)

	got, _, err := c.Issues.ListIssueEvents(ctx, owner, repo, n, nil)
	require.NoError(t, err)
	type ev struct{ event, actor, label string }
	var evs []ev
	for _, e := range got {
		evs = append(evs, ev{e.GetEvent(), e.GetActor().GetLogin(), e.GetLabel().GetName()})
		assert.NotZero(t, e.GetID())
		assert.False(t, e.GetCreatedAt().IsZero())
		assert.NotEmpty(t, e.GetLabel().GetColor())
	}
	assert.Equal(t, []ev{
		{"labeled", "alice", "ralph"},
		{"labeled", "alice", "bug"},
		{"labeled", "bob", "ready"},
		{"unlabeled", bot, "bug"},
	}, evs)
	assert.False(t, got[2].GetCreatedAt().Before(got[0].GetCreatedAt().Time))

	snap := s.Issue(n)
	require.Len(t, snap.Events, 4)
	assert.Equal(t, fakegithub.Event{ID: snap.Events[3].ID, Event: "unlabeled", Actor: bot, Label: "bug", CreatedAt: got[3].GetCreatedAt().Time},
		snap.Events[3])
	assert.Equal(t, []string{"ralph", "ready"}, snap.Labels)

	t.Run("default labeler is the author", func(t *testing.T) {
		m := s.AddIssue(fakegithub.IssueSpec{Title: "u", Author: "mallory", Labels: []string{"ralph"}})
		got, _, err := c.Issues.ListIssueEvents(ctx, owner, repo, m, nil)
		require.NoError(t, err)
		require.Len(t, got, 1)
		assert.Equal(t, "mallory", got[0].GetActor().GetLogin())
	})
}

func TestPermissionLevels(t *testing.T) {
	s := newServer(t)
	for _, role := range []string{"admin", "maintain", "write", "triage", "read", "none"} {
		s.SetPermission("user-"+role, role)
	}
	for _, tc := range []struct {
		login, permission, role string
	}{
		{"user-admin", "admin", "admin"},
		{"user-maintain", "write", "maintain"},
		{"user-write", "write", "write"},
		{"user-triage", "read", "triage"},
		{"user-read", "read", "read"},
		{"user-none", "none", "none"},
		{"stranger", "none", "none"},
		{owner, "admin", "admin"},
		{bot, "write", "write"},
	} {
		t.Run(tc.login, func(t *testing.T) {
			p, resp, err := client(t, s, token).Repositories.GetPermissionLevel(context.Background(), owner, repo, tc.login)
			require.NoError(t, err)
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Equal(t, tc.permission, p.GetPermission())
			assert.Equal(t, tc.login, p.GetUser().GetLogin())
			assert.Equal(t, tc.permission != "none", p.GetUser().GetPermissions()["pull"])

			// go-github v62's RepositoryPermissionLevel has no RoleName:
			// decode role_name from the same answer.
			c := client(t, s, token)
			req, err := c.NewRequest(http.MethodGet, fmt.Sprintf("repos/%s/%s/collaborators/%s/permission", owner, repo, tc.login), nil)
			require.NoError(t, err)
			var raw struct {
				Permission string `json:"permission"`
				RoleName   string `json:"role_name"`
			}
			_, err = c.Do(context.Background(), req, &raw)
			require.NoError(t, err)
			assert.Equal(t, tc.permission, raw.Permission)
			assert.Equal(t, tc.role, raw.RoleName)
		})
	}

	s.SetPermission("user-read", "admin")
	p, _, err := client(t, s, token).Repositories.GetPermissionLevel(context.Background(), owner, repo, "user-read")
	require.NoError(t, err)
	assert.Equal(t, "admin", p.GetPermission())

	assert.Panics(t, func() { s.SetPermission("x", "superuser") })
}

func TestLabels(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	c := client(t, s, token)
	n := s.AddIssue(fakegithub.IssueSpec{Title: "t", Labels: []string{"ralph"}})

	got, _, err := c.Issues.AddLabelsToIssue(ctx, owner, repo, n, []string{"ralph:claimed", "ralph"})
	require.NoError(t, err)
	assert.Equal(t, []string{"ralph", "ralph:claimed"}, labelNames(got))
	assert.Contains(t, s.Labels(), "ralph:claimed", "a missing label is created")

	l, _, err := c.Issues.GetLabel(ctx, owner, repo, "ralph:claimed")
	require.NoError(t, err)
	assert.Equal(t, "ralph:claimed", l.GetName())

	got, _, err = c.Issues.ListLabelsByIssue(ctx, owner, repo, n, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"ralph", "ralph:claimed"}, labelNames(got))

	for _, tc := range []struct {
		name, label string
		status      int
		message     string
		left        []string
	}{
		{"present", "ralph", http.StatusOK, "", []string{"ralph:claimed"}},
		{"absent", "ralph", http.StatusNotFound, "Label does not exist", []string{"ralph:claimed"}},
		{"never existed", "nope", http.StatusNotFound, "Label does not exist", []string{"ralph:claimed"}},
		{"with colon", "ralph:claimed", http.StatusOK, "", nil},
	} {
		t.Run("remove "+tc.name, func(t *testing.T) {
			resp, err := c.Issues.RemoveLabelForIssue(ctx, owner, repo, n, tc.label)
			assert.Equal(t, tc.status, resp.StatusCode)
			if tc.message != "" {
				var er *github.ErrorResponse
				require.ErrorAs(t, err, &er)
				assert.Equal(t, tc.message, er.Message)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tc.left, s.Issue(n).Labels)
		})
	}

	t.Run("object body", func(t *testing.T) {
		req, err := c.NewRequest(http.MethodPost, fmt.Sprintf("repos/%s/%s/issues/%d/labels", owner, repo, n),
			map[string][]string{"labels": {"a", "b"}})
		require.NoError(t, err)
		var labels []*github.Label
		_, err = c.Do(ctx, req, &labels)
		require.NoError(t, err)
		assert.Equal(t, []string{"a", "b"}, labelNames(labels))
	})

	t.Run("create repository label", func(t *testing.T) {
		l, resp, err := c.Issues.CreateLabel(ctx, owner, repo, &github.Label{Name: github.String("queued"), Color: github.String("0e8a16")})
		require.NoError(t, err)
		assert.Equal(t, http.StatusCreated, resp.StatusCode)
		assert.Equal(t, "0e8a16", l.GetColor())
		_, _, err = c.Issues.CreateLabel(ctx, owner, repo, &github.Label{Name: github.String("Queued")})
		var er *github.ErrorResponse
		require.ErrorAs(t, err, &er)
		assert.Equal(t, http.StatusUnprocessableEntity, er.Response.StatusCode)
		require.Len(t, er.Errors, 1)
		assert.Equal(t, "already_exists", er.Errors[0].Code)
	})
}

func TestComments(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	c := client(t, s, token)
	n := s.AddIssue(fakegithub.IssueSpec{Title: "t"})
	seeded := s.AddComment(n, "alice", "please do <this> & that")

	created, resp, err := c.Issues.CreateComment(ctx, owner, repo, n, &github.IssueComment{Body: github.String("on it")})
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, bot, created.GetUser().GetLogin())
	assert.Equal(t, "on it", created.GetBody())
	assert.NotZero(t, created.GetID())
	assert.Contains(t, created.GetHTMLURL(), fmt.Sprintf("/issues/%d#issuecomment-%d", n, created.GetID()))
	assert.Equal(t, s.URL()+fmt.Sprintf("repos/%s/%s/issues/%d", owner, repo, n), created.GetIssueURL())

	list, _, err := c.Issues.ListComments(ctx, owner, repo, n, nil)
	require.NoError(t, err)
	require.Len(t, list, 2)
	assert.Equal(t, seeded, list[0].GetID())
	assert.Equal(t, "please do <this> & that", list[0].GetBody())
	assert.Equal(t, "alice", list[0].GetUser().GetLogin())
	assert.Equal(t, "NONE", list[0].GetAuthorAssociation())
	assert.Equal(t, created.GetID(), list[1].GetID())

	edited, _, err := c.Issues.EditComment(ctx, owner, repo, created.GetID(), &github.IssueComment{Body: github.String("done")})
	require.NoError(t, err)
	assert.Equal(t, "done", edited.GetBody())
	_, _, err = c.Issues.EditComment(ctx, owner, repo, created.GetID(), &github.IssueComment{Body: github.String("done!")})
	require.NoError(t, err)

	got, _, err := c.Issues.GetComment(ctx, owner, repo, created.GetID())
	require.NoError(t, err)
	assert.Equal(t, "done!", got.GetBody())

	snap := s.Issue(n)
	require.Len(t, snap.Comments, 2)
	assert.Equal(t, fakegithub.Comment{ID: created.GetID(), Author: bot, Body: "done!",
		CreatedAt: created.GetCreatedAt().Time, UpdatedAt: got.GetUpdatedAt().Time, Edits: 2}, snap.Comments[1])
	assert.Zero(t, snap.Comments[0].Edits)

	for _, tc := range []struct {
		name string
		call func() (*github.Response, error)
		code int
	}{
		{"empty body", func() (*github.Response, error) {
			_, r, err := c.Issues.CreateComment(ctx, owner, repo, n, &github.IssueComment{Body: github.String("")})
			return r, err
		}, http.StatusUnprocessableEntity},
		{"no such issue", func() (*github.Response, error) {
			_, r, err := c.Issues.CreateComment(ctx, owner, repo, 42, &github.IssueComment{Body: github.String("x")})
			return r, err
		}, http.StatusNotFound},
		{"no such comment", func() (*github.Response, error) {
			_, r, err := c.Issues.EditComment(ctx, owner, repo, 1, &github.IssueComment{Body: github.String("x")})
			return r, err
		}, http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := tc.call()
			var er *github.ErrorResponse
			require.ErrorAs(t, err, &er)
			assert.Equal(t, tc.code, resp.StatusCode)
		})
	}
}

func TestPulls(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	c := client(t, s, token)
	s.AddIssue(fakegithub.IssueSpec{Title: "issue"})

	pr, resp, err := c.PullRequests.Create(ctx, owner, repo, &github.NewPullRequest{
		Title: github.String("Fix #1"), Head: github.String("ralph/issue-1"), Base: github.String("main"),
		Body: github.String("Closes #1"), Draft: github.Bool(true),
	})
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, 2, pr.GetNumber(), "pull requests share the issue numbers")
	assert.Equal(t, "open", pr.GetState())
	assert.True(t, pr.GetDraft())
	assert.Equal(t, "ralph/issue-1", pr.GetHead().GetRef())
	assert.Equal(t, owner+":ralph/issue-1", pr.GetHead().GetLabel())
	assert.Len(t, pr.GetHead().GetSHA(), 40)
	assert.Equal(t, "main", pr.GetBase().GetRef())
	assert.Equal(t, bot, pr.GetUser().GetLogin())
	assert.Equal(t, s.URL()+owner+"/"+repo+"/pull/2", pr.GetHTMLURL())

	for _, tc := range []struct {
		name string
		head string
		code int
		msg  string
	}{
		{"duplicate", "ralph/issue-1", http.StatusUnprocessableEntity, "A pull request already exists for acme:ralph/issue-1."},
		{"duplicate with owner", owner + ":ralph/issue-1", http.StatusUnprocessableEntity, "A pull request already exists for acme:ralph/issue-1."},
		{"head is base", "main", http.StatusUnprocessableEntity, "No commits between main and main"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, resp, err := c.PullRequests.Create(ctx, owner, repo, &github.NewPullRequest{
				Title: github.String("again"), Head: github.String(tc.head), Base: github.String("main"),
			})
			var er *github.ErrorResponse
			require.ErrorAs(t, err, &er)
			assert.Equal(t, tc.code, resp.StatusCode)
			assert.Equal(t, "Validation Failed", er.Message)
			require.Len(t, er.Errors, 1)
			assert.Equal(t, "PullRequest", er.Errors[0].Resource)
			assert.Equal(t, "custom", er.Errors[0].Code)
			assert.Equal(t, tc.msg, er.Errors[0].Message)
		})
	}

	for _, tc := range []struct {
		name string
		opts *github.PullRequestListOptions
		want int
	}{
		{"by head", &github.PullRequestListOptions{Head: owner + ":ralph/issue-1", Base: "main"}, 1},
		{"other head", &github.PullRequestListOptions{Head: owner + ":ralph/issue-9"}, 0},
		{"other base", &github.PullRequestListOptions{Head: owner + ":ralph/issue-1", Base: "dev"}, 0},
		{"closed", &github.PullRequestListOptions{State: "closed"}, 0},
		{"all", &github.PullRequestListOptions{State: "all"}, 1},
	} {
		t.Run("list "+tc.name, func(t *testing.T) {
			got, _, err := c.PullRequests.List(ctx, owner, repo, tc.opts)
			require.NoError(t, err)
			require.Len(t, got, tc.want)
			if tc.want > 0 {
				assert.Equal(t, 2, got[0].GetNumber())
			}
		})
	}

	edited, _, err := c.PullRequests.Edit(ctx, owner, repo, 2, &github.PullRequest{Title: github.String("Fix #1 (v2)"), Body: github.String("Closes #1\n\nv2")})
	require.NoError(t, err)
	assert.Equal(t, "Fix #1 (v2)", edited.GetTitle())
	got, _, err := c.PullRequests.Get(ctx, owner, repo, 2)
	require.NoError(t, err)
	assert.Equal(t, "Closes #1\n\nv2", got.GetBody())

	is, _, err := c.Issues.Get(ctx, owner, repo, 2)
	require.NoError(t, err)
	assert.True(t, is.IsPullRequest())
	assert.Equal(t, "Fix #1 (v2)", is.GetTitle())

	_, _, err = c.PullRequests.Get(ctx, owner, repo, 1)
	var er *github.ErrorResponse
	require.ErrorAs(t, err, &er, "issue 1 is not a pull request")
	assert.Equal(t, http.StatusNotFound, er.Response.StatusCode)

	assert.Equal(t, []fakegithub.Pull{{
		Number: 2, Title: "Fix #1 (v2)", Body: "Closes #1\n\nv2", Head: "ralph/issue-1", HeadLabel: owner + ":ralph/issue-1",
		Base: "main", State: "open", Draft: true, Author: bot, Edits: 1,
	}}, s.Pulls())

	closed, _, err := c.PullRequests.Edit(ctx, owner, repo, 2, &github.PullRequest{State: github.String("closed")})
	require.NoError(t, err)
	assert.Equal(t, "closed", closed.GetState())
	assert.Equal(t, "closed", s.Issue(2).State)

	again, resp, err := c.PullRequests.Create(ctx, owner, repo, &github.NewPullRequest{
		Title: github.String("Fix #1"), Head: github.String("ralph/issue-1"), Base: github.String("main"),
	})
	require.NoError(t, err, "the old one is closed")
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, 3, again.GetNumber())

	_, _, err = c.PullRequests.Edit(ctx, owner, repo, 2, &github.PullRequest{State: github.String("open")})
	require.ErrorAs(t, err, &er, "reopening would duplicate #3")
	assert.Equal(t, http.StatusUnprocessableEntity, er.Response.StatusCode)
}

func TestSeededPullRequest(t *testing.T) {
	s := newServer(t)
	n := s.AddIssue(fakegithub.IssueSpec{Title: "p", Author: "alice", PullRequest: true, Head: "feature"})
	got, _, err := client(t, s, token).PullRequests.List(context.Background(), owner, repo,
		&github.PullRequestListOptions{Head: owner + ":feature"})
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, n, got[0].GetNumber())
	assert.Equal(t, "alice", got[0].GetUser().GetLogin())
	assert.Equal(t, []fakegithub.Pull{{Number: n, Title: "p", Head: "feature", HeadLabel: owner + ":feature", Base: "main", State: "open", Author: "alice"}}, s.Pulls())
}

func TestFail(t *testing.T) {
	ctx := context.Background()
	listIssues := func(c *github.Client) (*github.Response, error) {
		_, resp, err := c.Issues.ListByRepo(ctx, owner, repo, nil)
		return resp, err
	}
	comment := func(c *github.Client) (*github.Response, error) {
		_, resp, err := c.Issues.CreateComment(ctx, owner, repo, 1, &github.IssueComment{Body: github.String("hi")})
		return resp, err
	}
	for _, tc := range []struct {
		name    string
		method  string
		path    string
		status  int
		headers func() map[string]string
		message string
		call    func(*github.Client) (*github.Response, error)
		check   func(t *testing.T, err error)
	}{
		{
			name: "primary rate limit", method: "GET", path: `/issues$`, status: http.StatusForbidden,
			headers: func() map[string]string {
				return map[string]string{
					"X-RateLimit-Remaining": "0",
					"X-RateLimit-Reset":     strconv.FormatInt(time.Now().Add(2*time.Second).Unix(), 10),
				}
			},
			message: "API rate limit exceeded for user ID 1.",
			call:    listIssues,
			check: func(t *testing.T, err error) {
				var rl *github.RateLimitError
				require.ErrorAs(t, err, &rl)
				assert.Equal(t, 0, rl.Rate.Remaining)
				assert.Equal(t, 5000, rl.Rate.Limit)
				assert.WithinDuration(t, time.Now().Add(2*time.Second), rl.Rate.Reset.Time, 2*time.Second)
				assert.Equal(t, "API rate limit exceeded for user ID 1.", rl.Message)
			},
		},
		{
			name: "secondary rate limit", method: "POST", path: `/issues/\d+/comments$`, status: http.StatusForbidden,
			headers: func() map[string]string { return map[string]string{"Retry-After": "2"} },
			message: "You have exceeded a secondary rate limit and have been temporarily blocked from content creation. Please retry your request again later.",
			call:    comment,
			check: func(t *testing.T, err error) {
				var ab *github.AbuseRateLimitError
				require.ErrorAs(t, err, &ab)
				require.NotNil(t, ab.RetryAfter)
				assert.Equal(t, 2*time.Second, *ab.RetryAfter)
				assert.Contains(t, ab.Message, "secondary rate limit")
			},
		},
		{
			name: "too many requests", method: "*", path: `^/repos/acme/widgets/issues$`, status: http.StatusTooManyRequests,
			headers: func() map[string]string { return map[string]string{"Retry-After": "1"} },
			message: "Too Many Requests",
			call:    listIssues,
			check: func(t *testing.T, err error) {
				var er *github.ErrorResponse
				require.ErrorAs(t, err, &er)
				assert.Equal(t, http.StatusTooManyRequests, er.Response.StatusCode)
				assert.Equal(t, "1", er.Response.Header.Get("Retry-After"))
			},
		},
		{
			name: "server error on first write", method: "post", path: `/comments$`, status: http.StatusInternalServerError,
			headers: func() map[string]string { return nil },
			message: "Server Error",
			call:    comment,
			check: func(t *testing.T, err error) {
				requireAPIError(t, err, http.StatusInternalServerError, "Server Error")
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t)
			s.AddIssue(fakegithub.IssueSpec{Title: "t"})
			s.Fail(tc.method, tc.path, 1, false, tc.status, tc.headers(), tc.message)
			c := client(t, s, token)

			_, _, err := c.Users.Get(ctx, "")
			require.NoError(t, err, "other requests are not affected")

			resp, err := tc.call(c)
			require.Error(t, err)
			assert.Equal(t, tc.status, resp.StatusCode)
			tc.check(t, err)
			assert.Empty(t, s.Issue(1).Comments, "a failure without after changes nothing")

			reqs := s.Requests()
			require.Len(t, reqs, 2)
			assert.Equal(t, tc.status, reqs[1].Status)
			assert.Equal(t, http.StatusOK, reqs[0].Status)

			// The failure is used up: a fresh client (the old one remembers
			// rate limits) gets through.
			resp, err = tc.call(client(t, s, token))
			require.NoError(t, err)
			assert.Less(t, resp.StatusCode, 300)
		})
	}
}

func TestFailAfter(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	c := client(t, s, token)
	s.Fail("POST", `^/repos/[^/]+/[^/]+/pulls$`, 1, true, http.StatusBadGateway, nil, "Server Error")

	_, resp, err := c.PullRequests.Create(ctx, owner, repo, &github.NewPullRequest{
		Title: github.String("t"), Head: github.String("b"), Base: github.String("main"),
	})
	var er *github.ErrorResponse
	require.ErrorAs(t, err, &er)
	assert.Equal(t, http.StatusBadGateway, resp.StatusCode)
	require.Len(t, s.Pulls(), 1, "the pull request was created anyway")
	assert.Equal(t, "b", s.Pulls()[0].Head)

	got, _, err := c.PullRequests.List(ctx, owner, repo, &github.PullRequestListOptions{Head: owner + ":b"})
	require.NoError(t, err)
	require.Len(t, got, 1)

	_, resp, err = c.PullRequests.Create(ctx, owner, repo, &github.NewPullRequest{
		Title: github.String("t"), Head: github.String("b"), Base: github.String("main"),
	})
	require.ErrorAs(t, err, &er)
	assert.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "a retry finds the created one")

	reqs := s.Requests()
	require.Len(t, reqs, 3)
	assert.Equal(t, fakegithub.Request{Method: "POST", Path: "/repos/acme/widgets/pulls", Body: reqs[0].Body, Status: 502, Time: reqs[0].Time}, reqs[0])
	assert.Contains(t, reqs[0].Body, `"head":"b"`)
	assert.Equal(t, "head="+url.QueryEscape(owner+":b"), reqs[1].Query)
}

func TestFailCount(t *testing.T) {
	s := newServer(t)
	c := client(t, s, token)
	s.Fail("GET", `^/user$`, 2, false, http.StatusBadGateway, nil, "Server Error")
	var statuses []int
	for i := 0; i < 3; i++ {
		_, resp, _ := c.Users.Get(context.Background(), "")
		statuses = append(statuses, resp.StatusCode)
	}
	assert.Equal(t, []int{502, 502, 200}, statuses)
}

func TestIssueWrites(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	c := client(t, s, token)

	is, resp, err := c.Issues.Create(ctx, owner, repo, &github.IssueRequest{
		Title: github.String("new"), Body: github.String("b"), Labels: &[]string{"x"},
	})
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, 1, is.GetNumber())
	assert.Equal(t, bot, is.GetUser().GetLogin())

	is, _, err = c.Issues.Edit(ctx, owner, repo, 1, &github.IssueRequest{State: github.String("closed"), StateReason: github.String("not_planned")})
	require.NoError(t, err)
	assert.Equal(t, "closed", is.GetState())
	assert.Equal(t, "not_planned", is.GetStateReason())
	assert.Equal(t, bot, is.GetClosedBy().GetLogin())

	_, err = c.Issues.Lock(ctx, owner, repo, 1, nil)
	require.NoError(t, err)
	var events []string
	for _, e := range s.Issue(1).Events {
		events = append(events, e.Event)
	}
	assert.Equal(t, []string{"labeled", "closed", "locked"}, events)
	assert.True(t, s.Issue(1).Locked)
}

func TestConcurrentRequests(t *testing.T) {
	s := newServer(t)
	n := s.AddIssue(fakegithub.IssueSpec{Title: "t"})
	c := client(t, s, token)
	errs := make(chan error, 20)
	for i := 0; i < 20; i++ {
		go func() {
			_, _, err := c.Issues.AddLabelsToIssue(context.Background(), owner, repo, n, []string{fmt.Sprint("l", i%5)})
			errs <- err
		}()
	}
	for i := 0; i < 20; i++ {
		require.NoError(t, <-errs)
	}
	assert.Len(t, s.Issue(n).Labels, 5)
	assert.Len(t, s.Issue(n).Events, 5)
	assert.Len(t, s.Requests(), 20)
}

// openPull opens a pull request from head into main through the API, as
// the product does, and returns its number.
func openPull(t *testing.T, c *github.Client, head string, draft bool) int {
	t.Helper()
	pr, _, err := c.PullRequests.Create(context.Background(), owner, repo, &github.NewPullRequest{
		Title: github.String("Change " + head), Head: github.String(head), Base: github.String("main"),
		Body: github.String("Closes #1"), Draft: github.Bool(draft),
	})
	require.NoError(t, err)
	return pr.GetNumber()
}

func getPull(t *testing.T, c *github.Client, n int) *github.PullRequest {
	t.Helper()
	pr, _, err := c.PullRequests.Get(context.Background(), owner, repo, n)
	require.NoError(t, err)
	return pr
}

func TestCheckRuns(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	c := client(t, s, token)
	n := openPull(t, c, "ralph/issue-1", false)
	head := getPull(t, c, n).GetHead().GetSHA()
	require.Len(t, head, 40)

	var ids []int64
	for i := 1; i <= 5; i++ {
		ids = append(ids, s.SetCheckRun(head, fakegithub.CheckRun{Name: fmt.Sprintf("job %d", i), Status: "in_progress"}))
	}
	lint := s.SetCheckRun(head, fakegithub.CheckRun{
		Name: "job 2", Status: "completed", Conclusion: "failure",
		Title: "2 errors", Summary: "lint failed", Text: "main.go:3: unused", App: "linter",
	})
	require.Equal(t, ids[1], lint, "a run of the same name is replaced, with its ID")
	s.SetCheckRun(sha1Of("other"), fakegithub.CheckRun{Name: "elsewhere", Status: "queued"})

	t.Run("paginated by branch", func(t *testing.T) {
		opts := &github.ListCheckRunsOptions{ListOptions: github.ListOptions{PerPage: 2}}
		var names []string
		var pages int
		for {
			got, resp, err := c.Checks.ListCheckRunsForRef(ctx, owner, repo, "ralph/issue-1", opts)
			require.NoError(t, err)
			require.Equal(t, 5, got.GetTotal())
			for _, r := range got.CheckRuns {
				names = append(names, r.GetName())
			}
			pages++
			if resp.NextPage == 0 {
				break
			}
			opts.Page = resp.NextPage
		}
		require.Equal(t, []string{"job 1", "job 2", "job 3", "job 4", "job 5"}, names)
		require.Equal(t, 3, pages)
	})

	for _, tc := range []struct {
		name string
		opts *github.ListCheckRunsOptions
		want []string
	}{
		{"by name", &github.ListCheckRunsOptions{CheckName: github.String("job 3")}, []string{"job 3"}},
		{"by status", &github.ListCheckRunsOptions{Status: github.String("completed")}, []string{"job 2"}},
		{"none", &github.ListCheckRunsOptions{CheckName: github.String("nope")}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := c.Checks.ListCheckRunsForRef(ctx, owner, repo, head, tc.opts)
			require.NoError(t, err)
			var names []string
			for _, r := range got.CheckRuns {
				names = append(names, r.GetName())
			}
			require.Equal(t, tc.want, names)
			require.Equal(t, len(tc.want), got.GetTotal())
		})
	}

	got, _, err := c.Checks.GetCheckRun(ctx, owner, repo, lint)
	require.NoError(t, err)
	require.Equal(t, lint, got.GetID())
	require.Equal(t, head, got.GetHeadSHA())
	require.Equal(t, "job 2", got.GetName())
	require.Equal(t, "completed", got.GetStatus())
	require.Equal(t, "failure", got.GetConclusion())
	require.Equal(t, "2 errors", got.GetOutput().GetTitle())
	require.Equal(t, "lint failed", got.GetOutput().GetSummary())
	require.Equal(t, "main.go:3: unused", got.GetOutput().GetText())
	require.Equal(t, "linter", got.GetApp().GetSlug())
	require.False(t, got.GetStartedAt().IsZero())
	require.False(t, got.GetCompletedAt().IsZero())
	require.NotEmpty(t, got.GetHTMLURL())
	require.Len(t, got.PullRequests, 1)
	require.Equal(t, n, got.PullRequests[0].GetNumber())

	actions, _, err := c.Checks.GetCheckRun(ctx, owner, repo, ids[0])
	require.NoError(t, err)
	require.Equal(t, "github-actions", actions.GetApp().GetSlug())
	require.Nil(t, actions.Conclusion, "a run in progress has no conclusion")
	require.Nil(t, actions.CompletedAt)
	require.Contains(t, actions.GetDetailsURL(), fmt.Sprintf("/job/%d", ids[0]), "an Actions run's job has its ID")

	_, _, err = c.Checks.GetCheckRun(ctx, owner, repo, 42)
	requireAPIError(t, err, http.StatusNotFound, "Not Found")

	require.Panics(t, func() { s.SetCheckRun(head, fakegithub.CheckRun{Name: "x", Status: "done"}) })
	require.Panics(t, func() { s.SetCheckRun(head, fakegithub.CheckRun{Name: "x", Status: "completed"}) })
	require.Panics(t, func() { s.SetCheckRun(head, fakegithub.CheckRun{Name: "x", Status: "queued", Conclusion: "success"}) })
}

// sha1Of is a SHA made of v, as long as a commit's.
func sha1Of(v string) string { return fmt.Sprintf("%x", sha1.Sum([]byte(v))) }

func TestCombinedStatus(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		statuses [][2]string // context, state
		want     string
		contexts int
	}{
		{"none", nil, "pending", 0},
		{"success", [][2]string{{"ci", "success"}, {"lint", "success"}}, "success", 2},
		{"one pending", [][2]string{{"ci", "success"}, {"lint", "pending"}}, "pending", 2},
		{"failure", [][2]string{{"ci", "failure"}, {"lint", "pending"}}, "failure", 2},
		{"error", [][2]string{{"ci", "error"}}, "failure", 1},
		{"latest of a context wins", [][2]string{{"ci", "failure"}, {"ci", "pending"}, {"ci", "success"}}, "success", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t)
			commit := sha1Of(tc.name)
			for _, st := range tc.statuses {
				s.SetStatus(commit, st[0], st[1], st[0]+" is "+st[1])
			}
			got, _, err := client(t, s, token).Repositories.GetCombinedStatus(ctx, owner, repo, commit, nil)
			require.NoError(t, err)
			require.Equal(t, tc.want, got.GetState())
			require.Equal(t, commit, got.GetSHA())
			require.Equal(t, tc.contexts, got.GetTotalCount())
			require.Len(t, got.Statuses, tc.contexts)
		})
	}

	t.Run("paginated", func(t *testing.T) {
		s := newServer(t)
		commit := sha1Of("paginated")
		for i := 1; i <= 5; i++ {
			s.SetStatus(commit, fmt.Sprintf("ctx %d", i), "success", "")
		}
		s.SetStatus(commit, "ctx 1", "failure", "broke")
		c := client(t, s, token)
		opts := &github.ListOptions{PerPage: 2}
		var got []*github.RepoStatus
		for {
			page, resp, err := c.Repositories.GetCombinedStatus(ctx, owner, repo, commit, opts)
			require.NoError(t, err)
			require.Equal(t, 5, page.GetTotalCount())
			require.Equal(t, "failure", page.GetState())
			got = append(got, page.Statuses...)
			if resp.NextPage == 0 {
				break
			}
			opts.Page = resp.NextPage
		}
		require.Len(t, got, 5)
		require.Equal(t, "ctx 1", got[0].GetContext())
		require.Equal(t, "failure", got[0].GetState())
		require.Equal(t, "broke", got[0].GetDescription())
		require.NotZero(t, got[0].GetID())
		require.Equal(t, "ctx 5", got[4].GetContext())
	})

	require.Panics(t, func() { newServer(t).SetStatus("x", "ci", "green", "") })
}

// generatedLog is a log of size bytes of numbered lines, made as it is
// read: a test of a large log holds none of it.
type generatedLog struct {
	left    int64
	line    int64
	buf     []byte // the rest of the current line, in scratch
	scratch [64]byte
	closed  *atomic.Bool
}

func (g *generatedLog) Read(p []byte) (int, error) {
	if g.left <= 0 {
		return 0, io.EOF
	}
	n := 0
	for n < len(p) && g.left > 0 {
		if len(g.buf) == 0 {
			g.line++
			g.buf = append(g.scratch[:0], "2024-01-01T00:00:00.0000000Z line "...)
			g.buf = append(strconv.AppendInt(g.buf, g.line, 10), " of the build\n"...)
		}
		k := copy(p[n:], g.buf[:min(int64(len(g.buf)), g.left)])
		g.buf, g.left, n = g.buf[k:], g.left-int64(k), n+k
	}
	return n, nil
}

func (g *generatedLog) Close() error {
	g.closed.Store(true)
	return nil
}

func TestJobLogs(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	c := client(t, s, token)
	commit := sha1Of("logs")
	withLog := s.SetCheckRun(commit, fakegithub.CheckRun{Name: "test", Status: "completed", Conclusion: "failure",
		Log: []byte("##[group]Run go test\nFAIL: TestX\n##[error]Process completed with exit code 1.\n")})
	noLog := s.SetCheckRun(commit, fakegithub.CheckRun{Name: "build", Status: "completed", Conclusion: "success"})
	otherApp := s.SetCheckRun(commit, fakegithub.CheckRun{Name: "external", Status: "completed", Conclusion: "success", App: "circleci", Log: []byte("x")})
	const size = 100 << 20
	var closed atomic.Bool
	var opened atomic.Int32
	big := s.SetCheckRun(commit, fakegithub.CheckRun{Name: "big", Status: "completed", Conclusion: "failure",
		OpenLog: func() io.Reader {
			opened.Add(1)
			return &generatedLog{left: size, closed: &closed}
		}})

	u, resp, err := c.Actions.GetWorkflowJobLogs(ctx, owner, repo, withLog, 0)
	require.NoError(t, err)
	require.Equal(t, http.StatusFound, resp.StatusCode)
	got, err := http.Get(u.String())
	require.NoError(t, err)
	body, err := io.ReadAll(got.Body)
	got.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, got.StatusCode)
	require.Equal(t, "text/plain; charset=utf-8", got.Header.Get("Content-Type"))
	require.Equal(t, "##[group]Run go test\nFAIL: TestX\n##[error]Process completed with exit code 1.\n", string(body))

	for _, tc := range []struct {
		name string
		id   int64
	}{
		{"no log", noLog},
		{"not an Actions job", otherApp},
		{"no such job", 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, resp, err := c.Actions.GetWorkflowJobLogs(ctx, owner, repo, tc.id, 0)
			require.Error(t, err)
			require.Equal(t, http.StatusNotFound, resp.StatusCode)
		})
	}

	t.Run("signed", func(t *testing.T) {
		forged := *u
		forged.RawQuery = "token=nope"
		got, err := http.Get(forged.String())
		require.NoError(t, err)
		got.Body.Close()
		require.Equal(t, http.StatusForbidden, got.StatusCode)
	})

	t.Run("100 MB streamed", func(t *testing.T) {
		u, _, err := c.Actions.GetWorkflowJobLogs(ctx, owner, repo, big, 0)
		require.NoError(t, err)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		got, err := http.Get(u.String())
		require.NoError(t, err)
		defer got.Body.Close()
		const line1 = "2024-01-01T00:00:00.0000000Z line 1 of the build\n"
		first := make([]byte, len(line1))
		_, err = io.ReadFull(got.Body, first)
		require.NoError(t, err)
		rest, err := io.Copy(io.Discard, got.Body)
		require.NoError(t, err)
		runtime.ReadMemStats(&after)
		require.Equal(t, line1, string(first))
		require.Equal(t, int64(size), int64(len(first))+rest)
		require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(4<<20), "the log is streamed, not held")
		require.Eventually(t, closed.Load, 5*time.Second, 10*time.Millisecond, "the log is closed after")
		require.Equal(t, int32(1), opened.Load())
	})

	var downloads []int
	for _, r := range s.Requests() {
		if strings.HasPrefix(r.Path, "/_logs/") {
			downloads = append(downloads, r.Status)
		}
	}
	require.Equal(t, []int{200, 403, 200}, downloads, "downloads are requests too")
}

func TestScriptedCI(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	c := client(t, s, token)
	var mu sync.Mutex
	calls := map[string]int{}
	s.SetCI(func(sha string) []fakegithub.CheckRun {
		// The CI may call the server: it runs without its lock.
		_, found := s.FileAt(sha, "go.mod")
		s.SetStatus(sha, "deploy", "success", "")
		mu.Lock()
		calls[sha]++
		if found {
			calls["found a file without a remote"]++
		}
		mu.Unlock()
		time.Sleep(20 * time.Millisecond) // let concurrent requests pile up
		return []fakegithub.CheckRun{
			{Name: "build", Status: "completed", Conclusion: "success"},
			{Name: "test", Status: "completed", Conclusion: "failure", Log: []byte("FAIL\n")},
		}
	})
	n := openPull(t, c, "feature", false)
	head := getPull(t, c, n).GetHead().GetSHA()

	errs := make(chan error, 10)
	for i := 0; i < 10; i++ {
		go func() {
			got, _, err := c.Checks.ListCheckRunsForRef(ctx, owner, repo, "feature", nil)
			if err == nil && got.GetTotal() != 2 {
				err = fmt.Errorf("%d check runs, want 2", got.GetTotal())
			}
			errs <- err
		}()
	}
	for i := 0; i < 10; i++ {
		require.NoError(t, <-errs)
	}
	status, _, err := c.Repositories.GetCombinedStatus(ctx, owner, repo, head, nil)
	require.NoError(t, err)
	require.Equal(t, "success", status.GetState())
	require.Equal(t, "unstable", getPull(t, c, n).GetMergeableState(), "a failed check, not required")

	other := sha1Of("other")
	_, _, err = c.Repositories.GetCombinedStatus(ctx, owner, repo, other, nil)
	require.NoError(t, err)
	mu.Lock()
	require.Equal(t, map[string]int{head: 1, other: 1}, calls)
	mu.Unlock()

	runs, _, err := c.Checks.ListCheckRunsForRef(ctx, owner, repo, head, &github.ListCheckRunsOptions{CheckName: github.String("test")})
	require.NoError(t, err)
	require.Len(t, runs.CheckRuns, 1)
	u, _, err := c.Actions.GetWorkflowJobLogs(ctx, owner, repo, runs.CheckRuns[0].GetID(), 0)
	require.NoError(t, err, "a scripted run's log is served")
	require.Contains(t, u.Path, fmt.Sprint(runs.CheckRuns[0].GetID()))

	s.SetCheckRun(head, fakegithub.CheckRun{Name: "test", Status: "completed", Conclusion: "success"})
	require.Equal(t, "clean", getPull(t, c, n).GetMergeableState(), "the CI does not run again; a fixed run is seen")
}

func TestReviews(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	c := client(t, s, token)
	s.SetPermission("alice", "write")
	s.SetPermission("bob", "read")
	n := openPull(t, c, "feature", false)
	other := openPull(t, c, "other", false)
	head := getPull(t, c, n).GetHead().GetSHA()

	pr, resp, err := c.PullRequests.RequestReviewers(ctx, owner, repo, n, github.ReviewersRequest{Reviewers: []string{"alice", "bob"}})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	require.Equal(t, []string{"alice", "bob"}, logins(pr.RequestedReviewers))

	for _, tc := range []struct {
		name, reviewer, message string
	}{
		{"author", bot, "Review cannot be requested from pull request author."},
		{"not a collaborator", "mallory", "Reviews may only be requested from collaborators. One or more of the users or teams you specified is not a collaborator of the acme/widgets repository."},
	} {
		t.Run("request "+tc.name, func(t *testing.T) {
			_, _, err := c.PullRequests.RequestReviewers(ctx, owner, repo, n, github.ReviewersRequest{Reviewers: []string{tc.reviewer}})
			requireAPIError(t, err, http.StatusUnprocessableEntity, tc.message)
		})
	}

	reviewID, commentIDs := s.AddReview(n, "alice", "CHANGES_REQUESTED", "A few things.",
		fakegithub.ReviewComment{Path: "main.go", Line: 12, Body: "Handle the error."},
		fakegithub.ReviewComment{Path: "README.md", Line: 3, Body: "Typo."})
	require.Len(t, commentIDs, 2)
	reviewers, _, err := c.PullRequests.ListReviewers(ctx, owner, repo, n, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"bob"}, logins(reviewers.Users), "alice reviewed")

	lone := s.AddReviewComment(n, "bob", "main.go", 20, "Why?")
	s.AddReviewComment(other, "bob", "x.go", 1, "elsewhere")
	require.Empty(t, getPull(t, c, n).RequestedReviewers, "a lone comment is a review too")

	pr, _, err = c.PullRequests.RequestReviewers(ctx, owner, repo, n, github.ReviewersRequest{Reviewers: []string{"alice"}})
	require.NoError(t, err)
	require.Equal(t, []string{"alice"}, logins(pr.RequestedReviewers))
	require.Equal(t, []string{"alice", "bob", "alice"}, s.ReviewRequests(n), "every request counts")

	reviews, _, err := c.PullRequests.ListReviews(ctx, owner, repo, n, nil)
	require.NoError(t, err)
	require.Len(t, reviews, 2)
	require.Equal(t, reviewID, reviews[0].GetID())
	require.Equal(t, "alice", reviews[0].GetUser().GetLogin())
	require.Equal(t, "CHANGES_REQUESTED", reviews[0].GetState())
	require.Equal(t, "A few things.", reviews[0].GetBody())
	require.Equal(t, head, reviews[0].GetCommitID())
	require.Equal(t, "COLLABORATOR", reviews[0].GetAuthorAssociation())
	require.False(t, reviews[0].GetSubmittedAt().IsZero())
	require.Contains(t, reviews[0].GetHTMLURL(), fmt.Sprintf("/pull/%d#pullrequestreview-%d", n, reviewID))
	require.Equal(t, "COMMENTED", reviews[1].GetState(), "a lone comment comes with a review")

	// Replies: go-github's CreateCommentInReplyTo, and the replies endpoint.
	reply, resp, err := c.PullRequests.CreateCommentInReplyTo(ctx, owner, repo, n, "Done.", commentIDs[0])
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	require.Equal(t, commentIDs[0], reply.GetInReplyTo())
	require.Equal(t, bot, reply.GetUser().GetLogin())
	require.Equal(t, "main.go", reply.GetPath())
	require.Equal(t, 12, reply.GetLine())

	replyTo := func(pull int, id int64, body string) (*github.PullRequestComment, *github.Response, error) {
		req, err := c.NewRequest(http.MethodPost, fmt.Sprintf("repos/%s/%s/pulls/%d/comments/%d/replies", owner, repo, pull, id),
			map[string]string{"body": body})
		require.NoError(t, err)
		var got github.PullRequestComment
		resp, err := c.Do(ctx, req, &got)
		return &got, resp, err
	}
	second, resp, err := replyTo(n, lone, "Because.")
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	require.Equal(t, lone, second.GetInReplyTo())
	third, _, err := replyTo(n, second.GetID(), "Still because.")
	require.NoError(t, err)
	require.Equal(t, lone, third.GetInReplyTo(), "a reply to a reply joins the thread")

	for _, tc := range []struct {
		name string
		pull int
		id   int64
	}{
		{"comment of another pull request", other, lone},
		{"no such comment", n, 1},
	} {
		t.Run("reply to "+tc.name, func(t *testing.T) {
			_, _, err := replyTo(tc.pull, tc.id, "x")
			requireAPIError(t, err, http.StatusNotFound, "Not Found")
		})
	}

	opts := &github.PullRequestListCommentsOptions{ListOptions: github.ListOptions{PerPage: 2}}
	var comments []*github.PullRequestComment
	for {
		page, resp, err := c.PullRequests.ListComments(ctx, owner, repo, n, opts)
		require.NoError(t, err)
		comments = append(comments, page...)
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	require.Len(t, comments, 6)
	first := comments[0]
	require.Equal(t, commentIDs[0], first.GetID())
	require.Nil(t, first.InReplyTo, "a first comment has no in_reply_to_id")
	require.Equal(t, reviewID, first.GetPullRequestReviewID())
	require.Equal(t, "alice", first.GetUser().GetLogin())
	require.Equal(t, "COLLABORATOR", first.GetAuthorAssociation())
	require.Equal(t, head, first.GetCommitID())
	require.Equal(t, head, first.GetOriginalCommitID())
	require.Equal(t, 12, first.GetLine())
	require.Equal(t, 12, first.GetOriginalLine())
	require.Equal(t, "RIGHT", first.GetSide())
	require.True(t, strings.HasPrefix(first.GetDiffHunk(), "@@ -"), first.GetDiffHunk())
	require.Contains(t, first.GetHTMLURL(), fmt.Sprintf("/pull/%d#discussion_r%d", n, first.GetID()))
	require.Equal(t, commentIDs[0], comments[3].GetInReplyTo())

	type thread struct {
		author    string
		inReplyTo int64
		body      string
	}
	var threads []thread
	for _, rc := range s.ReviewComments(n) {
		threads = append(threads, thread{rc.Author, rc.InReplyTo, rc.Body})
	}
	require.Equal(t, []thread{
		{"alice", 0, "Handle the error."},
		{"alice", 0, "Typo."},
		{"bob", 0, "Why?"},
		{bot, commentIDs[0], "Done."},
		{bot, lone, "Because."},
		{bot, lone, "Still because."},
	}, threads)

	got := s.Reviews(n)
	require.Len(t, got, 5, "each reply comes with a review")
	require.Equal(t, fakegithub.Review{ID: reviewID, Author: "alice", State: "CHANGES_REQUESTED", Body: "A few things.",
		CommitID: head, SubmittedAt: reviews[0].GetSubmittedAt().Time}, got[0])
	require.Equal(t, 6, getPull(t, c, n).GetReviewComments())

	require.Panics(t, func() { s.AddReview(n, "alice", "LGTM", "") })
	require.Panics(t, func() { s.AddReview(n, bot, "APPROVED", "") }, "GitHub refuses an approval by the author")
	require.Panics(t, func() { s.AddReview(n, "alice", "COMMENTED", "", fakegithub.ReviewComment{Body: "no path"}) })
}

func logins(users []*github.User) []string {
	out := make([]string, 0, len(users))
	for _, u := range users {
		out = append(out, u.GetLogin())
	}
	return out
}

func TestMergeableState(t *testing.T) {
	for _, tc := range []struct {
		name  string
		draft bool
		setup func(s *fakegithub.Server, n int, head string)
		state string
		// mergeable is "true", "false" or "null".
		mergeable string
	}{
		{"no checks", false, func(*fakegithub.Server, int, string) {}, "clean", "true"},
		{"green", false, func(s *fakegithub.Server, _ int, head string) {
			s.SetCheckRun(head, fakegithub.CheckRun{Name: "ci", Status: "completed", Conclusion: "success"})
			s.SetCheckRun(head, fakegithub.CheckRun{Name: "optional", Status: "completed", Conclusion: "skipped"})
			s.SetStatus(head, "deploy", "success", "")
		}, "clean", "true"},
		{"pending run", false, func(s *fakegithub.Server, _ int, head string) {
			s.SetCheckRun(head, fakegithub.CheckRun{Name: "ci", Status: "queued"})
		}, "unstable", "true"},
		{"failed status", false, func(s *fakegithub.Server, _ int, head string) {
			s.SetStatus(head, "deploy", "error", "")
		}, "unstable", "true"},
		{"required checks failing", false, func(s *fakegithub.Server, _ int, head string) {
			s.RequireChecks(true)
			s.SetCheckRun(head, fakegithub.CheckRun{Name: "ci", Status: "completed", Conclusion: "timed_out"})
		}, "blocked", "true"},
		{"required checks pending", false, func(s *fakegithub.Server, _ int, head string) {
			s.RequireChecks(true)
			s.SetCheckRun(head, fakegithub.CheckRun{Name: "ci", Status: "completed", Conclusion: "success"})
			s.SetStatus(head, "deploy", "pending", "")
		}, "blocked", "true"},
		{"required checks none yet", false, func(s *fakegithub.Server, _ int, _ string) {
			s.RequireChecks(true)
		}, "blocked", "true"},
		{"required checks green", false, func(s *fakegithub.Server, _ int, head string) {
			s.RequireChecks(true)
			s.SetCheckRun(head, fakegithub.CheckRun{Name: "ci", Status: "completed", Conclusion: "neutral"})
		}, "clean", "true"},
		{"reviews required, none", false, func(s *fakegithub.Server, _ int, _ string) {
			s.RequireReviews(true)
		}, "blocked", "true"},
		{"reviews required, approved", false, func(s *fakegithub.Server, n int, _ string) {
			s.RequireReviews(true)
			s.AddReview(n, "alice", "APPROVED", "")
			s.AddReview(n, "alice", "COMMENTED", "a comment keeps the approval")
		}, "clean", "true"},
		{"reviews required, approved by a reader", false, func(s *fakegithub.Server, n int, _ string) {
			s.RequireReviews(true)
			s.AddReview(n, "rita", "APPROVED", "")
		}, "blocked", "true"},
		{"reviews required, changes requested", false, func(s *fakegithub.Server, n int, _ string) {
			s.RequireReviews(true)
			s.AddReview(n, "alice", "APPROVED", "")
			s.AddReview(n, owner, "CHANGES_REQUESTED", "")
		}, "blocked", "true"},
		{"reviews required, changes then approval", false, func(s *fakegithub.Server, n int, _ string) {
			s.RequireReviews(true)
			s.AddReview(n, "alice", "CHANGES_REQUESTED", "")
			s.AddReview(n, "alice", "APPROVED", "")
		}, "clean", "true"},
		{"changes requested, reviews not required", false, func(s *fakegithub.Server, n int, _ string) {
			s.AddReview(n, "alice", "CHANGES_REQUESTED", "")
		}, "clean", "true"},
		{"approved but failing", false, func(s *fakegithub.Server, n int, head string) {
			s.RequireReviews(true)
			s.AddReview(n, "alice", "APPROVED", "")
			s.SetCheckRun(head, fakegithub.CheckRun{Name: "ci", Status: "completed", Conclusion: "failure"})
		}, "unstable", "true"},
		{"draft", true, func(*fakegithub.Server, int, string) {}, "draft", "true"},
		{"conflict", true, func(s *fakegithub.Server, n int, _ string) {
			s.SetConflict(n, true)
		}, "dirty", "false"},
		{"conflict cleared", false, func(s *fakegithub.Server, n int, _ string) {
			s.SetConflict(n, true)
			s.SetConflict(n, false)
		}, "clean", "true"},
		{"closed", false, func(s *fakegithub.Server, n int, _ string) {
			s.ClosePull(n, "alice")
		}, "unknown", "null"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t)
			s.SetPermission("alice", "maintain")
			s.SetPermission("rita", "read")
			c := client(t, s, token)
			n := openPull(t, c, "feature", tc.draft)
			tc.setup(s, n, getPull(t, c, n).GetHead().GetSHA())

			pr := getPull(t, c, n)
			require.Equal(t, tc.state, pr.GetMergeableState())
			mergeable := "null"
			if pr.Mergeable != nil {
				mergeable = strconv.FormatBool(*pr.Mergeable)
			}
			require.Equal(t, tc.mergeable, mergeable)

			list, _, err := c.PullRequests.List(context.Background(), owner, repo, &github.PullRequestListOptions{State: "all"})
			require.NoError(t, err)
			require.Len(t, list, 1)
			require.Equal(t, tc.state, list[0].GetMergeableState(), "lists say the same")
		})
	}
}

func TestMerge(t *testing.T) {
	ctx := context.Background()
	s := newServer(t)
	s.SetPermission("alice", "write")
	c := client(t, s, token)
	n := openPull(t, c, "feature", false)
	head := getPull(t, c, n).GetHead().GetSHA()
	draft := openPull(t, c, "draft", true)
	dirty := openPull(t, c, "dirty", false)
	s.SetConflict(dirty, true)
	s.RequireChecks(true)
	blocked := openPull(t, c, "blocked", false)

	merge := func(n int, message string, opts *github.PullRequestOptions) (*github.PullRequestMergeResult, *github.Response, error) {
		return c.PullRequests.Merge(ctx, owner, repo, n, message, opts)
	}
	s.SetCheckRun(head, fakegithub.CheckRun{Name: "ci", Status: "completed", Conclusion: "success"})
	for _, tc := range []struct {
		name    string
		pull    int
		opts    *github.PullRequestOptions
		status  int
		message string
	}{
		{"draft", draft, nil, http.StatusMethodNotAllowed, "Pull Request is not mergeable"},
		{"dirty", dirty, nil, http.StatusMethodNotAllowed, "Pull Request is not mergeable"},
		{"blocked by required checks", blocked, nil, http.StatusMethodNotAllowed, "Pull Request is not mergeable"},
		{"head moved", n, &github.PullRequestOptions{SHA: sha1Of("old head")}, http.StatusConflict, "Head branch was modified. Review and try the merge again."},
		{"unknown method", n, &github.PullRequestOptions{MergeMethod: "octopus"}, http.StatusUnprocessableEntity, "Validation Failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := merge(tc.pull, "", tc.opts)
			requireAPIError(t, err, tc.status, tc.message)
			require.False(t, s.Pull(tc.pull).Merged)
		})
	}

	res, resp, err := merge(n, "Fixes everything.", &github.PullRequestOptions{SHA: head, MergeMethod: "squash", CommitTitle: "Change feature (#1)"})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.True(t, res.GetMerged())
	require.Equal(t, "Pull Request successfully merged", res.GetMessage())
	require.Len(t, res.GetSHA(), 40)

	_, _, err = merge(n, "", nil)
	requireAPIError(t, err, http.StatusMethodNotAllowed, "Pull Request is not mergeable")

	pr := getPull(t, c, n)
	require.True(t, pr.GetMerged())
	require.Equal(t, "closed", pr.GetState())
	require.Equal(t, bot, pr.GetMergedBy().GetLogin())
	require.Equal(t, res.GetSHA(), pr.GetMergeCommitSHA())
	require.False(t, pr.GetMergedAt().IsZero())
	require.Equal(t, head, pr.GetHead().GetSHA())
	require.Equal(t, "unknown", pr.GetMergeableState())
	merged, _, err := c.PullRequests.IsMerged(ctx, owner, repo, n)
	require.NoError(t, err)
	require.True(t, merged)
	merged, _, err = c.PullRequests.IsMerged(ctx, owner, repo, draft)
	require.NoError(t, err)
	require.False(t, merged)

	is, _, err := c.Issues.Get(ctx, owner, repo, n)
	require.NoError(t, err)
	require.Equal(t, "closed", is.GetState())
	require.False(t, is.GetPullRequestLinks().GetMergedAt().IsZero())
	events, _, err := c.Issues.ListIssueEvents(ctx, owner, repo, n, nil)
	require.NoError(t, err)
	require.Len(t, events, 2)
	require.Equal(t, "merged", events[0].GetEvent())
	require.Equal(t, res.GetSHA(), events[0].GetCommitID())
	require.Equal(t, "closed", events[1].GetEvent())

	_, _, err = c.PullRequests.Edit(ctx, owner, repo, n, &github.PullRequest{State: github.String("open")})
	requireAPIError(t, err, http.StatusUnprocessableEntity, "Validation Failed")

	got := s.Pull(n)
	require.True(t, got.Merged)
	require.Equal(t, bot, got.MergedBy)
	require.Equal(t, "squash", got.MergeMethod)
	require.Equal(t, res.GetSHA(), got.MergeCommitSHA)
	require.Equal(t, "closed", got.State)

	require.NoError(t, s.MergeByHuman(blocked, "alice"), "a person may bypass the rules")
	require.Equal(t, []int{n, blocked}, pullNumbers(s.MergedPulls()))
	require.Equal(t, "alice", s.Pull(blocked).MergedBy)
	require.Equal(t, "merge", s.Pull(blocked).MergeMethod)
	require.Error(t, s.MergeByHuman(blocked, "alice"), "already merged")

	s.ClosePull(draft, "alice")
	require.Equal(t, "closed", s.Pull(draft).State)
	require.False(t, s.Pull(draft).Merged)
	_, _, err = merge(draft, "", nil)
	requireAPIError(t, err, http.StatusMethodNotAllowed, "Pull Request is not mergeable")

	var writes []string
	for _, r := range s.Requests() {
		if r.Method == http.MethodPut {
			writes = append(writes, fmt.Sprintf("%s %d", r.Path, r.Status))
		}
	}
	require.Equal(t, []string{
		"/repos/acme/widgets/pulls/2/merge 405",
		"/repos/acme/widgets/pulls/3/merge 405",
		"/repos/acme/widgets/pulls/4/merge 405",
		"/repos/acme/widgets/pulls/1/merge 409",
		"/repos/acme/widgets/pulls/1/merge 422",
		"/repos/acme/widgets/pulls/1/merge 200",
		"/repos/acme/widgets/pulls/1/merge 405",
		"/repos/acme/widgets/pulls/2/merge 405",
	}, writes)
}

func pullNumbers(pulls []fakegithub.Pull) []int {
	out := make([]int, 0, len(pulls))
	for _, p := range pulls {
		out = append(out, p.Number)
	}
	return out
}

// gitIn runs git in dir as a test user, isolated from the user's git
// configuration, and returns its trimmed output.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Tess", "GIT_AUTHOR_EMAIL=tess@example.com", "GIT_COMMITTER_NAME=Tess", "GIT_COMMITTER_EMAIL=tess@example.com")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

// commitFile writes content to name in the clone dir, commits it and
// pushes branch, and returns the commit.
func commitFile(t *testing.T, dir, branch, name, content string) string {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	gitIn(t, dir, "add", name)
	gitIn(t, dir, "commit", "-q", "-m", "Change "+name)
	gitIn(t, dir, "push", "-q", "origin", "HEAD:refs/heads/"+branch)
	return gitIn(t, dir, "rev-parse", "HEAD")
}

// newRemote makes a bare repository with a commit on main, and a clone
// of it on that commit.
func newRemote(t *testing.T) (bare, clone string) {
	t.Helper()
	bare, clone = t.TempDir(), t.TempDir()
	gitIn(t, bare, "init", "-q", "--bare", "-b", "main")
	gitIn(t, clone, "init", "-q", "-b", "main")
	gitIn(t, clone, "remote", "add", "origin", bare)
	commitFile(t, clone, "main", "README.md", "# Widgets\n")
	return bare, clone
}

func TestRemote(t *testing.T) {
	ctx := context.Background()
	bare, clone := newRemote(t)
	s := newServer(t)
	s.SetPermission("alice", "write")
	s.SetRemote(bare)
	c := client(t, s, token)
	base := gitIn(t, bare, "rev-parse", "main")

	gitIn(t, clone, "checkout", "-q", "-b", "feature")
	first := commitFile(t, clone, "feature", "main.go", "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n")
	n := openPull(t, c, "feature", false)
	pr := getPull(t, c, n)
	require.Equal(t, first, pr.GetHead().GetSHA())
	require.Equal(t, base, pr.GetBase().GetSHA())
	require.Equal(t, "clean", pr.GetMergeableState())

	data, ok := s.FileAt(first, "main.go")
	require.True(t, ok)
	require.Contains(t, string(data), "println")
	_, ok = s.FileAt(first, "nope.go")
	require.False(t, ok)
	_, ok = s.FileAt(base, "main.go")
	require.False(t, ok)

	_, ids := s.AddReview(n, "alice", "COMMENTED", "", fakegithub.ReviewComment{Path: "main.go", Line: 4, Body: "Say hello."})
	comments, _, err := c.PullRequests.ListComments(ctx, owner, repo, n, nil)
	require.NoError(t, err)
	require.Len(t, comments, 1)
	require.Equal(t, ids[0], comments[0].GetID())
	require.Equal(t, "@@ -1,3 +1,4 @@\n package main\n \n func main() {\n+\tprintln(\"hi\")", comments[0].GetDiffHunk())
	require.Equal(t, first, comments[0].GetCommitID())

	second := commitFile(t, clone, "feature", "main.go", "package main\n\nfunc main() {\n\tprintln(\"hello\")\n}\n")
	require.Equal(t, second, getPull(t, c, n).GetHead().GetSHA(), "a push moves the head")
	s.SetCheckRun(second, fakegithub.CheckRun{Name: "ci", Status: "in_progress"})
	runs, _, err := c.Checks.ListCheckRunsForRef(ctx, owner, repo, "feature", nil)
	require.NoError(t, err)
	require.Equal(t, 1, runs.GetTotal())
	require.Equal(t, second, runs.CheckRuns[0].GetHeadSHA())

	_, _, err = c.Checks.ListCheckRunsForRef(ctx, owner, repo, "no/such-branch", nil)
	requireAPIError(t, err, http.StatusUnprocessableEntity, "No commit found for SHA: no/such-branch")

	t.Run("conflict", func(t *testing.T) {
		gitIn(t, clone, "checkout", "-q", "-b", "clash", base)
		commitFile(t, clone, "clash", "main.go", "package main\n")
		m := openPull(t, c, "clash", false)
		require.Equal(t, "clean", getPull(t, c, m).GetMergeableState())
		// main moves under both pull requests: feature still merges, clash does not.
		gitIn(t, clone, "checkout", "-q", "-b", "other", base)
		commitFile(t, clone, "main", "main.go", "package main // other\n")
		require.Equal(t, "dirty", getPull(t, c, m).GetMergeableState())
		require.False(t, getPull(t, c, m).GetMergeable())
		_, _, err := c.PullRequests.Merge(ctx, owner, repo, m, "", nil)
		requireAPIError(t, err, http.StatusMethodNotAllowed, "Pull Request is not mergeable")
		s.ClosePull(m, owner)
	})
	require.Equal(t, "dirty", getPull(t, c, n).GetMergeableState(), "feature adds main.go too")
	gitIn(t, clone, "reset", "-q", "--hard", base)
	gitIn(t, clone, "push", "-q", "-f", "origin", "HEAD:refs/heads/main")
	require.Equal(t, "unstable", getPull(t, c, n).GetMergeableState(), "its check is in progress")

	for _, tc := range []struct {
		method  string
		parents int
	}{
		{"merge", 2},
		{"squash", 1},
		{"rebase", 0}, // a fast-forward: the base is the head
	} {
		t.Run(tc.method, func(t *testing.T) {
			branch := "change-" + tc.method
			gitIn(t, clone, "fetch", "-q", "origin")
			gitIn(t, clone, "checkout", "-q", "-B", branch, "origin/main")
			head := commitFile(t, clone, branch, tc.method+".txt", tc.method+"\n")
			m := openPull(t, c, branch, false)
			before := gitIn(t, bare, "rev-parse", "main")
			res, _, err := c.PullRequests.Merge(ctx, owner, repo, m, "", &github.PullRequestOptions{MergeMethod: tc.method, SHA: head})
			require.NoError(t, err)
			after := gitIn(t, bare, "rev-parse", "main")
			require.Equal(t, res.GetSHA(), after, "the base moved to the merge commit")
			require.NotEqual(t, before, after)
			if tc.parents == 0 {
				require.Equal(t, head, after)
			} else {
				parents := strings.Fields(gitIn(t, bare, "log", "-1", "--format=%P", after))
				require.Len(t, parents, tc.parents)
				require.Equal(t, before, parents[0])
			}
			content, ok := s.FileAt(after, tc.method+".txt")
			require.True(t, ok)
			require.Equal(t, tc.method+"\n", string(content))
			pr := getPull(t, c, m)
			require.True(t, pr.GetMerged())
			require.Equal(t, head, pr.GetHead().GetSHA())
		})
	}

	t.Run("merge into a moved base", func(t *testing.T) {
		s.SetCheckRun(second, fakegithub.CheckRun{Name: "ci", Status: "completed", Conclusion: "success"})
		res, _, err := c.PullRequests.Merge(ctx, owner, repo, n, "", nil)
		require.NoError(t, err)
		tree := gitIn(t, bare, "ls-tree", "--name-only", res.GetSHA())
		require.Equal(t, []string{"README.md", "main.go", "merge.txt", "rebase.txt", "squash.txt"}, strings.Fields(tree))
		require.Equal(t, "Merge pull request #1 from acme/feature", gitIn(t, bare, "log", "-1", "--format=%s", res.GetSHA()))
	})
}
