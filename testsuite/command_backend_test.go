package testsuite_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// plainAgent is an agent for the command backend: a shell script that
// reads Ralph's prompt on stdin, does the story it names (marks it
// passing in prd.json) and answers in plain text; on the verify prompt it
// prints the completion promise. Its extra argument proves agent.command
// keeps its words.
const plainAgent = `#!/bin/sh
set -e
prompt=$(cat)
[ "$1" = "--style=terse" ] || { echo "want --style=terse, got $*" >&2; exit 2; }
story=$(printf '%s\n' "$prompt" | sed -n 's/^## This iteration: \(US-[0-9]*\).*/\1/p' | head -n 1)
if [ -z "$story" ]; then
	echo "Every story passes."
	echo "<promise>COMPLETE</promise>"
	exit 0
fi
echo "Working on $story"
sed -i "/\"id\": \"$story\"/ s/\"passes\": false/\"passes\": true/" prd.json
echo "$story done" >> progress.txt
echo "Marked $story as passing."
`

// TestCommandBackendLoopsAnyCLI runs a session whose agent is a plain
// script (agent.backend command): prompt on stdin, text out, the
// completion promise found in the text, cost unknown.
func TestCommandBackendLoopsAnyCLI(t *testing.T) {
	r := newRepo(t, map[string]string{"prd.json": threeStoryPRD, "progress.txt": ""})
	script := filepath.Join(t.TempDir(), "plain-agent")
	require.NoError(t, os.WriteFile(script, []byte(plainAgent), 0o755))
	se := newStarterEnv(t, "")
	startDevWorker(t, se)

	code, out := starter(t, se, "run", "--dev", "--follow", "--backend", "command", "--agent-command", script+" --style=terse", r.Dir)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "ended: complete")
	require.Contains(t, out, "iteration 1: success, cost unknown, 0 tokens")
	require.Equal(t, 3, strings.Count(r.read("prd.json"), `"passes": true`))
	require.Len(t, r.ralphCommits(), 3, "one commit per story")

	code, out = starter(t, se, "status", "--dev", r.Dir)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "$0.0000 of $50.00; 4 iterations of unknown cost not counted (see agent.prices)", "a plain command reports no cost")
	replayFrom(t, se, sessionIDOf(r.Dir))
}
