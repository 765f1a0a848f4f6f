package testsuite_test

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"

	"github.com/durable-ralph/ralph/workflows"
	"github.com/durable-ralph/ralph/workflows/workflowtest"
)

// historiesDir is where the package of workflow type name keeps its
// recorded histories (workflowtest.HistoriesDir, replayed by that
// package's TestReplay).
func historiesDir(t *testing.T, name string) string {
	t.Helper()
	for _, fn := range workflows.All {
		full := runtime.FuncForPC(reflect.ValueOf(fn).Pointer()).Name() // .../workflows/session.Session
		pkg, typ, _ := strings.Cut(path.Base(full), ".")
		if typ == name {
			return filepath.Join("..", "workflows", pkg, workflowtest.HistoriesDir)
		}
	}
	t.Fatalf("no workflow of type %q in workflows.All", name)
	return ""
}

var unsafeFileChars = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// recordHistory writes h beside the other histories of its workflow
// (historiesDir) when
// RALPH_RECORD_HISTORIES is set, in the JSON format of
// `temporal workflow show --output json`. Run
//
//	RALPH_RECORD_HISTORIES=<change-id> go test ./testsuite/ -run <test>
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
	dir := historiesDir(t, h.Events[0].GetWorkflowExecutionStartedEventAttributes().GetWorkflowType().GetName())
	require.NoError(t, os.MkdirAll(dir, 0o755))
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
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
}
