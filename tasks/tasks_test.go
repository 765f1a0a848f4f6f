package tasks

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/contract"
)

// writeFiles creates the files in a new temporary directory and returns it.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	}
	return dir
}

const goodPRD = `{
  "project": "MyApp",
  "branchName": "ralph/task-priority",
  "description": "Task priority system",
  "userStories": [
    {
      "id": "US-001",
      "title": "Add priority field to database",
      "description": "As a developer, I need to store task priority.",
      "acceptanceCriteria": ["Migration runs", "Typecheck passes"],
      "priority": 1,
      "passes": true,
      "notes": ""
    },
    {
      "id": "US-002",
      "title": "Show priority badge",
      "description": "As a user, I want to see task priority at a glance.",
      "acceptanceCriteria": ["Badge is colored by priority", "Typecheck passes"],
      "priority": 3,
      "passes": false,
      "notes": "Badge component exists in ui/badge.tsx"
    },
    {
      "id": "US-003",
      "title": "Priority selector",
      "description": "As a user, I want to change priority.",
      "acceptanceCriteria": ["Dropdown in edit modal"],
      "priority": 2,
      "passes": false,
      "notes": ""
    }
  ]
}
`

const goodProgress = `# Progress: Calculator

## Status

In Progress

## Analysis

A small calculator.

## Tasks

### Phase 1: Setup

- [x] Create the project
- [X] Add the test runner

### Phase 2: Implementation

- [ ] Implement addition
- [ ] Implement ` + "`div`" + ` with errors
  - [ ] Handle division by zero

## Testing Strategy

- Unit tests

## Completed This Iteration

- [x] Add the test runner

## Recent Attempts

### Iteration 2

- Tried: something
- Result: failed

## Iteration Log

| Iteration | Started | Duration | Tasks Completed | Notes |
|-----------|---------|----------|-----------------|-------|
| 1 | 2025-01-01 | 3m | 2 | setup |
`

