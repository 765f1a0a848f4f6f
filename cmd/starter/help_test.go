package main

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
)

// heading is the heading of the section of help text out (below its
// description) that the line holding what is in: the last unindented
// line ending in ":" above it.
func heading(t *testing.T, out, what string) string {
	t.Helper()
	usage := strings.Index(out, "Usage:")
	require.GreaterOrEqual(t, usage, 0, "help has a usage")
	at := strings.Index(out[usage:], what)
	require.GreaterOrEqual(t, at, 0, "help has %s", what)
	at += usage
	lines := strings.Split(out[:at], "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := lines[i]; l != "" && l[0] != ' ' && strings.HasSuffix(l, ":") {
			return strings.TrimSuffix(l, ":")
		}
	}
	t.Fatalf("no heading above %s", what)
	return ""
}

// TestRunHelpGroupsFlags: run --help shows its flags under headings by
// topic, the worker's and the notifications' apart from the session's,
// with no line wider than 100 columns where the terminal's width is not
// known.
func TestRunHelpGroupsFlags(t *testing.T) {
	t.Setenv("COLUMNS", "")
	code, out, _ := runCLI(t, "run", "--help")
	require.Equal(t, 0, code)
	for _, line := range strings.Split(out, "\n") {
		require.LessOrEqual(t, utf8.RuneCountInString(line), 100, "a line of run --help: %q", line)
	}
	for _, h := range []string{"Flags", "Session", "Agent", "Roles", "Limits", "Git", "Checkpoints", "Sandbox", "Connection",
		"Worker (only when this command is the worker)",
		"Notifications (only when this command is the worker)", "Global Flags"} {
		require.Contains(t, out, "\n"+h+":\n")
	}
	for flag, want := range map[string]string{
		"--follow":           "Flags",
		"--mode string":      "Session",
		"--model string":     "Agent",
		"--max-cost float":   "Limits",
		"--allow-dirty":      "Git",
		"--sandbox string":   "Sandbox",
		"--review ":          "Roles",
		"--dev ":             "Connection",
		"--agent-env":        "Worker (only when this command is the worker)",
		"--github-app-id":    "Worker (only when this command is the worker)",
		"--telegram-chat-id": "Notifications (only when this command is the worker)",
		"--slack-channel":    "Notifications (only when this command is the worker)",
	} {
		require.Equal(t, want, heading(t, out, flag), flag)
	}
	require.NotContains(t, out, "--repo", "the queue's flags are queue's")

	// A narrow terminal gets the flags wrapped to its width (the
	// description above them is written for 100 columns).
	t.Setenv("COLUMNS", "60")
	_, out, _ = runCLI(t, "run", "--help")
	for _, line := range strings.Split(out[strings.Index(out, "Usage:"):], "\n") {
		require.LessOrEqual(t, utf8.RuneCountInString(line), 60, "a line of run --help at 60 columns: %q", line)
	}
}

// leaves are the commands of root that run, by name ("dev start").
func leaves(root *cobra.Command) map[string]*cobra.Command {
	out := map[string]*cobra.Command{}
	var walk func(c *cobra.Command, prefix string)
	walk = func(c *cobra.Command, prefix string) {
		for _, sub := range c.Commands() {
			name := strings.TrimSpace(prefix + " " + sub.Name())
			if sub.Runnable() && !sub.Hidden {
				out[name] = sub
			}
			walk(sub, name)
		}
	}
	walk(root, "")
	return out
}
