package activities

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/activities/git"
	"github.com/durable-ralph/ralph/activities/github"
	"github.com/durable-ralph/ralph/activities/tasks"
)

// ErrTypePushRejected is the error type of a push that origin refused
// (the branch moved there).
const ErrTypePushRejected = "PushRejected"

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
	return filepath.Join(clone, stateDir, "worktrees", fmt.Sprintf("issue-%d", number))
}

// PrepareIssueWorktree makes the work tree of an issue: the clone's
// .ralph/worktrees/issue-N on the issue's branch, created from origin's
// base branch, or continued when the branch exists from an earlier try
// (here or on origin). It writes the issue's text to tasks.IssueFile.
// Running it again finds what the first run made.
func (a *Agent) PrepareIssueWorktree(ctx context.Context, in WorktreeInput) (WorktreeResult, error) {
	repo, err := openWorkspace(ctx, in.Clone)
	if err != nil {
		return WorktreeResult{}, err
	}
	if err := excludeState(ctx, repo, in.Clone); err != nil {
		return WorktreeResult{}, err
	}
	env := gitAuth(ctx, repo, in.TokenEnv)
	if err := repo.Fetch(ctx, env, "origin", "+refs/heads/"+in.Base+":refs/remotes/origin/"+in.Base); err != nil {
		return WorktreeResult{}, fmt.Errorf("fetch %s from origin: %w", in.Base, err)
	}
	// An earlier try pushed from another machine: continue its branch.
	remoteBranch := "refs/remotes/origin/" + in.Branch
	_ = repo.Fetch(ctx, env, "origin", "+refs/heads/"+in.Branch+":"+remoteBranch)

	res := WorktreeResult{Dir: WorktreeDir(in.Clone, in.Number), Branch: in.Branch, BaseRef: "refs/remotes/origin/" + in.Base}
	if res.Continued, err = ensureWorktree(ctx, repo, res.Dir, in.Branch, remoteBranch, res.BaseRef); err != nil {
		return WorktreeResult{}, fmt.Errorf("make the work tree of issue #%d: %w", in.Number, err)
	}
	file := filepath.Join(res.Dir, filepath.FromSlash(tasks.IssueFile))
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return WorktreeResult{}, fmt.Errorf("write the issue: %w", err)
	}
	if err := os.WriteFile(file, []byte(in.Issue), 0o644); err != nil {
		return WorktreeResult{}, fmt.Errorf("write the issue: %w", err)
	}
	return res, nil
}

// ensureWorktree makes dir a work tree of repo with branch checked out.
// A work tree that is there already (an earlier attempt made it) is
// kept; otherwise it is added for the branch when it exists, else for a
// new branch started at the first of from that exists. continued says
// the branch or the work tree was there before.
func ensureWorktree(ctx context.Context, repo *git.Repo, dir, branch string, from ...string) (continued bool, err error) {
	if wt, err := git.Open(ctx, dir); err == nil && sameDir(wt.Dir, dir) {
		current, err := wt.Branch(ctx)
		if err != nil {
			return false, err
		}
		if current != branch {
			if err := wt.Checkout(ctx, branch); err != nil {
				return false, fmt.Errorf("work tree %s: %w", dir, err)
			}
		}
		return true, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return false, fmt.Errorf("create %s: %w", filepath.Dir(dir), err)
	}
	if repo.HasRef(ctx, "refs/heads/"+branch) {
		return true, repo.AddWorktree(ctx, dir, branch, "", false)
	}
	for i, ref := range from {
		if repo.HasRef(ctx, ref) {
			// Starting from the first choice continues nothing only when
			// there is more than one: the first is then an earlier try's.
			return i == 0 && len(from) > 1, repo.AddWorktree(ctx, dir, branch, ref, true)
		}
	}
	return false, fmt.Errorf("none of %s exists to start branch %s from", strings.Join(from, ", "), branch)
}

// SessionWorktree is a git work tree of a clone that a session works in,
// so that several sessions work on one clone at once.
type SessionWorktree struct {
	// Clone is the absolute path of the clone.
	Clone string `json:"clone"`
	// Name names the work tree (.ralph/worktrees/<name>) and its branch
	// (ralph/<name>).
	Name string `json:"name"`
}

