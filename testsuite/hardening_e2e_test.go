package testsuite_test

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/encoding/protojson"
)

const oneStoryPRD = `{
  "project": "Widgets",
  "userStories": [
    {"id": "US-001", "title": "List widgets", "description": "d", "acceptanceCriteria": ["a"], "priority": 1, "passes": false, "notes": ""}
  ]
}
`

// TestCLISecondSessionOnTheSameWorkspace runs `starter run --dev --follow`
// on a workspace twice: the second session, after a story was added, must
// run the agent and commit its own work, not take the first session's
// records (results, commits) for its own.
func TestCLISecondSessionOnTheSameWorkspace(t *testing.T) {
	r := newRepo(t, map[string]string{"prd.json": oneStoryPRD, "progress.txt": ""})
	se := newStarterEnv(t, scenario(t, map[string]any{"auto": true}))

	code, out := starter(t, se, "run", "--dev", "--follow", r.Dir)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "ended: complete")
	firstCalls := len(calls(t, se.env))
	firstCommits := len(r.ralphCommits())
	require.Positive(t, firstCommits)

	prd := strings.Replace(r.read("prd.json"), `"passes": true, "notes": ""}`,
		`"passes": true, "notes": ""},
    {"id": "US-002", "title": "Add a widget", "description": "d", "acceptanceCriteria": ["a"], "priority": 2, "passes": false, "notes": ""}`, 1)
	require.Contains(t, prd, "US-002")
	r.write("prd.json", prd)
	r.git("commit", "-q", "-am", "add US-002")

	code, out = starter(t, se, "run", "--dev", "--follow", r.Dir)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "ended: complete")
	require.Greater(t, len(calls(t, se.env)), firstCalls, "the second session ran the agent")
	require.Contains(t, r.read("prd.json"), `"id": "US-002", "title": "Add a widget", "description": "d", "acceptanceCriteria": ["a"], "priority": 2, "passes": true`)
	require.Greater(t, len(r.ralphCommits()), firstCommits, "the second session committed its own work: %v", r.ralphCommits())
	require.Empty(t, strings.TrimSpace(r.git("status", "--porcelain")), "the second session's work is committed")
	keys := map[string]bool{}
	for _, k := range strings.Fields(r.git("log", "--format=%(trailers:key=Ralph-Session,valueonly)")) {
		keys[k] = true
	}
	require.Len(t, keys, 2, "the two sessions' commits carry different keys")
}

// TestSecretNeverReachesHistoryLogsOrOutput runs a session whose agent
// prints its API key on stderr and stdout and then fails for good: the
// exported history, the server's database, the saved logs and the
// starter's output hold no copy of the key.
func TestSecretNeverReachesHistoryLogsOrOutput(t *testing.T) {
	const secret = "sk-ant-api03-e2e-secret-Zq7Wm3Kp"
	r := newRepo(t, map[string]string{"prd.json": oneStoryPRD})
	se := newStarterEnv(t, "")
	// The agent echoes its key in its stream, then fails for good with the
	// key in its error: the failure travels as an activity and a workflow
	// failure message.
	agent := filepath.Join(t.TempDir(), "leaky-agent")
	require.NoError(t, os.WriteFile(agent, []byte(`#!/bin/sh
printf '{"type":"system","subtype":"init","session_id":"s-1","model":"m","tools":[]}\n'
printf '{"type":"assistant","message":{"content":[{"type":"text","text":"my key is %s"}]}}\n' "$ANTHROPIC_API_KEY"
echo "Invalid API key: $ANTHROPIC_API_KEY" >&2
exit 1
`), 0o755))
	env := append(se.env, "ANTHROPIC_API_KEY="+secret)
	p := startProc(t, env, bins.starter, "run", "--dev", "--follow", "--agent-command", agent, r.Dir)
	code := p.wait(t, 3*time.Minute)
	out := p.Output()
	require.NotEqual(t, 0, code, out)
	require.Contains(t, out, "[REDACTED:ANTHROPIC_API_KEY]", "the failure is shown, without the key")
	require.NotContains(t, out, secret, "starter output")

	// The history as the server exports it.
	status := startProc(t, env, bins.starter, "status", "--dev", r.Dir)
	status.wait(t, time.Minute)
	require.NotContains(t, status.Output(), secret)
	hist := exportHistory(t, se, sessionIDOf(r.Dir))
	require.NotContains(t, hist, secret, "exported history")
	require.Contains(t, hist, "REDACTED:ANTHROPIC_API_KEY", "the leak reached the history, redacted")

	// Every file the server and the session wrote.
	for _, dir := range []string{se.stateDir, filepath.Join(r.Dir, ".ralph")} {
		require.NoError(t, filepath.Walk(dir, func(path string, fi os.FileInfo, err error) error {
			if err != nil || fi.IsDir() {
				return err
			}
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			require.NotContains(t, string(data), secret, "file %s", path)
			return nil
		}))
	}
	logs, err := filepath.Glob(filepath.Join(r.Dir, ".ralph/logs/*/*.jsonl"))
	require.NoError(t, err)
	require.NotEmpty(t, logs)
}

