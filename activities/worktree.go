package activities

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/activities/github"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/git"
	"github.com/durable-ralph/ralph/tasks"
)

// PrepareIssueWorktree makes the work tree of an issue: the clone's
// .ralph/worktrees/issue-N on the issue's branch, created from origin's
// base branch, or continued when the branch exists from an earlier try
// (here or on origin). It writes the issue's text to tasks.IssueFile.
// Running it again finds what the first run made.
func (a *Agent) PrepareIssueWorktree(ctx context.Context, in contract.WorktreeInput) (contract.WorktreeResult, error) {
	defer HeartbeatWhile(ctx, gitHeartbeatInterval)()
	repo, unlock, err := a.lockClone(ctx, in.Clone)
	if err != nil {
		return contract.WorktreeResult{}, err
	}
	defer unlock()
	if err := excludeState(ctx, repo, in.Clone); err != nil {
		return contract.WorktreeResult{}, err
	}
	cred, err := a.gitAuth(ctx, repo, in.TokenEnv)
	if err != nil {
		return contract.WorktreeResult{}, err
	}
	if err := repo.Fetch(ctx, cred, "origin", "+refs/heads/"+in.Base+":refs/remotes/origin/"+in.Base); err != nil {
		return contract.WorktreeResult{}, fmt.Errorf("fetch %s from origin: %w", in.Base, err)
	}
	// An earlier try pushed from another machine: continue its branch.
	remoteBranch := "refs/remotes/origin/" + in.Branch
	_ = repo.Fetch(ctx, cred, "origin", "+refs/heads/"+in.Branch+":"+remoteBranch)

	res := contract.WorktreeResult{Dir: contract.WorktreeDir(in.Clone, in.Number), Branch: in.Branch, BaseRef: "refs/remotes/origin/" + in.Base}
	if res.Continued, err = ensureWorktree(ctx, repo, res.Dir, in.Branch, remoteBranch, res.BaseRef); err != nil {
		return contract.WorktreeResult{}, fmt.Errorf("make the work tree of issue #%d: %w", in.Number, err)
	}
	// The work tree may be an earlier try's, where the agent could have
	// made the issue file a symlink: tasks.WriteFile stays inside.
	if err := tasks.WriteFile(res.Dir, contract.IssueFile, []byte(in.Issue)); err != nil {
		return contract.WorktreeResult{}, fmt.Errorf("write the issue: %w", err)
	}
	// A pull request's round of an earlier try left its task: this try
	// works on the issue itself.
	if err := os.Remove(filepath.Join(res.Dir, contract.FeedbackFile)); err != nil && !os.IsNotExist(err) {
		return contract.WorktreeResult{}, fmt.Errorf("remove an earlier round's task: %w", err)
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
		if c, _ := repo.Resolve(ctx, ref); c != "" {
			// Starting from the first choice continues nothing only when
			// there is more than one: the first is then an earlier try's.
			return i == 0 && len(from) > 1, repo.AddWorktree(ctx, dir, branch, ref, true)
		}
	}
	return false, fmt.Errorf("none of %s exists to start branch %s from", strings.Join(from, ", "), branch)
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

// prepareWorktree makes the session's work tree: kept when it exists,
// else added on its branch (continued when the branch exists, else new
// from w.From or the clone's HEAD).
func (a *Agent) prepareWorktree(ctx context.Context, w contract.SessionWorktree, workspace string) error {
	if err := ValidWorktreeName(w.Name); err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrTypeInvalidWorkspace, err)
	}
	if filepath.Clean(workspace) != w.Dir() {
		err := fmt.Errorf("the workspace %s is not the work tree %s", workspace, w.Dir())
		return temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrTypeInvalidWorkspace, err)
	}
	repo, unlock, err := a.lockClone(ctx, w.Clone)
	if err != nil {
		return err
	}
	defer unlock()
	if err := excludeState(ctx, repo, w.Clone); err != nil {
		return err
	}
	from := "HEAD"
	if w.From != "" {
		from = w.From // a fork's: the original's commit
	}
	if _, err := ensureWorktree(ctx, repo, w.Dir(), w.Branch(), from); err != nil {
		return fmt.Errorf("make the work tree %s of %s: %w", w.Name, w.Clone, err)
	}
	return seedWorktree(w)
}

// seedWorktree copies the task file that a fork's original keeps outside
// git (an issue's, IssueFile) into the fork's work tree, unless it is
// there. Both sides are read and written inside their work trees.
func seedWorktree(w contract.SessionWorktree) error {
	if w.Seed == "" {
		return nil
	}
	if _, err := tasks.ReadFile(w.Dir(), contract.IssueFile); err == nil {
		return nil
	}
	data, err := tasks.ReadFile(w.Seed, contract.IssueFile)
	if err != nil {
		return nil // the original has none: its task file is in git
	}
	if err := tasks.WriteFile(w.Dir(), contract.IssueFile, data); err != nil {
		return fmt.Errorf("copy %s into the fork's work tree: %w", contract.IssueFile, err)
	}
	return nil
}