// worktreeNameRE matches a work tree name: a path element and a branch
// name part at once.
var worktreeNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*(\.[A-Za-z0-9_-]+)*$`)

// issueWorktreeRE matches the names of the issue queue's work trees.
var issueWorktreeRE = regexp.MustCompile(`^issue-[0-9]+$`)

// ValidWorktreeName reports what is wrong with name as a work tree name,
// nil if nothing.
func ValidWorktreeName(name string) error {
	switch {
	case len(name) > 63 || !worktreeNameRE.MatchString(name) || strings.HasSuffix(name, ".lock"):
		return fmt.Errorf("worktree name %q must be 1 to 63 letters, digits, -, _ and dots between them, not ending in .lock", name)
	case issueWorktreeRE.MatchString(name):
		return fmt.Errorf("worktree name %q is taken by the issue queue (issue-N): choose another", name)
	}
	return nil
}

// Dir is where the work tree lives: <clone>/.ralph/worktrees/<name>.
func (w SessionWorktree) Dir() string {
	return filepath.Join(w.Clone, stateDir, "worktrees", w.Name)
}

// Branch is the work tree's branch: ralph/<name>.
func (w SessionWorktree) Branch() string { return "ralph/" + w.Name }

// prepareWorktree makes the session's work tree: kept when it exists,
// else added on its branch (continued when the branch exists, else new
// from the clone's HEAD).
func prepareWorktree(ctx context.Context, w SessionWorktree, workspace string) error {
	if err := ValidWorktreeName(w.Name); err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeInvalidWorkspace, err)
	}
	if filepath.Clean(workspace) != w.Dir() {
		err := fmt.Errorf("the workspace %s is not the work tree %s", workspace, w.Dir())
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeInvalidWorkspace, err)
	}
	repo, err := openWorkspace(ctx, w.Clone)
	if err != nil {
		return err
	}
	if err := excludeState(ctx, repo, w.Clone); err != nil {
		return err
	}
	if _, err := ensureWorktree(ctx, repo, w.Dir(), w.Branch(), "HEAD"); err != nil {
		return fmt.Errorf("make the work tree %s of %s: %w", w.Name, w.Clone, err)
	}
	return nil
}

func sameDir(a, b string) bool {
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}

// PushInput names the branch to push.
type PushInput struct {
	Clone   string `json:"clone"`
	Branch  string `json:"branch"`
	BaseRef string `json:"base_ref"`
	// TokenEnv names the token variable for an https origin.
	TokenEnv string `json:"token_env,omitempty"`
}

// PushResult says what was pushed.
type PushResult struct {
	// Commits counts the branch's commits that are not on the base.
	Commits int `json:"commits"`
	// Log is their subjects, newest first (at most 20).
	Log    []string `json:"log,omitempty"`
	Head   string   `json:"head,omitempty"`
	Pushed bool     `json:"pushed"`
}

// PushBranch pushes an issue's branch to origin when it has commits of its
// own. Pushing what origin already has changes nothing, so a retry is
// safe; a branch that moved on origin is refused, never forced.
func (a *Agent) PushBranch(ctx context.Context, in PushInput) (PushResult, error) {
	repo, err := openWorkspace(ctx, in.Clone)
	if err != nil {
		return PushResult{}, err
	}
	branch := "refs/heads/" + in.Branch
	head, err := repo.Resolve(ctx, branch)
	if err != nil || head == "" {
		return PushResult{}, fmt.Errorf("branch %s: %w", in.Branch, err)
	}
	res := PushResult{Head: head}
	if res.Log, err = repo.Log(ctx, in.BaseRef, branch, 20); err != nil {
		return PushResult{}, err
	}
	if res.Commits, err = repo.CountCommitsBetween(ctx, in.BaseRef, branch); err != nil {
		return PushResult{}, err
	}
	if res.Commits == 0 {
		return res, nil
	}
	if err := repo.Push(ctx, gitAuth(ctx, repo, in.TokenEnv), "origin", in.Branch); err != nil {
		if strings.Contains(err.Error(), "rejected") || strings.Contains(err.Error(), "non-fast-forward") {
			return PushResult{}, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("origin refused %s: the branch there has commits this clone does not; merge them into the branch or delete it on origin, then add the ready label again (%v)", in.Branch, err),
				ErrTypePushRejected, nil)
		}
		return PushResult{}, fmt.Errorf("push %s: %w", in.Branch, err)
	}
	res.Pushed = true
	return res, nil
}

// gitAuth is the environment that gives git the GitHub token as an HTTP
// header for an https origin, through git's environment configuration
// rather than its command line (which other users can read).
func gitAuth(ctx context.Context, repo *git.Repo, tokenEnv string) []string {
	if !strings.HasPrefix(repo.Remote(ctx), "https://") {
		return nil
	}
	_, token := github.Token(os.Getenv, tokenEnv)
	if token == "" {
		return nil
	}
	basic := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + token))
	return []string{
		"GIT_CONFIG_COUNT=1",
		"GIT_CONFIG_KEY_0=http.extraHeader",
		"GIT_CONFIG_VALUE_0=Authorization: Basic " + basic,
	}
}
