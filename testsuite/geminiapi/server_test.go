package geminiapi

// Tests that run the real Gemini CLI (pinned, installed by `make gemini`)
// against the server, with the command line, parser and classifier of
// agent/gemini.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/agent"
	"github.com/durable-ralph/ralph/agent/gemini"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/testsuite/realcli"
)

// cliRun is one finished run of the real CLI.
type cliRun struct {
	realcli.Run
	parser  agent.Parser
	summary agent.Summary
	verdict agent.Verdict
	// events are the parser's events that show something.
	events []agent.Event
}

// cliOptions are the options of a run of the real CLI.
type cliOptions struct {
	agent.Options
	// resume is the session to resume.
	resume string
	// settings are merged into the CLI's settings.json.
	settings map[string]any
}

// runCLI runs the real CLI in dir with home as its HOME, against s, the
// way Ralph runs it: gemini.Backend's command line and environment, the
// prompt on stdin. It fails the test if the CLI does not end within two
// minutes.
func runCLI(t *testing.T, s *Server, home, dir, prompt string, o cliOptions) cliRun {
	t.Helper()
	env, err := s.CLIEnv(home, o.settings)
	require.NoError(t, err)
	b := gemini.Backend{}
	run := realcli.Command{
		Bin:   realcli.GeminiBin(t),
		Args:  b.Args(o.Options, o.resume),
		Dir:   dir,
		Env:   append(append([]string{"PATH=" + os.Getenv("PATH")}, b.Env(o.Options)...), env...),
		Stdin: prompt,
	}.Run(t)
	t.Logf("gemini %q in %.1fs: %v", b.Args(o.Options, o.resume), run.Elapsed.Seconds(), run.Err)

	r := cliRun{Run: run, parser: b.NewParser(o.Options)}
	for l := range strings.Lines(r.Stdout) {
		ev, err := r.parser.Line([]byte(l))
		require.NoError(t, err, "stdout line %q", l)
		if ev != (agent.Event{}) {
			r.events = append(r.events, ev)
		}
	}
	r.summary = r.parser.Summary()
	r.verdict = r.parser.Verdict(r.Err, tail(r.Stderr, 4<<10), time.Now())
	return r
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// newRepo is a git repository in a temp dir holding files.
func newRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	out, err := exec.Command("git", "init", "-q", dir).CombinedOutput()
	require.NoError(t, err, string(out))
	return dir
}

func TestRealCLIText(t *testing.T) {
	realcli.GeminiBin(t)
	tests := []struct {
		name, prompt string
	}{
		{"two lines", "Say hello.\nIn two lines."},
		{"longer than a pipe's buffer", strings.Repeat("All work and no play makes Jack a dull boy.\n", 3000)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := New(func(*Request) Reply { return Text("Hello from the script.\nSecond line.") })
			defer s.Close()

			r := runCLI(t, s, t.TempDir(), newRepo(t, nil), tc.prompt, cliOptions{Options: agent.Options{Model: "gemini-2.5-flash"}})
			require.Equal(t, contract.OutcomeSuccess, r.verdict.Outcome, "%s\nstderr:\n%s", r.verdict.Reason, r.Stderr)
			require.Equal(t, "Hello from the script.\nSecond line.", r.summary.FinalText)
			require.Equal(t, "gemini-2.5-flash", r.summary.Model)
			require.NotEmpty(t, r.summary.SessionID)
			require.Equal(t, 1, r.summary.Turns)
			require.Positive(t, r.summary.Usage.InputTokens)
			require.Positive(t, r.summary.Usage.OutputTokens)
			require.True(t, r.summary.CostKnown, r.summary.CostNote)
			require.Positive(t, r.summary.CostUSD)
			require.Zero(t, r.summary.InvalidLines)
			require.Zero(t, r.summary.UnknownEvents)

			conv := s.Conversation()
			require.Len(t, conv, 1)
			req := conv[0]
			require.Equal(t, "gemini-2.5-flash", req.Model)
			require.True(t, req.Stream())
			require.True(t, tc.prompt == req.Prompt(), "the prompt reaches the model exactly as written on stdin")
			require.Contains(t, req.SessionContext(), "Workspace Directories")
			require.Contains(t, req.Tools, ShellTool)
			require.Contains(t, req.Tools, WriteFileTool)
			require.Equal(t, TestAPIKey, req.Header.Get("x-goog-api-key"))
		})
	}
}

