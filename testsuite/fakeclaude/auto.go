package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// auto plans the next unit of work: a planner's plan, a reviewer's
// verdict, or else the next unit of the workspace's task file.
func (a *invocation) auto(mode string) (work, error) {
	switch roleOf(a.prompt) {
	case "planner":
		return a.autoPlan()
	case "reviewer":
		return a.autoReview()
	}
	switch mode {
	case "prd":
		return a.autoPRD()
	case "progress":
		return a.autoCheckbox("progress", "progress.md", "task")
	case "prompt":
		return a.autoCheckbox("prompt", "PROMPT.md", "task")
	case "issue":
		return a.autoIssue()
	}
	name := fmt.Sprintf("work-%d.txt", a.n)
	return work{
		intro:   "There is no task file here; I'll leave a note.",
		actions: []action{{path: name, content: fmt.Sprintf("Work of invocation %d.\n", a.n)}},
		summary: "Wrote " + name + ".",
	}, nil
}

// memoriesPath finds the queue's memories file in an issue prompt.
var memoriesPath = regexp.MustCompile("Append to `([^`]+memories\\.md)`")

// autoIssue works on .ralph/issue.md in two steps: the first iteration
// writes ISSUE-WORK.md (the issue's title) and a line in the queue's
// memories, the second finds it there and claims completion.
func (a *invocation) autoIssue() (work, error) {
	w := work{mode: "issue"}
	issue, err := os.ReadFile(filepath.Join(a.workspace, ".ralph", "issue.md"))
	if err != nil {
		return w, fmt.Errorf("auto: %w", err)
	}
	title := strings.TrimSpace(strings.TrimPrefix(strings.SplitN(string(issue), "\n", 2)[0], "#"))
	if round, err := readOptional(filepath.Join(a.workspace, ".ralph", "feedback.md")); err != nil || round != "" {
		if err != nil {
			return w, fmt.Errorf("auto: %w", err)
		}
		return a.autoRound(round)
	}
	if _, err := os.Stat(filepath.Join(a.workspace, "ISSUE-WORK.md")); err == nil {
		w.done = true
		w.summary = "ISSUE-WORK.md covers the issue; it is resolved."
		return w, nil
	}
	w.intro = "I'll resolve the issue."
	w.actions = append(w.actions, action{path: "ISSUE-WORK.md", content: "Resolved: " + title + "\n"})
	if m := memoriesPath.FindStringSubmatch(a.prompt); m != nil {
		old, _ := readOptional(m[1])
		w.actions = append(w.actions, action{path: m[1], content: old + "- learned while working on: " + title + "\n"})
	}
	w.actions = append(w.actions, action{commit: "Resolve: " + title})
	w.summary = "Wrote ISSUE-WORK.md for: " + title
	return w, nil
}

// autoRound answers a pull request's round (.ralph/feedback.md) in two
// steps: the first writes FIXED and records the round in ROUNDS.md (by a
// hash of its task, with its title), the second finds it there and claims
// completion.
func (a *invocation) autoRound(round string) (work, error) {
	w := work{mode: "issue"}
	key := fmt.Sprintf("%x", sha256.Sum256([]byte(round)))[:12]
	rounds, err := readOptional(filepath.Join(a.workspace, "ROUNDS.md"))
	if err != nil {
		return w, fmt.Errorf("auto: %w", err)
	}
	if strings.Contains(rounds, key) {
		w.done = true
		w.summary = "ROUNDS.md records this round; what the pull request needed is done."
		return w, nil
	}
	heading := strings.TrimSpace(strings.TrimPrefix(strings.SplitN(round, "\n", 2)[0], "#"))
	w.intro = "I'll do what the pull request needs."
	w.actions = append(w.actions,
		action{path: "FIXED", content: "fixed\n"},
		action{path: "ROUNDS.md", content: rounds + "- " + key + " " + heading + "\n"},
		action{commit: "Address: " + heading})
	w.summary = "Addressed: " + heading
	return w, nil
}

// prdStory is what auto reads of a prd.json story.
type prdStory struct {
	ID       string `json:"id"`
	Title    string `json:"title"`
	Priority int    `json:"priority"`
	Passes   bool   `json:"passes"`
}

