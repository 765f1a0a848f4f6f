package testkit

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/activities"
)

// LogPrompt is the prompt the attempt's log at path begins with
// (activities.ReadLogPrompt); t fails when the log has none.
func LogPrompt(t testing.TB, path string) string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	prompt, _, ok := activities.ReadLogPrompt(f)
	require.True(t, ok, "%s begins with its prompt", path)
	return prompt
}
