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
	conn, err := cctx.dial(s.cmd)
	if err != nil {
		return err
	}
	defer conn.close()
	tl, err := cctx.timelineOf(conn, args)
	if err != nil {
		return err
	}
	id := tl.id
	if s.iteration == 0 {
		return s.list(cctx, tl)
	}
	it, err := tl.finishedOrFailed(s.iteration)
	if err != nil {
		return err
	}
	out := iterationLog{Session: id, Iteration: s.iteration, Result: it.result, Failure: it.failure}
	dir, where := logDir(tl, it, conn.cfg.Worker.HostID)
	out.Where = where
	if dir != "" {
		if out.Attempts, err = readAttempts(dir, tl.input.Agent.Backend, s.iteration, s.attempt, tl.input.Workspace); err != nil {
			return err
		}
		if !s.fullPrompt {
			changedPrompts(out.Attempts, previousPrompt(tl, s.iteration, conn.cfg.Worker.HostID))
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

// logDir is the directory of iteration it's logs on this machine, or
// "" and where they are: the logs are in the session's workspace, on
// the machine of its host.
func logDir(tl *timeline, it *timelineIteration, hostHere string) (dir, where string) {
	ws := tl.input.Workspace
	rel := ""
	if it.result != nil && it.result.LogFile != "" {
		rel = filepath.Dir(filepath.FromSlash(it.result.LogFile))
	}
	if rel == "" || strings.HasPrefix(rel, "..") || filepath.IsAbs(rel) {
		rel = filepath.Join(contract.StateDir, "logs")
	}
	dir = filepath.Join(ws, rel)
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return dir, ""
	}
	host := tl.input.Host
	if host != "" && host != hostHere {
		return "", fmt.Sprintf("on host %s, in %s (run starter log there)", host, dir)
	}
	return "", fmt.Sprintf("not on this machine: %s is missing", dir)
}

var attemptFile = regexp.MustCompile(`^iteration-(\d+)\.attempt-(\d+)\.jsonl$`)

// readAttempts reads the attempts of iteration n in dir (only attempt
// when it is not 0): each one's prompt and what its agent did.
func readAttempts(dir, backend string, n, attempt int, workspace string) ([]attemptLog, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read the logs in %s: %w", dir, err)
	}
	var out []attemptLog
	for _, e := range entries {
		m := attemptFile.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		num, _ := strconv.Atoi(m[1])
		k, _ := strconv.Atoi(m[2])
		if num != n || (attempt != 0 && k != attempt) {
			continue
		}
		a := attemptLog{Attempt: k, Log: filepath.Join(dir, e.Name())}
		a.Prompt = readPrompt(dir, n, k)
		if a.Events, err = readEvents(a.Log, backend, workspace); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b attemptLog) int { return a.Attempt - b.Attempt })
	if attempt != 0 && len(out) == 0 {
		return nil, fmt.Errorf("iteration %d has no attempt %d in %s", n, attempt, dir)
	}
	return out, nil
}

// readPrompt is attempt k of iteration n's prompt: its own file, or the
// iteration's (logs written before attempts had their own).
func readPrompt(dir string, n, k int) string {
	for _, name := range []string{fmt.Sprintf("iteration-%04d.attempt-%d.prompt.md", n, k), fmt.Sprintf("iteration-%04d.prompt.md", n)} {
		if data, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
			return termtext.String(string(data))
		}
	}
	return ""
}

// readEvents parses an attempt's stream as the live view shows it.
func readEvents(path, backendName, workspace string) ([]contract.LiveEvent, error) {
	b, err := activities.BackendOf(backendName)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read the agent's log: %w", err)
	}
	defer f.Close()
	p := b.NewParser(agent.Options{})
	var events []contract.LiveEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	add := func(kind, name, text string) {
		text = strings.TrimPrefix(strings.TrimSpace(text), strings.TrimSuffix(workspace, "/")+"/")
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
// there is none here.
func previousPrompt(tl *timeline, n int, hostHere string) string {
	prev := tl.iterations[n-1]
	if prev == nil {
		return ""
	}
	dir, _ := logDir(tl, prev, hostHere)
	if dir == "" {
		return ""
	}
	entries, _ := os.ReadDir(dir)
	best := 0
	for _, e := range entries {
		if m := attemptFile.FindStringSubmatch(e.Name()); m != nil {
			if num, _ := strconv.Atoi(m[1]); num == n-1 {
				k, _ := strconv.Atoi(m[2])
				best = max(best, k)
			}
		}
	}
	return readPrompt(dir, n-1, best)
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
