package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Defaults of a step.
const (
	defaultCostUSD      = 0.0125
	defaultGarbageLines = 12
	defaultResetSeconds = 3600
	defaultFloodLineKB  = 64
)

var defaultUsage = usage{InputTokens: 1200, OutputTokens: 350, CacheCreationInputTokens: 4000, CacheReadInputTokens: 15000}

// invocation is one run of the fake agent.
type invocation struct {
	opts      options
	step      step
	n         int // the invocation's number
	workspace string
	prompt    string
	out       *emitter
	stdout    io.Writer
	stderr    io.Writer
	state     state
}

// newAgent loads the scenario, counts and records the invocation, and
// picks its step.
func newAgent(argv []string, opts options, prompt string, stdout, stderr io.Writer) (*invocation, error) {
	workspace, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("working directory: %w", err)
	}
	sc, err := loadScenario(os.Getenv("FAKE_CLAUDE_SCENARIO"))
	if err != nil {
		return nil, err
	}
	st, err := openState(workspace)
	if err != nil {
		return nil, err
	}
	sessionID := opts.sessionID
	if sessionID == "" {
		sessionID = opts.resume
	}
	if sessionID == "" {
		sessionID = newUUID()
	}
	model := opts.model
	if model == "" {
		model = defaultModel
	}
	a := &invocation{
		opts: opts, workspace: workspace, prompt: prompt, stdout: stdout, stderr: stderr, state: st,
		out: &emitter{out: stdout, format: opts.outputFormat, sessionID: sessionID, model: model, start: time.Now()},
	}
	if opts.resume != "" && !st.hasSession(opts.resume) {
		return a, nil // play reports it, as the real CLI does, without a step
	}
	c, err := st.begin(call{
		Time: time.Now().UTC(), CWD: workspace, Argv: argv, Prompt: prompt, SessionID: sessionID, Role: roleOf(prompt),
	})
	if err != nil {
		return nil, err
	}
	a.n = c.N
	if err := st.addSession(sessionID); err != nil {
		return nil, fmt.Errorf("record session: %w", err)
	}
	var ok bool
	if a.step, ok = sc.roleStep(c.Role, c.RoleN); !ok {
		a.step = sc.step(a.n)
	}
	if c.Role == "" {
		next, ok, err := st.takeNextStep()
		if err != nil {
			return nil, err
		}
		if ok {
			a.step = next
		}
	}
	return a, nil
}

// play runs the invocation's step and returns the exit status.
func (a *invocation) play() int {
	s := a.step
	if a.n == 0 {
		msg := "No conversation found with session ID: " + a.opts.resume
		fmt.Fprintln(a.stderr, msg)
		a.out.result(outcome{subtype: "error_during_execution", isError: true, errors: []string{msg}})
		return 1
	}
	if s.Stderr != "" {
		fmt.Fprint(a.stderr, strings.TrimSuffix(s.Stderr, "\n")+"\n")
	}
	if s.Garbage.On {
		return a.garbage(s.Garbage.or(defaultGarbageLines))
	}
	a.out.init(a.workspace, a.permissionMode())

	switch {
	case s.Hang:
		return a.hang()
	case s.AuthError:
		return a.authError()
	case s.RateLimit.On:
		return a.rateLimit(time.Duration(s.RateLimit.or(defaultResetSeconds)) * time.Second)
	}
	if s.FloodMB > 0 {
		a.flood(s.FloodMB, s.FloodLineKB)
	}

	w, err := a.plan()
	if err != nil {
		fmt.Fprintf(a.stderr, "fakeclaude: %v\n", err)
		return 2
	}
	if status, ended := a.work(w); ended {
		return status
	}
	return a.finish(w)
}

// permissionMode is the permission mode the CLI reports: bypassPermissions
// with --dangerously-skip-permissions, else --permission-mode's, else
// default.
func (a *invocation) permissionMode() string {
	switch {
	case a.opts.skipPermissions:
		return "bypassPermissions"
	case a.opts.permissionMode == "":
		return "default"
	}
	return a.opts.permissionMode
}

