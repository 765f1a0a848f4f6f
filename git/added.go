package git

import (
	"context"
	"strconv"
	"strings"
)

// AddedLine is a line that a commit added to a file.
type AddedLine struct {
	Commit string
	// File is the file's path in the commit, relative to the top of the
	// work tree; Line its line number there, from 1.
	File string
	Line int
	Text string
}

// AddedLines calls fn with every line added by the commits reachable from
// head and from none of not: each commit's own additions, and of a merge
// the lines that are in none of its parents (its conflict resolutions).
// Binary files are not read. fn returning false stops the walk.
func (r *Repo) AddedLines(ctx context.Context, head string, not []string, fn func(AddedLine) bool) error {
	args := []string{"-c", "core.quotePath=off", "log", "--no-color", "--no-ext-diff", "--no-textconv",
		"--format=\x01%H", "-p", "--cc", "-U0", "--src-prefix=a/", "--dst-prefix=b/", head}
	if len(not) > 0 {
		args = append(append(args, "--not"), not...)
	}
	out, err := r.git(ctx, args...)
	if err != nil {
		return err
	}
	var p patchReader
	for line := range strings.Lines(out) {
		if add, ok := p.read(strings.TrimSuffix(line, "\n")); ok && !fn(add) {
			return nil
		}
	}
	return nil
}

// patchReader follows the output of git log -p --cc line by line.
type patchReader struct {
	cur AddedLine
	// parents is how many prefix columns a hunk's lines have (1, or the
	// parents of a merge); 0 outside a hunk.
	parents int
}

// read takes one line of the log and returns the line it adds, if any.
func (p *patchReader) read(line string) (AddedLine, bool) {
	switch {
	case strings.HasPrefix(line, "\x01"):
		p.cur, p.parents = AddedLine{Commit: line[1:]}, 0
	case p.parents > 0 && line != "" && strings.ContainsRune(" +-\\", rune(line[0])):
		return p.hunkLine(line)
	case strings.HasPrefix(line, "diff "):
		p.cur.File, p.parents = "", 0
	case strings.HasPrefix(line, "+++ "):
		p.cur.File = headerPath(line[4:])
	case strings.HasPrefix(line, "@@"):
		p.parents, p.cur.Line = hunkStart(line)
	}
	return AddedLine{}, false
}

// hunkLine reads a line of a hunk: it is in the new file unless a parent
// column marks it removed, and added when every column does.
func (p *patchReader) hunkLine(line string) (AddedLine, bool) {
	if line[0] == '\\' || len(line) < p.parents { // "\ No newline at end of file"
		return AddedLine{}, false
	}
	prefix := line[:p.parents]
	if strings.Contains(prefix, "-") {
		return AddedLine{}, false
	}
	add := p.cur
	add.Text = line[p.parents:]
	p.cur.Line++
	return add, strings.Count(prefix, "+") == p.parents && add.File != ""
}

// hunkStart reads a hunk header, "@@ -a,b +c,d @@" or, for a merge of n
// parents, n+1 @ signs and n old ranges: the number of parent columns
// and the first line of the new file.
func hunkStart(line string) (parents, first int) {
	at := len(line) - len(strings.TrimLeft(line, "@"))
	for _, f := range strings.Fields(line[at:]) {
		if strings.HasPrefix(f, "@") {
			break
		}
		if rest, ok := strings.CutPrefix(f, "+"); ok {
			start, _, _ := strings.Cut(rest, ",")
			first, _ = strconv.Atoi(start)
		}
	}
	return at - 1, first
}

// headerPath is the path of a "+++ " header: "" for /dev/null, else
// without its b/ prefix, unquoted when git quoted it.
func headerPath(s string) string {
	s = strings.TrimSuffix(s, "\t") // git adds a tab after a name with a space
	if strings.HasPrefix(s, `"`) {
		if u, err := strconv.Unquote(s); err == nil {
			s = u
		}
	}
	if s == "/dev/null" {
		return ""
	}
	return strings.TrimPrefix(s, "b/")
}
