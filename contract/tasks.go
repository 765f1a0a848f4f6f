package contract

// Mode names a task source.
type Mode string

// Task modes.
const (
	ModePRD      Mode = "prd"
	ModeProgress Mode = "progress"
	ModePrompt   Mode = "prompt"
	// ModeIssue works on one GitHub issue: the issue queue writes the
	// issue's text to IssueFile, which git never sees. It is never
	// detected, only set by the queue.
	ModeIssue Mode = "issue"
)

// Task files, relative to the workspace.
const (
	PRDFile      = "prd.json"
	ProgressFile = "progress.md"
	PromptFile   = "PROMPT.md"
	// LearningsFile is the append-only log in which iterations leave
	// learnings for the next ones (prd and prompt modes).
	LearningsFile = "progress.txt"
	// MemoriesFile is ralph-orchestrator's memory file, read in prompt mode
	// when there is no LearningsFile.
	MemoriesFile = ".ralph/agent/memories.md"
	// IssueFile holds the issue an issue-mode session works on, inside
	// Ralph's own directory so that it is never committed.
	IssueFile = ".ralph/issue.md"
)

// String returns the mode's name.
func (m Mode) String() string { return string(m) }

// File returns the task file of m, relative to the workspace, or "" if m is
// not a valid mode.
func (m Mode) File() string {
	switch m {
	case ModePRD:
		return PRDFile
	case ModeProgress:
		return ProgressFile
	case ModePrompt:
		return PromptFile
	case ModeIssue:
		return IssueFile
	}
	return ""
}

// valid reports whether m is one of the known modes.
func (m Mode) Valid() bool { return m.File() != "" }

// Verdicts of a review.
const (
	VerdictPass = "pass"
	VerdictFail = "fail"
)