func TestRealCLIAutoModel(t *testing.T) {
	realcli.GeminiBin(t)
	s := New(func(*Request) Reply { return Text("Routed.").WithThought("Which model am I?") })
	defer s.Close()

	r := runCLI(t, s, t.TempDir(), newRepo(t, nil), "Which model answers?", cliOptions{})
	require.Equal(t, contract.OutcomeSuccess, r.verdict.Outcome, r.verdict.Reason)
	require.Equal(t, "Routed.", r.summary.FinalText, "thoughts are not the model's text")
	conv := s.Conversation()
	require.Len(t, conv, 1)
	require.Equal(t, conv[0].Model, r.summary.Model, "the model the router picked, not \"auto\"")
	require.Contains(t, conv[0].System, "YOLO", "--approval-mode yolo holds in a trusted folder")
	var side []Request
	for _, req := range s.Requests() {
		if req.JSON {
			side = append(side, req)
		}
	}
	require.NotEmpty(t, side, "the router asks a model for JSON")
}

func TestRealCLITools(t *testing.T) {
	realcli.GeminiBin(t)
	s := New(func(req *Request) Reply {
		switch len(req.FunctionCalls()) {
		case 0:
			return Shell("echo made | tee made.txt").WithText("Making it.")
		case 1:
			return WriteFile("notes/written.txt", "written by write_file\n")
		}
		return Text("Both files are there.")
	})
	defer s.Close()
	s.SetLog(t.Logf)

	dir := newRepo(t, nil)
	r := runCLI(t, s, t.TempDir(), dir, "Make two files.", cliOptions{Options: agent.Options{Model: "gemini-2.5-flash"}})
	require.Equal(t, contract.OutcomeSuccess, r.verdict.Outcome, "%s\nstderr:\n%s", r.verdict.Reason, r.Stderr)

	made, err := os.ReadFile(filepath.Join(dir, "made.txt"))
	require.NoError(t, err)
	require.Equal(t, "made\n", string(made))
	written, err := os.ReadFile(filepath.Join(dir, "notes", "written.txt"))
	require.NoError(t, err)
	require.Equal(t, "written by write_file\n", string(written))

	require.Equal(t, []agent.Event{
		{Says: "Making it.", Tool: ShellTool, ToolSubject: "echo made | tee made.txt"},
		{Tool: WriteFileTool, ToolSubject: "notes/written.txt"},
		{Says: "Both files are there."},
	}, r.events)
	require.Equal(t, 3, r.summary.Turns)
	require.Equal(t, 2, r.summary.ToolUses)
	require.Equal(t, WriteFileTool, r.summary.LastTool)

	conv := s.Conversation()
	require.Len(t, conv, 3)
	resps := conv[1].FunctionResponses()
	require.Len(t, resps, 1)
	require.Equal(t, ShellTool, resps[0].Name)
	require.Contains(t, string(resps[0].Response), "made", "the shell's output goes back to the model")
	require.Len(t, conv[2].FunctionCalls(), 2)
}

