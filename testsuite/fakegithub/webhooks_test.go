package fakegithub_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/testsuite/fakegithub"
)

const hookSecret = "s3cret"

var uuidRE = `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`

// received is a delivery a test's receiver got: its signature checked,
// parsed with go-github, or why it could not be.
type received struct {
	header http.Header
	body   []byte
	event  any
	err    error
}

// receiver starts a webhook receiver that checks each delivery with
// secret and parses it, and answers it with the status of answer (200 if
// nil), and returns its URL and what it gets.
func receiver(t *testing.T, secret string, answer func(r *http.Request) int) (string, <-chan received) {
	t.Helper()
	got := make(chan received, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := github.ValidatePayload(r, []byte(secret))
		var ev any
		if err == nil {
			ev, err = github.ParseWebHook(github.WebHookType(r), body)
		}
		got <- received{header: r.Header.Clone(), body: body, event: ev, err: err}
		if answer != nil {
			w.WriteHeader(answer(r))
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL, got
}

// next is the next delivery of got, checked.
func next(t *testing.T, got <-chan received) received {
	t.Helper()
	select {
	case r := <-got:
		require.NoError(t, r.err)
		return r
	case <-time.After(10 * time.Second):
		require.FailNow(t, "no delivery")
		return received{}
	}
}

// hookEvent sums up a parsed delivery: its event and action, its sender,
// the number of its issue or pull request, its label, and whether a pull
// request was merged.
type hookEvent struct {
	event, action, sender string
	number                int
	label                 string
	merged                bool
}

func describe(t *testing.T, r received) hookEvent {
	t.Helper()
	h := hookEvent{event: r.header.Get("X-GitHub-Event")}
	switch ev := r.event.(type) {
	case *github.IssuesEvent:
		h.action, h.sender, h.number, h.label = ev.GetAction(), ev.GetSender().GetLogin(), ev.GetIssue().GetNumber(), ev.GetLabel().GetName()
		require.Equal(t, owner+"/"+repo, ev.GetRepo().GetFullName())
	case *github.IssueCommentEvent:
		h.action, h.sender, h.number = ev.GetAction(), ev.GetSender().GetLogin(), ev.GetIssue().GetNumber()
		require.Equal(t, ev.GetComment().GetUser().GetLogin(), h.sender)
	case *github.PullRequestEvent:
		h.action, h.sender, h.number, h.label = ev.GetAction(), ev.GetSender().GetLogin(), ev.GetNumber(), ev.GetLabel().GetName()
		h.merged = ev.GetPullRequest().GetMerged()
		require.Equal(t, h.number, ev.GetPullRequest().GetNumber())
	default:
		require.FailNow(t, "unexpected event", "%T", ev)
	}
	return h
}

// TestWebhookDeliveries: a label added, a comment and a merge are
// delivered in order, signed, with GitHub's headers; the merge is the
// pull request closed and merged, then the issue its closing keyword
// names closed. A redelivery sends the same ID and body.
func TestWebhookDeliveries(t *testing.T) {
	ctx := context.Background()
	s := newServer(t)
	c := client(t, s, token)
	n := s.AddIssue(fakegithub.IssueSpec{Title: "bug"})
	pr := s.AddIssue(fakegithub.IssueSpec{Title: "fix", Body: "Fixes #1", PullRequest: true})
	url, got := receiver(t, hookSecret, nil)
	s.SetWebhook(url, hookSecret)

	s.AddLabel(n, "ready", "alice")
	_, _, err := c.Issues.CreateComment(ctx, owner, repo, n, &github.IssueComment{Body: github.String("On it.")})
	require.NoError(t, err)
	res, _, err := c.PullRequests.Merge(ctx, owner, repo, pr, "", nil)
	require.NoError(t, err)

	want := []hookEvent{
		{"issues", "labeled", "alice", n, "ready", false},
		{"issue_comment", "created", bot, n, "", false},
		{"pull_request", "closed", bot, pr, "", true},
		{"issues", "closed", bot, n, "", false},
	}
	var deliveries []received
	for _, w := range want {
		r := next(t, got)
		require.Equal(t, w, describe(t, r))
		require.Equal(t, "application/json", r.header.Get("Content-Type"))
		require.Equal(t, "GitHub-Hookshot/fake", r.header.Get("User-Agent"))
		require.Regexp(t, uuidRE, r.header.Get("X-GitHub-Delivery"))
		deliveries = append(deliveries, r)
	}
	closed := deliveries[3].event.(*github.IssuesEvent).GetIssue()
	require.Equal(t, "completed", closed.GetStateReason())
	require.Equal(t, res.GetSHA(), deliveries[2].event.(*github.PullRequestEvent).GetPullRequest().GetMergeCommitSHA())

	require.Eventually(t, func() bool { return len(s.Deliveries()) == len(want) }, 5*time.Second, 10*time.Millisecond)
	ids := map[string]bool{}
	for i, d := range s.Deliveries() {
		require.Equal(t, fakegithub.Delivery{
			Event: want[i].event, Action: want[i].action, ID: deliveries[i].header.Get("X-GitHub-Delivery"), Status: http.StatusOK,
		}, d)
		ids[d.ID] = true
	}
	require.Len(t, ids, len(want), "a fresh ID per delivery")

	first := s.Deliveries()[0]
	s.Redeliver(first.ID)
	again := next(t, got)
	require.Equal(t, first.ID, again.header.Get("X-GitHub-Delivery"))
	require.Equal(t, deliveries[0].body, again.body)
	require.Eventually(t, func() bool { return len(s.Deliveries()) == len(want)+1 }, 5*time.Second, 10*time.Millisecond)
	require.True(t, s.Deliveries()[len(want)].Redelivery)
	require.Panics(t, func() { s.Redeliver("nope") })
}

// TestWebhookChanges: each change, through a helper or the API, is
// delivered as GitHub delivers it.
func TestWebhookChanges(t *testing.T) {
	ctx := context.Background()
	s := newServer(t)
	c := client(t, s, token)
	url, got := receiver(t, hookSecret, nil)
	s.SetWebhook(url, hookSecret)
	for _, tc := range []struct {
		name   string
		change func(t *testing.T)
		want   []hookEvent
	}{
		{"seeded with a label", func(*testing.T) {
			s.AddIssue(fakegithub.IssueSpec{Title: "one", Author: "bob", Labels: []string{"bug"}, LabeledBy: "alice"})
		}, []hookEvent{{"issues", "opened", "bob", 1, "", false}, {"issues", "labeled", "alice", 1, "bug", false}}},
		{"created with a label", func(t *testing.T) {
			_, _, err := c.Issues.Create(ctx, owner, repo, &github.IssueRequest{Title: github.String("two"), Labels: &[]string{"ralph"}})
			require.NoError(t, err)
		}, []hookEvent{{"issues", "opened", bot, 2, "", false}, {"issues", "labeled", bot, 2, "ralph", false}}},
		{"label removed", func(*testing.T) { s.RemoveLabel(1, "bug", "alice") },
			[]hookEvent{{"issues", "unlabeled", "alice", 1, "bug", false}}},
		{"labels replaced", func(t *testing.T) {
			_, _, err := c.Issues.ReplaceLabelsForIssue(ctx, owner, repo, 2, []string{"ready"})
			require.NoError(t, err)
		}, []hookEvent{{"issues", "unlabeled", bot, 2, "ralph", false}, {"issues", "labeled", bot, 2, "ready", false}}},
		{"closed and reopened", func(*testing.T) { s.SetState(1, "closed", "alice"); s.SetState(1, "open", "bob") },
			[]hookEvent{{"issues", "closed", "alice", 1, "", false}, {"issues", "reopened", "bob", 1, "", false}}},
		{"closed through the API", func(t *testing.T) {
			_, _, err := c.Issues.Edit(ctx, owner, repo, 2, &github.IssueRequest{State: github.String("closed")})
			require.NoError(t, err)
		}, []hookEvent{{"issues", "closed", bot, 2, "", false}}},
		{"pull request opened", func(t *testing.T) { openPull(t, c, "feature", false) },
			[]hookEvent{{"pull_request", "opened", bot, 3, "", false}}},
		{"pull request labelled", func(*testing.T) { s.AddLabel(3, "ready", "alice") },
			[]hookEvent{{"pull_request", "labeled", "alice", 3, "ready", false}}},
		{"comment on a pull request", func(*testing.T) { s.AddComment(3, "bob", "LGTM") },
			[]hookEvent{{"issue_comment", "created", "bob", 3, "", false}}},
		{"pull request closed", func(*testing.T) { s.ClosePull(3, "alice") },
			[]hookEvent{{"pull_request", "closed", "alice", 3, "", false}}},
		{"pull request merged by a person", func(t *testing.T) {
			pr := s.AddIssue(fakegithub.IssueSpec{Title: "fix", Body: "Closes #1", PullRequest: true})
			require.NoError(t, s.MergeByHuman(pr, "alice"))
		}, []hookEvent{
			{"pull_request", "opened", owner, 4, "", false},
			{"pull_request", "closed", "alice", 4, "", true},
			{"issues", "closed", "alice", 1, "", false},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.change(t)
			for _, w := range tc.want {
				r := next(t, got)
				require.Equal(t, w, describe(t, r))
				if w.event == "issue_comment" {
					require.True(t, r.event.(*github.IssueCommentEvent).GetIssue().IsPullRequest())
				}
			}
		})
	}
}

// TestWebhookReceiverDown: a slow receiver holds up no request; a
// delivery that fails is recorded, not retried; without a webhook nothing
// is sent.
func TestWebhookReceiverDown(t *testing.T) {
	ctx := context.Background()
	s := newServer(t)
	c := client(t, s, token)
	n := s.AddIssue(fakegithub.IssueSpec{Title: "bug"})
	release := make(chan struct{})
	url, got := receiver(t, hookSecret, func(r *http.Request) int {
		<-release
		return http.StatusInternalServerError
	})
	s.SetWebhook(url, hookSecret)
	s.AddLabel(n, "a", "alice")
	next(t, got) // the receiver holds it

	start := time.Now()
	_, _, err := c.Issues.AddLabelsToIssue(ctx, owner, repo, n, []string{"b"})
	require.NoError(t, err)
	require.Less(t, time.Since(start), time.Second, "the request did not wait for the receiver")
	require.Empty(t, s.Deliveries(), "not sent yet")
	close(release)
	require.Equal(t, "b", describe(t, next(t, got)).label)
	require.Eventually(t, func() bool { return len(s.Deliveries()) == 2 }, 5*time.Second, 10*time.Millisecond)
	for _, d := range s.Deliveries() {
		require.Equal(t, http.StatusInternalServerError, d.Status)
		require.Empty(t, d.Err)
	}

	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	s.SetWebhook(down.URL, "")
	s.AddLabel(n, "c", "alice")
	require.Eventually(t, func() bool { return len(s.Deliveries()) == 3 }, 5*time.Second, 10*time.Millisecond)
	failed := s.Deliveries()[2]
	require.Zero(t, failed.Status)
	require.NotEmpty(t, failed.Err)

	s.SetWebhook("", "")
	s.AddLabel(n, "d", "alice")
	time.Sleep(100 * time.Millisecond)
	require.Len(t, s.Deliveries(), 3)
	select {
	case r := <-got:
		require.FailNow(t, "unexpected delivery", "%s", r.body)
	default:
	}
}

// TestWebhookClose: Close sends what is queued, and waits for a receiver
// that never answers only a couple of seconds.
func TestWebhookClose(t *testing.T) {
	t.Run("drains the queue", func(t *testing.T) {
		s := fakegithub.New(owner, repo, token, bot)
		url, got := receiver(t, "", nil)
		s.SetWebhook(url, "")
		for i := range 5 {
			s.AddIssue(fakegithub.IssueSpec{Title: "t", Labels: []string{string(rune('a' + i))}})
		}
		s.Close()
		require.Len(t, s.Deliveries(), 10)
		require.Len(t, got, 10)
		r := <-got
		require.Empty(t, r.header.Get("X-Hub-Signature-256"), "no secret, no signature")
	})
	t.Run("bounded", func(t *testing.T) {
		s := fakegithub.New(owner, repo, token, bot)
		hang := make(chan struct{})
		url, _ := receiver(t, "", func(r *http.Request) int {
			select {
			case <-hang:
			case <-r.Context().Done():
			}
			return http.StatusOK
		})
		defer close(hang)
		s.SetWebhook(url, "")
		s.AddIssue(fakegithub.IssueSpec{Title: "t"})
		s.AddIssue(fakegithub.IssueSpec{Title: "u"})
		start := time.Now()
		s.Close()
		require.Less(t, time.Since(start), 4*time.Second)
		ds := s.Deliveries()
		require.Len(t, ds, 2)
		for _, d := range ds {
			require.NotEmpty(t, d.Err)
		}
	})
}