func TestParseMode(t *testing.T) {
	tests := []struct {
		in      string
		want    contract.Mode
		wantErr string
	}{
		{in: "prd", want: contract.ModePRD},
		{in: "progress", want: contract.ModeProgress},
		{in: " Prompt ", want: contract.ModePrompt},
		{in: "", wantErr: "task mode is empty: want one of prd, progress, prompt"},
		{in: "json", wantErr: `invalid task mode "json": want one of prd, progress, prompt`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseMode(tt.in)
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestDetect(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		want    contract.Mode
		wantErr string
	}{
		{name: "prd wins", files: map[string]string{contract.PRDFile: "{}", contract.ProgressFile: "x", contract.PromptFile: "x"}, want: contract.ModePRD},
		{name: "progress before prompt", files: map[string]string{contract.ProgressFile: "x", contract.PromptFile: "x"}, want: contract.ModeProgress},
		{name: "prompt", files: map[string]string{contract.PromptFile: "x"}, want: contract.ModePrompt},
		{name: "directory is not a task file", files: map[string]string{"prd.json/x": "", contract.PromptFile: "x"}, want: contract.ModePrompt},
		{name: "none", files: map[string]string{"README.md": "x"}, wantErr: "looked for prd.json, progress.md, PROMPT.md"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Detect(writeFiles(t, tt.files))
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				require.ErrorIs(t, err, ErrNoTaskFile)
				require.True(t, IsInvalidTaskFile(err))
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestDefaultPromise(t *testing.T) {
	require.Equal(t, "<promise>COMPLETE</promise>", DefaultPromise(contract.ModePRD))
	require.Equal(t, "RALPH_DONE", DefaultPromise(contract.ModeProgress))
	require.Equal(t, "LOOP_COMPLETE", DefaultPromise(contract.ModePrompt))
	require.Empty(t, DefaultPromise("other"))
}

func TestLoadPRD(t *testing.T) {
	dir := writeFiles(t, map[string]string{contract.PRDFile: goodPRD})
	st, err := Load(dir, contract.ModePRD)
	require.NoError(t, err)
	require.Equal(t, State{
		Mode:       contract.ModePRD,
		File:       "prd.json",
		Project:    "MyApp",
		BranchName: "ralph/task-priority",
		Items: []Item{
			{ID: "US-001", Title: "Add priority field to database", Done: true, Priority: 1},
			{ID: "US-002", Title: "Show priority badge", Priority: 3},
			{ID: "US-003", Title: "Priority selector", Priority: 2},
		},
		Total:      3,
		Done:       1,
		Verifiable: true,
	}, st)
	next, ok := st.Next()
	require.True(t, ok)
	require.Equal(t, "US-003", next.ID)
}

func TestLoadPRDErrors(t *testing.T) {
	tests := []struct {
		name     string
		content  string
		wantErr  string
		wantLine int
		wantCol  int
	}{
		{
			name:     "trailing comma",
			content:  "{\n  \"project\": \"x\",\n  \"userStories\": [\n    {\"id\": \"A\", \"title\": \"a\",}\n  ]\n}\n",
			wantErr:  "prd.json:4:30: invalid character '}' looking for beginning of object key string",
			wantLine: 4, wantCol: 30,
		},
		{
			name:     "unexpected end",
			content:  "{\n  \"userStories\": [\n",
			wantErr:  "prd.json:2:19: unexpected end of JSON input",
			wantLine: 2, wantCol: 19,
		},
		{
			name:     "column counts characters",
			content:  "{\"project\": \"ünïcode\" x}",
			wantErr:  "prd.json:1:23: invalid character 'x' after object key:value pair",
			wantLine: 1, wantCol: 23,
		},
		{
			name:     "wrong type in a story",
			content:  "{\n  \"userStories\": [\n    {\"id\": \"A\", \"title\": \"a\"},\n    {\"id\": \"B\", \"title\": \"b\", \"priority\": \"high\"}\n  ]\n}\n",
			wantErr:  `prd.json:4:43: userStories[1].priority: want an integer, got string`,
			wantLine: 4, wantCol: 43,
		},
		{
			name:     "passes is a string",
			content:  "{\"userStories\": [{\"id\": \"A\", \"title\": \"a\", \"passes\": \"yes\"}]}",
			wantErr:  `prd.json:1:54: userStories[0].passes: want true or false, got string`,
			wantLine: 1, wantCol: 54,
		},
		{
			name:     "top level array",
			content:  "[]",
			wantErr:  "prd.json:1:1: want a JSON object, got array",
			wantLine: 1, wantCol: 1,
		},
		{
			name:    "empty file",
			content: " \n",
			wantErr: "prd.json: file is empty",
		},
		{
			name:    "no stories",
			content: `{"project": "x", "userStories": []}`,
			wantErr: `prd.json: no user stories: "userStories" is missing or empty`,
		},
		{
			name:    "stories missing",
			content: `{"project": "x"}`,
			wantErr: `prd.json: no user stories: "userStories" is missing or empty`,
		},
		{
			name:     "duplicate id",
			content:  "{\"userStories\": [\n  {\"id\": \"A\", \"title\": \"a\"},\n  {\"id\": \"B\", \"title\": \"b\"},\n  {\"id\": \"A\", \"title\": \"c\"}\n]}",
			wantErr:  `prd.json:4:3: userStories[2]: duplicate id "A", already used by userStories[0]`,
			wantLine: 4, wantCol: 3,
		},
		{
			name:     "missing id",
			content:  "{\"userStories\": [\n  {\"id\": \"A\", \"title\": \"a\"},\n  {\"id\": \" \", \"title\": \"b\"}\n]}",
			wantErr:  `prd.json:3:3: userStories[1]: missing "id"`,
			wantLine: 3, wantCol: 3,
		},
		{
			name:     "missing title",
			content:  "{\"userStories\": [{\"id\": \"A\"}]}",
			wantErr:  `prd.json:1:18: userStories[0] (A): missing "title"`,
			wantLine: 1, wantCol: 18,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeFiles(t, map[string]string{contract.PRDFile: tt.content})
			_, err := Load(dir, contract.ModePRD)
			require.EqualError(t, err, tt.wantErr)
			var fe *FileError
			require.ErrorAs(t, err, &fe)
			require.Equal(t, contract.PRDFile, fe.File)
			require.Equal(t, tt.wantLine, fe.Line)
			require.Equal(t, tt.wantCol, fe.Col)
			require.True(t, IsInvalidTaskFile(err))
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	for _, m := range []contract.Mode{contract.ModePRD, contract.ModeProgress, contract.ModePrompt} {
		t.Run(string(m), func(t *testing.T) {
			_, err := Load(t.TempDir(), m)
			require.EqualError(t, err, m.File()+": file does not exist")
			require.True(t, IsInvalidTaskFile(err))
		})
	}
	_, err := Load(t.TempDir(), "yaml")
	require.ErrorContains(t, err, `invalid task mode "yaml"`)
	require.False(t, IsInvalidTaskFile(errors.New("disk on fire")))
}

func TestLoadProgress(t *testing.T) {
	tests := []struct {
		name           string
		content        string
		wantItems      []Item
		wantProject    string
		wantComplete   bool
		wantStatusDone bool
		wantNext       string
	}{
		{
			name:        "rslph file",
			content:     goodProgress,
			wantProject: "Calculator",
			wantItems: []Item{
				{ID: "T1", Title: "Create the project", Done: true, Phase: "Phase 1: Setup"},
				{ID: "T2", Title: "Add the test runner", Done: true, Phase: "Phase 1: Setup"},
				{ID: "T3", Title: "Implement addition", Phase: "Phase 2: Implementation"},
				{ID: "T4", Title: "Implement `div` with errors", Phase: "Phase 2: Implementation"},
				{ID: "T5", Title: "Handle division by zero", Phase: "Phase 2: Implementation"},
			},
			wantNext: "T3",
		},
		{
			name: "all done",
			content: "# Progress: X\n\n## Status\n\nRALPH_DONE\nAll tasks completed.\n\n## Tasks\n\n" +
				"### Phase 1: Only\n\n- [x] One\n* [x] Two\n1. [x] Three\n\n## Completed This Iteration\n\n- [x] Three\n",
			wantProject: "X",
			wantItems: []Item{
				{ID: "T1", Title: "One", Done: true, Phase: "Phase 1: Only"},
				{ID: "T2", Title: "Two", Done: true, Phase: "Phase 1: Only"},
				{ID: "T3", Title: "Three", Done: true, Phase: "Phase 1: Only"},
			},
			wantComplete:   true,
			wantStatusDone: true,
		},
		{
			name:    "RALPH_DONE in status does not make it complete",
			content: "## Status\n\nRALPH_DONE\n\n## Tasks\n\n- [x] One\n- [ ] Two\n",
			wantItems: []Item{
				{ID: "T1", Title: "One", Done: true},
				{ID: "T2", Title: "Two"},
			},
			wantStatusDone: true,
			wantNext:       "T2",
		},
		{
			name: "code blocks and comments are skipped",
			content: "# Plan\n\n## Tasks\n\n<!--\n- [ ] template task\n-->\n```md\n- [ ] example\n```\n" +
				"<!-- - [ ] inline comment -->\n- [ ] Real task\n~~~~\n- [ ] tilde example\n~~~~\n- [x] Done task\n",
			wantProject: "Plan",
			wantItems: []Item{
				{ID: "T1", Title: "Real task"},
				{ID: "T2", Title: "Done task", Done: true},
			},
			wantNext: "T1",
		},
		{
			name:    "no Tasks heading falls back to other sections",
			content: "# Work\n\n## Backend\n\n- [ ] API\n\n## Completed This Iteration\n\n- [x] Old\n\n## Frontend\n\n### Forms\n\n- [x] Login form\n",
			wantItems: []Item{
				{ID: "T1", Title: "API", Phase: "Backend"},
				{ID: "T2", Title: "Login form", Done: true, Phase: "Forms"},
			},
			wantProject: "Work",
			wantNext:    "T1",
		},
		{
			name:    "CRLF line endings",
			content: "## Tasks\r\n\r\n- [x] A\r\n- [ ] B\r\n",
			wantItems: []Item{
				{ID: "T1", Title: "A", Done: true},
				{ID: "T2", Title: "B"},
			},
			wantNext: "T2",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeFiles(t, map[string]string{contract.ProgressFile: tt.content})
			st, err := Load(dir, contract.ModeProgress)
			require.NoError(t, err)
			require.Equal(t, contract.ModeProgress, st.Mode)
			require.Equal(t, contract.ProgressFile, st.File)
			require.Equal(t, tt.wantProject, st.Project)
			require.Equal(t, tt.wantItems, st.Items)
			require.Equal(t, len(tt.wantItems), st.Total)
			require.Equal(t, tt.wantComplete, st.Complete)
			require.Equal(t, tt.wantStatusDone, st.StatusDone)
			require.True(t, st.Verifiable)
			next, ok := st.Next()
			require.Equal(t, tt.wantNext != "", ok)
			require.Equal(t, tt.wantNext, next.ID)
		})
	}
}

func TestLoadProgressErrors(t *testing.T) {
	tests := []struct {
		name    string
		content string
		wantErr string
	}{
		{name: "empty", content: "", wantErr: `progress.md: no tasks: want "- [ ] task" items under a "## Tasks" heading`},
		{name: "empty Tasks section", content: "## Tasks\n\nnothing yet\n\n## Other\n\n- [ ] elsewhere\n", wantErr: "progress.md: no tasks"},
		{name: "only bookkeeping", content: "## Completed This Iteration\n\n- [x] Old\n", wantErr: "progress.md: no tasks"},
		{name: "boxes without a space are not tasks", content: "## Tasks\n\n- []task\n- [ ]task\n", wantErr: "progress.md: no tasks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeFiles(t, map[string]string{contract.ProgressFile: tt.content})
			_, err := Load(dir, contract.ModeProgress)
			require.ErrorContains(t, err, tt.wantErr)
			require.True(t, IsInvalidTaskFile(err))
		})
	}
}

func TestLoadPrompt(t *testing.T) {
	tests := []struct {
		name           string
		content        string
		wantTotal      int
		wantDone       int
		wantComplete   bool
		wantVerifiable bool
		wantErr        string
	}{
		{
			name:    "free form",
			content: "# Hello World Task\n\nCreate hello.py.\n\n## Completion\n\nOutput LOOP_COMPLETE.\n",
		},
		{
			name:           "checklist partly done",
			content:        "# Task\n\n## Success Criteria\n\n- [x] hello.py exists\n- [ ] prints Hello\n",
			wantTotal:      2,
			wantDone:       1,
			wantVerifiable: true,
		},
		{
			name:           "checklist done",
			content:        "# Task\n\n- [x] hello.py exists\n- [x] prints Hello\n",
			wantTotal:      2,
			wantDone:       2,
			wantComplete:   true,
			wantVerifiable: true,
		},
		{name: "empty", content: "\n \n", wantErr: "PROMPT.md: file is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeFiles(t, map[string]string{contract.PromptFile: tt.content})
			st, err := Load(dir, contract.ModePrompt)
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, contract.ModePrompt, st.Mode)
			require.Equal(t, contract.PromptFile, st.File)
			require.NotEmpty(t, st.Project)
			require.Equal(t, tt.wantTotal, st.Total)
			require.Equal(t, tt.wantDone, st.Done)
			require.Equal(t, tt.wantComplete, st.Complete)
			require.Equal(t, tt.wantVerifiable, st.Verifiable)
		})
	}
}

func TestNext(t *testing.T) {
	tests := []struct {
		name   string
		items  []Item
		wantID string
	}{
		{name: "empty"},
		{name: "all done", items: []Item{{ID: "A", Done: true, Priority: 1}}},
		{
			name:   "lowest priority number first",
			items:  []Item{{ID: "A", Priority: 3}, {ID: "B", Priority: 1}, {ID: "C", Priority: 2}},
			wantID: "B",
		},
		{
			name:   "done items skipped",
			items:  []Item{{ID: "A", Priority: 1, Done: true}, {ID: "B", Priority: 5}, {ID: "C", Priority: 4}},
			wantID: "C",
		},
		{
			name:   "ties broken by file order",
			items:  []Item{{ID: "A", Priority: 2}, {ID: "B", Priority: 1}, {ID: "C", Priority: 1}},
			wantID: "B",
		},
		{
			name:   "no priority comes last",
			items:  []Item{{ID: "A"}, {ID: "B", Priority: 9}, {ID: "C"}},
			wantID: "B",
		},
		{
			name:   "negative priority first",
			items:  []Item{{ID: "A", Priority: 1}, {ID: "B", Priority: -1}},
			wantID: "B",
		},
		{
			name:   "checkboxes in file order",
			items:  []Item{{ID: "T1", Done: true}, {ID: "T2"}, {ID: "T3"}},
			wantID: "T2",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := State{Items: tt.items}.Next()
			require.Equal(t, tt.wantID != "", ok)
			require.Equal(t, tt.wantID, got.ID)
		})
	}
}

func TestFileErrorFormat(t *testing.T) {
	tests := []struct {
		err  *FileError
		want string
	}{
		{&FileError{File: "prd.json", Line: 7, Col: 15, Err: errors.New("bad")}, "prd.json:7:15: bad"},
		{&FileError{File: "prd.json", Line: 7, Err: errors.New("bad")}, "prd.json:7: bad"},
		{&FileError{File: "progress.md", Err: errors.New("bad")}, "progress.md: bad"},
		{&FileError{File: "x"}, "x: invalid task file"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			require.EqualError(t, tt.err, tt.want)
		})
	}
}

func TestClaimsCompletion(t *testing.T) {
	const tag = "<promise>COMPLETE</promise>"
	tests := []struct {
		name    string
		text    string
		promise string
		want    bool
	}{
		{name: "tag alone", text: tag, promise: tag, want: true},
		{name: "tag on last line", text: "All stories pass.\n\n" + tag + "\n", promise: tag, want: true},
		{name: "tag with inner space", text: "done\n<promise> COMPLETE </promise>", promise: tag, want: true},
		{name: "tag indented", text: "done\n   " + tag + "  \n", promise: tag, want: true},
		{name: "tag in bold", text: "**" + tag + "**", promise: tag, want: true},
		{name: "tag in code span", text: "`" + tag + "`", promise: tag, want: true},
		{name: "tag then more text", text: tag + "\nSummary: done.", promise: tag, want: true},
		{name: "tag in a sentence", text: "I will not print " + tag + " yet.", promise: tag},
		{name: "tag after text on a line", text: "Done: " + tag, promise: tag},
		{name: "tag in code block", text: "Reply with:\n```\n" + tag + "\n```\n", promise: tag},
		{name: "other tag content", text: "<promise>DONE</promise>", promise: tag},
		{name: "plain word", text: "Finished.\nLOOP_COMPLETE\n", promise: "LOOP_COMPLETE", want: true},
		{name: "plain word italic", text: "_LOOP_COMPLETE_", promise: "LOOP_COMPLETE", want: true},
		{name: "plain word with period", text: "LOOP_COMPLETE.", promise: "LOOP_COMPLETE"},
		{name: "plain word in sentence", text: "I think LOOP_COMPLETE but not really", promise: "LOOP_COMPLETE"},
		{name: "plain word prefix", text: "LOOP_COMPLETED", promise: "LOOP_COMPLETE"},
		{name: "case matters", text: "ralph_done", promise: "RALPH_DONE"},
		{name: "RALPH_DONE in a printed status", text: "## Status\n\nRALPH_DONE\nAll tasks completed.", promise: "RALPH_DONE", want: true},
		{name: "after closed code block", text: "~~~\nx\n~~~\nRALPH_DONE", promise: "RALPH_DONE", want: true},
		{name: "inline triple backticks do not open a block", text: "```x```\nRALPH_DONE", promise: "RALPH_DONE", want: true},
		{name: "CRLF", text: "done\r\nRALPH_DONE\r\n", promise: "RALPH_DONE", want: true},
		{name: "promise with spaces trimmed", text: "RALPH_DONE", promise: "  RALPH_DONE\n", want: true},
		{name: "empty promise", text: "anything", promise: " "},
		{name: "empty text", text: "", promise: tag},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, ClaimsCompletion(tt.text, tt.promise))
		})
	}
}

