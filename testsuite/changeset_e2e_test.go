package testsuite_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/testsuite/fakegithub"
)

// setRig is two repositories on one fake GitHub (a Hub), api and web,
// each with a clone, and a set file: web after api.
type setRig struct {
	se       *starterEnv
	api, web *fakegithub.Server
	hub      *fakegithub.Hub
	file     string
	worker   []string
	w        *proc  // the worker running
	home     string // the worker's HOME
	// clones and origins are api's and web's clone and the bare
	// repository each pushes to.
	clones, origins []string
}

// newSetRig makes the rig; with cloneAPI the set file gives api no
// workspace, so that the worker clones it.
func newSetRig(t *testing.T, autoMerge, cloneAPI bool) *setRig {
	t.Helper()
	r := &setRig{api: fakegithub.New("acme", "api", ghToken, ghBot), web: fakegithub.New("acme", "web", ghToken, ghBot)}
	t.Cleanup(r.api.Close)
	t.Cleanup(r.web.Close)
	r.hub = fakegithub.NewHub(r.api, r.web)
	t.Cleanup(r.hub.Close)
	r.se = newStarterEnv(t, scenario(t, map[string]any{"auto": true}))
	var clones []string
	for _, gh := range []*fakegithub.Server{r.api, r.web} {
		clone, origin := newClone(t)
		r.origins = append(r.origins, origin)
		gh.SetRemote(origin)
		gh.SetPermission("alice", "write")
		gh.RequireReviews(true)
		gh.RequireChecks(true)
		gh.SetCI(func(string) []fakegithub.CheckRun {
			return []fakegithub.CheckRun{{Name: "test", Status: "completed", Conclusion: "success", Title: "ok"}}
		})
		clones = append(clones, clone.Dir)
	}
	r.clones = clones
	apiWorkspace := "\n    workspace: " + clones[0]
	if cloneAPI {
		apiWorkspace = ""
	}
	r.file = filepath.Join(t.TempDir(), "greeting.yaml")
	require.NoError(t, os.WriteFile(r.file, fmt.Appendf(nil, `name: greeting
task: Add a greeting endpoint and show it in the web app.
auto-merge: %t
repos:
  - repo: acme/web
    workspace: %s
    after: [acme/api]
    task: Show the greeting from the API on the home page.
  - repo: acme/api%s
    task: Add GET /greeting that returns "hello".
`, autoMerge, clones[1], apiWorkspace), 0o644))
	r.worker = append(append([]string(nil), r.se.env...), "GITHUB_TOKEN="+ghToken, "RALPH_GITHUB_WRITE_INTERVAL=100ms")
	for _, kv := range r.se.env {
		if h, ok := strings.CutPrefix(kv, "HOME="); ok {
			r.home = h
		}
	}
	return r
}

func (r *setRig) startWorker(t *testing.T) *proc {
	t.Helper()
	w := startProc(t, r.worker, bins.worker, "--dev")
	waitFor(t, time.Minute, "the worker's embedded server", func() bool { return strings.Contains(w.Output(), "Worker polling") })
	return w
}

// run starts a worker, then `change-set run --follow` of the set file
// with flags; the worker's and the set's output are logged when t fails.
func (r *setRig) run(t *testing.T, flags ...string) *proc {
	t.Helper()
	r.w = r.startWorker(t)
	follow := r.starter(t, append(append([]string{"run", "--follow"}, flags...), r.file)...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("change set:\n%s\nworker:\n%s", follow.Output(), tailOf(r.w.Output(), 8000))
		}
	})
	return follow
}

func (r *setRig) starter(t *testing.T, args ...string) *proc {
	t.Helper()
	flags := []string{"--dev"}
	if args[0] == "run" {
		flags = append(flags, "--github-api-url", r.hub.URL(), "--poll-interval", "2s")
	}
	return startProc(t, r.se.env, bins.starter, append(append([]string{"change-set", args[0]}, flags...), args[1:]...)...)
}

// approveWhenOpen approves each pull request of gh (as alice, who may
// write) once it is open.
func approveWhenOpen(t *testing.T, gh *fakegithub.Server) {
	t.Helper()
	waitFor(t, 3*time.Minute, gh.Name()+"'s pull request", func() bool { return len(gh.Pulls()) == 1 })
	gh.AddReview(gh.Pulls()[0].Number, "alice", "APPROVED", "Looks good.")
}

