package testsuite_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
)

// historiesDir holds histories recorded from end-to-end runs. Replaying
// them on every test run makes a workflow change that would break running
// sessions fail here, before it reaches a worker.
const historiesDir = "testdata/histories"

// minHistories guards against a replay test that passes because it found
// nothing to replay.
const minHistories = 5

// TestReplayRecordedHistories replays every recorded history of a session
// or an issue queue against the current workflow code.
func TestReplayRecordedHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(historiesDir, "*.json"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), minHistories, "recorded histories in %s", historiesDir)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			require.NoError(t, newReplayer().ReplayWorkflowHistoryFromJSONFile(nil, f))
		})
	}
}

var unsafeFileChars = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// recordHistory writes h under testdata/histories when
// RALPH_RECORD_HISTORIES is set, in the JSON format of
// `temporal workflow show --output json`. Run
//
//	RALPH_RECORD_HISTORIES=<change-id> go test ./testsuite/
//
// after a deliberate, versioned workflow change to add histories of the new
// code beside the old ones (1 instead of a change ID overwrites them).
//
// A non-empty label names which workflow of the test the history is of.
func recordHistory(t *testing.T, h *historypb.History, label string, run int) {
	t.Helper()
	if os.Getenv("RALPH_RECORD_HISTORIES") == "" {
		return
	}
	data, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(h)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(historiesDir, 0o755))
	base := unsafeFileChars.ReplaceAllString(t.Name(), "_")
	if label != "" {
		base += "-" + unsafeFileChars.ReplaceAllString(label, "_")
	}
	if tag := os.Getenv("RALPH_RECORD_HISTORIES"); tag != "1" {
		// A tag names the workflow change, so that the histories of
		// earlier code are kept beside the new ones.
		base += "-" + unsafeFileChars.ReplaceAllString(tag, "_")
	}
	name := fmt.Sprintf("%s-run%d.json", base, run)
	require.NoError(t, os.WriteFile(filepath.Join(historiesDir, name), data, 0o644))
}
