package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// testAppKey is an RSA private key for the tests, made once.
var testAppKey = sync.OnceValue(func() *rsa.PrivateKey {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return key
})

// appKeyPEM is the text of testAppKey's PEM file, as GitHub gives it.
func appKeyPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(testAppKey())})
}

// writeAppKey writes testAppKey to dir/app.pem, 0600, and returns its
// path.
func writeAppKey(t *testing.T, dir string) string {
	t.Helper()
	file := filepath.Join(dir, "app.pem")
	require.NoError(t, os.WriteFile(file, appKeyPEM(), 0o600))
	return file
}

// withApp sets, for a test of the GitHub App's setting key alone, the
// other two of values in the environment: they go together.
func withApp(t *testing.T, key string, values map[string]string) {
	t.Helper()
	if !strings.HasPrefix(key, "github.app-") {
		return
	}
	for _, other := range []string{"github.app-id", "github.app-installation-id", "github.app-private-key-file"} {
		if other != key {
			t.Setenv(lookupSpec(other).env(), values[other])
		}
	}
}

// TestLoadGitHubApp: the three keys of a GitHub App go together, the
// IDs are positive and the key file is its owner's alone and holds an
// RSA private key; each error names its key.
func TestLoadGitHubApp(t *testing.T) {
	dir := t.TempDir()
	good := writeAppKey(t, dir)
	write := func(name, content string, mode os.FileMode) string {
		file := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(file, []byte(content), 0o600))
		require.NoError(t, os.Chmod(file, mode))
		return file
	}
	loose := write("loose.pem", string(appKeyPEM()), 0o644)
	notPEM := write("token.pem", "ghp_notAKey0123456789\n", 0o600)
	ecDER, err := x509.MarshalPKCS8PrivateKey(must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader)))
	require.NoError(t, err)
	ec := write("ec.pem", string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: ecDER})), 0o600)
	rsaDER, err := x509.MarshalPKCS8PrivateKey(testAppKey())
	require.NoError(t, err)
	pkcs8 := write("pkcs8.pem", string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: rsaDER})), 0o600)
	public := write("public.pem", string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: must(x509.MarshalPKIXPublicKey(&testAppKey().PublicKey))})), 0o600)
	missing := filepath.Join(dir, "missing.pem")

	const (
		idKey      = `invalid github.app-id (--github-app-id, RALPH_GITHUB_APP_ID) = `
		instKey    = `invalid github.app-installation-id (--github-app-installation-id, RALPH_GITHUB_APP_INSTALLATION_ID) = `
		fileKey    = `invalid github.app-private-key-file (--github-app-private-key-file, RALPH_GITHUB_APP_PRIVATE_KEY_FILE) = `
		allThree   = ": a GitHub App needs all three of github.app-id, github.app-installation-id and github.app-private-key-file, or none"
		wantPEM    = "it must hold the GitHub App's private key in PEM form, the .pem file the app's settings page generates"
		appID      = "--github-app-id=12345"
		instID     = "--github-app-installation-id=678"
		keyFileArg = "--github-app-private-key-file="
	)
	tests := []struct {
		name string
		args []string
		want []string // the errors, one per line; none when it loads
	}{
		{name: "none"},
		{name: "all three", args: []string{appID, instID, keyFileArg + good}},
		{name: "a PKCS #8 RSA key", args: []string{appID, instID, keyFileArg + pkcs8}},
		{name: "the app ID alone", args: []string{appID}, want: []string{
			instKey + "0: must be set with github.app-id" + allThree,
			fileKey + `"": must be set with github.app-id` + allThree,
		}},
		{name: "no key file", args: []string{appID, instID}, want: []string{
			fileKey + `"": must be set with github.app-id and github.app-installation-id` + allThree,
		}},
		{name: "no app ID", args: []string{instID, keyFileArg + good}, want: []string{
			idKey + "0: must be set with github.app-installation-id and github.app-private-key-file" + allThree,
		}},
		{name: "a negative app ID", args: []string{"--github-app-id=-5", instID, keyFileArg + good}, want: []string{
			idKey + "-5: must be the GitHub App's ID, a positive number (0 = no app)",
		}},
		{name: "a negative installation ID", args: []string{appID, "--github-app-installation-id=-1", keyFileArg + good}, want: []string{
			instKey + "-1: must be the ID of the GitHub App's installation, a positive number (0 = no app)",
		}},
		{name: "a missing key file", args: []string{appID, instID, keyFileArg + missing}, want: []string{
			fileKey + strconv.Quote(missing) + ": cannot be read: open " + missing + ": no such file or directory",
		}},
		{name: "a key file open to others", args: []string{appID, instID, keyFileArg + loose}, want: []string{
			fileKey + strconv.Quote(loose) + ": is open to group or others (mode 0644), who could read the key: make it its owner's alone with chmod 600 " + loose,
		}},
		{name: "a key file without PEM", args: []string{appID, instID, keyFileArg + notPEM}, want: []string{
			fileKey + strconv.Quote(notPEM) + ": holds no PEM block: " + wantPEM,
		}},
		{name: "a public key", args: []string{appID, instID, keyFileArg + public}, want: []string{
			fileKey + strconv.Quote(public) + `: holds a PEM block of type "PUBLIC KEY", not an RSA private key: ` + wantPEM,
		}},
		{name: "an ECDSA key", args: []string{appID, instID, keyFileArg + ec}, want: []string{
			fileKey + strconv.Quote(ec) + ": holds a *ecdsa.PrivateKey, not an RSA key: " + wantPEM,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			isolate(t)
			cfg, err := load(t, t.TempDir(), tt.args...)
			if len(tt.want) > 0 {
				require.EqualError(t, err, strings.Join(tt.want, "\n"))
				return
			}
			require.NoError(t, err)
			app, err := cfg.GitHub.App()
			require.NoError(t, err)
			if len(tt.args) == 0 {
				require.False(t, cfg.GitHub.UsesApp())
				require.Nil(t, app)
				return
			}
			require.True(t, cfg.GitHub.UsesApp())
			require.Equal(t, int64(12345), app.ID)
			require.Equal(t, int64(678), app.InstallationID)
			require.True(t, testAppKey().Equal(app.Key))
		})
	}

	t.Run("from the environment, ~ expanded", func(t *testing.T) {
		isolate(t)
		home := t.TempDir()
		t.Setenv("HOME", home)
		writeAppKey(t, home)
		t.Setenv("RALPH_GITHUB_APP_ID", "12345")
		t.Setenv("RALPH_GITHUB_APP_INSTALLATION_ID", "678")
		t.Setenv("RALPH_GITHUB_APP_PRIVATE_KEY_FILE", "~/app.pem")
		cfg, err := load(t, t.TempDir())
		require.NoError(t, err)
		require.Equal(t, filepath.Join(home, "app.pem"), cfg.GitHub.AppPrivateKeyFile)
		app, err := cfg.GitHub.App()
		require.NoError(t, err)
		require.Equal(t, strings.TrimSpace(string(appKeyPEM())), app.PEM)
	})
	t.Run("not in a workspace's ralph.yaml", func(t *testing.T) {
		_, file, err := loadRalphYAML(t, "github:\n  app-private-key-file: "+good+"\n", appID, instID)
		require.ErrorContains(t, err, "key github.app-private-key-file in "+file+" is not allowed in a workspace's ralph.yaml")
	})
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestHiddenAppKey: no contained agent sees the GitHub App's key file.
func TestHiddenAppKey(t *testing.T) {
	isolate(t)
	cfg := Config{GitHub: GitHubConfig{AppPrivateKeyFile: "/keys/app.pem"}}
	require.Contains(t, cfg.Hidden(), "/keys/app.pem")
	require.NotContains(t, Config{}.Hidden(), "")
}
