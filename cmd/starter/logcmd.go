package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/agent"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/termtext"
	"github.com/durable-ralph/ralph/internal/words"
)

// logCommand is `starter log`.
type logCommand struct {
	base
	iteration, attempt int
	fullPrompt         bool
	output             outputFormat
}

func (s *logCommand) flags(f *pflag.FlagSet) {
	f.IntVar(&s.iteration, "iteration", 0, "the iteration to show (default: list them all)")
	f.IntVar(&s.attempt, "attempt", 0, "with --iteration: only this attempt (default: every attempt)")
	f.BoolVar(&s.fullPrompt, "full-prompt", false, "with --iteration: the whole prompt, not only what changed since the iteration before")
	s.output.add(f, "the iteration (or the list of them)")
}

// iterationLog is what `log --iteration N` shows of an iteration (its
// JSON form with -o json).
type iterationLog struct {
	Session   string                    `json:"session"`
	Iteration int                       `json:"iteration"`
	Result    *contract.IterationResult `json:"result,omitempty"`
	Failure   string                    `json:"failure,omitempty"`
	// Where is where the logs are, when they are not on this machine.
	Where    string       `json:"where,omitempty"`
	Attempts []attemptLog `json:"attempts"`
}

// attemptLog is one attempt of an iteration: the agent's run as its
// log holds it.
type attemptLog struct {
	Attempt int `json:"attempt"`
	// Prompt is the prompt; Changed says it holds only the lines that
	// were not in the iteration before's.
	Prompt  string               `json:"prompt,omitempty"`
	Changed bool                 `json:"prompt_changed_only,omitempty"`
	Events  []contract.LiveEvent `json:"events"`
	Log     string               `json:"log"`
}

func (s *logCommand) run(cctx *commandContext, args []string) error {
	if s.attempt != 0 && s.iteration == 0 {
		return fmt.Errorf("--attempt needs --iteration")
	}
	conn, tl, err := cctx.openTimeline(s.cmd, args, false)
	if err != nil {
		return err
	}
	defer conn.close()
	id := tl.id
	if s.iteration == 0 {
		return s.list(cctx, tl)
	}
	it, err := tl.finishedOrFailed(s.iteration)
	if err != nil {
		return err
	}
	out := iterationLog{Session: id, Iteration: s.iteration, Result: it.result, Failure: it.failure}
	l, where := openLogs(tl, conn.cfg.Worker.HostID)
	out.Where = where
	if l != nil {
		defer l.close()
		if out.Attempts, err = l.read(dirOf(it), s.iteration, s.attempt); err != nil {
			return err
		}
		if !s.fullPrompt {
			changedPrompts(out.Attempts, l.previousPrompt(tl, s.iteration))
		}
	}
	if s.output == outputJSON {
		return newPrinter(cctx.stdout).print(out)
	}
	printIterationLog(cctx.stdout, out)
	return nil
}

// finishedOrFailed is iteration n when it ended, with a result or not.
func (tl *timeline) finishedOrFailed(n int) (*timelineIteration, error) {
	it, err := tl.finished(n)
	if err != nil && tl.iterations[n] != nil && tl.iterations[n].failure != "" {
		return tl.iterations[n], nil
	}
	return it, err
}

// list prints one line per iteration of the timeline.
func (s *logCommand) list(cctx *commandContext, tl *timeline) error {
	var sums []contract.IterationSummary
	for n := 1; n <= tl.last(); n++ {
		it := tl.iterations[n]
		if it == nil {
			continue
		}
		sum := contract.IterationSummary{Iteration: n, Role: it.role}
		switch {
		case it.result != nil:
			r := it.result
			sum.Outcome, sum.Reason, sum.CostUSD, sum.Tokens = r.Outcome, r.Reason, r.CostUSD, r.Usage.Total()
			sum.FilesChanged, sum.Commit, sum.Duration = len(r.FilesChanged), r.Commit, r.Duration
			sum.Story, sum.Claimed = strings.TrimSpace(r.StoryID+" "+r.StoryTitle), r.CompletionClaimed
		case it.failure != "":
			sum.Outcome, sum.Reason = "failed", it.failure
		default:
			sum.Outcome = "running"
		}
		sums = append(sums, sum)
	}
	if s.output == outputJSON {
		return newPrinter(cctx.stdout).print(sums)
	}
	if len(sums) == 0 {
		fmt.Fprintf(cctx.stdout, "%s has run no iteration yet.\n", tl.id)
		return nil
	}
	for _, sum := range sums {
		fmt.Fprintln(cctx.stdout, sum.Line())
	}
	fmt.Fprintf(cctx.stdout, "One iteration in full: starter log %s --iteration N\n", tl.id)
	return nil
}