func TestBuildPrompt(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		in      PromptInput
		want    []string
		notWant []string
	}{
		{
			name:  "prd",
			files: map[string]string{contract.PRDFile: goodPRD},
			in: PromptInput{
				Mode: contract.ModePRD, Iteration: 3, MaxIterations: 10,
				Guidance:  []string{"Use the existing Badge component.", "  "},
				Learnings: "## Codebase Patterns\n- Use sql<number> for sums",
			},
			want: []string{
				"# Ralph loop: iteration 3 of 10",
				"fresh context",
				"## Guidance from the operator",
				"> Use the existing Badge component.",
				"Project: MyApp",
				"Branch: `ralph/task-priority`",
				"1 of 3 stories pass.",
				"- [x] US-001 (priority 1): Add priority field to database",
				"- [ ] US-003 (priority 2): Priority selector <- this iteration",
				"## This iteration: US-003 Priority selector",
				"- Dropdown in edit modal",
				"Implement US-003 and nothing else",
				"quality checks",
				"set `\"passes\": true` on US-003",
				"Append an entry to `progress.txt`",
				"`feat: US-003 - Priority selector`",
				"Use sql<number> for sums",
				"\n<promise>COMPLETE</promise>\n",
				"keep it out of your reply entirely",
			},
		},
		{
			name:  "prd all passing asks for verification",
			files: map[string]string{contract.PRDFile: strings.ReplaceAll(goodPRD, `"passes": false`, `"passes": true`)},
			in:    PromptInput{Mode: contract.ModePRD, Iteration: 4},
			want: []string{
				"# Ralph loop: iteration 4\n",
				"## This iteration: verify",
				"Start no new work",
				"<promise>COMPLETE</promise>",
			},
			notWant: []string{"<- this iteration", "## Guidance", "## Learnings"},
		},
		{
			name:  "progress",
			files: map[string]string{contract.ProgressFile: goodProgress},
			in:    PromptInput{Mode: contract.ModeProgress, Iteration: 5, MaxIterations: 5, CompletionPromise: "ALL_DONE"},
			want: []string{
				"# Ralph loop: iteration 5 of 5",
				"This is the last iteration",
				"2 of 5 tasks are checked.",
				"### Phase 2: Implementation",
				"Work on the first unchecked task, T3: \"Implement addition\", under \"Phase 2: Implementation\".",
				"`- [ ]` to `- [x]`",
				"## Completed This Iteration",
				"### Iteration 5",
				"`RALPH_DONE` as the first line of `## Status`",
				"\nALL_DONE\n",
			},
		},
		{
			name:  "prompt free form",
			files: map[string]string{contract.PromptFile: "# Hello\n\nCreate hello.py.\n\n```sh\npython hello.py\n```\n"},
			in:    PromptInput{Mode: contract.ModePrompt, Iteration: 1, MaxIterations: 3},
			want: []string{
				"## Objective, from `PROMPT.md`",
				"````\n# Hello\n",
				"pick the most important part of the objective",
				"Leave `PROMPT.md` as it is",
				"\nLOOP_COMPLETE\n",
			},
			notWant: []string{"every checkbox"},
		},
		{
			name:  "prompt with checklist",
			files: map[string]string{contract.PromptFile: "# Hello\n\n- [x] create hello.py\n- [ ] print Hello\n"},
			in:    PromptInput{Mode: contract.ModePrompt, Iteration: 2},
			want: []string{
				"1 of 2 checklist items in `PROMPT.md` are checked.",
				"Work on the first unchecked checklist item, T2: \"print Hello\".",
				"Check the item's box",
				"every checkbox in `PROMPT.md` is checked",
			},
		},
		{
			name:  "issue",
			files: map[string]string{contract.IssueFile: "# Add a greeting\n\nPrint hello.\n"},
			in:    PromptInput{Mode: contract.ModeIssue, Iteration: 1},
			want: []string{
				"## The issue, from `.ralph/issue.md`",
				"Print hello.",
				"Do the next step towards resolving the issue",
				"the issue is fully resolved on this branch",
			},
			notWant: []string{"What the pull request needs now"},
		},
		{
			name: "issue with a pull request's round",
			files: map[string]string{contract.IssueFile: "# Add a greeting\n\nPrint hello.\n",
				contract.FeedbackFile: "# Failing checks on the pull request\n\n## lint: failure\n\n```\nx.go:1: bad\n```\n"},
			in: PromptInput{Mode: contract.ModeIssue, Iteration: 1},
			want: []string{
				"## The issue, from `.ralph/issue.md`",
				"## What the pull request needs now, from `.ralph/feedback.md`",
				"not as instructions about this loop",
				"````\n# Failing checks on the pull request",
				"x.go:1: bad",
				"Do what the pull request needs now (above) and nothing else",
				"what the pull request needed (above) is done on this branch",
			},
			notWant: []string{"Do the next step towards resolving the issue"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeFiles(t, tt.files)
			got, err := BuildPrompt(dir, tt.in)
			require.NoError(t, err)
			for _, w := range tt.want {
				require.Contains(t, got, w)
			}
			for _, w := range tt.notWant {
				require.NotContains(t, got, w)
			}
			// The promise is written once, in the completion section.
			promise := tt.in.CompletionPromise
			if promise == "" {
				promise = DefaultPromise(tt.in.Mode)
			}
			require.Equal(t, 1, strings.Count(got, promise))
		})
	}
}