func TestRealCLIAPIErrors(t *testing.T) {
	realcli.GeminiBin(t)
	tests := []struct {
		name    string
		reply   Reply
		exit    int
		outcome contract.Outcome
		reason  string
		resets  time.Duration
	}{
		{
			name:    "500",
			reply:   Error(500, "Internal error encountered."),
			exit:    500 % 256,
			outcome: contract.OutcomeAgentError,
			reason:  "Internal error encountered.",
		},
		{
			name:    "429",
			reply:   RateLimit(30 * time.Second),
			exit:    429 % 256,
			outcome: contract.OutcomeRateLimited,
			reason:  "You exceeded your current quota",
			resets:  30 * time.Second,
		},
		{
			name:    "400",
			reply:   Error(400, "Request contains an invalid argument."),
			exit:    400 % 256,
			outcome: contract.OutcomeAgentError,
			reason:  "Request contains an invalid argument.",
		},
		{
			name:    "403",
			reply:   Error(403, "Permission denied: Consumer has been suspended."),
			exit:    403 % 256,
			outcome: contract.OutcomePermanent,
			reason:  "Consumer has been suspended.",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := New(func(*Request) Reply { return tc.reply })
			defer s.Close()

			began := time.Now()
			r := runCLI(t, s, t.TempDir(), newRepo(t, nil), "Fail, please.", cliOptions{Options: agent.Options{Model: "gemini-2.5-flash"}})
			require.Equal(t, tc.exit, r.ExitCode(), r.Stderr)
			require.Equal(t, tc.outcome, r.verdict.Outcome, r.verdict.Reason)
			require.Contains(t, r.verdict.Reason, tc.reason)
			require.Len(t, s.Conversation(), 1, "general.maxAttempts 1: no retry")
			if tc.resets > 0 {
				require.WithinRange(t, r.verdict.ResetsAt, began.Add(tc.resets), time.Now().Add(tc.resets+time.Second))
			} else {
				require.True(t, r.verdict.ResetsAt.IsZero())
			}
			require.NotEmpty(t, r.events)
			require.Contains(t, r.events[len(r.events)-1].Error, tc.reason)
		})
	}
}

func TestRealCLIResume(t *testing.T) {
	realcli.GeminiBin(t)
	s := New(func(req *Request) Reply {
		if req.LastUserText() == "Start." && len(req.FunctionCalls()) == 0 {
			return Shell("echo first > first.txt")
		}
		return Text(fmt.Sprintf("Turn %d, %d calls so far.", req.Turn(), len(req.FunctionCalls())))
	})
	defer s.Close()

	home, dir := t.TempDir(), newRepo(t, nil)
	o := cliOptions{Options: agent.Options{Model: "gemini-2.5-flash"}}
	first := runCLI(t, s, home, dir, "Start.", o)
	require.Equal(t, contract.OutcomeSuccess, first.verdict.Outcome, first.verdict.Reason)
	require.Equal(t, "Turn 1, 1 calls so far.", first.summary.FinalText)
	session := first.summary.SessionID
	require.NotEmpty(t, session)

	o.resume = session
	second := runCLI(t, s, home, dir, "Go on.", o)
	require.Equal(t, contract.OutcomeSuccess, second.verdict.Outcome, second.verdict.Reason)
	require.False(t, second.parser.ResumeFailed())
	require.Equal(t, session, second.summary.SessionID, "a resumed run keeps its session id")
	require.Equal(t, "Turn 2, 1 calls so far.", second.summary.FinalText, "the model sees the first run's conversation")
	last := s.Conversation()[len(s.Conversation())-1]
	require.Equal(t, []string{"Start.", "Go on."}, last.UserTexts())
	require.Less(t, second.summary.Usage.InputTokens, first.summary.Usage.InputTokens*2,
		"the result counts the tokens of this run, not of the whole session")

	o.resume = "0b3c3a52-1111-4222-8333-944444444444"
	missing := runCLI(t, s, home, dir, "Go on.", o)
	require.Equal(t, 42, missing.ExitCode())
	require.Empty(t, missing.Stdout)
	require.Equal(t, contract.OutcomeAgentError, missing.verdict.Outcome)
	require.True(t, missing.parser.ResumeFailed(), missing.Stderr)

	o.resume = session
	elsewhere := runCLI(t, s, home, newRepo(t, nil), "Go on.", o)
	require.Equal(t, 42, elsewhere.ExitCode())
	require.True(t, elsewhere.parser.ResumeFailed(), "sessions are kept per working directory: %s", elsewhere.Stderr)
}

func TestRealCLITurnLimit(t *testing.T) {
	realcli.GeminiBin(t)
	s := New(func(req *Request) Reply { return Shell(fmt.Sprintf("echo step %d", len(req.FunctionCalls()))) })
	defer s.Close()

	r := runCLI(t, s, t.TempDir(), newRepo(t, nil), "Loop.", cliOptions{
		Options:  agent.Options{Model: "gemini-2.5-flash"},
		settings: map[string]any{"model": map[string]any{"maxSessionTurns": 2}},
	})
	require.Equal(t, 53, r.ExitCode())
	require.Equal(t, contract.OutcomeAgentError, r.verdict.Outcome)
	require.Contains(t, r.verdict.Reason, "agent reached its turn limit")
	require.Equal(t, 2, r.summary.ToolUses)
}

