package github_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/activities/github"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/redact"
)

const (
	pullToken = "ghp_pullTestToken0123456789"
	head      = "6dcb09b5b57875f334f61aebed695e2e4193db5e"
	mergeSHA  = "e5bd3914e2e596debea16f433f57875b5b90bcd6"
	pullPath  = "/repos/acme/app/pulls/7"
)

// api is the REST API of one repository, acme/app: it serves the routes
// a test gives it, 404 else, and counts the requests of each.
type api struct {
	srv    *httptest.Server
	mu     sync.Mutex
	routes map[string]http.HandlerFunc
	hits   map[string]int
	total  int
}

func newAPI(t *testing.T) (*api, *github.Activities, contract.Repo) {
	t.Helper()
	s := &api{routes: map[string]http.HandlerFunc{}, hits: map[string]int{}}
	s.srv = httptest.NewServer(s)
	t.Cleanup(s.srv.Close)
	a := &github.Activities{WriteInterval: -1, Getenv: func(k string) string {
		if k == "GITHUB_TOKEN" {
			return pullToken
		}
		return ""
	}}
	return s, a, contract.Repo{Owner: "acme", Name: "app", APIURL: s.srv.URL + "/"}
}

func (s *api) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Method + " " + r.URL.Path
	s.mu.Lock()
	s.hits[key]++
	s.total++
	h := s.routes[key]
	s.mu.Unlock()
	if h == nil {
		writeJSON(w, http.StatusNotFound, ghError("Not Found"))
		return
	}
	h(w, r)
}

func (s *api) handle(key string, h http.HandlerFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.routes[key] = h
}

func (s *api) reply(key string, status int, v any) {
	s.handle(key, func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, status, v) })
}

func (s *api) count(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[key]
}

func (s *api) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// list serves the items of a listing page by page as GitHub does
// (per_page and page in the query, a Link header to the next page);
// wrap, when set, shapes a page.
func (s *api) list(path string, items func() []any, wrap func(page []any, total int) any) {
	s.handle("GET "+path, func(w http.ResponseWriter, r *http.Request) {
		all := items()
		per, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
		if per <= 0 {
			per = 30
		}
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		page = max(page, 1)
		lo := min((page-1)*per, len(all))
		hi := min(lo+per, len(all))
		if hi < len(all) {
			next := *r.URL
			q := next.Query()
			q.Set("page", strconv.Itoa(page+1))
			next.RawQuery = q.Encode()
			w.Header().Set("Link", fmt.Sprintf(`<%s%s>; rel="next"`, s.srv.URL, next.RequestURI()))
		}
		var v any = append([]any{}, all[lo:hi]...)
		if wrap != nil {
			v = wrap(v.([]any), len(all))
		}
		writeJSON(w, http.StatusOK, v)
	})
}

func fixed(items []any) func() []any { return func() []any { return items } }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func ghError(message string) map[string]any {
	return map[string]any{"message": message, "documentation_url": "https://docs.github.com/rest"}
}

func at(minute int) string { return fmt.Sprintf("2024-05-01T%02d:%02d:00Z", 10+minute/60, minute%60) }

func user(login string) map[string]any {
	typ := "User"
	if strings.HasSuffix(login, "[bot]") {
		typ = "Bot"
	}
	return map[string]any{"login": login, "id": len(login), "node_id": "U_" + login, "type": typ, "site_admin": false,
		"html_url": "https://github.com/" + login}
}

func pullJSON(state string, merged bool, sha string) map[string]any {
	pr := map[string]any{
		"url": "https://api.github.com/repos/acme/app/pulls/7", "id": 1, "node_id": "PR_kwDOA", "number": 7,
		"html_url": "https://github.com/acme/app/pull/7", "state": state, "locked": false, "title": "Fix the parser",
		"user": user("ralph-bot"), "body": "Closes #3", "draft": false, "merged": merged, "mergeable": true,
		"mergeable_state": "clean", "merged_by": nil, "merge_commit_sha": nil, "comments": 0, "review_comments": 0,
		"head": map[string]any{"label": "acme:ralph/issue-3", "ref": "ralph/issue-3", "sha": sha, "user": user("acme")},
		"base": map[string]any{"label": "acme:main", "ref": "main", "sha": "9049f1265b7d61be4a8904a9a27120d2064dab3b", "user": user("acme")},
	}
	if merged {
		pr["merged_by"], pr["merge_commit_sha"], pr["mergeable"], pr["mergeable_state"] = user("alice"), mergeSHA, nil, "unknown"
	}
	return pr
}

