package activities_test

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/contract"
)

func TestReadLogPrompt(t *testing.T) {
	stream := `{"type":"system","subtype":"init"}` + "\n"
	for _, tc := range []struct {
		name, log, prompt string
		ok                bool
	}{
		{"prompt then stream", `{"type":"ralph_prompt","prompt":"# Ralph loop\nDo it."}` + "\n" + stream, "# Ralph loop\nDo it.", true},
		{"a log from before", stream, "", false},
		{"cut before its end", `{"type":"ralph_prompt","prompt":"# Ral`, "", false},
		{"not JSON", `{"type":"ralph_prompt" but not JSON` + "\n" + stream, "", false},
		{"another type after the prefix", `{"type":"ralph_prompts","prompt":"x"}` + "\n", "", false},
		{"empty", "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "iteration-0001.attempt-1.jsonl")
			require.NoError(t, os.WriteFile(path, []byte(tc.log), 0o644))
			f, err := os.Open(path)
			require.NoError(t, err)
			defer f.Close()
			prompt, n, ok := contract.ReadLogPrompt(f)
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.prompt, prompt)
			activities.SkipLogPrompt(f)
			rest, err := io.ReadAll(f)
			require.NoError(t, err)
			if tc.ok {
				require.Equal(t, stream, string(rest), "the agent's stream follows the prompt")
				require.Equal(t, int64(strings.Index(tc.log, "\n")+1), n)
			} else {
				require.Equal(t, tc.log, string(rest), "a log without a prompt record is read whole")
			}
		})
	}
}

// logPromptOf is the prompt the attempt's log at path begins with.
func logPromptOf(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	prompt, _, ok := contract.ReadLogPrompt(f)
	require.True(t, ok, "%s begins with its prompt", path)
	return prompt
}