// linkComments are the bot's comments on pull request n of gh that link
// the set's pull requests.
func linkComments(gh *fakegithub.Server, n int) []fakegithub.Comment {
	var out []fakegithub.Comment
	for _, c := range botComments(gh.Issue(n)) {
		if strings.Contains(c.Body, "ralph:changeset-greeting-links") {
			out = append(out, c)
		}
	}
	return out
}

// TestChangeSetMergesTwoRepositoriesInOrder: web comes after api, and
// api has no clone of the user's: the worker clones it. Two sessions run
// in order; web's prompt names api's branch and change;
// the two pull requests link each other (one comment each); once both
// are green and approved they merge, api first; status says merged.
func TestChangeSetMergesTwoRepositoriesInOrder(t *testing.T) {
	r := newSetRig(t, true, true)
	follow := r.run(t)
	approveWhenOpen(t, r.api)
	// web has not started before api's pull request opened.
	require.Empty(t, r.web.Issues(), "web waits for api")
	approveWhenOpen(t, r.web)
	require.Equal(t, 0, follow.wait(t, 4*time.Minute), follow.Output())

	apiPR, webPR := r.api.Pulls()[0], r.web.Pulls()[0]
	require.True(t, apiPR.Merged && webPR.Merged, "%+v %+v", apiPR, webPR)
	require.False(t, webPR.MergedAt.Before(apiPR.MergedAt), "api merges first")
	require.Equal(t, ghBot, webPR.MergedBy)

	// api ran in the worker's clone of it.
	require.Contains(t, follow.Output(), "acme/api: cloned into ")
	require.DirExists(t, filepath.Join(r.home, ".local", "share", "durable-ralph", "clones", "acme", "api", ".git"))

	// web's issue, and so its prompt, tells what api changed.
	var webPrompt string
	for _, call := range calls(t, r.se.env) {
		if strings.Contains(call.Prompt, "Show the greeting from the API") {
			webPrompt = call.Prompt
		}
	}
	require.Contains(t, webPrompt, "What acme/api changed")
	require.Contains(t, webPrompt, "diff --git", "the patch of api's branch")
	require.Contains(t, webPrompt, "ralph/issue-1")
	require.Contains(t, webPrompt, fmt.Sprintf("/acme/api/pull/%d", apiPR.Number))

	for _, tt := range []struct {
		gh          *fakegithub.Server
		pr          fakegithub.Pull
		other       string
		otherNumber int
	}{{r.api, apiPR, "acme/web", webPR.Number}, {r.web, webPR, "acme/api", apiPR.Number}} {
		links := linkComments(tt.gh, tt.pr.Number)
		require.Len(t, links, 1, "one link comment on %s, edited in place", tt.gh.Name())
		require.Contains(t, links[0].Body, "1. acme/api")
		require.Contains(t, links[0].Body, "2. acme/web")
		require.Contains(t, links[0].Body, fmt.Sprintf("/%s/pull/%d", tt.other, tt.otherNumber))
		require.Contains(t, links[0].Body, "merged")
	}

	status := r.starter(t, "status", "greeting")
	require.Equal(t, 0, status.wait(t, time.Minute), status.Output())
	require.Contains(t, status.Output(), "Change set greeting: merged")
	require.Regexp(t, `acme/api\s+merged`, status.Output())
	require.Regexp(t, `acme/web\s+merged`, status.Output())

	list := startProc(t, r.se.env, bins.starter, "list", "--dev")
	require.Equal(t, 0, list.wait(t, time.Minute), list.Output())
	require.Regexp(t, `ralph-changeset-greeting\s+change set\s+completed\s+merged`, list.Output())

	c := r.se.dial(t)
	defer c.Close()
	replayAs(t, c, contract.ChangeSetID("greeting"), "changeset")
	t.Logf("change-set run --follow:\n%s\nstatus:\n%s", follow.Output(), status.Output())
}