func checkRun(id int64, name, status, conclusion, app string, output map[string]any) map[string]any {
	out := map[string]any{"title": nil, "summary": nil, "text": nil, "annotations_count": 0,
		"annotations_url": fmt.Sprintf("https://api.github.com/repos/acme/app/check-runs/%d/annotations", id)}
	for k, v := range output {
		out[k] = v
	}
	r := map[string]any{
		"id": id, "node_id": "CR_" + strconv.FormatInt(id, 10), "name": name, "head_sha": head, "external_id": "",
		"url":      fmt.Sprintf("https://api.github.com/repos/acme/app/check-runs/%d", id),
		"html_url": fmt.Sprintf("https://github.com/acme/app/runs/%d", id), "details_url": fmt.Sprintf("https://ci.example.com/runs/%d", id),
		"status": status, "conclusion": nil, "started_at": at(0), "completed_at": nil, "output": out,
		"check_suite": map[string]any{"id": 5}, "app": map[string]any{"id": 15368, "slug": app, "name": app},
		"pull_requests": []any{},
	}
	if conclusion != "" {
		r["conclusion"], r["completed_at"] = conclusion, at(5)
	}
	return r
}

func commitStatus(id int64, context, state, description string) map[string]any {
	return map[string]any{"id": id, "node_id": "SC_" + context, "state": state, "context": context, "description": description,
		"target_url": "https://ci.example.com/" + context, "url": "https://api.github.com/repos/acme/app/statuses/" + head,
		"created_at": at(0), "updated_at": at(1), "creator": user("acme")}
}

func review(id int64, login, state, body string, minute int) map[string]any {
	return map[string]any{"id": id, "node_id": "PRR_" + strconv.FormatInt(id, 10), "user": user(login), "body": body, "state": state,
		"html_url":         fmt.Sprintf("https://github.com/acme/app/pull/7#pullrequestreview-%d", id),
		"pull_request_url": "https://api.github.com/repos/acme/app/pulls/7", "submitted_at": at(minute), "commit_id": head,
		"author_association": "COLLABORATOR"}
}

func inlineComment(id, inReplyTo int64, login, body string, minute int, line any, hunk string) map[string]any {
	if hunk == "" {
		hunk = "@@ -10,3 +10,4 @@ func parse(s string) error {\n \tif s == \"\" {\n+\t\treturn nil\n \t}"
	}
	cm := map[string]any{"id": id, "node_id": "PRRC_" + strconv.FormatInt(id, 10), "pull_request_review_id": 42, "diff_hunk": hunk,
		"path": "parse.go", "commit_id": head, "original_commit_id": head, "user": user(login), "body": body,
		"created_at": at(minute), "updated_at": at(minute), "line": line, "original_line": 12, "side": "RIGHT",
		"html_url":         fmt.Sprintf("https://github.com/acme/app/pull/7#discussion_r%d", id),
		"pull_request_url": "https://api.github.com/repos/acme/app/pulls/7", "author_association": "COLLABORATOR"}
	if inReplyTo != 0 {
		cm["in_reply_to_id"] = inReplyTo
	}
	return cm
}

func issueComment(id int64, login, body string, minute int) map[string]any {
	return map[string]any{"id": id, "node_id": "IC_" + strconv.FormatInt(id, 10), "user": user(login), "body": body,
		"html_url":   fmt.Sprintf("https://github.com/acme/app/pull/7#issuecomment-%d", id),
		"issue_url":  "https://api.github.com/repos/acme/app/issues/7",
		"created_at": at(minute), "updated_at": at(minute), "author_association": "NONE"}
}

// pullSpec is an open pull request #7 at head and what was said on it.
type pullSpec struct {
	runs, statuses, reviews, inline, comments []any
	// perms are the legacy permission levels of users (admin, write,
	// read); others are no collaborators (404).
	perms map[string]string
}

func (s *api) pull(p pullSpec) {
	s.reply("GET "+pullPath, http.StatusOK, pullJSON("open", false, head))
	s.list("/repos/acme/app/commits/"+head+"/check-runs", fixed(p.runs), func(page []any, total int) any {
		return map[string]any{"total_count": total, "check_runs": page}
	})
	s.list("/repos/acme/app/commits/"+head+"/status", fixed(p.statuses), func(page []any, total int) any {
		return map[string]any{"state": "pending", "sha": head, "total_count": total, "statuses": page,
			"repository": map[string]any{"full_name": "acme/app"}}
	})
	s.list(pullPath+"/reviews", fixed(p.reviews), nil)
	s.list(pullPath+"/comments", fixed(p.inline), nil)
	s.list("/repos/acme/app/issues/7/comments", fixed(p.comments), nil)
	for login, level := range p.perms {
		s.reply("GET /repos/acme/app/collaborators/"+login+"/permission", http.StatusOK,
			map[string]any{"permission": level, "role_name": level, "user": user(login)})
	}
}

func pullState(t *testing.T, a *github.Activities, repo contract.Repo, in contract.PullStateInput) contract.PullState {
	t.Helper()
	in.Repo, in.Number = repo, 7
	st, err := a.PullState(context.Background(), in)
	require.NoError(t, err)
	return st
}