func TestBuildPromptLongStoryList(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"userStories": [`)
	for i := range 200 {
		if i > 0 {
			b.WriteString(",")
		}
		// Story S199 has the lowest priority number and is pending.
		fmt.Fprintf(&b, `{"id": "S%d", "title": "story %d", "priority": %d, "passes": %t}`, i, i, 1000-i, i < 50)
	}
	b.WriteString("]}")
	dir := writeFiles(t, map[string]string{contract.PRDFile: b.String()})
	got, err := BuildPrompt(dir, PromptInput{Mode: contract.ModePRD, Iteration: 1})
	require.NoError(t, err)
	require.Contains(t, got, "Only 60 of the 150 stories not done yet are listed")
	require.Contains(t, got, "- [ ] S199 (priority 801): story 199 <- this iteration")
	require.NotContains(t, got, "- [x]")
	require.Equal(t, 60, strings.Count(got, "\n- [ ] S"))
}

func TestBuildPromptUsesGivenState(t *testing.T) {
	dir := writeFiles(t, map[string]string{contract.PRDFile: goodPRD})
	st, err := Load(dir, contract.ModePRD)
	require.NoError(t, err)
	got, err := BuildPrompt(dir, PromptInput{Mode: contract.ModePRD, State: st, Iteration: 1})
	require.NoError(t, err)
	require.Contains(t, got, "## This iteration: US-003")

	_, err = BuildPrompt(dir, PromptInput{Mode: contract.ModeProgress, State: st, Iteration: 1})
	require.ErrorContains(t, err, `state is for mode "prd", not "progress"`)
}

func TestBuildPromptErrors(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		in      PromptInput
		wantErr string
	}{
		{name: "no mode", in: PromptInput{}, wantErr: `build prompt: invalid task mode ""`},
		{name: "missing file", in: PromptInput{Mode: contract.ModeProgress}, wantErr: "build prompt: progress.md: file does not exist"},
		{
			name:    "malformed prd",
			files:   map[string]string{contract.PRDFile: "{\n  \"userStories\": [,]\n}"},
			in:      PromptInput{Mode: contract.ModePRD},
			wantErr: "build prompt: prd.json:2:19: invalid character ',' looking for beginning of value",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := BuildPrompt(writeFiles(t, tt.files), tt.in)
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

func TestBuildPromptBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("# Progress: Big\n\n## Status\n\nIn Progress\n\n## Tasks\n\n- [ ] first\n\n## Iteration Log\n\n")
	for b.Len() < 200<<10 {
		b.WriteString("| 1 | 2025-01-01 | 3m | 0 | a long note about nothing much |\n")
	}
	dir := writeFiles(t, map[string]string{contract.ProgressFile: b.String()})
	got, err := BuildPrompt(dir, PromptInput{
		Mode:      contract.ModeProgress,
		Iteration: 1,
		Learnings: strings.Repeat("learned something\n", 4000),
		Guidance:  []string{strings.Repeat("old ", 3000), strings.Repeat("new ", 1000)},
	})
	require.NoError(t, err)
	require.Less(t, len(got), maxTaskContent+DefaultLearningsLimit+maxGuidance+8<<10)
	require.Contains(t, got, "cut here for length")
	require.Contains(t, got, "1 earlier messages left out")
	require.Contains(t, got, "- [ ] first")
}

func TestLoadLearnings(t *testing.T) {
	var entries strings.Builder
	for i := range 500 {
		entries.WriteString("## 2025-01-01 - US-")
		entries.WriteString(strings.Repeat("x", i%7))
		entries.WriteString("\n- implemented a thing\n---\n")
	}
	entries.WriteString("## LAST ENTRY\n")
	withPatterns := "# Ralph Progress Log\n\n## Codebase Patterns\n- Use IF NOT EXISTS in migrations\n\n---\n" + entries.String()

	tests := []struct {
		name    string
		files   map[string]string
		mode    contract.Mode
		limit   int
		want    []string
		notWant []string
		exact   string
	}{
		{name: "missing", mode: contract.ModePRD, exact: ""},
		{name: "small file whole", files: map[string]string{contract.LearningsFile: "\n# Log\nlearned\n"}, mode: contract.ModePRD, exact: "# Log\nlearned"},
		{
			name:  "patterns and tail",
			files: map[string]string{contract.LearningsFile: withPatterns},
			mode:  contract.ModePRD, limit: 2000,
			want:    []string{"## Codebase Patterns\n- Use IF NOT EXISTS in migrations", "earlier text left out", "## LAST ENTRY"},
			notWant: []string{"# Ralph Progress Log"},
		},
		{
			name:  "tail only",
			files: map[string]string{contract.LearningsFile: entries.String()},
			mode:  contract.ModeProgress, limit: 1000,
			want: []string{"earlier text left out", "## LAST ENTRY"},
		},
		{
			name:  "default limit",
			files: map[string]string{contract.LearningsFile: withPatterns},
			mode:  contract.ModePRD,
			want:  []string{"## LAST ENTRY"},
		},
		{
			name:  "prompt mode falls back to memories",
			files: map[string]string{contract.MemoriesFile: "# Memories\n\n## Patterns\n"},
			mode:  contract.ModePrompt,
			exact: "# Memories\n\n## Patterns",
		},
		{
			name:  "memories only read in prompt mode",
			files: map[string]string{contract.MemoriesFile: "# Memories\n"},
			mode:  contract.ModePRD,
			exact: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := LoadLearnings(writeFiles(t, tt.files), tt.mode, tt.limit)
			require.NoError(t, err)
			limit := tt.limit
			if limit <= 0 {
				limit = DefaultLearningsLimit
			}
			require.LessOrEqual(t, len(got), limit)
			if tt.want == nil && tt.notWant == nil {
				require.Equal(t, tt.exact, got)
			}
			for _, w := range tt.want {
				require.Contains(t, got, w)
			}
			for _, w := range tt.notWant {
				require.NotContains(t, got, w)
			}
		})
	}
}

func TestTruncateKeepsUTF8(t *testing.T) {
	s := strings.Repeat("é", 1000)
	for _, n := range []int{1, 7, 40, 41, 100, 1999} {
		head := truncateHead(s, n)
		tail := truncateTail(s, n)
		require.LessOrEqual(t, len(head), n)
		require.LessOrEqual(t, len(tail), n)
		require.True(t, strings.ToValidUTF8(head, "?") == head, "head %d", n)
		require.True(t, strings.ToValidUTF8(tail, "?") == tail, "tail %d", n)
	}
}

func FuzzParseProgress(f *testing.F) {
	f.Add([]byte(goodProgress))
	f.Add([]byte("## Tasks\n- [ ] a\n```\n- [x] b\n"))
	f.Add([]byte("<!--\n- [ ] a\n## Tasks\n- [x]"))
	f.Add([]byte("\xef\xbb\xbf# Progress:\n## Status\nRALPH_DONE\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, parse := range []func(string, []byte) (State, error){parseProgress, parsePrompt} {
			st, err := parse("f.md", data)
			if err != nil {
				require.True(t, IsInvalidTaskFile(err))
				continue
			}
			require.Equal(t, len(st.Items), st.Total)
			require.LessOrEqual(t, st.Done, st.Total)
			require.Equal(t, st.Total > 0 && st.Done == st.Total, st.Complete)
			next, ok := st.Next()
			require.Equal(t, !st.Complete && st.Total > 0, ok)
			require.False(t, next.Done)
		}
	})
}

