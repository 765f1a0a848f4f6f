package git

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// MatchPath reports whether pattern matches path, a slash-separated path
// relative to the top of the work tree, or one of the directories that
// hold it (so "deploy" covers deploy/prod.yml). In a pattern, a segment
// that is exactly ** matches any number of path segments, none included;
// * matches any run of characters within one segment; every other
// character matches itself. A pattern is anchored at the top of the work
// tree ("**/*.pem" is a .pem file anywhere); a leading "./" or "/" and a
// trailing "/" are ignored. An empty pattern matches nothing.
func MatchPath(pattern, path string) bool {
	pattern = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(pattern, "./"), "/"), "/")
	if pattern == "" || path == "" {
		return false
	}
	pat := strings.Split(pattern, "/")
	segs := strings.Split(path, "/")
	for n := len(segs); n > 0; n-- {
		if matchSegments(pat, segs[:n]) {
			return true
		}
	}
	return false
}

// matchSegments matches pattern segments against path segments.
func matchSegments(pat, segs []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for len(pat) > 1 && pat[1] == "**" {
				pat = pat[1:]
			}
			for skip := 0; skip <= len(segs); skip++ {
				if matchSegments(pat[1:], segs[skip:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 || !matchSegment(pat[0], segs[0]) {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return len(segs) == 0
}

// matchSegment matches one segment against a pattern in which * stands
// for any run of characters.
func matchSegment(pat, seg string) bool {
	// The usual wildcard walk: on a mismatch, let the last * take one
	// more character and try again from there.
	p, s := 0, 0
	star, mark := -1, 0
	for s < len(seg) {
		switch {
		case p < len(pat) && pat[p] == '*':
			star, mark = p, s
			p++
		case p < len(pat) && pat[p] == seg[s]:
			p++
			s++
		case star >= 0:
			mark++
			p, s = star+1, mark
		default:
			return false
		}
	}
	for p < len(pat) && pat[p] == '*' {
		p++
	}
	return p == len(pat)
}

// Protected returns the paths that any of patterns matches (MatchPath),
// in the order of paths.
func Protected(patterns, paths []string) []string {
	var hit []string
	for _, p := range paths {
		for _, pat := range patterns {
			if MatchPath(pat, p) {
				hit = append(hit, p)
				break
			}
		}
	}
	return hit
}

// SetAside writes everything in the work tree that differs from commit
// start to the file patch, as a binary patch that `git apply` applies on
// start: commits made since, changes to tracked files, and new files git
// does not ignore. Then it puts the work tree back at start: HEAD (and
// its branch) at start, tracked files as start has them, and the new
// files removed; ignored and excluded files (.ralph/) stay. An empty
// start is a repository that had no commit: the branch made since is
// removed. The patch's directory is made when missing.
func (r *Repo) SetAside(ctx context.Context, start, patch string) error {
	tree, err := r.filesTree(ctx)
	if err != nil {
		return err
	}
	base := start
	if base == "" {
		out, err := r.git(ctx, "mktree") // no input: the empty tree
		if err != nil {
			return err
		}
		base = strings.TrimSpace(out)
	}
	diff, err := r.git(ctx, "diff", "--binary", "--no-color", "--no-ext-diff", "--no-textconv",
		"--src-prefix=a/", "--dst-prefix=b/", base, tree)
	if err != nil {
		return fmt.Errorf("diff the work tree against %s: %w", base, err)
	}
	if err := os.MkdirAll(filepath.Dir(patch), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(patch), err)
	}
	if err := os.WriteFile(patch, []byte(diff), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", patch, err)
	}
	if start != "" {
		return r.ResetHard(ctx, start)
	}
	if head, err := r.Head(ctx); err != nil {
		return err
	} else if head != "" {
		if _, err := r.git(ctx, "update-ref", "-d", "HEAD"); err != nil {
			return err
		}
	}
	if _, err := r.git(ctx, "read-tree", "--empty"); err != nil {
		return err
	}
	_, err = r.git(ctx, "clean", "-fd", "--quiet")
	return err
}
