package activities

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
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
	local := "refs/heads/" + in.Branch
	if wt, err := git.Open(ctx, res.Dir); err == nil && sameDir(wt.Dir, res.Dir) {
		// The work tree exists: an earlier attempt made it.
		branch, err := wt.Branch(ctx)
		if err != nil {
			return WorktreeResult{}, err
		}
		if branch != in.Branch {
			if err := wt.Checkout(ctx, in.Branch); err != nil {
				return WorktreeResult{}, fmt.Errorf("work tree %s: %w", res.Dir, err)
			}
		}
		res.Continued = true
	} else {
		if err := os.MkdirAll(filepath.Dir(res.Dir), 0o755); err != nil {
			return WorktreeResult{}, fmt.Errorf("create %s: %w", filepath.Dir(res.Dir), err)
		}
		switch {
		case repo.HasRef(ctx, local):
			res.Continued = true
			err = repo.AddWorktree(ctx, res.Dir, in.Branch, "", false)
		case repo.HasRef(ctx, remoteBranch):
			res.Continued = true
			err = repo.AddWorktree(ctx, res.Dir, in.Branch, remoteBranch, true)
		default:
			err = repo.AddWorktree(ctx, res.Dir, in.Branch, res.BaseRef, true)
		}
		if err != nil {
			return WorktreeResult{}, fmt.Errorf("make the work tree of issue #%d: %w", in.Number, err)
		}
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
