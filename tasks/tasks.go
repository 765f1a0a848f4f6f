// Package tasks reads the files that describe the work of a Ralph loop,
// decides from them what the next iteration should do and whether the work
// is done, and builds the prompt each iteration of the agent receives.
//
// Three task sources are supported, one per Mode:
//
//   - ModePRD: a prd.json as written for snarktank/ralph, a list of user
//     stories each with a priority and a "passes" flag, with learnings
//     appended to progress.txt.
//   - ModeProgress: a progress.md as written by rslph, with "- [ ]" tasks
//     grouped in phases under "## Tasks" and a "## Status" section that
//     holds RALPH_DONE when the work is finished.
//   - ModePrompt: a free-form PROMPT.md objective as used by
//     ralph-orchestrator; it can confirm completion only when it has
//     checkboxes.
package tasks

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/durable-ralph/ralph/contract"
)

// maxTaskFileSize bounds what Load reads; a task file larger than this is
// certainly not something to put in a prompt.
const maxTaskFileSize = 8 << 20

// modes lists the modes in the order Detect tries them.
var modes = []contract.Mode{contract.ModePRD, contract.ModeProgress, contract.ModePrompt}

// ErrNoTaskFile is returned, wrapped, by Detect when the workspace has none
// of the task files.
var ErrNoTaskFile = errors.New("no task file")

// ParseMode returns the mode named s. Surrounding space and case are
// ignored; the empty string is not a mode (callers that want detection
// handle "" themselves).
func ParseMode(s string) (contract.Mode, error) {
	name := strings.ToLower(strings.TrimSpace(s))
	if name == "" {
		return "", fmt.Errorf("task mode is empty: want one of %s", modeList())
	}
	if m := contract.Mode(name); m.Valid() {
		return m, nil
	}
	return "", fmt.Errorf("invalid task mode %q: want one of %s", s, modeList())
}

func modeList() string {
	names := make([]string, len(modes))
	for i, m := range modes {
		names[i] = string(m)
	}
	return strings.Join(names, ", ")
}

// Detect picks the mode from the task files present in dir: prd.json means
// ModePRD, else progress.md means ModeProgress, else PROMPT.md means
// ModePrompt. If none is present the error wraps ErrNoTaskFile and names
// the files looked for. A task file that is a symlink out of dir is an
// *OutsideError.
func Detect(dir string) (contract.Mode, error) {
	for _, m := range modes {
		info, err := statInside(dir, m.File())
		switch {
		case err == nil && info.Mode().IsRegular():
			return m, nil
		case err == nil, errors.Is(err, fs.ErrNotExist):
			continue
		case isOutside(err):
			return "", err
		default:
			return "", fmt.Errorf("detect task file: %w", err)
		}
	}
	files := make([]string, len(modes))
	for i, m := range modes {
		files[i] = m.File()
	}
	return "", fmt.Errorf("%w in %s: looked for %s", ErrNoTaskFile, dir, strings.Join(files, ", "))
}

// DefaultPromise returns the completion promise of mode m: the text an
// agent prints to claim that all the work is done. It returns "" for an
// invalid mode.
func DefaultPromise(m contract.Mode) string {
	switch m {
	case contract.ModePRD:
		return "<promise>COMPLETE</promise>"
	case contract.ModeProgress:
		return "RALPH_DONE"
	case contract.ModePrompt, contract.ModeIssue:
		return "LOOP_COMPLETE"
	}
	return ""
}

// Item is one story or task.
type Item struct {
	// ID identifies the item: the story id in prd.json, "T<n>" (the n-th
	// checkbox in file order, from 1) in progress.md and PROMPT.md.
	ID    string `json:"id"`
	Title string `json:"title"`
	Done  bool   `json:"done"`
	// Priority orders prd.json stories, lowest first. 0 means the story has
	// no priority; such stories come after all prioritized ones. Checkbox
	// items have no priority.
	Priority int `json:"priority,omitempty"`
	// Phase is the heading the item sits under, such as "Phase 1: Setup".
	Phase string `json:"phase,omitempty"`
}

// State is the state of a task file.
type State struct {
	Mode contract.Mode `json:"mode"`
	// File is the task file, relative to the workspace.
	File       string `json:"file"`
	Project    string `json:"project,omitempty"`
	BranchName string `json:"branch_name,omitempty"`
	Items      []Item `json:"items,omitempty"`
	Total      int    `json:"total"`
	Done       int    `json:"done"`
	// Complete reports that the task file says all the work is done: every
	// story passes (prd), every box is checked (progress, and at least one
	// box exists), or PROMPT.md has checkboxes and all are checked (prompt).
	// A PROMPT.md without checkboxes is never Complete: completion of a
	// free-form objective cannot be read from the file, only claimed.
	Complete bool `json:"complete"`
	// Verifiable reports whether the file can confirm completion at all.
	// It is false only for a PROMPT.md without checkboxes; a caller must
	// then trust the agent's promise alone.
	Verifiable bool `json:"verifiable"`
	// StatusDone reports that progress.md's "## Status" section holds
	// RALPH_DONE. It is the file's own claim and says nothing about the
	// boxes; Complete does not depend on it.
	StatusDone bool `json:"status_done,omitempty"`
}