// TestChangeSetRollsBackWhenAMemberFails: web's checks fail for good
// (its follower gives up after its fix round): nothing merges, and api's
// pull request is closed with a comment naming web's failure.
func TestChangeSetRollsBackWhenAMemberFails(t *testing.T) {
	r := newSetRig(t, true, false)
	r.web.SetCI(func(string) []fakegithub.CheckRun {
		return []fakegithub.CheckRun{{Name: "test", Status: "completed", Conclusion: "failure", Title: "3 tests failed", Summary: "TestGreeting: got \"\""}}
	})
	follow := r.run(t, "--max-fix-rounds", "1")
	approveWhenOpen(t, r.api)
	approveWhenOpen(t, r.web)
	require.Equal(t, 1, follow.wait(t, 4*time.Minute), follow.Output())
	require.Contains(t, follow.Output(), "change set greeting failed")

	apiPR, webPR := r.api.Pulls()[0], r.web.Pulls()[0]
	require.False(t, apiPR.Merged || webPR.Merged, "nothing merged")
	require.Equal(t, "closed", apiPR.State)
	var closing []string
	for _, c := range botComments(r.api.Issue(apiPR.Number)) {
		if strings.Contains(c.Body, "ralph:changeset-greeting-closed") {
			closing = append(closing, c.Body)
		}
	}
	require.Len(t, closing, 1, "one comment says why api's pull request was closed")
	require.Contains(t, closing[0], "acme/web failed")
	require.Contains(t, closing[0], "checks still fail")

	status := r.starter(t, "status", "greeting")
	require.Equal(t, 0, status.wait(t, time.Minute), status.Output())
	require.Contains(t, status.Output(), "Change set greeting: failed")
	require.Regexp(t, `acme/api\s+closed`, status.Output())
	require.Regexp(t, `acme/web\s+failed`, status.Output())
}

// TestChangeSetSurvivesWorkerKills: the worker is killed with SIGKILL
// once api's pull request is open (the set writes its links and opens
// web's issue) and once web's is: still one issue and one pull request
// per repository, one link comment each, and the set merges in order.
func TestChangeSetSurvivesWorkerKills(t *testing.T) {
	r := newSetRig(t, true, false)
	follow := r.run(t)
	kill := func() {
		require.NoError(t, r.w.cmd.Process.Signal(syscall.SIGKILL))
		r.w.wait(t, time.Minute)
		r.w = r.startWorker(t)
	}
	waitFor(t, 3*time.Minute, "api's pull request", func() bool { return len(r.api.Pulls()) == 1 })
	kill()
	approveWhenOpen(t, r.api)
	waitFor(t, 3*time.Minute, "web's pull request", func() bool { return len(r.web.Pulls()) == 1 })
	kill()
	approveWhenOpen(t, r.web)
	require.Equal(t, 0, follow.wait(t, 4*time.Minute), follow.Output())

	for _, gh := range []*fakegithub.Server{r.api, r.web} {
		require.Len(t, gh.Pulls(), 1, gh.Name())
		pr := gh.Pulls()[0]
		require.True(t, pr.Merged, gh.Name())
		require.Len(t, linkComments(gh, pr.Number), 1, "one link comment on %s", gh.Name())
		issues := 0
		for _, is := range gh.Issues() {
			if is.Author == ghBot && !is.PullRequest {
				issues++
			}
		}
		require.Equal(t, 1, issues, "one issue in %s", gh.Name())
	}
	require.False(t, r.web.Pulls()[0].MergedAt.Before(r.api.Pulls()[0].MergedAt), "api merges first")
}

// TestChangeSetMergedByAPerson: without auto-merge the set waits, green
// and approved, until a person says `change-set merge`; then it merges in
// order, and a second merge is refused as the set has ended.
func TestChangeSetMergedByAPerson(t *testing.T) {
	r := newSetRig(t, false, false)
	follow := r.run(t)
	approveWhenOpen(t, r.api)
	approveWhenOpen(t, r.web)
	waitFor(t, 2*time.Minute, "the set to be ready", func() bool {
		st := r.starter(t, "status", "greeting")
		return st.wait(t, time.Minute) == 0 && strings.Contains(st.Output(), "Change set greeting: ready") &&
			regexp.MustCompile(`acme/web\s+open\s+#\d+\s+#\d+\s+green\s+true`).MatchString(st.Output())
	})
	time.Sleep(3 * time.Second) // a reading or two: nothing merges without the person
	require.False(t, r.api.Pulls()[0].Merged || r.web.Pulls()[0].Merged, "no merge before a person asks")

	merge := r.starter(t, "merge", "greeting")
	require.Equal(t, 0, merge.wait(t, time.Minute), merge.Output())
	require.Contains(t, merge.Output(), "Change set greeting merges once every pull request is green and approved")
	require.Equal(t, 0, follow.wait(t, 2*time.Minute), follow.Output())
	require.True(t, r.api.Pulls()[0].Merged && r.web.Pulls()[0].Merged)
	require.False(t, r.web.Pulls()[0].MergedAt.Before(r.api.Pulls()[0].MergedAt), "api merges first")

	again := r.starter(t, "merge", "greeting")
	require.Equal(t, 1, again.wait(t, time.Minute), again.Output())
	require.Contains(t, again.Output(), "change set greeting ended already (merged): nothing to merge")
}

