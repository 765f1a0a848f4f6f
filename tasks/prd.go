package tasks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/durable-ralph/ralph/contract"
)

// PRD is a snarktank/ralph prd.json. Unknown fields are ignored so that
// files written by other tools still load.
type PRD struct {
	Project     string     `json:"project"`
	BranchName  string     `json:"branchName"`
	Description string     `json:"description"`
	UserStories []PRDStory `json:"userStories"`
}

// PRDStory is one user story of a prd.json.
type PRDStory struct {
	ID                 string   `json:"id"`
	Title              string   `json:"title"`
	Description        string   `json:"description"`
	AcceptanceCriteria []string `json:"acceptanceCriteria"`
	Priority           int      `json:"priority"`
	Passes             bool     `json:"passes"`
	Notes              string   `json:"notes"`
}

var utf8BOM = []byte("\xef\xbb\xbf")

// parsePRD parses and validates the prd.json data read from the file name.
// Every error it returns is a *FileError.
func parsePRD(name string, data []byte) (State, *PRD, error) {
	data = bytes.TrimPrefix(data, utf8BOM)
	if len(bytes.TrimSpace(data)) == 0 {
		return State{}, nil, &FileError{File: name, Err: errors.New("file is empty")}
	}
	var doc PRD
	if err := json.Unmarshal(data, &doc); err != nil {
		return State{}, nil, jsonError(name, data, err)
	}
	if len(doc.UserStories) == 0 {
		return State{}, nil, &FileError{File: name, Err: errors.New(`no user stories: "userStories" is missing or empty`)}
	}

	offsets := storyOffsets(data)
	storyErr := func(i int, format string, args ...any) error {
		fe := &FileError{File: name, Err: fmt.Errorf(format, args...)}
		if i < len(offsets) {
			fe.Line, fe.Col = position(data, offsets[i])
		}
		return fe
	}

	st := State{
		Mode:       contract.ModePRD,
		File:       name,
		Project:    strings.TrimSpace(doc.Project),
		BranchName: strings.TrimSpace(doc.BranchName),
		Items:      make([]Item, 0, len(doc.UserStories)),
	}
	seen := make(map[string]int, len(doc.UserStories))
	for i, s := range doc.UserStories {
		id := strings.TrimSpace(s.ID)
		if id == "" {
			return State{}, nil, storyErr(i, `userStories[%d]: missing "id"`, i)
		}
		if first, dup := seen[id]; dup {
			return State{}, nil, storyErr(i, "userStories[%d]: duplicate id %q, already used by userStories[%d]", i, id, first)
		}
		seen[id] = i
		title := strings.TrimSpace(s.Title)
		if title == "" {
			return State{}, nil, storyErr(i, `userStories[%d] (%s): missing "title"`, i, id)
		}
		st.Items = append(st.Items, Item{ID: id, Title: title, Done: s.Passes, Priority: s.Priority})
	}
	st.count()
	return st, &doc, nil
}

// story returns the story with the given id, or nil.
func (d *PRD) story(id string) *PRDStory {
	if d == nil {
		return nil
	}
	for i := range d.UserStories {
		if strings.TrimSpace(d.UserStories[i].ID) == id {
			return &d.UserStories[i]
		}
	}
	return nil
}

// jsonError turns an encoding/json error about data into a *FileError that
// points at the offending line and column.
func jsonError(name string, data []byte, err error) error {
	var (
		syntaxErr *json.SyntaxError
		typeErr   *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &syntaxErr):
		// Offset is just past the offending byte, or the length of the
		// input when it ended too soon.
		pos := int(syntaxErr.Offset) - 1
		if int(syntaxErr.Offset) >= len(data) && strings.Contains(syntaxErr.Error(), "unexpected end") {
			pos = len(bytes.TrimRightFunc(data, isJSONSpace))
		}
		line, col := position(data, pos)
		return &FileError{File: name, Line: line, Col: col, Err: errors.New(syntaxErr.Error())}
	case errors.As(err, &typeErr):
		pos := valueStart(data, int(typeErr.Offset))
		line, col := position(data, pos)
		var msg string
		if typeErr.Field == "" {
			msg = fmt.Sprintf("want a JSON object, got %s", typeErr.Value)
		} else {
			field := fieldPath(typeErr.Field, storyIndex(storyOffsets(data), pos))
			msg = fmt.Sprintf("%s: want %s, got %s", field, jsonKind(typeErr.Type), typeErr.Value)
		}
		return &FileError{File: name, Line: line, Col: col, Err: errors.New(msg)}
	default:
		return &FileError{File: name, Err: err}
	}
}

func isJSONSpace(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\r'
}

// position converts a byte offset in data into a line and a column, both
// from 1; the column counts characters, not bytes.
func position(data []byte, off int) (line, col int) {
	off = max(0, min(off, len(data)))
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	start := bytes.LastIndexByte(before, '\n') + 1
	return line, utf8.RuneCount(before[start:]) + 1
}

// valueStart returns the offset of the start of the JSON value that ends
// just before off, which is where encoding/json reports type errors. For
// arrays and objects off is just past the opening bracket.
func valueStart(data []byte, off int) int {
	p := min(off, len(data)) - 1
	if p < 0 {
		return 0
	}
	switch c := data[p]; {
	case c == '"':
		for i := p - 1; i >= 0; i-- {
			if data[i] != '"' {
				continue
			}
			backslashes := 0
			for j := i - 1; j >= 0 && data[j] == '\\'; j-- {
				backslashes++
			}
			if backslashes%2 == 0 {
				return i
			}
		}
	case isScalarByte(c):
		for p > 0 && isScalarByte(data[p-1]) {
			p--
		}
	}
	return p
}

// isScalarByte reports whether c can be part of a JSON number, true, false
// or null.
func isScalarByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'E'
}

// storyOffsets returns the offset at which each element of the top-level
// "userStories" array starts, or nil if data is not shaped that way. It is
// only used to locate errors, so it gives up quietly on anything odd.
func storyOffsets(data []byte) []int {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var offsets []int
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		if key, _ := tok.(string); key != "userStories" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil
			}
			continue
		}
		// A later duplicate key wins, as it does for json.Unmarshal.
		offsets = nil
		if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
			return nil
		}
		for dec.More() {
			start := skipSeparators(data, int(dec.InputOffset()))
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil
			}
			offsets = append(offsets, start)
		}
		if _, err := dec.Token(); err != nil {
			return nil
		}
	}
	return offsets
}

// skipSeparators returns the offset of the first byte at or after off that
// is neither JSON white space nor a comma.
func skipSeparators(data []byte, off int) int {
	for off < len(data) && (data[off] == ',' || isJSONSpace(rune(data[off]))) {
		off++
	}
	return off
}

// storyIndex returns the index of the story that contains offset pos, or -1.
func storyIndex(offsets []int, pos int) int {
	idx := -1
	for i, off := range offsets {
		if off > pos {
			break
		}
		idx = i
	}
	return idx
}

// fieldPath names a field of a type error in the user's terms, adding the
// story index encoding/json leaves out: "userStories.priority" in story 2
// becomes "userStories[2].priority".
func fieldPath(field string, story int) string {
	if story < 0 {
		return field
	}
	if field == "userStories" {
		return fmt.Sprintf("userStories[%d]", story)
	}
	if rest, ok := strings.CutPrefix(field, "userStories."); ok {
		return fmt.Sprintf("userStories[%d].%s", story, rest)
	}
	return field
}

// jsonKind describes the JSON value that decodes into t.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "a different type"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return t.String()
}
