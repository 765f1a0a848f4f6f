package testsuite_test

import (
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/testsuite/fakegithub"
)

// TestAdoptAPullRequest: with --adopt-prs, a writer's "@bot <instruction>"
// on a pull request a person opened runs one round on its branch: the
// agent is given the pull request's text and the instruction, its commit
// is pushed on top of the person's, one comment says what was done and
// the one who asked is asked for a review. A mention on a pull request
// from a fork writes nothing; a second request on the same pull request
// runs round 2 under a marker of its own.
func TestAdoptAPullRequest(t *testing.T) {
	qr := newQueueRig(t)
	gh := qr.gh
	gh.SetRemote(qr.origin)
	gh.SetPermission("alice", "write")
	gh.SetPermission("bob", "write")
	qr.clone.git("checkout", "-q", "-b", "feature/flag")
	qr.clone.write("flag.txt", "--dry\n")
	qr.clone.git("add", "flag.txt")
	qr.clone.git("commit", "-q", "-m", "Add a --dry flag")
	qr.clone.git("push", "-q", "origin", "feature/flag")
	persons := strings.TrimSpace(qr.clone.git("rev-parse", "HEAD"))
	qr.clone.git("checkout", "-q", "main")
	pr := gh.AddIssue(fakegithub.IssueSpec{Title: "Add a --dry flag", Body: "Adds a flag that prints what would change.", Author: "bob", PullRequest: true, Head: "feature/flag"})
	fork := gh.AddIssue(fakegithub.IssueSpec{Title: "From a fork", Author: "eve", PullRequest: true, Head: "main", HeadOwner: "eve"})

	qr.startWebhookWorker(t)
	follow := qr.starter(t, "queue", "--follow", "--adopt-prs", "--poll-interval", "1h", qr.clone.Dir)
	waitFor(t, time.Minute, "the queue to go idle", func() bool { return strings.Contains(follow.Output(), "idle: no ready issue") })
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("queue:\n%s", follow.Output())
			for _, c := range gh.Issue(pr).Comments {
				t.Logf("comment by %s: %s", c.Author, c.Body)
			}
		}
	})

	gh.AddComment(fork, "alice", "@"+ghBot+" tidy it")
	asked := time.Now()
	gh.AddComment(pr, "alice", "@"+ghBot+" rename the flag to --dry-run")
	round := func(n int) []fakegithub.Comment {
		var out []fakegithub.Comment
		for _, c := range botComments(gh.Issue(pr)) {
			if strings.Contains(c.Body, fmt.Sprintf("Round %d addressed 1 review comments in", n)) {
				out = append(out, c)
			}
		}
		return out
	}
	waitFor(t, 2*time.Minute, "the round's comment on the pull request", func() bool { return len(round(1)) == 1 })
	t.Logf("figure: comment to the round's comment on the pull request: %s", time.Since(asked).Round(10*time.Millisecond))
	require.Contains(t, round(1)[0].Body, "@alice (conversation comment): rename the flag to --dry-run")
	log := gitOutput(t, qr.origin, "log", "--format=%H %s", "feature/flag")
	require.Contains(t, log, persons, "the person's commit stays")
	require.NotEqual(t, persons, strings.Fields(log)[0], "the round's commit is on top: %s", log)
	waitFor(t, time.Minute, "alice asked for a review", func() bool { return slices.Contains(gh.ReviewRequests(pr), "alice") })
	var prompt string
	for _, c := range calls(t, qr.se.env) {
		if strings.Contains(c.Prompt, "rename the flag to --dry-run") {
			prompt = c.Prompt
		}
	}
	require.NotEmpty(t, prompt, "the instruction reached the agent")
	require.Contains(t, prompt, "Adds a flag that prints what would change.")
	require.Empty(t, botComments(gh.Issue(fork)), "nothing written on a fork's pull request")

	gh.AddComment(pr, "alice", "@"+ghBot+" and add it to the README")
	waitFor(t, 2*time.Minute, "round 2's comment", func() bool { return len(round(2)) == 1 })
	require.Len(t, round(1), 1, "round 1's comment is kept")
	// --follow prints the story as it reads it, a moment behind.
	waitFor(t, 30*time.Second, "the story in --follow", func() bool {
		fo := follow.Output()
		return strings.Contains(fo, fmt.Sprintf("#%d: @alice asked for work in a comment on a pull request from a fork: not taken", fork)) &&
			strings.Contains(fo, fmt.Sprintf("#%d: @alice asked for round 2 on pull request #%d (branch feature/flag)", pr, pr))
	})

	stop := qr.starter(t, "stop", "--queue", qr.clone.Dir)
	require.Equal(t, 0, stop.wait(t, time.Minute), stop.Output())
	follow.wait(t, 3*time.Minute)
	c := qr.client(t)
	replayAs(t, c, contract.QueueWorkflowID(testHost, "acme", "app"), "queue")
	replayAs(t, c, contract.AdoptedRoundID(testHost, "acme", "app", pr), "adopted")
}

// gitOutput runs git in dir (a bare repository too) and returns its
// output.
func gitOutput(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	require.NoError(t, err, string(out))
	return string(out)
}
