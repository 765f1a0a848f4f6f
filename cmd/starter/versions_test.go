package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/gittest"
)

// TestVersionsNamesOpenRunsStartedBeforeAChange: a session started today
// (it stays open: no worker runs it) keeps the old branches of a change
// that ships tomorrow, and none of one that shipped a year ago; the
// table says the same as -o json.
func TestVersionsNamesOpenRunsStartedBeforeAChange(t *testing.T) {
	useServer(t)
	tomorrow := time.Now().UTC().AddDate(0, 0, 1).Format(time.DateOnly)
	old := changes
	changes = []contract.Change{
		{ID: "shipped-long-ago", Since: "2025-01-01", Means: []string{"before", "after"}},
		{ID: "ships-tomorrow", Since: tomorrow, Means: []string{"before", "after"}},
	}
	t.Cleanup(func() { changes = old })

	code, stdout, stderr := runCLI(t, "run", gittest.NewRepo(t, map[string]string{"prd.json": onePRD("ralph/widgets")}))
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "Started session")
	_, list, _ := runCLI(t, "list", "-o", "json")
	var session listDoc
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(list)), &session), list)

	var docs []versionsDoc
	require.Eventually(t, func() bool { // visibility is eventually consistent
		code, stdout, stderr = runCLI(t, "versions", "-o", "json")
		require.Equal(t, 0, code, stderr)
		docs = nil
		for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
			var d versionsDoc
			require.NoError(t, json.Unmarshal([]byte(l), &d), l)
			docs = append(docs, d)
		}
		return len(docs) == 2 && len(docs[1].Open) == 1
	}, 10*time.Second, 200*time.Millisecond, stdout)
	require.Equal(t, versionsDoc{Change: "shipped-long-ago", Since: "2025-01-01", Open: []string{}, Retirable: true}, docs[0])
	require.Equal(t, versionsDoc{Change: "ships-tomorrow", Since: tomorrow, Open: []string{session.WorkflowID}}, docs[1])

	code, stdout, stderr = runCLI(t, "versions")
	require.Equal(t, 0, code, stderr)
	require.Regexp(t, `shipped-long-ago\s+2025-01-01\s+can be removed: no open run started before it`, stdout)
	require.Regexp(t, `ships-tomorrow\s+`+tomorrow+`\s+kept: open runs started before it: `+session.WorkflowID, stdout)
}
