package tasks

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/durable-ralph/ralph/contract"
)

// checkboxRE matches a GitHub task list item: a bullet or numbered list
// marker, then "[ ]", "[x]" or "[X]", then the text.
var checkboxRE = regexp.MustCompile(`^[ \t]*(?:[-*+]|[0-9]{1,9}[.)])[ \t]+\[([ xX])\](?:[ \t]+(.*))?$`)

// fence tracks whether a line-by-line scan is inside a fenced code block.
type fence struct {
	char byte // '`' or '~' while inside a block, 0 outside
	n    int  // length of the opening fence
}

// skip updates the fence state with line and reports whether the line is
// part of a code block (fence lines included).
func (f *fence) skip(line string) bool {
	t := strings.TrimSpace(line)
	if f.char != 0 {
		if run := leadingRun(t, f.char); run >= f.n && strings.TrimSpace(t[run:]) == "" {
			f.char, f.n = 0, 0
		}
		return true
	}
	for _, c := range []byte{'`', '~'} {
		// The info string of a backtick fence cannot hold a backtick: such
		// a line is an inline code span.
		if run := leadingRun(t, c); run >= 3 && (c != '`' || !strings.Contains(t[run:], "`")) {
			f.char, f.n = c, run
			return true
		}
	}
	return false
}

// leadingRun returns how many times c repeats at the start of s.
func leadingRun(s string, c byte) int {
	n := 0
	for n < len(s) && s[n] == c {
		n++
	}
	return n
}

// checkbox is one task list item found in a markdown file.
type checkbox struct {
	text string
	done bool
	h2   string // the enclosing "## " heading
	h3   string // the enclosing "### " heading, if under the same h2
}

// mdDoc is what the task parsers need from a markdown file.
type mdDoc struct {
	title    string     // text of the first "# " heading
	boxes    []checkbox // outside code blocks and HTML comments
	sections []string   // the "## " headings, in order
	status   []string   // non-blank lines of the "## Status" section
}

// scanMarkdown reads the headings, task list items and status of a markdown
// document. It is line based and knows only as much markdown as task files
// use: ATX headings, list items, fenced code blocks and HTML comments.
func scanMarkdown(data []byte) mdDoc {
	data = bytes.TrimPrefix(data, utf8BOM)
	var (
		doc       mdDoc
		code      fence
		inComment bool
		h2, h3    string
	)
	for line := range strings.Lines(string(data)) {
		line = strings.TrimRight(line, "\r\n")
		if inComment {
			inComment = !strings.Contains(line, "-->")
			continue
		}
		if code.skip(line) {
			continue
		}
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "<!--"); ok {
			inComment = !strings.Contains(rest, "-->")
			continue
		}
		if level, text, ok := heading(line); ok {
			switch level {
			case 1:
				if doc.title == "" {
					doc.title = text
				}
				h2, h3 = "", ""
			case 2:
				h2, h3 = text, ""
				doc.sections = append(doc.sections, text)
			case 3:
				h3 = text
			}
			continue
		}
		if m := checkboxRE.FindStringSubmatch(line); m != nil {
			doc.boxes = append(doc.boxes, checkbox{
				text: strings.TrimSpace(m[2]),
				done: m[1] != " ",
				h2:   h2,
				h3:   h3,
			})
			continue
		}
		if strings.EqualFold(h2, "Status") && strings.TrimSpace(line) != "" {
			doc.status = append(doc.status, strings.TrimSpace(line))
		}
	}
	return doc
}

// heading parses an ATX heading such as "## Tasks ##".
func heading(line string) (level int, text string, ok bool) {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 {
		return 0, "", false
	}
	level = leadingRun(t, '#')
	if level == 0 || level > 6 {
		return 0, "", false
	}
	rest := t[level:]
	if rest != "" && rest[0] != ' ' && rest[0] != '\t' {
		return 0, "", false
	}
	rest = strings.TrimSpace(rest)
	// A closing sequence of #s is not part of the text.
	if trimmed := strings.TrimRight(rest, "#"); trimmed == "" || strings.HasSuffix(trimmed, " ") || strings.HasSuffix(trimmed, "\t") {
		rest = strings.TrimSpace(trimmed)
	}
	return level, rest, true
}

