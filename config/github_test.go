package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGitHubToken(t *testing.T) {
	tests := []struct {
		name      string
		tokenEnv  string
		env       map[string]string
		wantName  string
		wantValue string
	}{
		{
			name:     "default, both set",
			tokenEnv: "GITHUB_TOKEN",
			env:      map[string]string{"GITHUB_TOKEN": "ghp_a", "GH_TOKEN": "ghp_b"},
			wantName: "GITHUB_TOKEN", wantValue: "ghp_a",
		},
		{
			name:     "default, only GH_TOKEN",
			tokenEnv: "GITHUB_TOKEN",
			env:      map[string]string{"GH_TOKEN": "ghp_b"},
			wantName: "GH_TOKEN", wantValue: "ghp_b",
		},
		{
			name:     "default, GITHUB_TOKEN empty",
			tokenEnv: "GITHUB_TOKEN",
			env:      map[string]string{"GITHUB_TOKEN": "", "GH_TOKEN": "ghp_b"},
			wantName: "GH_TOKEN", wantValue: "ghp_b",
		},
		{
			name:     "default, neither",
			tokenEnv: "GITHUB_TOKEN",
			wantName: "GITHUB_TOKEN",
		},
		{
			name:     "unset is the default",
			env:      map[string]string{"GH_TOKEN": "ghp_b"},
			wantName: "GH_TOKEN", wantValue: "ghp_b",
		},
		{
			name:     "custom, set",
			tokenEnv: "RALPH_GH_TOKEN",
			env:      map[string]string{"RALPH_GH_TOKEN": "ghp_c", "GITHUB_TOKEN": "ghp_a"},
			wantName: "RALPH_GH_TOKEN", wantValue: "ghp_c",
		},
		{
			name:     "custom, empty: no fallback",
			tokenEnv: "RALPH_GH_TOKEN",
			env:      map[string]string{"GITHUB_TOKEN": "ghp_a", "GH_TOKEN": "ghp_b"},
			wantName: "RALPH_GH_TOKEN",
		},
		{
			name:     "GH_TOKEN chosen: no fallback",
			tokenEnv: "GH_TOKEN",
			env:      map[string]string{"GITHUB_TOKEN": "ghp_a"},
			wantName: "GH_TOKEN",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var asked []string
			getenv := func(name string) string {
				asked = append(asked, name)
				return tt.env[name]
			}
			name, value := GitHubConfig{TokenEnv: tt.tokenEnv}.Token(getenv)
			assert.Equal(t, tt.wantName, name)
			assert.Equal(t, tt.wantValue, value)
			assert.NotEmpty(t, asked)
		})
	}

	t.Run("nil getenv is os.Getenv", func(t *testing.T) {
		t.Setenv("RALPH_TEST_TOKEN", "ghp_os")
		name, value := GitHubConfig{TokenEnv: "RALPH_TEST_TOKEN"}.Token(nil)
		assert.Equal(t, "RALPH_TEST_TOKEN", name)
		assert.Equal(t, "ghp_os", value)
	})
}

func TestNormalizeAPIURL(t *testing.T) {
	const bad = "must be an absolute http or https URL, such as https://api.github.com/"
	tests := []struct {
		in         string
		want       string
		wantReason string
	}{
		{in: "https://api.github.com/", want: "https://api.github.com/"},
		{in: "https://api.github.com", want: "https://api.github.com/"},
		{in: "https://ghe.example/api/v3", want: "https://ghe.example/api/v3/"},
		{in: "https://ghe.example/api/v3/", want: "https://ghe.example/api/v3/"},
		{in: "http://127.0.0.1:8080", want: "http://127.0.0.1:8080/"},
		{in: "HTTPS://API.example", want: "HTTPS://API.example/"},
		{in: "", wantReason: bad},
		{in: "api.github.com", wantReason: bad},
		{in: "/api/v3/", wantReason: bad},
		{in: "ftp://api.github.com/", wantReason: bad},
		{in: "https://", wantReason: bad},
		{in: "https:api.github.com", wantReason: bad},
		{in: " https://api.github.com/", wantReason: bad},
		{in: "https://api.github.com:port/", wantReason: bad},
		{in: "https://api.github.com/?", wantReason: "must not have a query or fragment: it is the base that API paths are appended to"},
		{in: "https://api.github.com/?a=b", wantReason: "must not have a query or fragment: it is the base that API paths are appended to"},
		{in: "https://api.github.com/#x", wantReason: "must not have a query or fragment: it is the base that API paths are appended to"},
		{in: "https://token@api.github.com/", wantReason: "must not hold credentials: the token comes from github.token-env"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, reason := normalizeAPIURL(tt.in)
			assert.Equal(t, tt.wantReason, reason)
			assert.Equal(t, tt.want, got)
			if reason == "" {
				again, reason := normalizeAPIURL(got)
				assert.Empty(t, reason)
				assert.Equal(t, got, again, "normalising twice changes nothing")
			}
		})
	}
}

