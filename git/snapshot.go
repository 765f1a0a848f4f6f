package git

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/durable-ralph/ralph/contract"
)

// Snapshot takes the work tree's snapshot.
func (r *Repo) Snapshot(ctx context.Context) (contract.Snapshot, error) {
	head, err := r.Head(ctx)
	if err != nil {
		return contract.Snapshot{}, err
	}
	s := contract.Snapshot{Head: head}
	if out, err := r.git(ctx, "write-tree"); err == nil {
		s.Index = strings.TrimSpace(out)
	}
	if s.Tree, err = r.filesTree(ctx); err != nil {
		return contract.Snapshot{}, err
	}
	return s, nil
}

// filesTree writes the tree of the work tree's files (every file not
// ignored) through an index of its own, leaving the real index alone.
func (r *Repo) filesTree(ctx context.Context) (string, error) {
	index, cleanup, err := tempIndex()
	if err != nil {
		return "", err
	}
	defer cleanup()
	// Starting from a copy of the real index lets git skip hashing the
	// files whose stat data did not change.
	if data, err := os.ReadFile(filepath.Join(r.layout.GitDir, "index")); err == nil {
		_ = os.WriteFile(index, data, 0o600)
	}
	with := call{env: []string{"GIT_INDEX_FILE=" + index}}
	if _, err := r.run(ctx, with, r.addAll(ctx, index)...); err != nil {
		return "", fmt.Errorf("snapshot the work tree: %w", err)
	}
	out, err := r.run(ctx, with, "write-tree")
	if err != nil {
		return "", fmt.Errorf("snapshot the work tree: %w", err)
	}
	return strings.TrimSpace(out), nil
}

// Changed lists the files whose content differs between s and the work
// tree now, and reports whether HEAD moved.
func (r *Repo) Changed(ctx context.Context, s contract.Snapshot) (files []string, headMoved bool, err error) {
	head, err := r.Head(ctx)
	if err != nil {
		return nil, false, err
	}
	now, err := r.filesTree(ctx)
	if err != nil {
		return nil, false, err
	}
	if now != s.Tree {
		out, err := r.git(ctx, "diff-tree", "-r", "--name-only", "--no-renames", s.Tree, now)
		if err != nil {
			return nil, false, err
		}
		files = nonEmptyLines(out)
	}
	return files, head != s.Head, nil
}

// Restore puts the work tree back as s found it: HEAD (the branch it is
// on moves back), every file's content, files added since removed, and
// the index.
func (r *Repo) Restore(ctx context.Context, s contract.Snapshot) error {
	if head, err := r.Head(ctx); err != nil {
		return err
	} else if head != s.Head && s.Head != "" {
		if _, err := r.git(ctx, "reset", "--soft", "--quiet", s.Head); err != nil {
			return fmt.Errorf("move HEAD back: %w", err)
		}
	}
	now, err := r.filesTree(ctx)
	if err != nil {
		return err
	}
	if now != s.Tree {
		out, err := r.git(ctx, "diff-tree", "-r", "--name-only", "--no-renames", "--diff-filter=A", s.Tree, now)
		if err != nil {
			return err
		}
		for _, f := range nonEmptyLines(out) {
			if err := os.Remove(filepath.Join(r.Dir, filepath.FromSlash(f))); err != nil && !os.IsNotExist(err) {
				return fmt.Errorf("remove %s: %w", f, err)
			}
		}
		index, cleanup, err := tempIndex()
		if err != nil {
			return err
		}
		defer cleanup()
		with := call{env: []string{"GIT_INDEX_FILE=" + index}}
		if _, err := r.run(ctx, with, "read-tree", s.Tree); err != nil {
			return fmt.Errorf("restore the files: %w", err)
		}
		if _, err := r.run(ctx, with, "checkout-index", "--all", "--force"); err != nil {
			return fmt.Errorf("restore the files: %w", err)
		}
	}
	if s.Index != "" {
		if _, err := r.git(ctx, "read-tree", s.Index); err != nil {
			return fmt.Errorf("restore the index: %w", err)
		}
	}
	return nil
}

// tempIndex is the path of an index file of its own, removed by cleanup.
func tempIndex() (path string, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "ralph-index-")
	if err != nil {
		return "", nil, fmt.Errorf("temporary index: %w", err)
	}
	return filepath.Join(dir, "index"), func() { os.RemoveAll(dir) }, nil
}

func nonEmptyLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}