// isTasksSection reports whether an "## " heading opens the task list of a
// progress.md, such as "Tasks" or "Tasks (12)".
func isTasksSection(h2 string) bool {
	return strings.HasPrefix(strings.ToLower(h2), "tasks")
}

// bookkeepingSections are progress.md sections whose checkboxes record
// history rather than work to do.
var bookkeepingSections = []string{"status", "completed this iteration", "recent attempts", "iteration log"}

func isBookkeeping(h2 string) bool {
	for _, s := range bookkeepingSections {
		if strings.EqualFold(h2, s) {
			return true
		}
	}
	return false
}

// parseProgress parses an rslph progress.md. Tasks are the checkboxes under
// "## Tasks"; a file without that heading has its tasks taken from every
// section but the bookkeeping ones. A file with no tasks is a *FileError.
func parseProgress(name string, data []byte) (State, error) {
	doc := scanMarkdown(data)
	hasTasks := false
	for _, s := range doc.sections {
		if isTasksSection(s) {
			hasTasks = true
			break
		}
	}
	st := State{Mode: contract.ModeProgress, File: name, Project: progressName(doc.title)}
	for _, b := range doc.boxes {
		if hasTasks && !isTasksSection(b.h2) || !hasTasks && isBookkeeping(b.h2) {
			continue
		}
		phase := b.h3
		if phase == "" && !isTasksSection(b.h2) {
			phase = b.h2
		}
		st.Items = append(st.Items, checkboxItem(len(st.Items), b, phase))
	}
	if len(st.Items) == 0 {
		return State{}, &FileError{File: name, Err: errors.New(`no tasks: want "- [ ] task" items under a "## Tasks" heading`)}
	}
	for _, l := range doc.status {
		if strings.Contains(l, "RALPH_DONE") {
			st.StatusDone = true
		}
	}
	st.count()
	return st, nil
}

// progressName strips the "Progress:" prefix rslph puts in the title.
func progressName(title string) string {
	if len(title) >= len("progress:") && strings.EqualFold(title[:len("progress:")], "progress:") {
		return strings.TrimSpace(title[len("progress:"):])
	}
	return title
}

// parsePrompt parses a free-form PROMPT.md. Its checkboxes, wherever they
// are, are its items; without any, the file cannot confirm completion.
func parsePrompt(name string, data []byte) (State, error) {
	if len(bytes.TrimSpace(bytes.TrimPrefix(data, utf8BOM))) == 0 {
		return State{}, &FileError{File: name, Err: errors.New("file is empty")}
	}
	doc := scanMarkdown(data)
	st := State{Mode: contract.ModePrompt, File: name, Project: doc.title}
	for _, b := range doc.boxes {
		phase := b.h3
		if phase == "" {
			phase = b.h2
		}
		st.Items = append(st.Items, checkboxItem(len(st.Items), b, phase))
	}
	st.count()
	return st, nil
}

// parseIssue reads an issue written by the queue. An issue's own task
// list belongs to its author, not to the loop: it is not counted, so a
// completion claim in issue mode is checked by the check command alone.
func parseIssue(name string, data []byte) (State, error) {
	if len(bytes.TrimSpace(bytes.TrimPrefix(data, utf8BOM))) == 0 {
		return State{}, &FileError{File: name, Err: errors.New("file is empty")}
	}
	return State{Mode: contract.ModeIssue, File: name, Project: scanMarkdown(data).title}, nil
}

// checkboxItem makes the i-th (from 0) checkbox item of a file.
func checkboxItem(i int, b checkbox, phase string) Item {
	return Item{ID: fmt.Sprintf("T%d", i+1), Title: b.text, Done: b.done, Phase: phase}
}
