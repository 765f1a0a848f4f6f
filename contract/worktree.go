package contract

import (
	"fmt"
	"path/filepath"
)

// WorktreeInput asks for an issue's work tree in a clone.
type WorktreeInput struct {
	// Clone is the absolute path of the clone that holds the queue.
	Clone  string `json:"clone"`
	Number int    `json:"number"`
	// Branch is the issue's branch, Base the branch it starts from.
	Branch string `json:"branch"`
	Base   string `json:"base"`
	// Issue is the issue's text, written to tasks.IssueFile.
	Issue string `json:"issue"`
	// TokenEnv names the token variable for an https origin.
	TokenEnv string `json:"token_env,omitempty"`
}

// WorktreeResult is the issue's work tree.
type WorktreeResult struct {
	Dir    string `json:"dir"`
	Branch string `json:"branch"`
	// BaseRef is the ref the branch is compared with (origin/<base>).
	BaseRef string `json:"base_ref"`
	// Continued says the branch existed from an earlier try.
	Continued bool `json:"continued,omitempty"`
}

// WorktreeDir is where an issue's work tree lives in the clone.
func WorktreeDir(clone string, number int) string {
	return filepath.Join(clone, StateDir, "worktrees", fmt.Sprintf("issue-%d", number))
}

// SessionWorktree is a git work tree of a clone that a session works in,
// so that several sessions work on one clone at once.
type SessionWorktree struct {
	// Clone is the absolute path of the clone.
	Clone string `json:"clone"`
	// Name names the work tree (.ralph/worktrees/<name>) and its branch
	// (ralph/<name>).
	Name string `json:"name"`
	// From is the commit a new branch starts at (a fork's); "" is the
	// clone's HEAD.
	From string `json:"from,omitempty"`
	// Seed is the workspace of the session a fork is made from: its
	// Ralph-kept task file (IssueFile), which git does not hold, is
	// copied into a new work tree.
	Seed string `json:"seed,omitempty"`
}

// Dir is where the work tree lives: <clone>/.ralph/worktrees/<name>.
func (w SessionWorktree) Dir() string {
	return filepath.Join(w.Clone, StateDir, "worktrees", w.Name)
}

// Branch is the work tree's branch: ralph/<name>.
func (w SessionWorktree) Branch() string { return "ralph/" + w.Name }

// PushInput names the branch to push.
type PushInput struct {
	Clone   string `json:"clone"`
	Branch  string `json:"branch"`
	BaseRef string `json:"base_ref"`
	// TokenEnv names the token variable for an https origin.
	TokenEnv string `json:"token_env,omitempty"`
	// Lease, when set, pushes by force while origin's branch is still
	// at Lease (a rebased branch); "" never forces.
	Lease string `json:"lease,omitempty"`
}

// PushResult says what was pushed.
type PushResult struct {
	// Commits counts the branch's commits that are not on the base.
	Commits int `json:"commits"`
	// Log is their subjects, newest first (at most 20).
	Log    []string `json:"log,omitempty"`
	Head   string   `json:"head,omitempty"`
	Pushed bool     `json:"pushed"`
	// Change is what the branch changed against the base: its files with
	// their counts and the patch, at most MaxChange bytes (Truncated
	// says it was cut). A change set tells the members after this one.
	Change    string `json:"change,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
}

// MaxChange bounds PushResult.Change.
const MaxChange = 12 << 10

// StateDir is Ralph's directory in a workspace: records, logs, work trees
// and the checkpoint file. git never sees it.
const StateDir = ".ralph"

// CloneInput asks the worker of a host for a clone of Repo from URL, in
// its clones directory.
type CloneInput struct {
	Repo Repo   `json:"repo"`
	URL  string `json:"url"`
}

// CloneResult is where the clone is.
type CloneResult struct {
	Dir string `json:"dir"`
}