// work takes the turns of w's actions, and of the step's sleep and commit;
// ended is set, with the exit status, when the run ends there (a crash,
// --max-turns).
func (a *invocation) work(w work) (status int, ended bool) {
	s := a.step
	if s.SleepMS > 0 {
		w.actions = append([]action{{sleep: time.Duration(s.SleepMS) * time.Millisecond}}, w.actions...)
	}
	if s.SleepAfter > 0 {
		w.actions = append(w.actions, action{sleep: time.Duration(s.SleepAfter) * time.Millisecond})
	}
	if s.Commit.On {
		msg := s.Commit.Text
		if msg == "" {
			msg = fmt.Sprintf("fake-claude: invocation %d", a.n)
		}
		w.actions = append(w.actions, action{commit: msg})
	}
	for i, act := range w.actions {
		if a.opts.maxTurns > 0 && a.out.turns >= a.opts.maxTurns {
			return a.maxTurns(), true
		}
		a.out.newTurn()
		if i == 0 && w.intro != "" {
			a.out.text(w.intro, "")
		}
		a.do(act)
		if s.Crash.On {
			return a.crash(s.Crash.or(1)), true
		}
	}
	if s.Crash.On {
		a.out.newTurn()
		a.out.text("Let me look at the code first.", "")
		return a.crash(s.Crash.or(1)), true
	}
	if a.opts.maxTurns > 0 && a.out.turns >= a.opts.maxTurns {
		return a.maxTurns(), true
	}
	return 0, false
}

// finish takes the last turn, its text with the completion promise the
// step asks for, and writes the result; it returns the exit status.
func (a *invocation) finish(w work) int {
	s := a.step
	text := w.summary
	if s.Text != "" {
		text = s.Text
	}
	switch {
	case s.Claim.Set && !s.Claim.On:
	case s.Claim.On && s.Claim.Text != "":
		text += "\n\n" + s.Claim.Text
	case s.Claim.On || w.done:
		if p := promise(w.mode); p != "" {
			text += "\n\n" + p
		}
	}
	a.out.newTurn()
	a.out.text(text, "end_turn")

	o := outcome{
		subtype: "success", text: text, costUSD: defaultCostUSD, usage: defaultUsage,
		numTurns: a.out.turns, stopReason: "end_turn", terminalReason: "completed",
	}
	if s.CostUSD != nil {
		o.costUSD = *s.CostUSD
	}
	if s.Usage != nil {
		o.usage = *s.Usage
	}
	if s.NumTurns != nil {
		o.numTurns = *s.NumTurns
	}
	status := 0
	if s.IsError {
		errText := s.ErrorText
		if errText == "" {
			errText = "fake-claude: simulated error during execution"
		}
		fmt.Fprintln(a.stderr, errText)
		o.subtype, o.isError, o.errors, o.text, o.terminalReason = "error_during_execution", true, []string{errText}, "", ""
		status = 1
	}
	a.out.result(o)
	if s.ExitCode != nil {
		status = *s.ExitCode
	}
	return status
}

// maxTurns ends a run that needs more turns than --max-turns allows.
func (a *invocation) maxTurns() int {
	a.out.result(outcome{
		subtype: "error_max_turns", isError: true, costUSD: defaultCostUSD, usage: defaultUsage,
		errors:   []string{fmt.Sprintf("Reached maximum number of turns (%d)", a.opts.maxTurns)},
		numTurns: a.out.turns, stopReason: "tool_use", terminalReason: "max_turns",
	})
	return 1
}

var garbageLines = []string{
	"Segmentation fault (core dumped)",
	"<html><head><title>502 Bad Gateway</title></head></html>",
	"npm ERR! code ELIFECYCLE",
	`{"type": "assistant", "message": `,
	"undefined",
	"    at processTicksAndRejections (node:internal/process/task_queues:95:5)",
	"Welcome to Claude Code!",
	"\x1b[31m✗\x1b[0m something went wrong",
}

// garbage prints lines that are not stream-json instead of the stream.
func (a *invocation) garbage(lines int) int {
	for i := range lines {
		fmt.Fprintln(a.stdout, garbageLines[i%len(garbageLines)])
	}
	if a.step.ExitCode != nil {
		return *a.step.ExitCode
	}
	return 1
}

