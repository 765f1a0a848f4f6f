package git

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Clone makes the empty or missing directory dir a clone of url with its
// default branch checked out, fetching with cred (nil for none) as Fetch
// does: an empty repository is made first (git init), so that every
// command that reads the remote runs hardened, as in any other
// repository Ralph opens. A directory that holds anything is refused:
// bringing an existing clone up to date is its owner's (it must check
// the clone first).
func Clone(ctx context.Context, cred *Credential, url, dir string) (*Repo, error) {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("%s is not empty: it cannot become a clone of %s", dir, url)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("clone %s: %w", url, err)
	}
	if out, err := exec.CommandContext(ctx, "git", "init", "--quiet", dir).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("git init %s: %v: %s", dir, err, strings.TrimSpace(string(out)))
	}
	r, err := Open(ctx, dir)
	if err != nil {
		return nil, err
	}
	if _, err := r.git(ctx, "remote", "add", "origin", url); err != nil {
		return nil, err
	}
	if err := r.Fetch(ctx, cred, "origin", "+refs/heads/*:refs/remotes/origin/*"); err != nil {
		return nil, err
	}
	if _, err := r.git(ctx, "remote", "set-head", "origin", "--auto"); err != nil {
		return nil, err
	}
	head, err := r.git(ctx, "symbolic-ref", "--short", "refs/remotes/origin/HEAD")
	if err != nil {
		return nil, err
	}
	branch := strings.TrimPrefix(strings.TrimSpace(head), "origin/")
	if _, err := r.git(ctx, "checkout", "--quiet", "-B", branch, "--track", "origin/"+branch); err != nil {
		return nil, err
	}
	return r, nil
}
