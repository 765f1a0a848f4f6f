package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/durable-ralph/ralph/activities"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/termtext"
)

// rawView copies what the attempt's raw log gained since the last poll,
// when that log is on this machine; it reports false (once saying why)
// when it is not. The agent's bytes go through a termtext.Writer, kept
// for the attempt: its escape sequences could clear the screen, set the
// window title or write the clipboard, and one may be cut between two
// polls.
func (f *follower) rawView(p contract.Progress, workspace string) bool {
	if f.live.raw == nil && !f.live.rawMiss {
		path := filepath.Join(workspace, filepath.FromSlash(p.Log))
		file, err := os.Open(path)
		if p.Log == "" || workspace == "" || err != nil {
			f.live.rawMiss = true
			fmt.Fprintf(f.out, "  (the agent's raw stream is in %s on the worker's machine; showing the live view)\n", orDash(p.Log))
			return false
		}
		// The prompt record is written before the agent starts: the
		// raw view is the agent's stream.
		activities.SkipLogPrompt(file)
		f.live.raw = file
		f.live.rawOut = termtext.NewWriter(f.out)
	}
	if f.live.raw == nil {
		return false
	}
	_, _ = io.Copy(f.live.rawOut, f.live.raw)
	return true
}

// flushRaw copies the rest of a finished attempt's raw log and closes it.
func (f *follower) flushRaw() {
	if f.live.raw == nil {
		return
	}
	_, _ = io.Copy(f.live.rawOut, f.live.raw)
	f.live.raw.Close()
	f.live.raw = nil
}

// logName is how the worker names a session key's directory of raw logs
// under .ralph/logs (activities' safeName).
var logName = strings.NewReplacer("/", "_", "\\", "_", "..", "_", "\x00", "_")

// rawEnded copies the raw log of the finished iteration it, which no
// live view showed, when it is on this machine: the last attempt's
// stream under the workspace's .ralph/logs. It reports false when there
// is none here.
func (f *follower) rawEnded(it contract.IterationSummary) bool {
	if f.workspace == "" || f.key == "" {
		return false
	}
	prefix := fmt.Sprintf("iteration-%04d.attempt-", it.Iteration)
	dir := filepath.Join(f.workspace, contract.StateDir, "logs", logName.Replace(f.key))
	paths, err := filepath.Glob(filepath.Join(dir, prefix+"*.jsonl"))
	if err != nil || len(paths) == 0 {
		return false
	}
	last, lastAttempt := "", 0
	for _, p := range paths {
		n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), prefix), ".jsonl"))
		if err == nil && n > lastAttempt {
			last, lastAttempt = p, n
		}
	}
	if last == "" {
		return false
	}
	file, err := os.Open(last)
	if err != nil {
		return false
	}
	defer file.Close()
	activities.SkipLogPrompt(file)
	_, _ = io.Copy(termtext.NewWriter(f.out), file)
	return true
}
