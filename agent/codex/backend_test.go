package codex

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/agent"
)

func TestArgs(t *testing.T) {
	base := []string{"exec", "--json", "--dangerously-bypass-approvals-and-sandbox", "--skip-git-repo-check"}
	tests := []struct {
		name   string
		o      agent.Options
		resume string
		want   []string
	}{
		{
			name: "fresh",
			want: append(base, "-"),
		},
		{
			name: "model_and_extra_args",
			o:    agent.Options{Model: "gpt-5.5", ExtraArgs: []string{"-c", `model_reasoning_effort="high"`}, MaxTurns: 7},
			want: append(base, "--model", "gpt-5.5", "-c", `model_reasoning_effort="high"`, "-"),
		},
		{
			name:   "resume",
			resume: "01a205ff-f8ca-71f0-ad7e-765d0dd31bd4",
			want:   append(base, "resume", "01a205ff-f8ca-71f0-ad7e-765d0dd31bd4", "-"),
		},
		{
			name:   "resume_takes_the_flags_of_exec_before_it",
			o:      agent.Options{Model: "gpt-5.5", ExtraArgs: []string{"--sandbox", "workspace-write"}},
			resume: "01a205ff-f8ca-71f0-ad7e-765d0dd31bd4",
			want:   append(base, "--model", "gpt-5.5", "--sandbox", "workspace-write", "resume", "01a205ff-f8ca-71f0-ad7e-765d0dd31bd4", "-"),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, Backend{}.Args(tc.o, tc.resume))
		})
	}
}

func TestBackend(t *testing.T) {
	var b agent.Backend = Backend{}
	require.Equal(t, "codex", b.Name())
	require.Nil(t, b.Env(agent.Options{}))

	p := b.NewParser(agent.Options{Model: "gpt-5"})
	require.Equal(t, agent.Summary{Model: "gpt-5", CostNote: "cost unknown: Codex reported no token usage (no turn completed)"}, p.Summary())
	require.False(t, p.ResumeFailed())
}

func TestAPIHosts(t *testing.T) {
	home := t.TempDir()
	codexHome := filepath.Join(home, "codex")
	require.NoError(t, os.MkdirAll(codexHome, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(`model_provider = "local"
[model_providers.local]
name = "local"
base_url = "http://127.0.0.1:41234/v1"
env_key = "LOCAL_KEY"
wire_api = "responses"
`), 0o600))
	tests := []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"defaults", map[string]string{"HOME": home}, []string{"api.openai.com", "chatgpt.com"}},
		{"base URL variable", map[string]string{"HOME": home, "OPENAI_BASE_URL": "https://llm.example:8443/v1"}, []string{"llm.example:8443"}},
		{"provider in config.toml", map[string]string{"HOME": home, "CODEX_HOME": codexHome}, []string{"127.0.0.1:41234", "api.openai.com", "chatgpt.com"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, Backend{}.APIHosts(func(k string) string { return tt.env[k] }))
		})
	}
}