// autoPRD implements the story of prd.json with passes=false and the
// lowest priority (stories without one last, ties in file order).
func (a *invocation) autoPRD() (work, error) {
	w := work{mode: "prd"}
	path := filepath.Join(a.workspace, "prd.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return w, fmt.Errorf("auto: %w", err)
	}
	var doc struct {
		UserStories []prdStory `json:"userStories"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return w, fmt.Errorf("auto: prd.json: %w", err)
	}
	best := -1
	for i, s := range doc.UserStories {
		if s.Passes {
			continue
		}
		if best < 0 || priorityBefore(s.Priority, doc.UserStories[best].Priority) {
			best = i
		}
	}
	if best < 0 {
		w.done = true
		w.summary = fmt.Sprintf("All %d stories in prd.json pass; there is nothing left to do.", len(doc.UserStories))
		return w, nil
	}
	story := doc.UserStories[best]
	left := 0
	for _, s := range doc.UserStories {
		if !s.Passes {
			left++
		}
	}
	// claim_last: the last story's iteration claims completion, as the
	// prompt asks an agent that leaves every story passing.
	w.done = a.step.ClaimLast && left == 1
	updated, err := setPasses(data, best)
	if err != nil {
		return w, fmt.Errorf("auto: prd.json: %w", err)
	}
	learnings, err := readOptional(filepath.Join(a.workspace, "progress.txt"))
	if err != nil {
		return w, fmt.Errorf("auto: %w", err)
	}
	if learnings != "" && !strings.HasSuffix(learnings, "\n") {
		learnings += "\n"
	}
	learnings += fmt.Sprintf("## %s - %s\n- Implemented %s (fake agent)\n- Learning: story files go in the workspace root\n---\n",
		time.Now().UTC().Format("2006-01-02 15:04"), story.ID, story.Title)

	files := a.step.Files
	if len(files) == 0 {
		files = []string{"story-" + safeName(story.ID) + ".txt"}
	}
	w.intro = fmt.Sprintf("I'll implement %s: %s.", story.ID, story.Title)
	for _, f := range files {
		w.actions = append(w.actions, action{path: f, content: fmt.Sprintf("%s: %s\n", story.ID, story.Title)})
	}
	w.actions = append(w.actions,
		action{path: "prd.json", content: string(updated)},
		action{path: "progress.txt", content: learnings},
	)
	w.summary = fmt.Sprintf("Implemented %s (%s): wrote %s, marked the story as passing in prd.json and noted a learning in progress.txt.",
		story.ID, story.Title, strings.Join(files, ", "))
	return w, nil
}

// priorityBefore orders priorities: lower first, 0 (none) last.
func priorityBefore(p, q int) bool {
	switch {
	case p == 0:
		return false
	case q == 0:
		return true
	}
	return p < q
}

var safeName = strings.NewReplacer("/", "_", "\\", "_", "..", "_").Replace

// setPasses returns prd.json data with userStories[index].passes set to
// true, every other byte unchanged.
func setPasses(data []byte, index int) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := expectDelim(dec, '{'); err != nil {
		return nil, err
	}
	found, err := seekKey(dec, "userStories")
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("no userStories[%d]", index)
	}
	if err := expectDelim(dec, '['); err != nil {
		return nil, err
	}
	for i := 0; dec.More(); i++ {
		if i != index {
			if err := skipValue(dec); err != nil {
				return nil, err
			}
			continue
		}
		if err := expectDelim(dec, '{'); err != nil {
			return nil, err
		}
		found, err := seekKey(dec, "passes")
		if err != nil {
			return nil, err
		}
		if !found {
			return nil, fmt.Errorf(`userStories[%d] has no "passes"`, index)
		}
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		end := int(dec.InputOffset())
		if tok != false || end < 5 || string(data[end-5:end]) != "false" {
			return nil, fmt.Errorf(`userStories[%d].passes is %v, not false`, index, tok)
		}
		out := make([]byte, 0, len(data)-1)
		out = append(out, data[:end-5]...)
		out = append(out, "true"...)
		return append(out, data[end:]...), nil
	}
	return nil, fmt.Errorf("no userStories[%d]", index)
}

// seekKey reads the members of the object dec is in up to the key; false
// if the object has no such key.
func seekKey(dec *json.Decoder, key string) (bool, error) {
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return false, err
		}
		if k == key {
			return true, nil
		}
		if err := skipValue(dec); err != nil {
			return false, err
		}
	}
	return false, nil
}

func expectDelim(dec *json.Decoder, d json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok != d {
		return fmt.Errorf("want %v, found %v", d, tok)
	}
	return nil
}

func skipValue(dec *json.Decoder) error {
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil {
		if errors.Is(err, io.EOF) {
			return io.ErrUnexpectedEOF
		}
		return err
	}
	return nil
}

// autoCheckbox checks the first open box of a markdown task file: the
// first "- [ ]" under "## Tasks" if the file has that section, else the
// first anywhere. progress.md's run that checks the last box also writes
// RALPH_DONE in "## Status" and claims completion; PROMPT.md claims when
// no box is left, or at once if it has none.
func (a *invocation) autoCheckbox(mode, file, prefix string) (work, error) {
	w := work{mode: mode}
	data, err := os.ReadFile(filepath.Join(a.workspace, file))
	if err != nil {
		return w, fmt.Errorf("auto: %w", err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	// progress.md's tasks are under "## Tasks"; PROMPT.md's boxes count
	// wherever they are.
	hasTasks := false
	for _, l := range lines {
		if mode == "progress" && isHeading(l, "tasks") {
			hasTasks = true
		}
	}

	boxes, open, inTasks := 0, -1, false
	for i, l := range lines {
		if strings.HasPrefix(l, "## ") {
			inTasks = isHeading(l, "tasks")
		}
		t := strings.TrimSpace(l)
		if !strings.HasPrefix(t, "- [ ]") && !strings.HasPrefix(t, "- [x]") && !strings.HasPrefix(t, "- [X]") {
			continue
		}
		if hasTasks && !inTasks {
			continue
		}
		boxes++
		if open < 0 && strings.HasPrefix(t, "- [ ]") {
			open = i
			w.intro = fmt.Sprintf("I'll do task %d: %s.", boxes, strings.TrimSpace(t[len("- [ ]"):]))
			w.summary = fmt.Sprintf("Completed task %d (%s): wrote %s-%d.txt and checked it off in %s.",
				boxes, strings.TrimSpace(t[len("- [ ]"):]), prefix, boxes, file)
			lines[i] = strings.Replace(l, "- [ ]", "- [x]", 1)
			files := a.step.Files
			if len(files) == 0 {
				files = []string{fmt.Sprintf("%s-%d.txt", prefix, boxes)}
			}
			for _, f := range files {
				w.actions = append(w.actions, action{path: f, content: strings.TrimSpace(t[len("- [ ]"):]) + "\n"})
			}
		}
	}

	switch {
	case boxes == 0 && mode == "prompt":
		name := fmt.Sprintf("work-%d.txt", a.n)
		w.intro = "I'll work on the objective in PROMPT.md."
		w.actions = append(w.actions, action{path: name, content: "Objective done.\n"})
		w.summary = "Worked on the objective; it is done. Wrote " + name + "."
		w.done = true
		return w, nil
	case open < 0:
		w.summary = fmt.Sprintf("Every task in %s is checked; there is nothing left to do.", file)
		w.done = true
	case mode == "progress" && !hasOpenBox(lines, hasTasks):
		w.done = true
	}
	if mode == "progress" && w.done {
		lines = setStatusDone(lines)
	}
	if updated := strings.Join(lines, ""); updated != string(data) {
		w.actions = append(w.actions, action{path: file, content: updated})
	}
	return w, nil
}

// hasOpenBox reports whether lines still have an unchecked box where
// autoCheckbox looks.
func hasOpenBox(lines []string, hasTasks bool) bool {
	inTasks := false
	for _, l := range lines {
		if strings.HasPrefix(l, "## ") {
			inTasks = isHeading(l, "tasks")
		}
		if (!hasTasks || inTasks) && strings.HasPrefix(strings.TrimSpace(l), "- [ ]") {
			return true
		}
	}
	return false
}

// isHeading reports whether l is the level-2 heading name.
func isHeading(l, name string) bool {
	return strings.HasPrefix(l, "## ") && strings.EqualFold(strings.TrimSpace(l[3:]), name)
}

// setStatusDone makes RALPH_DONE the first line of progress.md's
// "## Status" section, adding the section if there is none.
func setStatusDone(lines []string) []string {
	for i, l := range lines {
		if !isHeading(l, "status") {
			continue
		}
		for j := i + 1; j < len(lines); j++ {
			t := strings.TrimSpace(lines[j])
			switch {
			case t == "":
				continue
			case strings.Contains(t, "RALPH_DONE"):
				return lines
			case strings.HasPrefix(t, "#"):
				return insert(lines, j, "RALPH_DONE\n", "\n")
			}
			lines[j] = "RALPH_DONE\n"
			return lines
		}
		return append(lines, "\nRALPH_DONE\n")
	}
	if n := len(lines); n > 0 && !strings.HasSuffix(lines[n-1], "\n") {
		lines[n-1] += "\n"
	}
	return append(lines, "\n## Status\n", "\n", "RALPH_DONE\n")
}

func insert(lines []string, at int, add ...string) []string {
	out := make([]string, 0, len(lines)+len(add))
	out = append(out, lines[:at]...)
	out = append(out, add...)
	return append(out, lines[at:]...)
}