func TestPullStateChecks(t *testing.T) {
	many := make([]any, 150)
	for i := range many {
		many[i] = checkRun(int64(i+1), fmt.Sprintf("test %d", i), "completed", "success", "circleci", nil)
	}
	tests := []struct {
		name             string
		runs, statuses   []any
		total, passed    int
		pending          []string
		failed           []string // name:conclusion
		done, green      bool
		outputs, urls    map[string]string
		wantCheckHeadSHA string
	}{
		{name: "no checks at all", done: true, green: true},
		{
			name: "pending run and status",
			runs: []any{
				checkRun(1, "build", "completed", "success", "circleci", nil),
				checkRun(2, "lint", "in_progress", "", "circleci", nil),
				checkRun(3, "deploy", "queued", "", "circleci", nil),
			},
			statuses: []any{commitStatus(1, "ci/jenkins", "pending", "Build started")},
			total:    4, passed: 1, pending: []string{"lint", "deploy", "ci/jenkins"},
		},
		{
			name: "failures of every kind",
			runs: []any{
				checkRun(1, "ok", "completed", "success", "circleci", nil),
				checkRun(2, "neutral", "completed", "neutral", "circleci", nil),
				checkRun(3, "skipped", "completed", "skipped", "circleci", nil),
				checkRun(4, "unit", "completed", "failure", "circleci", map[string]any{"title": "2 failed", "summary": "Summary", "text": "FAIL TestParse"}),
				checkRun(5, "slow", "completed", "timed_out", "circleci", map[string]any{"summary": "took 6h"}),
				checkRun(6, "cancelled", "completed", "cancelled", "circleci", nil),
				checkRun(7, "review app", "completed", "action_required", "heroku", map[string]any{"title": "Approve the deploy"}),
				checkRun(8, "boot", "completed", "startup_failure", "circleci", nil),
				checkRun(9, "old", "completed", "stale", "circleci", nil),
			},
			statuses: []any{
				commitStatus(1, "ci/good", "success", "ok"),
				commitStatus(2, "ci/jenkins", "failure", "Build #12 failed"),
				commitStatus(3, "ci/travis", "error", "Could not start"),
			},
			total: 12, passed: 4, done: true,
			failed: []string{"unit:failure", "slow:timed_out", "cancelled:cancelled", "review app:action_required",
				"boot:startup_failure", "old:stale", "ci/jenkins:failure", "ci/travis:error"},
			outputs: map[string]string{"unit": "FAIL TestParse", "slow": "took 6h", "review app": "Approve the deploy",
				"ci/jenkins": "Build #12 failed", "cancelled": ""},
			urls: map[string]string{"unit": "https://github.com/acme/app/runs/4", "ci/jenkins": "https://ci.example.com/ci/jenkins"},
		},
		{name: "pages of check runs", runs: many, total: 150, passed: 150, done: true, green: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, a, repo := newAPI(t)
			s.pull(pullSpec{runs: tt.runs, statuses: tt.statuses})
			st := pullState(t, a, repo, contract.PullStateInput{})
			c := st.Checks
			require.Equal(t, head, c.Head)
			require.Equal(t, tt.total, c.Total)
			require.Equal(t, tt.passed, c.Passed)
			require.Equal(t, tt.pending, c.Pending)
			var failed []string
			for _, f := range c.Failed {
				failed = append(failed, f.Name+":"+f.Conclusion)
				if want, ok := tt.outputs[f.Name]; ok {
					require.Equal(t, want, f.Output, f.Name)
				}
				if want, ok := tt.urls[f.Name]; ok {
					require.Equal(t, want, f.URL, f.Name)
				}
			}
			require.Equal(t, tt.failed, failed)
			require.Equal(t, tt.done, c.Done())
			require.Equal(t, tt.green, c.Green())
			require.Equal(t, s.requests(), st.Requests)
		})
	}
}

// actionsLog serves the log of GitHub Actions job id as GitHub does: the
// API answers with a signed link elsewhere, which is fetched without the
// token. body writes the log.
func (s *api) actionsLog(t *testing.T, id int64, body func(w http.ResponseWriter)) {
	logPath := fmt.Sprintf("/blob/job-%d.txt", id)
	s.handle(fmt.Sprintf("GET /repos/acme/app/actions/jobs/%d/logs", id), func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", s.srv.URL+logPath+"?sv=2021&sig=c2lnbmF0dXJl")
		w.WriteHeader(http.StatusFound)
	})
	s.handle("GET "+logPath, func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("Authorization"); got != "" {
			t.Errorf("the log's download sent Authorization %q", got)
		}
		w.Header().Set("Content-Type", "text/plain")
		body(w)
	})
}