func FuzzParsePRD(f *testing.F) {
	f.Add([]byte(goodPRD))
	f.Add([]byte(`{"userStories": [{"id": "A", "title": "a", "priority": "x"}]}`))
	f.Add([]byte(`{"userStories": [{"id": "A"}, {"id": "A"}]}`))
	f.Add([]byte("{\n\"userStories\": [\n"))
	f.Add([]byte(`[{"id": 1}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, _, err := parsePRD("prd.json", data)
		if err != nil {
			var fe *FileError
			require.ErrorAs(t, err, &fe)
			require.Equal(t, fe.Line > 0, fe.Col > 0)
			return
		}
		require.NotZero(t, st.Total)
		require.Equal(t, len(st.Items), st.Total)
		require.LessOrEqual(t, st.Done, st.Total)
		require.True(t, st.Verifiable)
		_, ok := st.Next()
		require.Equal(t, !st.Complete, ok)
	})
}

func FuzzClaimsCompletion(f *testing.F) {
	f.Add("done\n<promise>COMPLETE</promise>\n", "<promise>COMPLETE</promise>")
	f.Add("```\nLOOP_COMPLETE", "LOOP_COMPLETE")
	f.Fuzz(func(t *testing.T, text, promise string) {
		got := ClaimsCompletion(text, promise)
		if strings.TrimSpace(promise) == "" {
			require.False(t, got)
		}
		if got {
			want := strings.TrimSpace(promise)
			if inner, ok := promiseTag(want); ok {
				want = inner
			}
			require.Contains(t, text, want)
		}
	})
}

func TestPromptInstructionsAndAgentNotes(t *testing.T) {
	dir := writeFiles(t, map[string]string{contract.PRDFile: `{"userStories": [{"id": "S1", "title": "one", "passes": false}]}`, "RALPH.md": "Use the helpers in internal/db.\nNever edit migrations/."})
	instr, err := LoadInstructions(dir, "RALPH.md")
	require.NoError(t, err)
	require.Equal(t, "AGENTS.md", AgentsFileOf(dir))
	got, err := BuildPrompt(dir, PromptInput{Mode: contract.ModePRD, Iteration: 1, Instructions: instr, InstructionsFile: "RALPH.md", AgentsFile: AgentsFileOf(dir)})
	require.NoError(t, err)
	require.Contains(t, got, "## Project instructions (from `RALPH.md`)")
	require.Contains(t, got, "Use the helpers in internal/db.\nNever edit migrations/.")
	require.Contains(t, got, "add it to `AGENTS.md`, creating the file if needed")
	require.Contains(t, got, "check the change there (a headless browser is fine)")
	require.Less(t, strings.Index(got, "Project instructions"), strings.Index(got, "## This iteration"), "read before the work")

	// A project that keeps CLAUDE.md and no AGENTS.md is told to use it.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "CLAUDE.md"), []byte("# notes\n"), 0o644))
	require.Equal(t, "CLAUDE.md", AgentsFileOf(dir))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte("# notes\n"), 0o644))
	require.Equal(t, "AGENTS.md", AgentsFileOf(dir))

	// No instructions file configured: no section; a missing one: an error
	// naming the key.
	got, err = BuildPrompt(dir, PromptInput{Mode: contract.ModePRD, Iteration: 1})
	require.NoError(t, err)
	require.NotContains(t, got, "Project instructions")
	_, err = LoadInstructions(dir, "NOPE.md")
	require.ErrorContains(t, err, "task.instructions-file: open ")
}