// Next returns the item the next iteration should work on: among the items
// not done, the one with the lowest priority number, ties (and unprioritized
// checkbox items) broken by file order. It returns false when every item is
// done.
func (s State) Next() (Item, bool) {
	best := -1
	for i, it := range s.Items {
		if it.Done {
			continue
		}
		if best < 0 || priorityBefore(it.Priority, s.Items[best].Priority) {
			best = i
		}
	}
	if best < 0 {
		return Item{}, false
	}
	return s.Items[best], true
}

// priorityBefore reports whether priority a strictly comes before b, where 0
// means no priority and comes last.
func priorityBefore(a, b int) bool {
	switch {
	case a == b:
		return false
	case a == 0:
		return false
	case b == 0:
		return true
	}
	return a < b
}

// count fills in Total, Done, Complete and Verifiable from Items.
func (s *State) count() {
	s.Total = len(s.Items)
	s.Done = 0
	for _, it := range s.Items {
		if it.Done {
			s.Done++
		}
	}
	s.Verifiable = s.Total > 0
	s.Complete = s.Total > 0 && s.Done == s.Total
}

// FileError is a task file that cannot be used as it is: missing, malformed
// or inconsistent. Retrying will not help until a person (or the agent)
// fixes the file, so callers classify it as an invalid task file.
type FileError struct {
	// File is the task file, relative to the workspace.
	File string
	// Line and Col locate the problem, from 1; 0 when unknown.
	Line, Col int
	Err       error
}

// Error formats the error as file:line:col: message, leaving out unknown
// positions.
func (e *FileError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Col > 0 {
			fmt.Fprintf(&b, ":%d", e.Col)
		}
	}
	b.WriteString(": ")
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	} else {
		b.WriteString("invalid task file")
	}
	return b.String()
}

// Unwrap returns the underlying error.
func (e *FileError) Unwrap() error { return e.Err }

// IsInvalidTaskFile reports whether err means the task file is missing or
// unusable (a symlink out of the workspace too), as opposed to a passing
// I/O failure.
func IsInvalidTaskFile(err error) bool {
	var fe *FileError
	return errors.As(err, &fe) || errors.Is(err, ErrNoTaskFile) || isOutside(err)
}

// Load reads and parses the task file of mode m in dir. A missing, malformed
// or empty task file yields a *FileError, one that is a symlink out of dir
// an *OutsideError.
func Load(dir string, m contract.Mode) (State, error) {
	if !m.Valid() {
		return State{}, fmt.Errorf("load tasks: invalid task mode %q: want one of %s", m, modeList())
	}
	data, err := readTaskFile(dir, m.File())
	if err != nil {
		return State{}, err
	}
	return Parse(m, data)
}

// Parse reads the task file of mode m from data, as Load reads it from
// the workspace (the file at a commit, for one).
func Parse(m contract.Mode, data []byte) (State, error) {
	switch m {
	case contract.ModePRD:
		st, _, err := parsePRD(m.File(), data)
		return st, err
	case contract.ModeProgress:
		return parseProgress(m.File(), data)
	case contract.ModeIssue:
		return parseIssue(m.File(), data)
	default:
		return parsePrompt(m.File(), data)
	}
}

// readTaskFile reads dir/name, reporting a missing or oversized file as a
// *FileError and one that is a symlink out of dir as an *OutsideError.
func readTaskFile(dir, name string) ([]byte, error) {
	f, err := openInside(dir, name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &FileError{File: name, Err: errors.New("file does not exist")}
	}
	if isOutside(err) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("read task file: %w", err)
	}
	defer f.Close()
	if info, err := f.Stat(); err == nil && !info.Mode().IsRegular() {
		return nil, &FileError{File: name, Err: errors.New("not a regular file")}
	}
	data, err := io.ReadAll(io.LimitReader(f, maxTaskFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read task file %s: %w", name, err)
	}
	if len(data) > maxTaskFileSize {
		return nil, &FileError{File: name, Err: fmt.Errorf("file is larger than %d MiB", maxTaskFileSize>>20)}
	}
	return data, nil
}
