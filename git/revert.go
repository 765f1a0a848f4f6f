package git

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrRevertConflict is a change that no longer reverts cleanly onto the
// branch: later commits changed the same lines.
var ErrRevertConflict = errors.New("the change does not revert cleanly onto the branch")

// RevertOnto makes a commit whose parent is onto and that undoes what
// commit changed against its first parent (a merge commit's base, a
// squash's parent), and returns it. It touches neither r's work tree nor
// its index (a temporary index, plumbing only: nothing the repository
// holds runs), so it may run beside an agent's work. The message is
// subject and body; trailers follow.
func (r *Repo) RevertOnto(ctx context.Context, onto, commit, subject, body string, trailers ...string) (string, error) {
	parent, err := r.Resolve(ctx, commit+"^1")
	if err != nil || parent == "" {
		return "", fmt.Errorf("revert %.12s: its parent: %w", commit, errOr(err, "it has none"))
	}
	dir, err := os.MkdirTemp("", "ralph-revert-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	c := call{env: []string{"GIT_INDEX_FILE=" + filepath.Join(dir, "index")}}
	if _, err := r.run(ctx, c, "read-tree", onto); err != nil {
		return "", err
	}
	diff, err := r.git(ctx, "diff", "--binary", "--full-index", "--no-ext-diff", "--no-textconv", "--no-renames", parent, commit)
	if err != nil {
		return "", err
	}
	if diff != "" {
		c.stdin = diff
		if _, err := r.run(ctx, c, "apply", "--cached", "--reverse", "--3way", "--whitespace=nowarn"); err != nil {
			return "", fmt.Errorf("%w: %v", ErrRevertConflict, err)
		}
		c.stdin = ""
	}
	tree, err := r.run(ctx, c, "write-tree")
	if err != nil {
		return "", err
	}
	var msg strings.Builder
	msg.WriteString(subject + "\n\n")
	if body != "" {
		msg.WriteString(strings.TrimSpace(body) + "\n\n")
	}
	for _, t := range trailers {
		msg.WriteString(t + "\n")
	}
	args := append(append([]string(nil), r.identity(ctx)...), "commit-tree", strings.TrimSpace(tree), "-p", onto, "-F", "-")
	out, err := r.gitIn(ctx, msg.String(), args...)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// errOr is err, or an error saying text when err is nil.
func errOr(err error, text string) error {
	if err != nil {
		return err
	}
	return errors.New(text)
}

// RevertTrailer is the trailer of a commit RevertOnto made to undo
// commit.
func RevertTrailer(commit string) string { return "Reverts: " + commit }

// IsRevertOf reports whether rev is a commit whose message carries
// RevertTrailer(commit): one a retry made already.
func (r *Repo) IsRevertOf(ctx context.Context, rev, commit string) (bool, error) {
	out, err := r.git(ctx, "log", "-1", "--format=%H%x00%B%x00", rev)
	if err != nil {
		return false, err
	}
	return commitWith(out, RevertTrailer(commit)) != "", nil
}
