package claude

import (
	"encoding/json"
	"sort"
	"strings"
	"unicode"

	"github.com/durable-ralph/ralph/internal/words"
)

// maxSubjectLen bounds Event.ToolSubject, in bytes.
const maxSubjectLen = 300

// subjectKeys are the input fields that say what a tool call works on, by
// tool, most telling first. Tools not named here use the first of
// fallbackKeys they have, then their first string field.
var subjectKeys = map[string][]string{
	"Bash":         {"command"},
	"Read":         {"file_path"},
	"Write":        {"file_path"},
	"Edit":         {"file_path"},
	"MultiEdit":    {"file_path"},
	"NotebookEdit": {"notebook_path"},
	"Glob":         {"pattern"},
	"Grep":         {"pattern"},
	"WebFetch":     {"url"},
	"WebSearch":    {"query"},
	"Task":         {"description", "prompt"},
	"Agent":        {"description", "prompt"},
	"TodoWrite":    {},
}

var fallbackKeys = []string{"file_path", "path", "command", "pattern", "url", "query", "description"}

// toolSubject is what a tool call of name works on, from its input, on one
// line of at most maxSubjectLen bytes; "" when the input says nothing
// useful.
func toolSubject(name string, input json.RawMessage) string {
	var fields map[string]json.RawMessage
	if len(input) == 0 || json.Unmarshal(input, &fields) != nil {
		return ""
	}
	if name == "TodoWrite" {
		var todos []json.RawMessage
		if json.Unmarshal(fields["todos"], &todos) == nil {
			return words.Count(len(todos), "todo")
		}
		return ""
	}
	keys, known := subjectKeys[name]
	if !known {
		keys = fallbackKeys
	}
	for _, k := range keys {
		if s := stringField(fields, k); s != "" {
			return subjectLine(s)
		}
	}
	if known {
		return ""
	}
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if s := stringField(fields, k); s != "" {
			return subjectLine(s)
		}
	}
	return ""
}

func stringField(fields map[string]json.RawMessage, key string) string {
	var s string
	if raw, ok := fields[key]; !ok || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return strings.TrimSpace(s)
}

// subjectLine folds s onto one line (line ends become " ⏎ ", other control
// characters go) and cuts it to maxSubjectLen bytes, ending in "…".
func subjectLine(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n':
			b.WriteString(" ⏎ ")
		case r == '\t':
			b.WriteByte(' ')
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
		default:
			b.WriteRune(r)
		}
		if b.Len() > maxSubjectLen {
			break
		}
	}
	return words.Cut(b.String(), maxSubjectLen)
}