func sameDir(a, b string) bool {
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}

// PushBranch pushes an issue's branch to origin when it has commits of its
// own. Pushing what origin already has changes nothing, so a retry is
// safe; a branch that moved on origin is refused, never forced. The lines
// the push would publish are scanned for secrets first (scanPush): a
// secret refuses the push.
func (a *Agent) PushBranch(ctx context.Context, in contract.PushInput) (contract.PushResult, error) {
	defer HeartbeatWhile(ctx, gitHeartbeatInterval)()
	repo, unlock, err := a.lockClone(ctx, in.Clone)
	if err != nil {
		return contract.PushResult{}, err
	}
	defer unlock()
	branch := "refs/heads/" + in.Branch
	head, err := repo.Resolve(ctx, branch)
	if err != nil || head == "" {
		return contract.PushResult{}, fmt.Errorf("branch %s: %w", in.Branch, err)
	}
	res := contract.PushResult{Head: head}
	if res.Log, err = repo.Log(ctx, in.BaseRef, branch, 20); err != nil {
		return contract.PushResult{}, err
	}
	if res.Commits, err = repo.CountCommitsBetween(ctx, in.BaseRef, branch); err != nil {
		return contract.PushResult{}, err
	}
	if res.Commits == 0 {
		return res, nil
	}
	if res.Change, res.Truncated, err = repo.Change(ctx, in.BaseRef, branch, contract.MaxChange); err != nil {
		return contract.PushResult{}, err
	}
	// What origin has of the branch is published already.
	not := []string{in.BaseRef}
	if remote := "refs/remotes/origin/" + in.Branch; repo.HasRef(ctx, remote) {
		not = append(not, remote)
	}
	// The credential first: the scan refuses a push of the token it
	// sends, an app's current one too.
	cred, err := a.gitAuth(ctx, repo, in.TokenEnv)
	if err != nil {
		return contract.PushResult{}, err
	}
	if err := a.scanPush(ctx, repo, in.Branch, not, in.TokenEnv); err != nil {
		return contract.PushResult{}, err
	}
	push := func() error { return repo.Push(ctx, cred, "origin", in.Branch) }
	if in.Lease != "" {
		push = func() error { return repo.PushWithLease(ctx, cred, "origin", in.Branch, in.Lease) }
	}
	if err := push(); err != nil {
		if strings.Contains(err.Error(), "rejected") || strings.Contains(err.Error(), "non-fast-forward") {
			return contract.PushResult{}, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("origin refused %s: the branch there has commits this clone does not; merge them into the branch or delete it on origin, then add the ready label again (%v)", in.Branch, err), contract.ErrTypePushRejected, nil)
		}
		return contract.PushResult{}, fmt.Errorf("push %s: %w", in.Branch, err)
	}
	res.Pushed = true
	return res, nil
}

// gitAuth is the credential git gives an https origin that asks for
// one: the GitHub token (the GitHub App's current installation token,
// else the token of github.token-file, else of tokenEnv) as the
// password of x-access-token, which GitHub takes for every kind of
// token. It reaches git through a credential helper fed on a pipe
// (git.Credential), never its environment or command line. nil for an
// origin that is not https, or without a token. Its error is the app's,
// when GitHub refuses it a token.
func (a *Agent) gitAuth(ctx context.Context, repo *git.Repo, tokenEnv string) (*git.Credential, error) {
	return a.gitAuthFor(ctx, repo.Remote(ctx), tokenEnv)
}

// gitAuthFor is gitAuth for the remote url.
func (a *Agent) gitAuthFor(ctx context.Context, url, tokenEnv string) (*git.Credential, error) {
	if !strings.HasPrefix(url, "https://") {
		return nil, nil
	}
	var token string
	if a.GitHubApp != nil {
		var err error
		if token, err = a.GitHubApp.Token(ctx); err != nil {
			return nil, gitTokenError(err)
		}
	} else {
		_, token = github.WorkerToken(a.GitHubFileToken, os.Getenv, tokenEnv)
	}
	if token == "" {
		return nil, nil
	}
	return &git.Credential{Username: "x-access-token", Password: token}, nil
}

// gitTokenError is the activity error of a GitHub App that got no token
// for git: GitHub's refusal is no retry's to fix.
func gitTokenError(err error) error {
	var te *github.TokenError
	if errors.As(err, &te) && te.Permanent() {
		return temporal.NewNonRetryableApplicationError("a token for git: "+err.Error(), contract.ErrTypeGitHubUnauthorized, nil)
	}
	return fmt.Errorf("a token for git: %w", err)
}