func TestValidRepo(t *testing.T) {
	for repo, want := range map[string]bool{
		"durable-ralph/ralph":    true,
		"a/b":                    true,
		"Owner_1/name.go":        true,
		"o/.github":              true,
		"o/..x":                  true,
		"":                       false,
		"ralph":                  false,
		"/ralph":                 false,
		"owner/":                 false,
		"a/b/c":                  false,
		"a b/c":                  false,
		"a/b c":                  false,
		"a/b?x":                  false,
		"a/b%2f":                 false,
		"../b":                   false,
		"a/..":                   false,
		"./b":                    false,
		"a/.":                    false,
		"https://github.com/a/b": false,
	} {
		assert.Equal(t, want, validRepo(repo), repo)
	}
}

func TestValidBranch(t *testing.T) {
	for name, want := range map[string]bool{
		"main":          true,
		"release/1.x":   true,
		"feature/a-b_c": true,
		"v1.2.3":        true,
		"@":             false,
		"-main":         false,
		"/main":         false,
		"main/":         false,
		"main.":         false,
		"a..b":          false,
		"a//b":          false,
		"a@{1}":         false,
		"my branch":     false,
		"a\tb":          false,
		"a~1":           false,
		"a^":            false,
		"a:b":           false,
		"a?":            false,
		"a*":            false,
		"a[b":           false,
		`a\b`:           false,
		"a\x7fb":        false,
		".hidden":       false,
		"a/.hidden":     false,
		"main.lock":     false,
		"a.lock/b":      false,
	} {
		assert.Equal(t, want, validBranch(name), "%q", name)
	}
}

func TestLoadGitHubTokenEnvTrusted(t *testing.T) {
	// A repository must not choose which variable's value is sent to
	// GitHub, nor where the token goes.
	for _, tt := range []struct {
		key, file string
	}{
		{key: "github.token-env", file: "github:\n  token-env: ANTHROPIC_API_KEY\n"},
		{key: "github.api-url", file: "github:\n  api-url: https://evil.example/\n"},
	} {
		t.Run(tt.key, func(t *testing.T) {
			_, file, err := loadRalphYAML(t, tt.file)
			require.Error(t, err)
			assert.True(t, strings.HasPrefix(err.Error(), "key "+tt.key+" in "+file+" is not allowed in a workspace's ralph.yaml"), err.Error())

			// The other GitHub and queue settings are the repository's to choose.
			cfg, _, err := loadRalphYAML(t, "github:\n  repo: a/b\n  write-interval: 2s\nqueue:\n  label: go\n  draft: true\ntask:\n  check-command: make test\n")
			require.NoError(t, err)
			assert.Equal(t, "a/b", cfg.GitHub.Repo)
			assert.Equal(t, "make test", cfg.Task.CheckCommand)
		})
	}
}

// TestREADMEConfigurationTable holds the configuration table of
// docs/configuration.md to Keys: a row per key, with its flag, its
// variable and its trusted mark. The table is written by hand: its
// default column says more than Key.Default, with links into the docs.
func TestREADMEConfigurationTable(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "docs", "configuration.md"))
	require.NoError(t, err)

	// The rows of the table whose header names the ralph.yaml key.
	rows := make(map[string]string) // key -> row
	inTable := false
	for line := range strings.Lines(string(readme)) {
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "| key (`ralph.yaml`) |"):
			inTable = true
		case !inTable, strings.HasPrefix(line, "|---"):
		case !strings.HasPrefix(line, "|"):
			inTable = false
		default:
			cell, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " |")
			key, _, _ := strings.Cut(strings.Trim(cell, "`"), "`")
			rows[key] = line
		}
	}
	require.NotEmpty(t, rows, "no configuration table in docs/configuration.md")

	keys := Keys()
	for _, k := range keys {
		row, ok := rows[k.Key]
		if !assert.True(t, ok, "docs/configuration.md has no row for %s", k.Key) {
			continue
		}
		assert.Contains(t, row, "`--"+k.Flag+"`", k.Key)
		assert.Contains(t, row, "`"+k.Env+"`", k.Key)
		assert.Equal(t, k.Trusted, strings.HasPrefix(row, "| `"+k.Key+"` † |"), "trusted mark of %s", k.Key)
	}
	assert.Len(t, rows, len(keys), "docs/configuration.md documents keys that are not settings")
}

// TestKeyDocs: every setting has its line of docs/configuration.md's
// table, and no line is of a setting that does not exist.
func TestKeyDocs(t *testing.T) {
	documented := map[string]bool{}
	for _, k := range Keys() {
		require.NotEmpty(t, k.Doc, "keyDocs has no line for %s", k.Key)
		documented[k.Key] = true
	}
	for key := range keyDocs {
		require.True(t, documented[key], "keyDocs documents %s, which is no setting", key)
	}
}