// TestChangeSetAbandonedByAPerson: a person abandons the set once api's
// pull request is open and web is being worked on: web's work stops,
// every pull request either repository has is closed (web's too, if its
// work opened one before it was cancelled), none merged, each closed
// one with one comment giving the person's reason.
func TestChangeSetAbandonedByAPerson(t *testing.T) {
	r := newSetRig(t, false, false)
	follow := r.run(t)
	waitFor(t, 3*time.Minute, "web's issue", func() bool {
		for _, is := range r.web.Issues() {
			if !is.PullRequest {
				return len(r.api.Pulls()) == 1
			}
		}
		return false
	})
	abandon := r.starter(t, "abandon", "greeting", "the", "API", "design", "changed")
	require.Equal(t, 0, abandon.wait(t, time.Minute), abandon.Output())
	require.Contains(t, abandon.Output(), "Change set greeting is abandoned")
	require.Equal(t, 1, follow.wait(t, 4*time.Minute), follow.Output())
	require.Contains(t, follow.Output(), "abandoned: the API design changed")

	for _, gh := range []*fakegithub.Server{r.api, r.web} {
		for _, pr := range gh.Pulls() {
			require.Equal(t, "closed", pr.State, "%s#%d", gh.Name(), pr.Number)
			require.False(t, pr.Merged)
			var closing int
			for _, c := range botComments(gh.Issue(pr.Number)) {
				if strings.Contains(c.Body, "ralph:changeset-greeting-closed") {
					closing++
					require.Contains(t, c.Body, "the API design changed")
				}
			}
			require.Equal(t, 1, closing, "one closing comment on %s#%d", gh.Name(), pr.Number)
		}
	}
	status := r.starter(t, "status", "greeting")
	require.Equal(t, 0, status.wait(t, time.Minute), status.Output())
	require.Contains(t, status.Output(), "Change set greeting: abandoned")
	require.Regexp(t, `acme/api\s+closed`, status.Output())
	require.Regexp(t, `acme/web\s+closed`, status.Output())
	again := r.starter(t, "abandon", "greeting")
	require.Equal(t, 1, again.wait(t, time.Minute), again.Output())
	require.Contains(t, again.Output(), "ended already (abandoned)")
	c := r.se.dial(t)
	defer c.Close()
	replayAs(t, c, contract.ChangeSetID("greeting"), "changeset-abandon")
}

// TestChangeSetFromALabelledIssue: an issue of acme/api labelled ready
// whose body says "Repos: acme/api, acme/web" is taken by api's queue as
// a change set: api in the queue's clone, web cloned by the worker, in
// that order, each with its own issue and pull request; both green and
// approved, they merge in order, and the issue the set came from says
// so in one comment and is closed; the queue, run until idle, then ends.
func TestChangeSetFromALabelledIssue(t *testing.T) {
	r := newSetRig(t, true, false)
	for _, gh := range []*fakegithub.Server{r.api, r.web} {
		gh.SetPermission("alice", "write")
	}
	origin := r.api.AddIssue(fakegithub.IssueSpec{Title: "Greet the user", Author: "alice", Labels: []string{"ralph-ready"},
		Body: "Add GET /greeting to the API that returns \"hello\", and show it on the web app's home page.\n\nRepos: acme/api, acme/web"})
	r.w = r.startWorker(t)
	queue := startProc(t, r.se.env, bins.starter, "queue", "--dev", "--repo", "acme/api", "--github-api-url", r.hub.URL(),
		"--auto-merge", "--until-idle", "--poll-interval", "2s", "--follow", r.clones[0])
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("queue:\n%s\nworker:\n%s", queue.Output(), tailOf(r.w.Output(), 8000))
		}
	})
	approveWhenOpen(t, r.api)
	approveWhenOpen(t, r.web)
	require.Equal(t, 0, queue.wait(t, 5*time.Minute), queue.Output())
	require.Contains(t, queue.Output(), fmt.Sprintf("#%d spans acme/api, acme/web: change set acme-api-%d works on it", origin, origin))

	apiPR, webPR := r.api.Pulls()[0], r.web.Pulls()[0]
	require.True(t, apiPR.Merged && webPR.Merged, "%+v %+v", apiPR, webPR)
	require.False(t, webPR.MergedAt.Before(apiPR.MergedAt), "api merges first")

	is := r.api.Issue(origin)
	require.Equal(t, "closed", is.State, "the issue the set came from is done")
	require.NotContains(t, is.Labels, "ralph-ready")
	require.NotContains(t, is.Labels, "ralph-working")
	var said []string
	for _, c := range botComments(is) {
		if strings.Contains(c.Body, "ralph:changeset-acme-api-") {
			said = append(said, c.Body)
		}
	}
	require.Len(t, said, 1, "one comment on the issue, edited in place")
	require.Contains(t, said[0], "(merged)")
	require.Contains(t, said[0], fmt.Sprintf("/acme/web/pull/%d", webPR.Number))

	// web's issue carries the issue's text, and where it came from.
	var webIssue fakegithub.Issue
	for _, w := range r.web.Issues() {
		if !w.PullRequest {
			webIssue = w
		}
	}
	require.Contains(t, webIssue.Body, "show it on the web app's home page")
	require.Contains(t, webIssue.Body, fmt.Sprintf("/acme/api/issues/%d", origin))
	status := r.starter(t, "status", fmt.Sprintf("acme-api-%d", origin))
	require.Equal(t, 0, status.wait(t, time.Minute), status.Output())
	require.Contains(t, status.Output(), fmt.Sprintf("Change set acme-api-%d: merged", origin))
	require.Contains(t, status.Output(), fmt.Sprintf("From issue acme/api#%d", origin))
	c := r.se.dial(t)
	defer c.Close()
	replayAs(t, c, contract.ChangeSetID(fmt.Sprintf("acme-api-%d", origin)), "changeset-origin")
	replayAs(t, c, contract.QueueWorkflowID(testHost, "acme", "api"), "queue-change-set")
}

