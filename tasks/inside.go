package tasks

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// OutsideError is a task file that leads out of the workspace through a
// symlink: the file itself or a directory above it. Ralph reads task
// files for the agent's prompt and Temporal's history, so one that
// points at /etc/passwd or ~/.ssh would carry that file there.
type OutsideError struct {
	// File is the task file, relative to the workspace.
	File string
	// Link is the symlink, relative to the workspace: File or a directory
	// above it.
	Link string
	// Target is where Link leads: the resolved path, or the link's text
	// when it points at nothing.
	Target string
}

// Error says which file is a symlink out of the workspace and where it
// points.
func (e *OutsideError) Error() string {
	what := fmt.Sprintf("%s is a symlink to %s", e.File, e.Target)
	if e.Link != e.File {
		what = fmt.Sprintf("%s is in %s, a symlink to %s", e.File, e.Link, e.Target)
	}
	return what + ", outside the workspace; ralph reads task files only inside the workspace"
}

// openInside opens name, a slash-separated path relative to the workspace
// dir. Symlinks are followed as long as they stay inside dir; one that
// leads out is an *OutsideError. The file is opened through an os.Root of
// the workspace, so a symlink swapped in after the check cannot lead out
// either.
func openInside(dir, name string) (*os.File, error) {
	realDir, rel, err := resolveInside(dir, name)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenInRoot(realDir, rel)
	if err != nil {
		return nil, fmt.Errorf("open %s in workspace %s: %w", name, dir, err)
	}
	return f, nil
}

// readInside reads name of the workspace dir as openInside opens it.
func readInside(dir, name string) ([]byte, error) {
	f, err := openInside(dir, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return data, nil
}

// statInside describes name of the workspace dir, following symlinks as
// openInside does.
func statInside(dir, name string) (fs.FileInfo, error) {
	realDir, rel, err := resolveInside(dir, name)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(realDir)
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", dir, err)
	}
	defer root.Close()
	return root.Stat(rel)
}

// WriteFile writes data to name, a slash-separated path relative to the
// workspace dir, making the directories above it. Like reads, it follows
// symlinks only as long as they stay inside dir: a task file the agent
// turned into a symlink out of the workspace is an *OutsideError, not a
// way to write elsewhere.
func WriteFile(dir, name string, data []byte) error {
	local := filepath.FromSlash(name)
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("open workspace %s: %w", dir, err)
	}
	defer root.Close()
	err = root.MkdirAll(filepath.Dir(local), 0o755)
	if err == nil {
		err = root.WriteFile(local, data, 0o644)
	}
	if err == nil {
		return nil
	}
	if realDir, rerr := filepath.EvalSymlinks(dir); rerr == nil {
		if oe := leadsOut(realDir, name); oe != nil {
			return oe
		}
	}
	return fmt.Errorf("write %s in workspace %s: %w", name, dir, err)
}

// resolveInside resolves the symlinks of dir and of name in it: realDir is
// the workspace without symlinks, rel the path of name in it. A name
// that leads out of the workspace is an *OutsideError; one that does not
// exist is an error that wraps fs.ErrNotExist.
func resolveInside(dir, name string) (realDir, rel string, err error) {
	local := filepath.FromSlash(name)
	if !filepath.IsLocal(local) {
		return "", "", fmt.Errorf("task file %s: not a path inside the workspace", name)
	}
	realDir, err = filepath.EvalSymlinks(dir)
	if err != nil {
		return "", "", fmt.Errorf("workspace %s: %w", dir, err)
	}
	if oe := leadsOut(realDir, name); oe != nil {
		return "", "", oe
	}
	resolved, err := filepath.EvalSymlinks(filepath.Join(realDir, local))
	if errors.Is(err, fs.ErrNotExist) {
		return "", "", &fs.PathError{Op: "open", Path: filepath.Join(dir, local), Err: fs.ErrNotExist}
	}
	if err != nil {
		return "", "", fmt.Errorf("resolve %s in workspace %s: %w", name, dir, err)
	}
	rel, ok := inside(realDir, resolved)
	if !ok {
		// Changed since leadsOut looked: say where it leads now.
		return "", "", &OutsideError{File: name, Link: name, Target: resolved}
	}
	return realDir, rel, nil
}

