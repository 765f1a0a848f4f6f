package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// WorkState is what one `git status --porcelain=v2 --branch` says of a
// work tree: where HEAD is and what is not committed.
type WorkState struct {
	// Head is the commit HEAD points at, "" before the first commit.
	Head string
	// Branch is the checked-out branch, "" on a detached HEAD.
	Branch string
	// Pending lists the paths with uncommitted changes, untracked files
	// included and ignored files not; a rename is both of its paths.
	Pending []string
}

// State reads HEAD, the branch and the uncommitted changes with one git
// process. It writes nothing (--no-optional-locks): a git status
// otherwise writes the index again, with its lock file, after every
// change of the work tree, and the add that follows writes it anyway.
func (r *Repo) State(ctx context.Context) (WorkState, error) {
	out, err := r.git(ctx, "--no-optional-locks", "status", "--porcelain=v2", "--branch", "-z", "--untracked-files=all", "--no-renames")
	if err != nil {
		return WorkState{}, err
	}
	return parseStatusV2(out), nil
}

// parseStatusV2 reads the -z output of `git status --porcelain=v2
// --branch`: headers, then one entry per changed path.
func parseStatusV2(out string) WorkState {
	var st WorkState
	fields := strings.Split(out, "\x00")
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		switch {
		case strings.HasPrefix(f, "# branch.oid "):
			if oid := strings.TrimPrefix(f, "# branch.oid "); oid != "(initial)" {
				st.Head = oid
			}
		case strings.HasPrefix(f, "# branch.head "):
			if b := strings.TrimPrefix(f, "# branch.head "); b != "(detached)" {
				st.Branch = b
			}
		case strings.HasPrefix(f, "1 "):
			st.Pending = appendField(st.Pending, f, 9)
		case strings.HasPrefix(f, "2 "):
			// A rename or copy: its source path is the next field.
			st.Pending = appendField(st.Pending, f, 10)
			if i+1 < len(fields) && fields[i+1] != "" {
				i++
				st.Pending = append(st.Pending, fields[i])
			}
		case strings.HasPrefix(f, "u "):
			st.Pending = appendField(st.Pending, f, 11)
		case strings.HasPrefix(f, "? "):
			st.Pending = append(st.Pending, f[2:])
		}
	}
	return st
}

// appendField appends the last of n space-separated fields of entry,
// its path (which may hold spaces).
func appendField(paths []string, entry string, n int) []string {
	if parts := strings.SplitN(entry, " ", n); len(parts) == n {
		paths = append(paths, parts[n-1])
	}
	return paths
}

// gitDirs are the repository's git directory and common directory, as
// Open found them. ok is false where its refs are in a reftable: leave
// them to git.
func (r *Repo) gitDirs() (gitDir, commonDir string, ok bool) {
	gitDir, commonDir = r.layout.GitDir, r.layout.CommonDir
	if _, err := os.Stat(filepath.Join(commonDir, "reftable")); err == nil {
		return "", "", false
	}
	return gitDir, commonDir, true
}

// Where is the commit HEAD points at ("" before the first commit) and
// the checked-out branch ("" on a detached HEAD).
func (r *Repo) Where(ctx context.Context) (head, branch string, err error) {
	if head, branch, ok := r.readHead(); ok {
		return head, branch, nil
	}
	if head, err = r.Resolve(ctx, "HEAD"); err != nil {
		return "", "", err
	}
	branch, err = r.Branch(ctx)
	return head, branch, err
}

// readHead reads HEAD from the files git keeps it in: HEAD, the loose
// ref it names and packed-refs. ok is false when the files do not say
// for sure (an unborn branch, a layout this reader does not know), and
// git is asked instead.
func (r *Repo) readHead() (head, branch string, ok bool) {
	gitDir, commonDir, ok := r.gitDirs()
	if !ok {
		return "", "", false
	}
	data, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return "", "", false
	}
	s := strings.TrimSpace(string(data))
	ref, symbolic := strings.CutPrefix(s, "ref: ")
	if !symbolic {
		return s, "", isObjectID(s)
	}
	if !strings.HasPrefix(ref, "refs/heads/") {
		return "", "", false
	}
	oid, ok := readRef(commonDir, ref)
	return oid, strings.TrimPrefix(ref, "refs/heads/"), ok
}

// readRef resolves ref (not a symbolic one) from its loose file or
// packed-refs in commonDir.
func readRef(commonDir, ref string) (string, bool) {
	if data, err := os.ReadFile(filepath.Join(commonDir, filepath.FromSlash(ref))); err == nil {
		oid := strings.TrimSpace(string(data))
		return oid, isObjectID(oid)
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", false
	}
	data, err := os.ReadFile(filepath.Join(commonDir, "packed-refs"))
	if err != nil {
		return "", false
	}
	for line := range bytes.Lines(data) {
		oid, name, found := strings.Cut(strings.TrimSpace(string(line)), " ")
		if found && name == ref && isObjectID(oid) {
			return oid, true
		}
	}
	return "", false
}

// isObjectID reports whether s is a SHA-1 or SHA-256 object name.
func isObjectID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// identities remembers, per work tree, whether git's configuration gives
// commits an author: it is asked once per worker.
var identities sync.Map // top level → []string

// excludeFile is the repository's info/exclude file.
func (r *Repo) excludeFile(ctx context.Context) (string, error) {
	if _, commonDir, ok := r.gitDirs(); ok {
		return filepath.Join(commonDir, "info", "exclude"), nil
	}
	p, err := r.git(ctx, "rev-parse", "--git-path", "info/exclude")
	if err != nil {
		return "", err
	}
	path := strings.TrimSpace(p)
	if !filepath.IsAbs(path) {
		path = filepath.Join(r.Dir, path)
	}
	return path, nil
}

// RefIs reports whether ref already points at commit, read from git's
// files; false when they do not say.
func (r *Repo) RefIs(ref, commit string) bool {
	_, commonDir, ok := r.gitDirs()
	if !ok {
		return false
	}
	oid, ok := readRef(commonDir, ref)
	return ok && oid == commit
}

// writeRef points ref at commit by writing its loose file as git does:
// a lock file created exclusively, then renamed over the ref. It reports
// false, having done nothing, where the refs are not loose files it
// knows (a reftable, an unknown layout): the caller then asks git. The
// write goes through an os.Root of the common directory, so a directory
// on the way that the agent turned into a symlink out of the repository
// is an error, not a way to write elsewhere (git update-ref follows it).
// No reflog is written: git keeps none for refs outside refs/heads,
// refs/remotes and refs/notes either.
func (r *Repo) writeRef(ref, commit string) (bool, error) {
	_, commonDir, ok := r.gitDirs()
	if !ok || !isObjectID(commit) {
		return false, nil
	}
	root, err := os.OpenRoot(commonDir)
	if err != nil {
		return false, nil
	}
	defer root.Close()
	name := filepath.FromSlash(ref)
	lock := name + ".lock"
	if err := root.MkdirAll(filepath.Dir(name), 0o777); err != nil {
		return true, fmt.Errorf("update %s: %w", ref, err)
	}
	f, err := root.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil && os.IsExist(err) {
		// A git killed with its worker left the lock.
		if stale := r.stale(filepath.Join(commonDir, lock)); stale != "" && os.Remove(stale) == nil {
			f, err = root.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		}
	}
	if err != nil {
		return true, fmt.Errorf("update %s (another git may be running): %w", ref, err)
	}
	_, err = f.WriteString(commit + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(lock, name)
	}
	if err != nil {
		_ = root.Remove(lock)
		return true, fmt.Errorf("update %s: %w", ref, err)
	}
	return true, nil
}
