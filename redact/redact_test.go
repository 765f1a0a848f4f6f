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
