package git

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ErrUnsafeRepository means a repository's git directories are not
// where, or not what, Ralph found them to be: an agent moved, replaced
// or redirected them. No git command runs there.
var ErrUnsafeRepository = errors.New("the repository's git directory is not the one Ralph trusts")

// ErrWorkspaceGone means a work tree Ralph opened is no longer there.
var ErrWorkspaceGone = errors.New("is not accessible")

// FileID identifies a file or directory whatever its path: its device
// and inode.
type FileID struct {
	Dev uint64 `json:"dev"`
	Ino uint64 `json:"ino"`
}

// Layout is where a work tree keeps its repository, found from the
// work tree's .git as git finds it, and what each part is: Ralph pins
// it when it opens the repository (and for a session's whole life,
// Pin), and every git command it runs goes to exactly these
// directories (GIT_DIR, GIT_COMMON_DIR, GIT_WORK_TREE), after checking
// that they are still these. A .git replaced or moved by an agent, a
// commondir file planted to lead git to a configuration of its own, a
// linked work tree's gitdir redirected: each is a changed Layout, and
// refused.
type Layout struct {
	// Top is the top of the work tree.
	Top string `json:"top"`
	// GitDir is the work tree's git directory and CommonDir the
	// repository's (they differ in a linked work tree).
	GitDir    string `json:"git_dir"`
	CommonDir string `json:"common_dir"`
	// DotGit, GitID and CommonID identify the work tree's .git entry
	// and the two directories.
	DotGit   FileID `json:"dot_git"`
	GitID    FileID `json:"git_id"`
	CommonID FileID `json:"common_id"`
	// WorktreeConfig is what each config.worktree of the two
	// directories was ("" for none): git reads them, and no sandbox
	// locks them.
	WorktreeConfig [2]string `json:"worktree_config"`
}

// Discover finds the layout of the work tree that holds dir: the
// nearest directory at or above dir with a .git, and the directories it
// names. It runs no git process and trusts nothing it cannot check:
// .git must be a directory (a repository whose git directory has no
// commondir file) or a file naming a directory under the common
// directory's worktrees/ (a linked work tree); a symbolic link is
// refused, as is an include in the repository's configuration of a
// file the work tree or the git directory holds.
func Discover(dir string) (Layout, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Layout{}, err
	}
	for d := abs; ; d = filepath.Dir(d) {
		fi, err := os.Lstat(filepath.Join(d, ".git"))
		if err == nil {
			return layoutAt(d, fi)
		}
		if !errors.Is(err, os.ErrNotExist) {
			return Layout{}, fmt.Errorf("%s: %w", d, err)
		}
		if d == filepath.Dir(d) {
			return Layout{}, fmt.Errorf("%s: %w", dir, ErrNotRepository)
		}
	}
}

// layoutAt is the layout of the work tree top, whose .git is fi.
func layoutAt(top string, fi os.FileInfo) (Layout, error) {
	dotGit := filepath.Join(top, ".git")
	l := Layout{Top: top, DotGit: idOf(fi)}
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		return Layout{}, unsafe(top, "%s is a symbolic link", dotGit)
	case fi.IsDir():
		l.GitDir, l.CommonDir = dotGit, dotGit
		if _, err := os.Lstat(filepath.Join(dotGit, "commondir")); err == nil {
			return Layout{}, unsafe(top, "%s/commondir exists in a repository that is not a linked work tree: it would lead git to another configuration", dotGit)
		}
	case fi.Mode().IsRegular():
		gitDir, commonDir, err := linkedDirs(top, dotGit)
		if err != nil {
			return Layout{}, err
		}
		l.GitDir, l.CommonDir = gitDir, commonDir
	default:
		return Layout{}, unsafe(top, "%s is neither a directory nor a file", dotGit)
	}
	var err error
	if l.GitID, err = dirID(l.GitDir); err != nil {
		return Layout{}, unsafe(top, "%v", err)
	}
	if l.CommonID, err = dirID(l.CommonDir); err != nil {
		return Layout{}, unsafe(top, "%v", err)
	}
	l.WorktreeConfig = [2]string{stampOf(filepath.Join(l.GitDir, "config.worktree")), stampOf(filepath.Join(l.CommonDir, "config.worktree"))}
	if err := l.checkIncludes(); err != nil {
		return Layout{}, err
	}
	return l, nil
}

// linkedDirs reads a linked work tree's .git file: its git directory
// must be a directory worktrees/NAME of a common directory named by its
// commondir file, which is itself no linked work tree's.
func linkedDirs(top, dotGit string) (gitDir, commonDir string, err error) {
	data, err := os.ReadFile(dotGit)
	if err != nil {
		return "", "", fmt.Errorf("%s: %w", top, err)
	}
	line, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir: ")
	if !ok {
		return "", "", unsafe(top, "%s does not name a git directory", dotGit)
	}
	gitDir = absFrom(top, line)
	c, err := os.ReadFile(filepath.Join(gitDir, "commondir"))
	if err != nil {
		return "", "", unsafe(top, "the work tree's git directory %s has no commondir: %v", gitDir, err)
	}
	commonDir = absFrom(gitDir, strings.TrimSpace(string(c)))
	if filepath.Dir(gitDir) != filepath.Join(commonDir, "worktrees") {
		return "", "", unsafe(top, "the work tree's git directory %s is not one of %s/worktrees", gitDir, commonDir)
	}
	if _, err := os.Lstat(filepath.Join(commonDir, "commondir")); err == nil {
		return "", "", unsafe(top, "%s/commondir exists in the repository's own git directory", commonDir)
	}
	return gitDir, commonDir, nil
}