// hang starts a child that outlives nothing but the process group, and
// waits forever.
func (a *invocation) hang() int {
	// The child shares stdout and stderr, as a tool's process would: a
	// caller that kills only this process is left waiting on the pipes.
	child := exec.Command("sleep", "300")
	child.Stdout, child.Stderr = a.stdout, a.stderr
	if err := child.Start(); err != nil {
		fmt.Fprintf(a.stderr, "fakeclaude: start sleep: %v\n", err)
	}
	for {
		time.Sleep(time.Hour)
	}
}

// crash ends the process in the middle of the stream.
func (a *invocation) crash(status int) int {
	fmt.Fprintln(a.stderr, "fake-claude: simulated crash\n    at runHeadless (fake-claude:1:1)")
	return status
}

// authError is what Claude Code prints when the API rejects its key.
func (a *invocation) authError() int {
	const msg = "Invalid API key · Fix external API key"
	a.out.apiError(msg, "authentication_failed", "")
	a.out.result(outcome{
		subtype: "success", isError: true, text: msg, numTurns: 1,
		stopReason: "stop_sequence", terminalReason: "api_error", apiErrorStatus: 401,
	})
	return 1
}

// rateLimit is what Claude Code prints when a subscription's 5-hour limit
// is hit.
func (a *invocation) rateLimit(in time.Duration) int {
	now := time.Now()
	resets := now.Add(in)
	a.out.rateLimit(rateLimitInfo{
		Status: "rejected", ResetsAt: resets.Unix(), RateLimitType: "five_hour",
		OverageStatus: "rejected", OverageDisabledReason: "out_of_credits",
	})
	msg := "You've hit your 5-hour limit · resets " + resetTime(resets, now)
	a.out.apiError(msg, "rate_limit", "usage_limit_reached")
	a.out.result(outcome{
		subtype: "success", isError: true, text: msg, numTurns: 1,
		stopReason: "stop_sequence", terminalReason: "api_error", apiErrorStatus: 429, apiError: "usage_limit_reached",
	})
	return 1
}

// flood prints mb megabytes of assistant text.
func (a *invocation) flood(mb float64, lineKB int) {
	if lineKB <= 0 {
		lineKB = defaultFloodLineKB
	}
	const filler = "The quick brown fox jumps over the lazy dog while the build keeps running. "
	text := strings.Repeat(filler, lineKB<<10/len(filler)+1)[:lineKB<<10]
	a.out.newTurn()
	for printed := 0; printed < int(mb*(1<<20)); printed += len(text) {
		a.out.text(text, "")
	}
}

// work is what a step does besides its special effects.
type work struct {
	mode    string // "prd", "progress", "prompt" or ""
	intro   string // the text before the first tool call
	actions []action
	summary string // the final text, before any promise
	done    bool   // the task file has nothing left: claim the promise
}

// action is one tool call.
type action struct {
	path    string // Write path, relative to the workspace
	content string
	commit  string // git commit message
	sleep   time.Duration
}

// do runs one tool call, printing its tool_use and tool_result events.
func (a *invocation) do(act action) {
	switch {
	case act.sleep > 0:
		a.sleep(act.sleep)
	case act.commit != "":
		a.commit(act.commit)
	default:
		a.write(act.path, act.content)
	}
}

func (a *invocation) write(rel, content string) {
	path := rel
	if !filepath.IsAbs(path) {
		path = filepath.Join(a.workspace, rel)
	}
	id := a.out.toolUse("Write", writeInput{FilePath: path, Content: content})
	old, readErr := os.ReadFile(path)
	err := os.MkdirAll(filepath.Dir(path), 0o755)
	if err == nil {
		err = os.WriteFile(path, []byte(content), 0o644)
	}
	if err != nil {
		a.out.toolResult(id, fmt.Sprintf("<tool_use_error>%v</tool_use_error>", err), true, "Error: "+err.Error())
		return
	}
	if readErr != nil {
		a.out.toolResult(id, "File created successfully at: "+path, false, writeOutput{
			Type: "create", FilePath: path, Content: content, StructuredPatch: []any{},
		})
		return
	}
	orig := string(old)
	a.out.toolResult(id, fmt.Sprintf("The file %s has been updated successfully.", path), false, writeOutput{
		Type: "update", FilePath: path, Content: content, StructuredPatch: []any{}, OriginalFile: &orig,
	})
}