// leadsOut returns the *OutsideError of the first symlink on the way to
// name in the workspace realDir (resolved) that leads out of it, or nil.
func leadsOut(realDir, name string) *OutsideError {
	parts := strings.Split(name, "/")
	for i := range parts {
		link := strings.Join(parts[:i+1], "/")
		p := filepath.Join(realDir, filepath.FromSlash(link))
		fi, err := os.Lstat(p)
		if err != nil {
			return nil // missing: nothing further to follow
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		target, err := filepath.EvalSymlinks(p)
		if err != nil {
			// It points at nothing: judge it by its text.
			text, rerr := os.Readlink(p)
			if rerr != nil {
				return nil
			}
			target = text
			if !filepath.IsAbs(text) {
				target = filepath.Join(filepath.Dir(p), text)
			}
			if _, ok := inside(realDir, filepath.Clean(target)); ok {
				continue
			}
			return &OutsideError{File: name, Link: link, Target: text}
		}
		if _, ok := inside(realDir, target); !ok {
			return &OutsideError{File: name, Link: link, Target: target}
		}
	}
	return nil
}

// inside returns path relative to dir, and whether it is dir or in it.
func inside(dir, path string) (string, bool) {
	rel, err := filepath.Rel(dir, path)
	if err != nil || !filepath.IsLocal(rel) {
		return "", false
	}
	return rel, true
}

// isOutside reports whether err is an *OutsideError.
func isOutside(err error) bool {
	var oe *OutsideError
	return errors.As(err, &oe)
}

// ReadFile reads name, a slash-separated path relative to the workspace
// dir, following symlinks only as long as they stay inside dir: one that
// leads out is an *OutsideError. The worker reads files the agent may
// have replaced (its checkpoint request) this way, so that a symlink to
// ~/.ssh/id_ed25519 is not read and shown.
func ReadFile(dir, name string) ([]byte, error) { return readInside(dir, name) }

// Create creates or truncates name, a path relative to the workspace dir,
// making the directories above it, through an os.Root of dir: a symlink
// the agent planted on the way (.ralph/logs/… to ~/.bashrc) cannot lead
// the worker's write out of the workspace.
func Create(dir, name string) (*os.File, error) {
	local := filepath.FromSlash(name)
	fs, err := CreateAll(dir, filepath.Dir(local), filepath.Base(local))
	if err != nil {
		return nil, err
	}
	return fs[0], nil
}

// CreateAll creates or truncates the files names in sub, a directory
// relative to the workspace dir that it makes, as Create does each, but
// walking to sub once for all of them (an iteration's prompt and log: each
// walk is a system call per directory on the way).
func CreateAll(dir, sub string, names ...string) ([]*os.File, error) {
	sub = filepath.FromSlash(sub)
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", dir, err)
	}
	defer root.Close()
	if err := root.MkdirAll(sub, 0o755); err != nil {
		return nil, fmt.Errorf("create %s in workspace %s: %w", sub, dir, err)
	}
	in, err := root.OpenRoot(sub)
	if err != nil {
		return nil, fmt.Errorf("create %s in workspace %s: %w", sub, dir, err)
	}
	defer in.Close()
	files := make([]*os.File, 0, len(names))
	for _, name := range names {
		f, err := in.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			for _, f := range files {
				f.Close()
			}
			return nil, fmt.Errorf("create %s in workspace %s: %w", filepath.Join(sub, name), dir, err)
		}
		files = append(files, f)
	}
	return files, nil
}

// Rename moves from to to, both relative to the workspace dir, making the
// directories above to, through an os.Root of dir as Create does.
func Rename(dir, from, to string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("open workspace %s: %w", dir, err)
	}
	defer root.Close()
	local := filepath.FromSlash(to)
	if err := root.MkdirAll(filepath.Dir(local), 0o755); err != nil {
		return fmt.Errorf("rename %s to %s in workspace %s: %w", from, to, dir, err)
	}
	if err := root.Rename(filepath.FromSlash(from), local); err != nil {
		return fmt.Errorf("rename %s to %s in workspace %s: %w", from, to, dir, err)
	}
	return nil
}