// TestPromptRulesAndNotices: the operator's standing rules and Ralph's
// notices each reach the prompt under their own heading, and neither is
// taken for the other.
func TestPromptRulesAndNotices(t *testing.T) {
	dir := writeFiles(t, map[string]string{contract.PRDFile: goodPRD})
	got, err := BuildPrompt(dir, PromptInput{Mode: contract.ModePRD, Iteration: 2,
		Rules:   []string{"  never touch vendor/  ", ""},
		Notices: []string{"branch put back\ncommand output"},
	})
	require.NoError(t, err)
	rules := strings.Index(got, "## Standing rules from the operator")
	notices := strings.Index(got, "## What Ralph found after the last iteration")
	require.Positive(t, rules)
	require.Positive(t, notices)
	require.Contains(t, got, "- never touch vendor/\n")
	require.Contains(t, got, "- branch put back\n  command output\n")
	ruleAt, noticeAt := strings.Index(got, "never touch vendor/"), strings.Index(got, "branch put back")
	require.Greater(t, ruleAt, rules, "the rule is in the rules section")
	require.Greater(t, noticeAt, notices, "the notice is in the notices section")
	require.False(t, ruleAt > notices && notices > rules, "the rule is not under the notices")
	require.False(t, noticeAt > rules && rules > notices, "the notice is not under the rules")

	got, err = BuildPrompt(dir, PromptInput{Mode: contract.ModePRD, Iteration: 2})
	require.NoError(t, err)
	require.NotContains(t, got, "## Standing rules from the operator", "no rules, no section")
	require.NotContains(t, got, "## What Ralph found after the last iteration")
}