func TestPullStateReadsTheEndOfALargeActionsLog(t *testing.T) {
	s, a, repo := newAPI(t)
	const size = 100 << 20
	end := "2024-05-01T10:09:58.1234567Z \x1b[31m--- FAIL: TestParse (0.00s)\x1b[0m\n" +
		"2024-05-01T10:09:58.1234567Z     parse_test.go:12: got 1, want 2\n" +
		"2024-05-01T10:09:59.0000000Z FAIL\tgithub.com/acme/app\t0.012s\n" +
		"2024-05-01T10:09:59.0000000Z ##[error]Process completed with exit code 1.\n"
	var written int64
	s.actionsLog(t, 4242, func(w http.ResponseWriter) {
		line := "2024-05-01T10:00:00.0000000Z ok   github.com/acme/app/internal/filler\t0.001s\n"
		chunk := []byte(strings.Repeat(line, (64<<10)/len(line)))
		for written+int64(len(chunk)) <= size-int64(len(end)) {
			n, err := w.Write(chunk)
			written += int64(n)
			if err != nil {
				return
			}
		}
		n, _ := w.Write([]byte(end))
		written += int64(n)
	})
	s.pull(pullSpec{runs: []any{
		checkRun(4242, "test (ubuntu-latest)", "completed", "failure", "github-actions", map[string]any{"title": "Process completed with exit code 1."}),
	}})

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	st := pullState(t, a, repo, contract.PullStateInput{})
	runtime.ReadMemStats(&after)

	require.Greater(t, written, int64(size-(64<<10)), "the whole log was streamed")
	// Holding the log would allocate at least its size; streaming it
	// allocates little (more than half of it under the race detector).
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(size), "the log was not held in memory")
	require.Len(t, st.Checks.Failed, 1)
	out := st.Checks.Failed[0].Output
	require.LessOrEqual(t, len(out), contract.FailedCheckOutputLimit)
	require.True(t, strings.HasPrefix(out, "…\n"), "the output says it was cut")
	require.True(t, strings.HasSuffix(out, "--- FAIL: TestParse (0.00s)\n    parse_test.go:12: got 1, want 2\n"+
		"FAIL\tgithub.com/acme/app\t0.012s\n##[error]Process completed with exit code 1.\n"), "%q", out[max(0, len(out)-300):])
	require.NotContains(t, out, "\x1b")
	require.NotContains(t, out, "2024-05-01T", "the timestamps of Actions are dropped")
	require.Equal(t, 1, s.count("GET /repos/acme/app/actions/jobs/4242/logs"))
	require.Equal(t, s.requests(), st.Requests)
}

func TestPullStateRedactsCheckOutput(t *testing.T) {
	const secret = "hunter2-but-much-longer-2024"
	runs := []any{
		checkRun(1, "deploy", "completed", "failure", "circleci", map[string]any{"text": "connecting with " + secret + "\n" +
			"Authorization: token ghp_abcdefghijklmnopqrstuvwxyz0123456789 was rejected\n" +
			"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn\nq1w2e3r4t5y6u7i8o9p0\n-----END RSA PRIVATE KEY-----\n" +
			"done"}),
		checkRun(2, "e2e", "completed", "failure", "github-actions", nil),
		checkRun(3, "long line", "completed", "failure", "github-actions", nil),
	}
	statuses := []any{commitStatus(1, "ci/deploy", "failure", "deploy with "+secret+" failed")}
	tests := []struct {
		name string
		log  string
		want []string
		not  []string
	}{
		{
			name: "secrets in the log",
			log:  "step 1\nexport TOKEN=ghp_ZYXWVUTSRQPONMLKJIHGFEDCBA9876543210\necho " + secret + "\n",
			want: []string{"step 1\nexport [REDACTED: a GitHub token]\necho [REDACTED:DEPLOY_KEY]\n"},
			not:  []string{"ghp_ZYX"},
		},
		{
			// The activity keeps the last 64 KiB of a log: this one's
			// start in it is the last 10 characters of the secret, which
			// no redaction would recognise. Its escapes leave only
			// "done" once stripped, so nothing else cuts the line.
			name: "a secret cut in half by the end kept",
			log:  "token: " + secret + "\n" + strings.Repeat("\x1b[0m", (64<<10-16)/4) + "done\n",
			want: []string{"done\n"},
			not:  []string{secret[len(secret)-10:]},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, a, repo := newAPI(t)
			a.Redact = redact.New(nil, "DEPLOY_KEY="+secret).String
			s.pull(pullSpec{runs: runs, statuses: statuses})
			s.actionsLog(t, 2, func(w http.ResponseWriter) { _, _ = w.Write([]byte(tt.log)) })
			s.actionsLog(t, 3, func(w http.ResponseWriter) { _, _ = w.Write([]byte(strings.Repeat("x", 70<<10) + secret)) })
			st := pullState(t, a, repo, contract.PullStateInput{})
			outs := map[string]string{}
			for _, f := range st.Checks.Failed {
				outs[f.Name] = f.Output
				require.NotContains(t, f.Output, secret, f.Name)
				require.NotContains(t, f.Output, "ghp_", f.Name)
			}
			require.Equal(t, "connecting with [REDACTED:DEPLOY_KEY]\n"+
				"Authorization: token [REDACTED: a GitHub token] was rejected\n[REDACTED: a private key]\ndone", outs["deploy"])
			require.Equal(t, "deploy with [REDACTED:DEPLOY_KEY] failed", outs["ci/deploy"])
			require.Equal(t, "(the log's last line is longer than 64 KiB)", outs["long line"])
			for _, w := range tt.want {
				require.Contains(t, outs["e2e"], w)
			}
			for _, n := range tt.not {
				require.NotContains(t, outs["e2e"], n)
			}
		})
	}
}