// twoStoryPRD is a prd.json with one story per line, as RalphPRDScript
// wants.
const twoStoryPRD = `{
  "project": "Widgets",
  "userStories": [
    {"id": "US-001", "title": "List widgets", "priority": 1, "passes": false},
    {"id": "US-002", "title": "Add a widget", "priority": 2, "passes": false}
  ]
}
`

// ralphPromptFor is an iteration prompt of Ralph's shape for story id, or
// the verify prompt for "verify".
func ralphPromptFor(n int, id string) string {
	return fmt.Sprintf("# Ralph loop: iteration %d of 10\n\nYou work on prd.json.\n\n## This iteration: %s\n\nDo it.\n", n, id)
}

func TestRealCLIRalphPRD(t *testing.T) {
	realcli.GeminiBin(t)
	script := RalphPRDScript()
	// interrupt fails the first conversation once it has made two calls,
	// as an API outage would.
	interrupt := true
	s := New(func(req *Request) Reply {
		if interrupt && len(req.FunctionCalls()) == 2 {
			return Error(500, "Internal error encountered.")
		}
		return script(req)
	})
	defer s.Close()
	s.SetLog(t.Logf)

	home := t.TempDir()
	dir := newRepo(t, map[string]string{"prd.json": twoStoryPRD, "progress.txt": "# Progress\n"})
	o := cliOptions{Options: agent.Options{Model: "gemini-2.5-flash"}}

	cut := runCLI(t, s, home, dir, ralphPromptFor(1, "US-001"), o)
	require.Equal(t, contract.OutcomeAgentError, cut.verdict.Outcome, cut.verdict.Reason)
	require.FileExists(t, filepath.Join(dir, "story-US-001.txt"))
	require.Equal(t, 2, cut.summary.ToolUses)

	// Resumed, the conversation carries on with the step left.
	interrupt = false
	o.resume = cut.summary.SessionID
	resumed := runCLI(t, s, home, dir, ralphPromptFor(1, "US-001"), o)
	require.Equal(t, contract.OutcomeSuccess, resumed.verdict.Outcome, resumed.verdict.Reason)
	require.Equal(t, "Implemented US-001.", resumed.summary.FinalText)
	require.Equal(t, 1, resumed.summary.ToolUses, "only progress.txt was left")

	o.resume = ""
	fresh := runCLI(t, s, home, dir, ralphPromptFor(2, "US-002"), o)
	require.Equal(t, contract.OutcomeSuccess, fresh.verdict.Outcome, fresh.verdict.Reason)
	require.Equal(t, "Implemented US-002.", fresh.summary.FinalText)
	require.Equal(t, 3, fresh.summary.ToolUses)

	prd, err := os.ReadFile(filepath.Join(dir, "prd.json"))
	require.NoError(t, err)
	require.Equal(t, 2, strings.Count(string(prd), `"passes": true`), string(prd))
	progress, err := os.ReadFile(filepath.Join(dir, "progress.txt"))
	require.NoError(t, err)
	require.Contains(t, string(progress), "US-001: wrote story-US-001.txt")
	require.Contains(t, string(progress), "US-002: wrote story-US-002.txt")
	require.Equal(t, 1, strings.Count(string(progress), "US-001:"), "the resumed run did not redo a step")
	story, err := os.ReadFile(filepath.Join(dir, "story-US-002.txt"))
	require.NoError(t, err)
	require.Equal(t, "Story US-002 is implemented.\n", string(story))

	verify := runCLI(t, s, home, dir, ralphPromptFor(3, "verify"), o)
	require.Equal(t, contract.OutcomeSuccess, verify.verdict.Outcome, verify.verdict.Reason)
	require.Contains(t, strings.Split(verify.summary.FinalText, "\n"), CompletePromise)
}