func (a *invocation) commit(msg string) {
	command := fmt.Sprintf("git add -A && git commit -m %q", msg)
	id := a.out.toolUse("Bash", bashInput{Command: command, Description: "Commit the changes"})
	var out strings.Builder
	var err error
	for _, args := range [][]string{{"add", "-A"}, {"commit", "-q", "-m", msg}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = a.workspace
		cmd.Stdout, cmd.Stderr = &out, &out
		if err = cmd.Run(); err != nil {
			break
		}
	}
	content := strings.TrimSpace(out.String())
	if err != nil {
		content = strings.TrimSpace(fmt.Sprintf("Exit code %d\n%s", exitCode(err), content))
	}
	a.out.toolResult(id, content, err != nil, bashOutput{Stdout: out.String()})
}

func exitCode(err error) int {
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		return ee.ExitCode()
	}
	return 1
}

// sleep is a Bash tool call that takes d, with progress every second.
func (a *invocation) sleep(d time.Duration) {
	secs := (d + time.Second - 1) / time.Second
	a.out.text("Running the test suite; this takes a moment.", "")
	id := a.out.toolUse("Bash", bashInput{Command: fmt.Sprintf("sleep %d", secs), Description: "Run the test suite", Timeout: 600000})
	start := time.Now()
	for {
		left := d - time.Since(start)
		if left <= 0 {
			break
		}
		time.Sleep(min(left, time.Second))
		if time.Since(start) < d {
			a.out.toolProgress(id, "Bash", time.Since(start))
		}
	}
	a.out.toolResult(id, "ok", false, bashOutput{Stdout: "ok"})
}

// plan decides the file writes of the step.
func (a *invocation) plan() (work, error) {
	s := a.step
	var w work
	w.mode = detectMode(a.workspace)
	if s.Auto {
		var err error
		if w, err = a.auto(w.mode); err != nil {
			return work{}, err
		}
	}
	paths := make([]string, 0, len(s.Write))
	for p := range s.Write {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		w.actions = append(w.actions, action{path: p, content: s.Write[p]})
	}
	if s.CounterFile != "" {
		n := 0
		if data, err := os.ReadFile(filepath.Join(a.workspace, s.CounterFile)); err == nil {
			fmt.Sscan(strings.TrimSpace(string(data)), &n)
		}
		w.actions = append(w.actions, action{path: s.CounterFile, content: fmt.Sprintf("%d\n", n+1)})
		if w.summary == "" {
			w.summary = fmt.Sprintf("Incremented %s to %d.", s.CounterFile, n+1)
		}
	}
	if len(s.Checkpoint) > 0 {
		content := string(s.Checkpoint)
		var str string
		if err := decodeStrict(s.Checkpoint, &str); err == nil {
			content = str
		}
		w.actions = append(w.actions, action{path: filepath.Join(".ralph", "checkpoint.json"), content: content})
	}
	if w.summary == "" {
		if len(w.actions) > 0 {
			w.summary = fmt.Sprintf("Done: %d %s changed.", len(w.actions), plural(len(w.actions), "file", "files"))
		} else {
			w.summary = "Nothing to do."
		}
	}
	if w.intro == "" && len(w.actions) > 0 {
		w.intro = "I'll make the changes now."
	}
	return w, nil
}

// detectMode names the workspace's task file, looked for in the order
// Durable Ralph does.
func detectMode(workspace string) string {
	for _, m := range []struct{ mode, file string }{
		{"prd", "prd.json"}, {"progress", "progress.md"}, {"prompt", "PROMPT.md"}, {"issue", ".ralph/issue.md"},
	} {
		if _, err := os.Stat(filepath.Join(workspace, m.file)); err == nil {
			return m.mode
		}
	}
	return ""
}

// promise is the completion promise of mode.
func promise(mode string) string {
	switch mode {
	case "prd":
		return "<promise>COMPLETE</promise>"
	case "progress":
		return "RALPH_DONE"
	case "prompt", "issue":
		return "LOOP_COMPLETE"
	}
	return ""
}

// readOptional reads a file that may not exist.
func readOptional(path string) (string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	return string(data), err
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