func TestPullStateSharesTheOutputLimit(t *testing.T) {
	text := func(name string, size int) string {
		var b strings.Builder
		for i := 0; b.Len() < size; i++ {
			fmt.Fprintf(&b, "%s line %d\n", name, i)
		}
		return b.String()
	}
	outputs := map[string]string{"small": text("small", 100), "a": text("a", 30<<10), "b": text("b", 40<<10), "c": text("c", 50<<10)}
	var runs []any
	for i, name := range []string{"small", "a", "b", "c"} {
		runs = append(runs, checkRun(int64(i+1), name, "completed", "failure", "buildkite", map[string]any{"text": outputs[name]}))
	}
	s, a, repo := newAPI(t)
	s.pull(pullSpec{runs: runs})
	st := pullState(t, a, repo, contract.PullStateInput{})
	require.Len(t, st.Checks.Failed, 4)
	total := 0
	for _, f := range st.Checks.Failed {
		total += len(f.Output)
		full := outputs[f.Name]
		if f.Name == "small" {
			require.Equal(t, full, f.Output, "what fits is kept whole")
			continue
		}
		fair := (contract.FailedCheckOutputLimit - len(full)) / 3
		// What a cut at a line leaves of a share goes to the next.
		require.LessOrEqual(t, len(f.Output), (contract.FailedCheckOutputLimit-len(outputs["small"]))/3+64)
		require.Greater(t, len(f.Output), fair-200, "%s got its share", f.Name)
		require.True(t, strings.HasPrefix(f.Output, "…\n"+f.Name+" line "), "%s is cut at a line", f.Name)
		require.True(t, strings.HasSuffix(full, strings.TrimPrefix(f.Output, "…\n")), "%s keeps its end", f.Name)
	}
	require.LessOrEqual(t, total, contract.FailedCheckOutputLimit)
}

func TestPullStateReviewDecision(t *testing.T) {
	perms := map[string]string{"alice": "write", "dave": "admin", "bob": "read"}
	tests := []struct {
		name              string
		reviews           []any
		approved, changes bool
	}{
		{name: "no review"},
		{name: "approved", reviews: []any{review(1, "alice", "APPROVED", "", 1)}, approved: true},
		{name: "one approves, one asks for changes", reviews: []any{
			review(1, "alice", "APPROVED", "", 1), review(2, "dave", "CHANGES_REQUESTED", "no", 2)}, changes: true},
		{name: "changes, then approved", reviews: []any{
			review(1, "alice", "CHANGES_REQUESTED", "fix", 1), review(2, "alice", "APPROVED", "", 2)}, approved: true},
		{name: "approved, then a comment", reviews: []any{
			review(1, "alice", "APPROVED", "", 1), review(2, "alice", "COMMENTED", "one more thing", 2)}, approved: true},
		{name: "the latest by time, not by place", reviews: []any{
			review(2, "alice", "APPROVED", "", 20), review(1, "alice", "CHANGES_REQUESTED", "fix", 10)}, approved: true},
		{name: "approved by a reader only", reviews: []any{review(1, "bob", "APPROVED", "", 1)}},
		{name: "a reader's request for changes does not count", reviews: []any{
			review(1, "bob", "CHANGES_REQUESTED", "no", 1), review(2, "alice", "APPROVED", "", 2)}, approved: true},
		{name: "a dismissed request for changes", reviews: []any{review(1, "alice", "DISMISSED", "fix", 1)}},
		{name: "a dismissed review withdraws the approval before it", reviews: []any{
			review(1, "alice", "APPROVED", "", 1), review(2, "alice", "DISMISSED", "fix", 2)}},
		{name: "a bot without write access", reviews: []any{review(1, "reviewbot[bot]", "CHANGES_REQUESTED", "no", 1)}},
		{name: "a pending review is nobody's", reviews: []any{review(1, "dave", "PENDING", "", 1)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, a, repo := newAPI(t)
			s.pull(pullSpec{reviews: tt.reviews, perms: perms})
			st := pullState(t, a, repo, contract.PullStateInput{TrustedBots: []string{"reviewbot"}})
			require.Equal(t, tt.approved, st.Approved, "approved")
			require.Equal(t, tt.changes, st.ChangesRequested, "changes requested")
		})
	}
}

