package testsuite_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWorkerKilledMidStoryKeepsOneCommitPerStory kills the worker after
// the agent wrote story US-001 but before the iteration committed it. The
// retry (which resumes the agent's session, and which goes on to US-002)
// must not fold that work into its own commit: every story ends in a
// commit of its own that names it, and no commit holds two stories.
func TestWorkerKilledMidStoryKeepsOneCommitPerStory(t *testing.T) {
	k := killWorkerMidAgent(t, map[string]any{
		"steps":  []any{map[string]any{"auto": true, "sleep_after_ms": 8000}},
		"repeat": "auto",
	})
	r, id := k.r, k.id
	res, c := k.complete(t)

	// Every commit after the first: its subject and the story files it holds.
	first := strings.TrimSpace(r.git("rev-list", "--max-parents=0", "HEAD"))
	stories := map[string]string{} // story file -> subject of its commit
	for _, entry := range strings.Split(r.git("log", "--reverse", "--format=%x00%s", "--name-only", first+"..HEAD"), "\x00")[1:] {
		subject, files, _ := strings.Cut(entry, "\n")
		var held []string
		for _, f := range strings.Fields(files) {
			if strings.HasPrefix(f, "story-") {
				held = append(held, f)
			}
		}
		require.LessOrEqual(t, len(held), 1, "commit %q holds two stories: %v", subject, held)
		for _, f := range held {
			require.NotContains(t, stories, f, "%s is in two commits", f)
			stories[f] = subject
			story := strings.TrimSuffix(strings.TrimPrefix(f, "story-"), ".txt")
			require.Contains(t, subject, story, "the commit of %s names it", f)
		}
	}
	require.Len(t, stories, 3, "one commit per story: %v", stories)
	require.Contains(t, stories["story-US-001.txt"], "(interrupted)", "the dead attempt's work is committed apart")
	require.Equal(t, 3, res.Totals.Commits, "the interrupted commit counts, once")
	replay(t, c, id)
}
