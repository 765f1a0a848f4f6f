package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLogsStayInTheWorkspace: the logs are in the agent's workspace, so
// log reads them inside it: a prompt or stream the agent replaced with a
// link out of the workspace is not read through it.
func TestLogsStayInTheWorkspace(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "id_ed25519")
	require.NoError(t, os.WriteFile(outside, []byte("PRIVATE-KEY-CANARY\n"), 0o600))
	ws := t.TempDir()
	dir := filepath.Join(".ralph", "logs", "key")
	require.NoError(t, os.MkdirAll(filepath.Join(ws, dir), 0o755))
	write := func(name, data string) {
		require.NoError(t, os.WriteFile(filepath.Join(ws, dir, name), []byte(data), 0o644))
	}
	write("iteration-0001.prompt.md", "# first\n")
	write("iteration-0001.attempt-1.jsonl", `{"type":"assistant","message":{"content":[{"type":"text","text":"hello \u001b]0;pwned\u0007there"}]}}`+"\n")
	write("iteration-0001.attempt-2.jsonl", "")
	require.NoError(t, os.Symlink(outside, filepath.Join(ws, dir, "iteration-0001.attempt-2.prompt.md")))
	require.NoError(t, os.Symlink(outside, filepath.Join(ws, dir, "iteration-0001.attempt-3.jsonl")))

	l := logsOf(t, ws)
	got, err := l.read(dir, 1, 0)
	require.NoError(t, err)
	require.Len(t, got, 2, "the linked stream is no attempt")
	require.Equal(t, "# first\n", got[0].Prompt)
	require.Len(t, got[0].Events, 1)
	require.Equal(t, "hello there", got[0].Events[0].Text, "terminal sequences are taken out")
	require.Equal(t, "# first\n", got[1].Prompt, "the linked prompt is not read: the iteration's is shown")
	for _, a := range got {
		require.NotContains(t, a.Prompt, "CANARY")
	}

	// A logs directory that is itself a link out is refused.
	require.NoError(t, os.RemoveAll(filepath.Join(ws, ".ralph", "logs")))
	require.NoError(t, os.Symlink(filepath.Dir(outside), filepath.Join(ws, ".ralph", "logs")))
	_, err = l.read(dir, 1, 0)
	require.Error(t, err)
}

// TestLogReadsThePromptAtTheStartOfTheLog: an attempt's prompt is the
// first record of its log; the agent's events are what follows it.
func TestLogReadsThePromptAtTheStartOfTheLog(t *testing.T) {
	ws := t.TempDir()
	dir := filepath.Join(".ralph", "logs", "key")
	require.NoError(t, os.MkdirAll(filepath.Join(ws, dir), 0o755))
	write := func(name, data string) {
		require.NoError(t, os.WriteFile(filepath.Join(ws, dir, name), []byte(data), 0o644))
	}
	said := `{"type":"assistant","message":{"content":[{"type":"text","text":"on it"}]}}` + "\n"
	write("iteration-0002.attempt-1.jsonl", `{"type":"ralph_prompt","prompt":"# Ralph loop: iteration 2\n\u001b]0;title\u0007Do US-002."}`+"\n"+said)
	write("iteration-0002.attempt-2.jsonl", `{"type":"ralph_prompt","prompt":"# retried"}`+"\n"+said)

	got, err := logsOf(t, ws).read(dir, 2, 0)
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, "# Ralph loop: iteration 2\nDo US-002.", got[0].Prompt, "terminal sequences are taken out")
	require.Equal(t, "# retried", got[1].Prompt, "each attempt has its own")
	for _, a := range got {
		require.Len(t, a.Events, 1, "the prompt is no event of the agent's")
		require.Equal(t, "on it", a.Events[0].Text)
	}
}

// logsOf reads the logs of the workspace ws.
func logsOf(t *testing.T, ws string) *logs {
	t.Helper()
	root, err := os.OpenRoot(ws)
	require.NoError(t, err)
	l := &logs{root: root, workspace: ws}
	t.Cleanup(l.close)
	return l
}