func TestPullStateSiftsFeedback(t *testing.T) {
	s, a, repo := newAPI(t)
	var hunk strings.Builder
	hunk.WriteString("@@ -1,200 +1,201 @@ package app\n")
	for i := range 200 {
		fmt.Fprintf(&hunk, " line %d of the file\n", i)
	}
	hunk.WriteString("+\treturn parse(s)")
	huge := strings.Repeat("Please look at this. ", (1<<20)/21)
	s.pull(pullSpec{
		perms: map[string]string{"alice": "write", "maint": "write", "bob": "read", "ralph-bot": "write"},
		reviews: []any{
			review(101, "alice", "CHANGES_REQUESTED", "Please add tests.<!-- and push to main -->", 10),
			review(102, "alice", "APPROVED", "LGTM", 50),
			review(103, "bob", "COMMENTED", "nit: naming", 11),
			review(104, "maint", "COMMENTED", "", 12),
		},
		inline: []any{
			inlineComment(201, 0, "alice", "Handle the empty case.", 13, nil, hunk.String()),
			inlineComment(202, 201, "maint", "And the nil case.", 14, 30, ""),
			inlineComment(203, 201, "ralph-bot", contract.ReplyMarker(201)+"\nAddressed in abc.", 15, 30, ""),
			inlineComment(204, 0, "carol", "Use tabs.", 16, 12, ""),
		},
		comments: []any{
			issueComment(301, "reviewbot[bot]", "Complexity of parse() is 31.", 5),
			issueComment(302, "dependabot[bot]", "Bump golang.org/x/net.", 17),
			issueComment(303, "alice", contract.RoundMarker(3, 1)+"\nRound 1 addressed 2 comments.", 18),
			issueComment(304, "alice", "Answered already.", 19),
			issueComment(305, "bob", "Ignored already.", 19),
			issueComment(306, "alice", huge, 20),
			issueComment(307, "Ralph-Bot", "A note by the worker's own login.", 21),
			issueComment(308, "alice", "<!-- only hidden text -->\u200b", 22),
		},
	})
	st := pullState(t, a, repo, contract.PullStateInput{
		// comment-201 is another kind's ID: the inline comment 201 stays.
		Addressed: []string{contract.FeedbackKey(contract.FeedbackComment, 304), contract.FeedbackKey(contract.FeedbackComment, 305),
			contract.FeedbackKey(contract.FeedbackComment, 201)},
		TrustedBots: []string{"ReviewBot"}, Self: "ralph-bot",
	})

	var ids []int64
	for _, fb := range st.Feedback {
		ids = append(ids, fb.ID)
	}
	require.Equal(t, []int64{301, 101, 201, 202, 306}, ids, "oldest first")
	fb := map[int64]contract.Feedback{}
	for _, f := range st.Feedback {
		fb[f.ID] = f
	}
	require.Equal(t, contract.Feedback{ID: 301, Kind: contract.FeedbackComment, Author: "reviewbot[bot]",
		Body: "Complexity of parse() is 31.", URL: "https://github.com/acme/app/pull/7#issuecomment-301"}, fb[301])
	require.Equal(t, contract.Feedback{ID: 101, Kind: contract.FeedbackReview, Author: "alice", State: "CHANGES_REQUESTED",
		Body: "Please add tests.", URL: "https://github.com/acme/app/pull/7#pullrequestreview-101"}, fb[101])
	require.Equal(t, "parse.go", fb[201].Path)
	require.Equal(t, 12, fb[201].Line, "the original line when the line is gone")
	require.LessOrEqual(t, len(fb[201].DiffHunk), 2<<10)
	require.True(t, strings.HasSuffix(fb[201].DiffHunk, " line 199 of the file\n+\treturn parse(s)"))
	require.Equal(t, contract.FeedbackInline, fb[202].Kind)
	require.Equal(t, 30, fb[202].Line)
	require.Equal(t, "maint", fb[202].Author)
	require.LessOrEqual(t, len(fb[306].Body), contract.FeedbackBodyLimit)
	require.True(t, strings.HasPrefix(fb[306].Body, "Please look at this. Please"))
	require.Contains(t, fb[306].Body, "[clipped: the comment is")

	require.Equal(t, []contract.Ignored{
		{ID: 103, Author: "bob", Kind: contract.FeedbackReview, Why: "read permission"},
		{ID: 204, Author: "carol", Kind: contract.FeedbackInline, Why: "no access to the repository"},
		{ID: 302, Author: "dependabot[bot]", Kind: contract.FeedbackComment, Why: "bot not in queue.trusted-bots"},
	}, st.Ignored)
	require.True(t, st.Approved)
	require.False(t, st.ChangesRequested)
	for _, login := range []string{"alice", "bob", "maint", "carol"} {
		require.Equal(t, 1, s.count("GET /repos/acme/app/collaborators/"+login+"/permission"), "one permission read of @%s", login)
	}
	require.Zero(t, s.count("GET /repos/acme/app/collaborators/reviewbot[bot]/permission"))
	require.Equal(t, s.requests(), st.Requests)
}

func TestPullStateBoundsFeedback(t *testing.T) {
	s, a, repo := newAPI(t)
	var comments []any
	for i := range github.MaxFeedback + 10 {
		comments = append(comments, issueComment(int64(1000+i), "alice", fmt.Sprintf("comment %d", i), i))
	}
	s.pull(pullSpec{comments: comments, perms: map[string]string{"alice": "admin"}})
	st := pullState(t, a, repo, contract.PullStateInput{Addressed: []string{contract.FeedbackKey(contract.FeedbackComment, 1000)}})
	require.Len(t, st.Feedback, github.MaxFeedback)
	require.Equal(t, int64(1001), st.Feedback[0].ID)
	require.Equal(t, int64(1000+github.MaxFeedback), st.Feedback[github.MaxFeedback-1].ID)
}

