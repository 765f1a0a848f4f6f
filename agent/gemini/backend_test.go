package gemini

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/agent"
)

func TestBackendArgs(t *testing.T) {
	headless := []string{"--prompt", "", "--output-format", "stream-json", "--approval-mode", "yolo"}
	tests := []struct {
		name   string
		o      agent.Options
		resume string
		want   []string
	}{
		{
			name: "fresh run with the CLI's default model",
			want: headless,
		},
		{
			name: "model and extra args",
			o:    agent.Options{Model: "gemini-2.5-pro", ExtraArgs: []string{"--include-directories", "../lib"}},
			want: append(append([]string(nil), headless...), "--model", "gemini-2.5-pro", "--include-directories", "../lib"),
		},
		{
			name:   "resume",
			o:      agent.Options{Model: "gemini-2.5-flash"},
			resume: "bcba61c6-a4b9-446e-91cd-fca0bba99a17",
			want:   append(append([]string(nil), headless...), "--model", "gemini-2.5-flash", "--resume", "bcba61c6-a4b9-446e-91cd-fca0bba99a17"),
		},
		{
			name: "max turns has no flag",
			o:    agent.Options{MaxTurns: 5},
			want: headless,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, Backend{}.Args(tc.o, tc.resume))
		})
	}
}

func TestBackendEnv(t *testing.T) {
	require.Equal(t, "gemini", Backend{}.Name())
	require.ElementsMatch(t, []string{"GEMINI_CLI_TRUST_WORKSPACE=true", "GEMINI_CLI_NO_RELAUNCH=true"}, Backend{}.Env(agent.Options{}))
}