// exportHistory reads the whole history of a session from the dev server
// of se and returns it as JSON.
func exportHistory(t *testing.T, se *starterEnv, id string) string {
	t.Helper()
	c := se.dial(t) // the dev server that ran the session runs on
	defer c.Close()
	return historyJSON(t, c, id, "")
}

// historyJSON is the history of run of workflow id ("" for its latest
// run) as JSON, one event a line, with the payloads decoded after each.
func historyJSON(t *testing.T, c client.Client, id, run string) string {
	t.Helper()
	var b strings.Builder
	it := c.GetWorkflowHistory(context.Background(), id, run, false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(t, err)
		data, err := protojson.Marshal(e)
		require.NoError(t, err)
		b.Write(data)
		b.WriteByte('\n')
		// Payload data is base64 in JSON: add it decoded.
		for _, s := range strings.Split(string(data), `"data":"`)[1:] {
			if dec, err := base64.StdEncoding.DecodeString(s[:strings.IndexByte(s, '"')]); err == nil {
				b.Write(dec)
				b.WriteByte('\n')
			}
		}
	}
	return b.String()
}

// TestEncryptedSessionStoresCiphertext runs a session with a payload codec:
// the history and the server's database hold no plaintext of the prompt's
// inputs or of failure messages, and the starter, which has the key,
// still shows the session.
func TestEncryptedSessionStoresCiphertext(t *testing.T) {
	r := newRepo(t, map[string]string{"prd.json": oneStoryPRD, "progress.txt": ""})
	se := newStarterEnv(t, scenario(t, map[string]any{"auto": true}))
	key := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	env := append(se.env, "RALPH_CODEC_KEY_ENV=RALPH_TEST_KEY", "RALPH_TEST_KEY="+key)
	p := startProc(t, env, bins.starter, "run", "--dev", "--follow", r.Dir)
	require.Equal(t, 0, p.wait(t, 3*time.Minute), p.Output())
	require.Contains(t, p.Output(), "ended: complete")

	status := startProc(t, env, bins.starter, "status", "--dev", r.Dir)
	require.Equal(t, 0, status.wait(t, time.Minute), status.Output())
	require.Contains(t, status.Output(), "completed (complete)", "the starter decrypts")

	hist := exportHistory(t, se, sessionIDOf(r.Dir))
	require.Contains(t, hist, base64.StdEncoding.EncodeToString([]byte("binary/encrypted")))
	require.NotContains(t, hist, "List widgets", "the story title is in results only as ciphertext")
	require.NotContains(t, hist, r.Dir, "the workspace path is in the input only as ciphertext")
	db, err := os.ReadFile(filepath.Join(se.stateDir, "temporal.db"))
	require.NoError(t, err)
	require.NotContains(t, string(db), "List widgets")
}
