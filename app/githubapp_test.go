package app

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/config"
	"github.com/durable-ralph/ralph/redact"
)

// TestGitHubApp: a worker configured with a GitHub App authenticates as
// its installation, whatever token is configured too, says so at its
// start, and redacts the app's key, whole or a line of it.
func TestGitHubApp(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	pemText := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "app.pem")
	require.NoError(t, os.WriteFile(keyFile, pemText, 0o600))
	tokenFile := filepath.Join(dir, "github-token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("ghp_fromTheTokenFile0123456789\n"), 0o600))

	tests := []struct {
		name       string
		github     config.GitHubConfig
		wantApp    bool
		wantNotice string
	}{
		{name: "no app", github: config.GitHubConfig{TokenFile: tokenFile}},
		{name: "an app", github: config.GitHubConfig{AppID: 12345, AppInstallationID: 678, AppPrivateKeyFile: keyFile, TokenEnv: "RALPH_TEST_NO_TOKEN"},
			wantApp: true, wantNotice: "GitHub:          as the GitHub App 12345's installation 678 (github.app-*), with tokens it renews"},
		{name: "an app and a token file", github: config.GitHubConfig{AppID: 12345, AppInstallationID: 678, AppPrivateKeyFile: keyFile, TokenFile: tokenFile},
			wantApp: true, wantNotice: "GitHub:          as the GitHub App 12345's installation 678 (github.app-*), with tokens it renews; the token in github.token-file is not used: the app wins"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config.Config{GitHub: tt.github}
			gh, err := NewGitHub(cfg)
			require.NoError(t, err)
			require.Equal(t, tt.wantApp, gh.App != nil)
			require.Equal(t, tt.wantNotice, GitHubNotice(cfg))

			r := redact.New(nil, NewAgent(cfg).Secrets...)
			body := strings.Split(strings.TrimSpace(string(pemText)), "\n")[3]
			for _, leak := range []string{string(pemText), "line: " + body} {
				got := r.String(leak)
				if tt.wantApp {
					require.NotContains(t, got, body)
					require.Contains(t, got, "[REDACTED:github.app-private-key-file]")
				} else {
					require.Equal(t, leak, got)
				}
			}
		})
	}
}

// TestSecretsLater: what came after the worker started, such as an
// installation token, is redacted too, in text, values and errors.
func TestSecretsLater(t *testing.T) {
	var later []string
	s := &secrets{
		known: redact.New(nil, "codec.key-file=theCodecKey0123456789"),
		later: func() []string { return later },
	}
	require.Equal(t, "[REDACTED:codec.key-file] ghs_notYetKnown012345", s.String("theCodecKey0123456789 ghs_notYetKnown012345"))

	later = []string{"github.app-installation-token=ghs_notYetKnown012345"}
	require.Equal(t, "[REDACTED:codec.key-file] [REDACTED:github.app-installation-token]", s.String("theCodecKey0123456789 ghs_notYetKnown012345"))
	require.Equal(t, map[string]string{"out": "[REDACTED:github.app-installation-token]"}, s.Value(map[string]string{"out": "ghs_notYetKnown012345"}))

	err := s.Error(temporal.NewNonRetryableApplicationError("push with ghs_notYetKnown012345", "Push", nil))
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr))
	require.True(t, appErr.NonRetryable())
	require.True(t, strings.HasPrefix(appErr.Message(), "push with [REDACTED:github.app-installation-token]"), appErr.Message())

	canceled := errors.New("canceled")
	require.Same(t, canceled, s.Error(canceled))
}
