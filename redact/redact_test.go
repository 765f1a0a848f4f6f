package redact_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/redact"
)

func TestRedactor(t *testing.T) {
	r := redact.New([]string{
		"GITHUB_TOKEN=ghp_abcdefghijklmnop",
		"DB_PASSWORD=p<a>ss&word\"1",
		"SHORT_KEY=abc",          // too short to be a secret
		"HOME=/root/secret-home", // not a secret name
	})
	tests := []struct{ in, want string }{
		{"token ghp_abcdefghijklmnop leaked", "token [REDACTED:GITHUB_TOKEN] leaked"},
		{`{"text":"p\u003ca\u003ess\u0026word\"1"}`, `{"text":"[REDACTED:DB_PASSWORD]"}`},
		{`{"text":"p<a>ss&word\"1"}`, `{"text":"[REDACTED:DB_PASSWORD]"}`},
		{"abc and /root/secret-home stay", "abc and /root/secret-home stay"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, r.String(tt.in))
		require.Equal(t, tt.want, string(r.Bytes([]byte(tt.in))))
	}

	type inner struct{ Text string }
	type outer struct {
		Reason string
		List   []string
		Ptr    *inner
		Map    map[string]string
	}
	v := outer{Reason: "ghp_abcdefghijklmnop", List: []string{"x ghp_abcdefghijklmnop"}, Ptr: &inner{"ghp_abcdefghijklmnop"}, Map: map[string]string{"k": "ghp_abcdefghijklmnop"}}
	got := r.Value(v).(outer)
	require.Equal(t, "[REDACTED:GITHUB_TOKEN]", got.Reason)
	require.Equal(t, "x [REDACTED:GITHUB_TOKEN]", got.List[0])
	require.Equal(t, "[REDACTED:GITHUB_TOKEN]", got.Ptr.Text)
	require.Equal(t, "[REDACTED:GITHUB_TOKEN]", got.Map["k"])
	require.Equal(t, "ghp_abcdefghijklmnop", v.Ptr.Text, "the original is not changed")

	err := r.Error(temporal.NewNonRetryableApplicationError("auth ghp_abcdefghijklmnop", "AgentPermanentError", nil))
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr))
	require.Equal(t, "AgentPermanentError", appErr.Type())
	require.True(t, appErr.NonRetryable())
	require.NotContains(t, err.Error(), "ghp_")
	plain := errors.New("no secret here")
	require.Same(t, plain, r.Error(plain))
}

func TestIsSecretName(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"GITHUB_TOKEN", true},
		{"ANTHROPIC_API_KEY", true},
		{"AWS_SECRET_ACCESS_KEY", true},
		{"DB_PASSWORD", true},
		{"MYSQL_PASSWD", true},
		{"GPG_PASSPHRASE", true},
		{"GOOGLE_CREDENTIALS", true},
		{"DB_PASS", true},
		{"PASS", true},
		{"BASIC_AUTH", true},
		{"AUTH_HEADER", true},
		{"npm_config__auth", true},
		{"BYPASS_CACHE", false},
		{"COMPASS_URL", false},
		{"GIT_AUTHOR_NAME", false},
		{"OAUTHLIB_INSECURE", false},
		{"HOME", false},
		{"RALPH_GITHUB_TOKEN_ENV", false}, // names a variable
		{"RALPH_CODEC_KEY_FILE", false},   // names a file
		{"SSH_AUTH_SOCK", false},
		{"GOOGLE_APPLICATION_CREDENTIALS_PATH", false},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, redact.IsSecretName(tt.name), tt.name)
	}
}

func TestSecretsWhateverTheirNames(t *testing.T) {
	r := redact.New([]string{"GITHUB_TOKEN=ghp_abcdefghijklmnop", "HOME=/home/dev"},
		"codec.key-file=c2VjcmV0LWNvZGVjLWtleS0zMi1ieXRlcw==", "MY_GH=tok-value-123", "SHORT=abc")
	require.Equal(t, "key [REDACTED:codec.key-file] and [REDACTED:MY_GH]", r.String("key c2VjcmV0LWNvZGVjLWtleS0zMi1ieXRlcw== and tok-value-123"))
	require.Equal(t, "abc /home/dev", r.String("abc /home/dev"), "short values and ordinary variables stay")

	tests := []struct {
		in, name string
		ok       bool
	}{
		{"export T=ghp_abcdefghijklmnop", "GITHUB_TOKEN", true},
		{`{"k":"tok-value-123"}`, "MY_GH", true},
		{"nothing here", "", false},
		{"abc", "", false},
	}
	for _, tt := range tests {
		name, ok := r.Find(tt.in)
		require.Equal(t, tt.ok, ok, tt.in)
		require.Equal(t, tt.name, name, tt.in)
	}
	_, ok := (*redact.Redactor)(nil).Find("ghp_abcdefghijklmnop")
	require.False(t, ok, "a nil Redactor knows no secret")
}
