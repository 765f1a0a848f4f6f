package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFlagValueErrors gives flags values of the wrong type: the error
// names the flag and what it takes, not strconv's words.
func TestFlagValueErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"int", []string{"run", "--max-iterations", "abc", "."}, `starter: invalid --max-iterations "abc": must be a whole number, such as 10`},
		{"float", []string{"set-limits", "x", "--max-cost", "lots"}, `starter: invalid --max-cost "lots": must be a number, such as 2.5`},
		{"duration", []string{"run", "--max-runtime", "3", "."}, `starter: invalid --max-runtime "3": must be a duration, such as 90s, 30m or 4h`},
		{"bool", []string{"run", "--review=maybe", "."}, `starter: invalid --review "maybe": must be true or false`},
		{"own_value_keeps_its_words", []string{"status", "-o", "yaml"}, `the output format is text or json, not "yaml"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tc.args...)
			require.Equal(t, 1, code)
			require.Contains(t, stderr, tc.want)
			require.NotContains(t, stderr, "strconv")
			require.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %s", stderr)
		})
	}
}

// TestDollars prints cost limits with the digits they were given.
func TestDollars(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{0, "none"},
		{80, "$80.00"},
		{80.1, "$80.10"},
		{0.29, "$0.29"},
		{0.0001, "$0.0001"},
		{12.345, "$12.345"},
	} {
		require.Equal(t, tc.want, dollars(tc.v), "%v", tc.v)
	}
}

// TestInitCommitsWithoutAGitIdentity runs init in a fresh repository
// (no commit yet) on a machine where git has no identity: it commits as
// Ralph, as sessions do, and says so; with an identity, as that.
func TestInitCommitsWithoutAGitIdentity(t *testing.T) {
	for _, tc := range []struct {
		name       string
		identity   bool
		wantAuthor string
		wantSaid   string
	}{
		{"no_identity", false, "Ralph <ralph@localhost>", "committed ralph.yaml, prd.json as Ralph <ralph@localhost>"},
		{"identity", true, "Dev <dev@example.com>", "committed ralph.yaml, prd.json\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("HOME", t.TempDir())
			t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
			t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(t.TempDir(), "none"))
			for _, k := range []string{"EMAIL", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"} {
				t.Setenv(k, "")
				require.NoError(t, os.Unsetenv(k))
			}
			dir := t.TempDir()
			git := func(args ...string) string {
				t.Helper()
				cmd := exec.Command("git", args...)
				cmd.Dir = dir
				out, err := cmd.CombinedOutput()
				require.NoError(t, err, "git %v: %s", args, out)
				return strings.TrimSpace(string(out))
			}
			git("init", "-q")
			if tc.identity {
				git("config", "user.name", "Dev")
				git("config", "user.email", "dev@example.com")
			}

			code, stdout, stderr := runCLI(t, "init", dir)
			require.Equal(t, 0, code, stderr)
			require.Contains(t, stdout, tc.wantSaid)
			require.Equal(t, tc.wantAuthor, git("log", "-1", "--format=%an <%ae>"))
			require.Empty(t, git("status", "--porcelain"))
		})
	}
}

// TestConnectionErrorsNameTheAddress points TEMPORAL_ADDRESS at an HTTP
// server that is not Temporal, and at a port nobody listens on: the
// error names the variable and the address and says what to check,
// once, without the client's empty namespace.
func TestConnectionErrorsNameTheAddress(t *testing.T) {
	notTemporal := httptest.NewUnstartedServer(http.NotFoundHandler())
	notTemporal.Config.Protocols = new(http.Protocols)
	notTemporal.Config.Protocols.SetHTTP1(true)
	notTemporal.Config.Protocols.SetUnencryptedHTTP2(true)
	notTemporal.Start()
	t.Cleanup(notTemporal.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := ln.Addr().String()
	require.NoError(t, ln.Close())

	for _, tc := range []struct {
		name, address string
		want          []string
	}{
		{"not_temporal", notTemporal.Listener.Addr().String(), []string{
			"starter: cannot connect to Temporal at " + notTemporal.Listener.Addr().String() + " (from TEMPORAL_ADDRESS): something answers there, but not the gRPC API of a Temporal server",
			"Check TEMPORAL_ADDRESS: it is the host:port of the Temporal frontend",
		}},
		{"nobody_listens", closed, []string{
			"starter: no Temporal server answers at " + closed + " (from TEMPORAL_ADDRESS)",
			"Check TEMPORAL_ADDRESS",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("TEMPORAL_ADDRESS", tc.address)
			t.Setenv("RALPH_DEV_STATE_DIR", t.TempDir())
			code, _, stderr := runCLI(t, "status", "ralph-app-00000000@host")
			require.Equal(t, 1, code, stderr)
			for _, w := range tc.want {
				require.Contains(t, stderr, w)
			}
			require.NotContains(t, stderr, "namespace )")
			require.Equal(t, 1, strings.Count(stderr, "starter:"), stderr)
		})
	}
}

// TestMisspeltFlagGetsASuggestion: a misspelt flag gets the flags it may
// mean, as a misspelt command gets the commands; a flag like none gets
// none.
func TestMisspeltFlagGetsASuggestion(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--folow", "."}, "starter: unknown flag: --folow\n\nDid you mean this?\n\t--follow\n"},
		{[]string{"status", "--otput", "json"}, "starter: unknown flag: --otput\n\nDid you mean this?\n\t--output\n"},
		{[]string{"list", "--stat"}, "starter: unknown flag: --stat\n\nDid you mean this?\n\t--state-dir\n\t--status\n"},
		{[]string{"rnu"}, "starter: unknown command \"rnu\" for \"starter\"\n\nDid you mean this?\n\trun\n"},
		{[]string{"status", "--model", "x"}, "starter: unknown flag: --model\n"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, stderr := runCLI(t, tc.args...)
			require.Equal(t, 1, code)
			require.Equal(t, tc.want, stderr)
		})
	}
}
