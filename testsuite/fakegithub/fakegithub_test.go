package fakegithub_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
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