// logs are the logs of a session's iterations on this machine: its
// workspace, opened as a root, so that no link the agent planted there
// leads the reader out of it (the logs are in the agent's workspace:
// shown, never trusted).
type logs struct {
	root      *os.Root
	workspace string
	backend   string
}

// openLogs opens the logs of the session of tl, or says where they are
// when they are not on this machine. The caller closes the logs.
func openLogs(tl *timeline, hostHere string) (*logs, string) {
	ws := tl.input.Workspace
	if host := tl.input.Host; host != "" && host != hostHere {
		return nil, fmt.Sprintf("on host %s, in %s (run starter log there)", host, filepath.Join(ws, contract.StateDir, "logs"))
	}
	root, err := os.OpenRoot(ws)
	if err != nil {
		return nil, fmt.Sprintf("not on this machine: %v", err)
	}
	return &logs{root: root, workspace: ws, backend: tl.input.Agent.Backend}, ""
}

func (l *logs) close() { l.root.Close() }

// dirOf is the directory of iteration it's logs, relative to the
// workspace: where its result says its log is.
func dirOf(it *timelineIteration) string {
	if it.result != nil && it.result.LogFile != "" {
		if rel := filepath.Dir(filepath.FromSlash(it.result.LogFile)); filepath.IsLocal(rel) {
			return rel
		}
	}
	return filepath.Join(contract.StateDir, "logs")
}

var attemptFile = regexp.MustCompile(`^iteration-(\d+)\.attempt-(\d+)\.jsonl$`)

// attemptsIn are the attempt numbers of iteration n's logs in dir.
func (l *logs) attemptsIn(dir string, n int) ([]int, error) {
	d, err := l.root.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("read the logs in %s: %w", filepath.Join(l.workspace, dir), err)
	}
	defer d.Close()
	entries, err := d.ReadDir(-1)
	if err != nil {
		return nil, fmt.Errorf("read the logs in %s: %w", filepath.Join(l.workspace, dir), err)
	}
	var ks []int
	for _, e := range entries {
		if m := attemptFile.FindStringSubmatch(e.Name()); m != nil && e.Type().IsRegular() {
			if num, _ := strconv.Atoi(m[1]); num == n {
				k, _ := strconv.Atoi(m[2])
				ks = append(ks, k)
			}
		}
	}
	slices.Sort(ks)
	return ks, nil
}

