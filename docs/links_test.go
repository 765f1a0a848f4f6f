// Package docs_test checks the documentation: the README and the files
// of docs/ link to files and headings that exist, and the Layout of
// development.md names every top-level folder of the repository.
package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/durable-ralph/ralph/contract"
)

// root is the repository, seen from this package's directory.
const root = ".."

// docs are the documents whose links are checked: the README and every
// Markdown file of docs/.
func docs(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{filepath.Join(root, "README.md")}, files...)
}

// link is a Markdown link, [text](target), as written inline; its text
// may run over lines.
var link = regexp.MustCompile(`\[[^\[\]]*\]\(([^()\s]+)\)`)

// heading is an ATX heading.
var heading = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)

// prose is the text of a Markdown file outside its fenced code blocks,
// which hold neither links nor headings; the lines of the blocks are
// kept, empty, so that line numbers stay.
func prose(text string) []string {
	lines := strings.Split(text, "\n")
	fence := ""
	for i, l := range lines {
		trimmed := strings.TrimSpace(l)
		switch {
		case fence == "" && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")):
			fence = trimmed[:3]
			lines[i] = ""
		case fence != "":
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			lines[i] = ""
		}
	}
	return lines
}

// linkMarkup is a link in a heading, whose text alone makes the anchor.
var linkMarkup = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

// githubAnchor is the anchor GitHub gives a heading's text: lower case,
// link markup out, every character but letters, digits, spaces, '-' and
// '_' dropped (the backquotes of inline code too), spaces made '-'.
func githubAnchor(h string) string {
	h = linkMarkup.ReplaceAllString(h, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-', r == '_', unicode.IsLetter(r), unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors are the anchors of the headings of the Markdown file at path,
// with GitHub's -1, -2, … for a heading's text that repeats.
func anchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	out := map[string]bool{}
	for _, l := range prose(string(data)) {
		m := heading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		a := githubAnchor(m[1])
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// TestLinks checks every relative link of the README and of docs/*.md:
// the file or folder it names exists, and a #anchor names a heading of
// the Markdown file it points into.
func TestLinks(t *testing.T) {
	cache := map[string]map[string]bool{}
	checked := 0
	for _, doc := range docs(t) {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Join(prose(string(data)), "\n")
		for _, m := range link.FindAllStringSubmatchIndex(text, -1) {
			target := text[m[2]:m[3]]
			line := 1 + strings.Count(text[:m[0]], "\n")
			where := filepath.ToSlash(strings.TrimPrefix(doc, root+string(filepath.Separator))) + ":" + strconv.Itoa(line)
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			checked++
			file, frag, _ := strings.Cut(target, "#")
			path := doc
			if file != "" {
				if filepath.IsAbs(file) {
					t.Errorf("%s: %s: an absolute path; link relative to the file", where, target)
					continue
				}
				path = filepath.Join(filepath.Dir(doc), filepath.FromSlash(file))
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s: %s: no such file", where, target)
					continue
				}
			}
			if frag == "" {
				continue
			}
			if !strings.HasSuffix(path, ".md") {
				t.Errorf("%s: %s: an anchor into a file that is not Markdown", where, target)
				continue
			}
			if cache[path] == nil {
				cache[path] = anchors(t, path)
			}
			if !cache[path][frag] {
				t.Errorf("%s: %s: no heading of %s has the anchor #%s", where, target, filepath.Base(path), frag)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative link found: the test reads nothing")
	}
}

// TestAnchor pins the anchors GitHub gives the kinds of headings the
// documents have.
func TestAnchor(t *testing.T) {
	for h, want := range map[string]string{
		"Run a session":                                               "run-a-session",
		"`status` and `list` as JSON":                                 "status-and-list-as-json",
		"The agent's environment":                                     "the-agents-environment",
		"A workspace's ralph.yaml that runs commands":                 "a-workspaces-ralphyaml-that-runs-commands",
		"Agents: Claude Code, Codex, Gemini or any command":           "agents-claude-code-codex-gemini-or-any-command",
		"Scale on one worker (P2)":                                    "scale-on-one-worker-p2",
		"The dev server: one per state directory":                     "the-dev-server-one-per-state-directory",
		"People away from the terminal: Telegram, Slack and webhooks": "people-away-from-the-terminal-telegram-slack-and-webhooks",
	} {
		if got := githubAnchor(h); got != want {
			t.Errorf("githubAnchor(%q) = %q, want %q", h, got, want)
		}
	}
}

// TestLayoutNamesEveryFolder checks that the Layout section of
// development.md names every top-level folder of the repository (hidden
// ones aside) as `folder/`.
func TestLayoutNamesEveryFolder(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "docs", "development.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, layout, ok := strings.Cut(string(data), "\n## Layout\n")
	if !ok {
		t.Fatal("docs/development.md has no ## Layout section")
	}
	layout, _, _ = strings.Cut(layout, "\n## ")
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if !strings.Contains(layout, "| `"+e.Name()+"/` |") {
			t.Errorf("the Layout of docs/development.md has no row | `%s/` | for the folder %s", e.Name(), e.Name())
		}
	}
}

// TestSessionDiagram: the diagram of the session's states in
// docs/sessions.md is contract.SessionMoves, drawn by SessionDiagram.
func TestSessionDiagram(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "docs", "sessions.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "```mermaid\n" + contract.SessionDiagram() + "```\n"; !strings.Contains(string(data), want) {
		t.Fatalf("docs/sessions.md lacks the diagram of contract.SessionMoves; put this in its section \"The session's states\":\n%s", want)
	}
}