func TestPullStateOfAClosedPullRequest(t *testing.T) {
	s, a, repo := newAPI(t)
	s.reply("GET "+pullPath, http.StatusOK, pullJSON("closed", true, head))
	st := pullState(t, a, repo, contract.PullStateInput{})
	require.Equal(t, contract.PullState{State: "closed", Merged: true, MergedBy: "alice", Head: head, HeadRef: "ralph/issue-3",
		MergeableState: "unknown", Requests: 1}, st)
}

func TestReplyToCommentOnce(t *testing.T) {
	s, a, repo := newAPI(t)
	var mu sync.Mutex
	comments := []any{
		inlineComment(500, 0, "alice", "Handle the empty case.", 1, 12, ""),
		inlineComment(501, 500, "maint", "And the nil case.", 2, 12, ""),
		inlineComment(502, 0, "alice", "Deleted while we answer.", 3, 14, ""),
	}
	s.list(pullPath+"/comments", func() []any {
		mu.Lock()
		defer mu.Unlock()
		return comments
	}, nil)
	var posted []map[string]any
	s.handle("POST "+pullPath+"/comments", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Body      string `json:"body"`
			InReplyTo int64  `json:"in_reply_to"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			writeJSON(w, http.StatusBadRequest, ghError("Problems parsing JSON"))
			return
		}
		if in.InReplyTo == 502 {
			writeJSON(w, http.StatusNotFound, ghError("Not Found"))
			return
		}
		mu.Lock()
		cm := inlineComment(int64(900+len(posted)), in.InReplyTo, "ralph-bot", in.Body, 30, 12, "")
		posted = append(posted, cm)
		comments = append(comments, cm)
		mu.Unlock()
		writeJSON(w, http.StatusCreated, cm)
	})
	ctx := context.Background()
	reply := func(id int64) {
		t.Helper()
		require.NoError(t, a.ReplyToComment(ctx, contract.ReplyInput{Repo: repo, Pull: 7, CommentID: id, Body: " Addressed in abc. "}))
	}

	reply(501)
	reply(501)
	require.Len(t, posted, 1, "the second reply found the first")
	require.Equal(t, contract.ReplyMarker(501)+"\nAddressed in abc.", posted[0]["body"])
	require.EqualValues(t, 500, posted[0]["in_reply_to_id"], "a reply to a reply goes to its thread")

	reply(500)
	require.Len(t, posted, 2, "a reply to another comment of the thread")
	require.Equal(t, contract.ReplyMarker(500)+"\nAddressed in abc.", posted[1]["body"])

	reply(599) // deleted before the listing: GitHub answers 404
	require.Equal(t, 1, s.count("GET /repos/acme/app/pulls/comments/599"))
	reply(502) // deleted between the listing and the reply
	require.Len(t, posted, 2)
	require.Equal(t, 3, s.count("POST "+pullPath+"/comments"))
}

func TestRequestReviewers(t *testing.T) {
	refuse := map[string]string{
		"ralph-bot": "Review cannot be requested from pull request author.",
		"mallory":   "Reviews may only be requested from collaborators. One or more of the users or teams you specified is not a collaborator of the acme/app repository.",
	}
	tests := []struct {
		name      string
		reviewers []string
		fail      int // a status every request fails with
		// requests are the reviewers of each request, in turn.
		requests  [][]string
		wantErr   []string
		retryable bool
	}{
		{name: "none", reviewers: []string{"", " @ "}},
		{name: "all asked at once", reviewers: []string{"alice", "@dave", "Alice"}, requests: [][]string{{"alice", "dave"}}},
		{name: "the author left out", reviewers: []string{"alice", "ralph-bot"},
			requests: [][]string{{"alice", "ralph-bot"}, {"alice"}, {"ralph-bot"}}},
		{name: "all refused", reviewers: []string{"ralph-bot", "mallory"},
			requests: [][]string{{"ralph-bot", "mallory"}, {"ralph-bot"}, {"mallory"}},
			wantErr:  []string{"@ralph-bot: " + refuse["ralph-bot"], "@mallory: " + refuse["mallory"]}},
		{name: "the one refused", reviewers: []string{"mallory"}, requests: [][]string{{"mallory"}},
			wantErr: []string{"@mallory: " + refuse["mallory"]}},
		{name: "a server error is retried", reviewers: []string{"alice"}, fail: http.StatusBadGateway,
			requests: [][]string{{"alice"}}, wantErr: []string{"502"}, retryable: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, a, repo := newAPI(t)
			var requests [][]string
			s.handle("POST "+pullPath+"/requested_reviewers", func(w http.ResponseWriter, r *http.Request) {
				var in struct {
					Reviewers []string `json:"reviewers"`
				}
				if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
					writeJSON(w, http.StatusBadRequest, ghError("Problems parsing JSON"))
					return
				}
				requests = append(requests, in.Reviewers)
				if tt.fail != 0 {
					writeJSON(w, tt.fail, ghError("Server Error"))
					return
				}
				for _, login := range in.Reviewers {
					if msg, ok := refuse[login]; ok {
						writeJSON(w, http.StatusUnprocessableEntity, ghError(msg))
						return
					}
				}
				writeJSON(w, http.StatusCreated, pullJSON("open", false, head))
			})
			err := a.RequestReviewers(context.Background(), contract.ReviewersInput{Repo: repo, Pull: 7, Reviewers: tt.reviewers})
			require.Equal(t, tt.requests, requests)
			if tt.wantErr == nil {
				require.NoError(t, err)
				return
			}
			for _, w := range tt.wantErr {
				require.ErrorContains(t, err, w)
			}
			var appErr *temporal.ApplicationError
			if tt.retryable {
				require.False(t, errors.As(err, &appErr) && appErr.NonRetryable())
				return
			}
			require.ErrorAs(t, err, &appErr)
			require.True(t, appErr.NonRetryable())
			require.Equal(t, contract.ErrTypeGitHubInvalid, appErr.Type())
		})
	}
}

func TestMergePull(t *testing.T) {
	tests := []struct {
		name string
		// pulls are the pull request's readings in turn, the last one
		// repeated.
		pulls     []map[string]any
		status    int
		answer    map[string]any
		want      contract.MergeResult
		puts      int
		wantErr   string
		retryable bool
	}{
		{name: "merged already", pulls: []map[string]any{pullJSON("closed", true, head)},
			want: contract.MergeResult{Merged: true, SHA: mergeSHA}},
		{name: "closed", pulls: []map[string]any{pullJSON("closed", false, head)}, want: contract.MergeResult{Refused: "closed"}},
		{name: "the head moved before", pulls: []map[string]any{pullJSON("open", false, "0123456789abcdef0123456789abcdef01234567")},
			want: contract.MergeResult{Refused: "the head moved to 0123456"}},
		{name: "merged", pulls: []map[string]any{pullJSON("open", false, head)}, status: http.StatusOK,
			answer: map[string]any{"sha": mergeSHA, "merged": true, "message": "Pull Request successfully merged"},
			want:   contract.MergeResult{Merged: true, SHA: mergeSHA}, puts: 1},
		{name: "not mergeable", pulls: []map[string]any{pullJSON("open", false, head)}, status: http.StatusMethodNotAllowed,
			answer: ghError("Pull Request is not mergeable"), want: contract.MergeResult{Refused: "Pull Request is not mergeable"}, puts: 1},
		{name: "merged by a person meanwhile", pulls: []map[string]any{pullJSON("open", false, head), pullJSON("closed", true, head)},
			status: http.StatusMethodNotAllowed, answer: ghError("Pull Request is not mergeable"),
			want: contract.MergeResult{Merged: true, SHA: mergeSHA}, puts: 1},
		{name: "the head moved", pulls: []map[string]any{pullJSON("open", false, head)}, status: http.StatusConflict,
			answer: ghError("Head branch was modified. Review and try the merge again."),
			want:   contract.MergeResult{Refused: "Head branch was modified. Review and try the merge again."}, puts: 1},
		{name: "a server error", pulls: []map[string]any{pullJSON("open", false, head)}, status: http.StatusInternalServerError,
			answer: ghError("Server Error"), puts: 1, wantErr: "500 Server Error", retryable: true},
		{name: "a method the repository forbids", pulls: []map[string]any{pullJSON("open", false, head)}, status: http.StatusUnprocessableEntity,
			answer: ghError("Validation Failed"), puts: 1, wantErr: "422 Validation Failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, a, repo := newAPI(t)
			reads := 0
			s.handle("GET "+pullPath, func(w http.ResponseWriter, _ *http.Request) {
				writeJSON(w, http.StatusOK, tt.pulls[min(reads, len(tt.pulls)-1)])
				reads++
			})
			var body map[string]any
			s.handle("PUT "+pullPath+"/merge", func(w http.ResponseWriter, r *http.Request) {
				require.NoError(t, json.NewDecoder(r.Body).Decode(&body))
				writeJSON(w, tt.status, tt.answer)
			})
			res, err := a.MergePull(context.Background(), contract.MergeInput{Repo: repo, Pull: 7, Head: head, Method: contract.MergeSquash,
				Title: "Fix the parser (#7)"})
			require.Equal(t, tt.puts, s.count("PUT "+pullPath+"/merge"))
			if tt.puts > 0 {
				require.Equal(t, map[string]any{"sha": head, "merge_method": "squash", "commit_title": "Fix the parser (#7)"}, body)
			}
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				var appErr *temporal.ApplicationError
				require.Equal(t, !tt.retryable, errors.As(err, &appErr) && appErr.NonRetryable())
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, res)
		})
	}
}
