package testsuite_test

import (
	"fmt"
	"os"
	"path/filepath"
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
		gh.SetRemote(origin)
		gh.SetPermission("alice", "write")
		gh.RequireReviews(true)
		gh.RequireChecks(true)
		gh.SetCI(func(string) []fakegithub.CheckRun {
			return []fakegithub.CheckRun{{Name: "test", Status: "completed", Conclusion: "success", Title: "ok"}}
		})
		clones = append(clones, clone.Dir)
	}
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
