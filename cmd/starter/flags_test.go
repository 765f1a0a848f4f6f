package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// runCLI runs the starter's command line with args, without a server:
// every case here must end before dialling.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = execute(&commandContext{Context: context.Background(), stdout: &out, stderr: &errOut}, args)
	return code, out.String(), errOut.String()
}

func TestFlagsPerCommand(t *testing.T) {
	for _, tc := range []struct {
		cmd      string
		has, not []string
	}{
		{"run", []string{"--max-cost", "--model", "--follow", "--quiet", "--raw", "--dev", "--agent-env"}, []string{"--repo", "--label", "--queue "}},
		{"queue", []string{"--max-cost", "--repo", "--label", "--until-idle", "--dev"}, []string{"--raw"}},
		{"guide", []string{"--dev", "--namespace", "--queue", "--repo", "--withdraw"}, []string{"--max-cost", "--model", "--label", "--agent-env"}},
		{"status", []string{"--dev", "--state-dir", "--queue", "-o, --output text|json"}, []string{"--max-iterations", "--model"}},
		{"list", []string{"--dev", "--status", "--limit", "-o, --output text|json"}, []string{"--max-cost", "--queue"}},
		{"stop", []string{"--dev", "--queue", "--reason"}, []string{"--output"}},
		{"set-limits", []string{"--max-iterations", "--max-runtime", "--max-cost", "--dev"}, []string{"--model", "--check-command"}},
	} {
		t.Run(tc.cmd, func(t *testing.T) {
			code, out, _ := runCLI(t, tc.cmd, "--help")
			require.Equal(t, 0, code)
			for _, f := range tc.has {
				require.Contains(t, out, f)
			}
			for _, f := range tc.not {
				require.NotContains(t, out, f)
			}
		})
	}
}

func TestBadCommandLines(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"status", "--model", "x"}, "unknown flag: --model"},
		{[]string{"guide", "--max-cost", "3", "hello"}, "unknown flag: --max-cost"},
		{[]string{"list", "--status", "bogus"}, `invalid --status "bogus": valid states are starting, running, waiting_for_agent_slot, host_offline, paused, rate_limited, awaiting_human, completed, stopped, limited, failed, idle, working`},
		{[]string{"set-limits", "x"}, "give at least one of --max-iterations, --max-runtime, --max-cost"},
		{[]string{"set-limits", "x", "--max-cost", "-1"}, "invalid --max-cost -1: must be positive"},
		{[]string{"run", "--quiet", "--raw", "."}, "--quiet and --raw do not go together"},
		{[]string{"status", "-o", "yaml"}, `invalid argument "yaml" for "-o, --output" flag: the output format is text or json, not "yaml"`},
		{[]string{"list", "--output=JSON"}, `invalid argument "JSON" for "-o, --output" flag: the output format is text or json, not "JSON"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, errOut := runCLI(t, tc.args...)
			require.Equal(t, 1, code)
			require.Contains(t, errOut, tc.want)
			require.Equal(t, 1, strings.Count(errOut, "\n"), "said once: %s", errOut)
		})
	}
}

func TestVersion(t *testing.T) {
	code, out, _ := runCLI(t, "--version")
	require.Equal(t, 0, code)
	require.Regexp(t, `^starter \S+ \(.+\), Temporal server v1\.\d+\.\d+, Temporal Go SDK v1\.\d+\.\d+, go1\.\d+`, out)
}

func TestPlanAndCleanRefuseBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no idea", []string{"plan"}, `plan needs an idea: starter plan "what to build" [DIR], or --from FILE`},
		{"blank idea", []string{"plan", "  ", t.TempDir()}, "the idea is empty"},
		{"both", []string{"plan", "--from", "spec.md", "an idea", t.TempDir()}, "either as an argument or with --from FILE, not both"},
		{"missing file", []string{"plan", "--from", "/no/such/spec.md"}, "read the idea: open /no/such/spec.md"},
		{"bad worktree name", []string{"run", "--worktree", "a/b", t.TempDir()}, `worktree name "a/b" must be 1 to 63 letters`},
		{"clean outside a clone", []string{"clean", "alpha", t.TempDir()}, "clean needs the clone the work tree is in"},
		{"clean a queue's work tree", []string{"clean", "issue-12"}, "taken by the issue queue"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runCLI(t, tc.args...)
			require.Equal(t, 1, code, errOut)
			require.Contains(t, errOut, tc.want)
		})
	}
	code, out, _ := runCLI(t, "plan", "--help")
	require.Equal(t, 0, code)
	for _, f := range []string{"--from", "--yes", "--worktree", "--review", "--planner-model", "--backend"} {
		require.Contains(t, out, f)
	}
}