// TestChangeSetRevertsWhatMerged: with revert-merged, a person merges
// api's pull request, then closes web's: the set rolls back, and since
// api is merged it opens a pull request in api that reverts it (a branch
// of one commit on api's main, whose tree is main's before the merge),
// and says so on every pull request.
func TestChangeSetRevertsWhatMerged(t *testing.T) {
	r := newSetRig(t, false, false)
	data, err := os.ReadFile(r.file)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(r.file, append([]byte("revert-merged: true\n"), data...), 0o644))
	follow := r.run(t)
	waitFor(t, 3*time.Minute, "api's pull request", func() bool { return len(r.api.Pulls()) == 1 })
	apiPR := r.api.Pulls()[0]
	require.NoError(t, r.api.MergeByHuman(apiPR.Number, "alice"))
	waitFor(t, 3*time.Minute, "web's pull request", func() bool { return len(r.web.Pulls()) == 1 })
	r.web.ClosePull(r.web.Pulls()[0].Number, "alice")
	require.Equal(t, 1, follow.wait(t, 4*time.Minute), follow.Output())
	require.Contains(t, follow.Output(), "change set greeting failed")

	require.Len(t, r.api.Pulls(), 2, "api's and the one that reverts it")
	revert := r.api.Pulls()[1]
	require.Equal(t, fmt.Sprintf("ralph/revert-greeting-%d", apiPR.Number), revert.Head)
	require.Equal(t, "open", revert.State)
	require.Contains(t, revert.Body, fmt.Sprintf("Reverts #%d", apiPR.Number))
	merge := r.api.Pull(apiPR.Number).MergeCommitSHA
	origin := r.origins[0]
	tree := func(rev string) string {
		out, err := exec.Command("git", "-C", origin, "rev-parse", rev+"^{tree}").CombinedOutput()
		require.NoError(t, err, string(out))
		return strings.TrimSpace(string(out))
	}
	require.Equal(t, tree(merge+"^1"), tree(revert.Head), "the revert undoes the merge")
	links := linkComments(r.api, apiPR.Number)
	require.Len(t, links, 1)
	require.Regexp(t, fmt.Sprintf(`reverted by \S+/acme/api/pull/%d`, revert.Number), links[0].Body)

	status := r.starter(t, "status", "greeting")
	require.Equal(t, 0, status.wait(t, time.Minute), status.Output())
	require.Regexp(t, `acme/api\s+reverted`, status.Output())
	require.Regexp(t, `acme/web\s+failed`, status.Output())
	c := r.se.dial(t)
	defer c.Close()
	replayAs(t, c, contract.ChangeSetID("greeting"), "changeset-revert")
}
