package responsesapi_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/agent"
	"github.com/durable-ralph/ralph/agent/codex"
	"github.com/durable-ralph/ralph/testsuite/responsesapi"
)

// TestRecordCodex records runs of the real Codex CLI against the server
// into the directory RESPONSESAPI_RECORD names (agent/codex/testdata
// keeps them): NAME.jsonl is the standard output, NAME.stderr the
// standard error, NAME.exit the exit status. Without
// RESPONSESAPI_RECORD it is skipped.
func TestRecordCodex(t *testing.T) {
	dir := os.Getenv("RESPONSESAPI_RECORD")
	if dir == "" {
		t.Skip("set RESPONSESAPI_RECORD to a directory to record Codex runs into")
	}
	bogusThread := "01a205eb-d8ca-79c1-8c81-7ada326ad680"
	text := func(s string) responsesapi.Script {
		return func(*responsesapi.Request) responsesapi.Reply { return responsesapi.Text(s) }
	}
	always := func(r responsesapi.Reply) responsesapi.Script {
		return func(*responsesapi.Request) responsesapi.Reply { return r }
	}
	shell := func(req *responsesapi.Request) responsesapi.Reply {
		switch len(req.ToolCalls()) {
		case 0:
			return responsesapi.Shell("printf 'hello\\n' > hello.txt && ls").
				WithReasoning("The user wants a file; I will write it with the shell.").
				WithText("I'll create hello.txt.")
		case 1:
			return responsesapi.Shell("cat missing.txt; exit 3")
		}
		return responsesapi.Text("Created hello.txt; missing.txt does not exist.\n<promise>COMPLETE</promise>")
	}
	tests := []struct {
		name    string
		model   string
		extra   []string
		retries int
		noKey   bool
		script  responsesapi.Script
		// first runs the script in the same CODEX_HOME first, recorded
		// as NAME_first, and the run resumes its thread.
		first bool
		// resume is a thread to resume.
		resume string
		// kill kills the run when it holds.
		kill func(*responsesapi.Server) bool
	}{
		{name: "text", script: text("Hello! I am the scripted model.\nNothing to do here.")},
		{name: "shell", script: shell},
		{name: "patch", model: "gpt-5.5", script: func(req *responsesapi.Request) responsesapi.Reply {
			switch len(req.ToolCalls()) {
			case 0:
				return responsesapi.ApplyPatch("*** Begin Patch\n*** Add File: notes.txt\n+first line\n*** End Patch\n").WithText("Adding notes.")
			case 1:
				return responsesapi.Shell("cat notes.txt")
			}
			return responsesapi.Text("notes.txt added.")
		}},
		{name: "unknown_model", model: "gpt-5.1-codex", script: shell},
		{name: "cached", script: func(*responsesapi.Request) responsesapi.Reply {
			return responsesapi.Text("Cached.").WithUsage(responsesapi.Usage{InputTokens: 10000, CachedTokens: 4000, CacheWriteTokens: 500, OutputTokens: 300, ReasoningTokens: 120})
		}},
		{name: "resume", first: true, script: func(req *responsesapi.Request) responsesapi.Reply {
			calls := req.ToolCalls()
			switch {
			case len(calls) == 0:
				return responsesapi.Shell("echo one > first.txt")
			case len(calls) == 1 && req.LastUserText() == req.Prompt():
				return responsesapi.Text("Wrote first.txt.")
			case len(calls) == 1:
				return responsesapi.Shell("cat first.txt")
			}
			return responsesapi.Text("first.txt says one.")
		}},
		{name: "resume_missing", resume: bogusThread, script: text("unused")},
		{name: "bad_flag", extra: []string{"--bogus-flag"}, script: text("unused")},
		{name: "api_500", script: always(responsesapi.ServerError())},
		{name: "api_500_retried", retries: 1, script: always(responsesapi.ServerError())},
		{name: "api_400", script: always(responsesapi.BadRequest("input", "Invalid value for 'input': expected a list."))},
		{name: "api_401", script: always(responsesapi.Unauthorized())},
		{name: "missing_key", noKey: true, script: text("unused")},
		{name: "rate_limit_429", script: always(responsesapi.RateLimit(20 * time.Second))},
		{name: "rate_limit_429_retried", retries: 1, script: always(responsesapi.RateLimit(time.Second))},
		{name: "rate_limit_failed", script: always(responsesapi.Failed("rate_limit_exceeded",
			"Rate limit reached for gpt-5 in organization org-scripted on tokens per min (TPM): Limit 30000, Used 29512, Requested 1834. Please try again in 11.054s. Visit https://platform.openai.com/account/rate-limits to learn more."))},
		{name: "usage_limit", script: always(responsesapi.UsageLimit(90*time.Minute, "plus"))},
		{name: "usage_limit_days", script: always(responsesapi.UsageLimit(75*time.Hour, "pro"))},
		{name: "usage_limit_later", script: always(responsesapi.Error(429, `{"error":{"type":"usage_limit_reached","message":"The usage limit has been reached"}}`))},
		{name: "quota", script: always(responsesapi.QuotaExceeded())},
		{name: "model_not_found", model: "gpt-nope", script: always(responsesapi.ModelNotFound("gpt-nope"))},
		{name: "overloaded", script: always(responsesapi.Failed("server_is_overloaded", "The server is overloaded."))},
		{name: "context_window", script: always(responsesapi.Failed("context_length_exceeded", "Your input exceeds the context window of this model."))},
		{name: "plan_without_codex", script: always(responsesapi.Failed("usage_not_included", "Codex is not included in your plan."))},
		{name: "cut_off", script: always(responsesapi.Hold(100 * time.Millisecond))},
		{name: "killed", script: func(req *responsesapi.Request) responsesapi.Reply {
			if len(req.ToolCalls()) == 0 {
				return responsesapi.Shell("echo started > started.txt").WithText("Starting.")
			}
			return responsesapi.Hold(time.Minute)
		}, kill: func(srv *responsesapi.Server) bool { return len(srv.Responses()) == 2 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := responsesapi.New(tc.script)
			defer srv.Close()
			c := newCodex(t, srv, tc.retries)
			c.env = append(c.env, "TZ=UTC")
			if tc.noKey {
				c.env = without(c.env, responsesapi.EnvKey)
			}
			o := agent.Options{Model: tc.model, ExtraArgs: tc.extra}
			prompt := "Create hello.txt, then show missing.txt.\n"
			resume := tc.resume
			if tc.first {
				r := c.exec(prompt, codex.Backend{}.Args(o, "")...)
				write(t, dir, tc.name+"_first", r)
				resume = r.threadID()
				prompt = "Now show first.txt.\n"
			}
			args := codex.Backend{}.Args(o, resume)
			var r run
			if tc.kill != nil {
				r = c.killAfter(prompt, args, func() bool { return tc.kill(srv) })
			} else {
				r = c.exec(prompt, args...)
			}
			write(t, dir, tc.name, r)
			if tc.name == "shell" {
				write(t, dir, "garbage", garbled(r))
			}
		})
	}
}

// garbled is r with lines that are not events mixed into its output, as a
// wrapper script or a stray print might add them.
func garbled(r run) run {
	lines := strings.SplitAfter(strings.TrimSuffix(r.Stdout, "\n"), "\n")
	junk := []string{
		"Loading codex...\n",
		"{\"type\":\"item.completed\",\"item\":{\"id\":\"item_9\",\"type\":\"agent_mess\n",
		"\x1b[2K\x1b[1Gworking\n",
		"[1, 2, 3]\n",
		"\"just a string\"\n",
		"{\"no_type\":true}\n",
		"\n",
	}
	var b strings.Builder
	for i, l := range lines {
		if i < len(junk) {
			b.WriteString(junk[i])
		}
		b.WriteString(l)
	}
	b.WriteString("\n")
	r.Stdout = b.String()
	return r
}

func write(t *testing.T, dir, name string, r run) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+".jsonl"), []byte(r.Stdout), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+".stderr"), []byte(r.Stderr), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+".exit"), []byte(fmt.Sprintln(r.code)), 0o644))
}

// without is env without the variable key.
func without(env []string, key string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return out
}