// read reads the attempts of iteration n in dir (only attempt when it
// is not 0): each one's prompt and what its agent did.
func (l *logs) read(dir string, n, attempt int) ([]attemptLog, error) {
	ks, err := l.attemptsIn(dir, n)
	if err != nil {
		return nil, err
	}
	var out []attemptLog
	for _, k := range ks {
		if attempt != 0 && k != attempt {
			continue
		}
		name := filepath.Join(dir, fmt.Sprintf("iteration-%04d.attempt-%d.jsonl", n, k))
		a := attemptLog{Attempt: k, Log: filepath.Join(l.workspace, name), Prompt: l.prompt(dir, n, k)}
		if a.Events, err = l.events(name); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	if attempt != 0 && len(out) == 0 {
		return nil, fmt.Errorf("iteration %d has no attempt %d in %s", n, attempt, filepath.Join(l.workspace, dir))
	}
	return out, nil
}

// prompt is attempt k of iteration n's prompt: the first record of its
// log, or in logs written before the prompt was kept there, its own file
// or the iteration's (the first attempt's, and every attempt's in logs
// written before attempts had their own).
func (l *logs) prompt(dir string, n, k int) string {
	if f, err := l.root.Open(filepath.Join(dir, fmt.Sprintf("iteration-%04d.attempt-%d.jsonl", n, k))); err == nil {
		prompt, _, ok := contract.ReadLogPrompt(f)
		f.Close()
		if ok {
			return termtext.String(prompt)
		}
	}
	for _, name := range []string{fmt.Sprintf("iteration-%04d.attempt-%d.prompt.md", n, k), fmt.Sprintf("iteration-%04d.prompt.md", n)} {
		if data, err := l.root.ReadFile(filepath.Join(dir, name)); err == nil {
			return termtext.String(string(data))
		}
	}
	return ""
}

// events parses an attempt's stream as the live view shows it.
func (l *logs) events(name string) ([]contract.LiveEvent, error) {
	b, err := activities.BackendOf(l.backend)
	if err != nil {
		return nil, err
	}
	f, err := l.root.Open(name)
	if err != nil {
		return nil, fmt.Errorf("read the agent's log: %w", err)
	}
	defer f.Close()
	activities.SkipLogPrompt(f)
	p := b.NewParser(agent.Options{})
	var events []contract.LiveEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	add := func(kind, name, text string) {
		text = strings.TrimPrefix(strings.TrimSpace(text), strings.TrimSuffix(l.workspace, "/")+"/")
		if text = words.Clip(termtext.String(text), contract.LiveTextLimit); text != "" || name != "" {
			events = append(events, contract.LiveEvent{Seq: len(events) + 1, Kind: kind, Name: words.Clip(termtext.String(name), 64), Text: text})
		}
	}
	for sc.Scan() {
		ev, err := p.Line(bytes.Clone(sc.Bytes()))
		if err != nil {
			continue
		}
		if ev.Error != "" {
			add(contract.LiveError, "", ev.Error)
		}
		if ev.Says != "" {
			add(contract.LiveSays, "", ev.Says)
		}
		if ev.Tool != "" {
			add(contract.LiveTool, ev.Tool, ev.ToolSubject)
		}
	}
	return events, nil
}

// previousPrompt is the last prompt of the iteration before n, "" when
// there is none.
func (l *logs) previousPrompt(tl *timeline, n int) string {
	prev := tl.iterations[n-1]
	if prev == nil {
		return ""
	}
	dir := dirOf(prev)
	ks, err := l.attemptsIn(dir, n-1)
	if err != nil || len(ks) == 0 {
		return ""
	}
	return l.prompt(dir, n-1, ks[len(ks)-1])
}

// changedPrompts keeps of each attempt's prompt the lines that prev does
// not have.
func changedPrompts(attempts []attemptLog, prev string) {
	if prev == "" {
		return
	}
	had := map[string]bool{}
	for _, l := range strings.Split(prev, "\n") {
		had[l] = true
	}
	for i := range attempts {
		var kept []string
		for _, l := range strings.Split(attempts[i].Prompt, "\n") {
			if !had[l] && strings.TrimSpace(l) != "" {
				kept = append(kept, l)
			}
		}
		attempts[i].Prompt, attempts[i].Changed = strings.Join(kept, "\n"), true
	}
}

// printIterationLog prints an iteration for a person.
func printIterationLog(w io.Writer, l iterationLog) {
	fmt.Fprintf(w, "Iteration %d of %s\n", l.Iteration, l.Session)
	if r := l.Result; r != nil {
		sum := contract.IterationSummary{Iteration: l.Iteration, Outcome: r.Outcome, Reason: r.Reason, CostUSD: r.CostUSD,
			Tokens: r.Usage.Total(), FilesChanged: len(r.FilesChanged), Commit: r.Commit, Duration: r.Duration,
			Story: strings.TrimSpace(r.StoryID + " " + r.StoryTitle), Claimed: r.CompletionClaimed}
		fmt.Fprintf(w, "Result: %s\n", sum.Line())
		if r.Commit != "" {
			fmt.Fprintf(w, "Commit: %s\n", r.Commit)
		} else if r.Head != "" {
			fmt.Fprintf(w, "Head:   %s (no commit of its own)\n", r.Head)
		}
	} else if l.Failure != "" {
		fmt.Fprintf(w, "Result: failed: %s\n", l.Failure)
	}
	if l.Where != "" {
		fmt.Fprintf(w, "Logs:   %s\n", l.Where)
		return
	}
	if len(l.Attempts) == 0 {
		fmt.Fprintln(w, "Logs:   none kept for this iteration")
	}
	for _, a := range l.Attempts {
		fmt.Fprintf(w, "\n── attempt %d (%s)\n", a.Attempt, a.Log)
		switch {
		case a.Prompt == "":
		case a.Changed:
			fmt.Fprintf(w, "Prompt, what changed since the iteration before (--full-prompt for all of it):\n%s\n", indent(a.Prompt))
		default:
			fmt.Fprintf(w, "Prompt:\n%s\n", indent(a.Prompt))
		}
		fmt.Fprintln(w, "What the agent did:")
		if len(a.Events) == 0 {
			fmt.Fprintln(w, "  (nothing it printed could be read)")
		}
		for _, e := range a.Events {
			fmt.Fprintf(w, "  %s\n", eventLine(e))
		}
	}
}

// eventLine is an event as the live view shows it, without its time.
func eventLine(e contract.LiveEvent) string {
	switch e.Kind {
	case contract.LiveSays:
		return fmt.Sprintf("▸ says  %q", e.Text)
	case contract.LiveError:
		return "▸ error " + e.Text
	}
	return strings.TrimRight(fmt.Sprintf("▸ %-5s %s", e.Name, e.Text), " ")
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}
