package tasks

import (
	"errors"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/durable-ralph/ralph/contract"
)

// LoadMemories returns the end of the memories file at path, at most limit
// bytes, or "" when there is none. A memories file that is a symlink out
// of its directory is an *OutsideError.
func LoadMemories(path string, limit int) (string, error) {
	if path == "" {
		return "", nil
	}
	data, err := readInside(filepath.Dir(path), filepath.Base(path))
	var oe *OutsideError
	if errors.As(err, &oe) {
		oe.File, oe.Link = path, filepath.Join(filepath.Dir(path), oe.Link)
		return "", oe
	}
	if err != nil {
		return "", nil
	}
	return truncateTail(strings.TrimSpace(string(data)), limit), nil
}

// longestRun returns the length of the longest run of c in s.
func longestRun(s string, c byte) int {
	best, n := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n++
			best = max(best, n)
		} else {
			n = 0
		}
	}
	return best
}

const (
	cutTailNote = "\n[... cut here for length ...]\n"
	cutHeadNote = "[... earlier text left out for length ...]\n"
)

// truncateHead returns at most n bytes of s: its beginning, cut at a line
// end if one is near, followed by a note saying it was cut.
func truncateHead(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= len(cutTailNote) {
		return prefixRunes(s, n)
	}
	keep := prefixRunes(s, n-len(cutTailNote))
	if i := strings.LastIndexByte(keep, '\n'); i > len(keep)/2 {
		keep = keep[:i]
	}
	return keep + cutTailNote
}

// truncateTail returns at most n bytes of s: its end, starting at a line
// start if one is near, preceded by a note saying text was left out.
func truncateTail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= len(cutHeadNote) {
		return suffixRunes(s, n)
	}
	keep := suffixRunes(s, n-len(cutHeadNote))
	if i := strings.IndexByte(keep, '\n'); i >= 0 && i < len(keep)/2 {
		keep = keep[i+1:]
	}
	return cutHeadNote + keep
}

// prefixRunes returns the longest prefix of s of at most n bytes that does
// not split a character.
func prefixRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// suffixRunes returns the longest suffix of s of at most n bytes that does
// not split a character.
func suffixRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}

// LoadLearnings returns a bounded excerpt, at most limit bytes (or
// DefaultLearningsLimit if limit <= 0), of what earlier iterations recorded in
// dir: progress.txt in every mode, or in prompt mode, when there is no
// progress.txt, ralph-orchestrator's .ralph/agent/memories.md. When the file
// is too long, its "## Codebase Patterns" section is kept (up to half the
// budget) together with the end of the rest, the newest entries. A missing
// or unreadable file yields "": learnings are a help, never a requirement.
// One that is a symlink out of dir is an *OutsideError.
func LoadLearnings(dir string, m contract.Mode, limit int) (string, error) {
	if limit <= 0 {
		limit = DefaultLearningsLimit
	}
	names := []string{contract.LearningsFile}
	if m == contract.ModePrompt {
		names = append(names, contract.MemoriesFile)
	}
	for _, name := range names {
		data, err := readInside(dir, name)
		if isOutside(err) {
			return "", err
		}
		if err != nil {
			continue
		}
		return excerptLearnings(strings.TrimSpace(string(data)), limit), nil
	}
	return "", nil
}

// excerptLearnings cuts s to at most n bytes, keeping its Codebase Patterns
// section and its end.
func excerptLearnings(s string, n int) string {
	if len(s) <= n {
		return s
	}
	patterns, rest := splitPatterns(s)
	if patterns == "" {
		return truncateTail(s, n)
	}
	patterns = truncateHead(patterns, n/2)
	const sep = "\n\n"
	budget := n - len(patterns) - len(sep)
	if budget <= 0 {
		return patterns
	}
	return patterns + sep + truncateTail(rest, budget)
}

// splitPatterns returns the "## Codebase Patterns" section of a
// progress.txt, heading included, and the text around it. The section ends
// at the next heading of level 1 or 2 or at a "---" line.
func splitPatterns(s string) (patterns, rest string) {
	var (
		code       fence
		start, end = -1, len(s)
		off        int
	)
	for line := range strings.Lines(s) {
		lineStart := off
		off += len(line)
		if code.skip(line) {
			continue
		}
		level, text, isHeading := heading(strings.TrimRight(line, "\r\n"))
		if start < 0 {
			if isHeading && level == 2 && strings.EqualFold(text, "Codebase Patterns") {
				start = lineStart
			}
			continue
		}
		if isHeading && level <= 2 || strings.TrimSpace(line) == "---" {
			end = lineStart
			break
		}
	}
	if start < 0 {
		return "", s
	}
	return strings.TrimSpace(s[start:end]), strings.TrimSpace(s[:start] + s[end:])
}