// checkIncludes refuses a configuration that includes a file of the
// work tree or of the git directories (a relative include.path resolves
// beside the config, in .git): the agent could write there what git
// then runs.
func (l Layout) checkIncludes() error {
	for _, cfg := range []string{filepath.Join(l.CommonDir, "config"), filepath.Join(l.GitDir, "config.worktree"), filepath.Join(l.CommonDir, "config.worktree")} {
		data, err := os.ReadFile(cfg)
		if err != nil {
			continue
		}
		for _, p := range includePaths(data) {
			if strings.HasPrefix(p, "~/") {
				continue // the user's home: not the agent's
			}
			abs := absFrom(filepath.Dir(cfg), p)
			for _, d := range []string{l.Top, l.GitDir, l.CommonDir} {
				if within(abs, d) {
					return unsafe(l.Top, "%s includes %s, a file an agent can write: move it out of the repository or remove the include", cfg, p)
				}
			}
		}
	}
	return nil
}

// includePaths are the path values of the [include] and [includeIf]
// sections of a git configuration file.
func includePaths(config []byte) []string {
	var paths []string
	in := false
	sc := bufio.NewScanner(bytes.NewReader(config))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			name := strings.ToLower(strings.TrimLeft(line, "[ \t"))
			in = strings.HasPrefix(name, "include")
			if _, rest, ok := strings.Cut(line, "]"); ok {
				line = strings.TrimSpace(rest) // a key on the section's line
			} else {
				line = ""
			}
		}
		if !in || line == "" {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if ok && strings.EqualFold(strings.TrimSpace(key), "path") {
			paths = append(paths, strings.Trim(strings.TrimSpace(value), `"`))
		}
	}
	return paths
}

// Check reports whether the layout is still what l says: found again
// from its work tree, each part the same directory or file. A
// difference is ErrUnsafeRepository, saying what changed.
func (l Layout) Check() error {
	if _, err := os.Stat(l.Top); err != nil {
		return fmt.Errorf("workspace %s %w: %v", l.Top, ErrWorkspaceGone, err)
	}
	fi, err := os.Lstat(filepath.Join(l.Top, ".git"))
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("workspace %s is %w: its .git is gone", l.Top, ErrNotRepository)
	}
	if err != nil {
		return unsafe(l.Top, "its .git cannot be read: %v", err)
	}
	now, err := layoutAt(l.Top, fi)
	if err != nil {
		return err
	}
	return l.Same(now)
}

// Same reports whether now is the layout l pinned; a difference is
// ErrUnsafeRepository, saying what changed.
func (l Layout) Same(now Layout) error {
	switch {
	case now.Top != l.Top:
		return unsafe(l.Top, "its work tree is now %s", now.Top)
	case now.DotGit != l.DotGit:
		return unsafe(l.Top, "%s/.git was replaced", l.Top)
	case now.GitDir != l.GitDir || now.GitID != l.GitID:
		return unsafe(l.Top, "its git directory is now %s, not %s", now.GitDir, l.GitDir)
	case now.CommonDir != l.CommonDir || now.CommonID != l.CommonID:
		return unsafe(l.Top, "its common git directory is now %s, not %s", now.CommonDir, l.CommonDir)
	case now.WorktreeConfig != l.WorktreeConfig:
		return unsafe(l.Top, "a config.worktree of its git directory was written (git would read its settings)")
	}
	return nil
}

// env are the variables that send git to exactly l's directories.
func (l Layout) env() []string {
	return []string{"GIT_DIR=" + l.GitDir, "GIT_COMMON_DIR=" + l.CommonDir, "GIT_WORK_TREE=" + l.Top}
}

func unsafe(top, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrUnsafeRepository, top, fmt.Sprintf(format, args...))
}

func absFrom(base, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(base, p)
}

func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

func idOf(fi os.FileInfo) FileID {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return FileID{Dev: uint64(st.Dev), Ino: st.Ino}
	}
	return FileID{}
}

// dirID is the identity of the directory at p, which must be one.
func dirID(p string) (FileID, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return FileID{}, err
	}
	if !fi.IsDir() {
		return FileID{}, fmt.Errorf("%s is not a directory", p)
	}
	return idOf(fi), nil
}

// stampOf says what the file at p is (inode, size, modification time),
// "" when there is none.
func stampOf(p string) string {
	fi, err := os.Lstat(p)
	if err != nil {
		return ""
	}
	id := idOf(fi)
	return fmt.Sprintf("%d:%d:%d:%d", id.Dev, id.Ino, fi.Size(), fi.ModTime().UnixNano())
}
