package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// credentials are paths under a home directory that never exist inside,
// even when a toolchain directory or a path the user added includes
// them.
var credentials = []string{
	".ssh", ".aws", ".config/gh", ".netrc", ".git-credentials", ".gnupg",
	".docker", ".kube", ".npmrc", ".pypirc", ".cargo/credentials", ".cargo/credentials.toml",
	".config/gcloud", ".azure",
}

// gitConfig are the files under a home directory that give git inside
// its identity and settings, bound read-only.
var gitConfig = []string{".gitconfig", ".config/git"}

// Credentials are the paths under home that never exist inside a
// sandbox (~/.ssh, ~/.aws, ~/.config/gh, ~/.netrc, ~/.git-credentials,
// …).
func Credentials(home string) []string {
	if home == "" {
		return nil
	}
	out := make([]string, len(credentials))
	for i, c := range credentials {
		out[i] = filepath.Join(home, c)
	}
	return out
}

// view is the filesystem of a sandbox being built: bwrap's mount
// options, and the host paths they make visible.
type view struct {
	args    []string
	visible []string
}

func (v *view) bind(opt, p string) {
	if p == "" || v.covers(p) && opt == "--ro-bind" {
		return
	}
	if _, err := os.Stat(p); err != nil {
		return
	}
	v.args = append(v.args, opt, p, p)
	v.visible = append(v.visible, p)
}

// covers reports whether p is visible inside already.
func (v *view) covers(p string) bool {
	for _, d := range v.visible {
		if within(p, d) {
			return true
		}
	}
	return false
}

// mounts are the mount options of spec's view, binary the program run;
// each file system in memory (/tmp, the home directory, /dev/shm) holds
// at most tmp bytes.
func mounts(spec Spec, binary string, tmp int64) ([]string, error) {
	ws := cleanAbs(spec.Workspace)
	if ws == "" {
		return nil, fmt.Errorf("sandbox: workspace %q is not an absolute path", spec.Workspace)
	}
	v := &view{}
	for _, d := range systemDirs {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(d); err == nil {
				v.args = append(v.args, "--symlink", target, d)
			}
		default:
			v.bind("--ro-bind", d)
		}
	}
	size := strconv.FormatInt(tmp, 10)
	// /dev is bwrap's own file system in memory: read-only, but for its
	// /dev/shm of bounded size.
	v.args = append(v.args, "--proc", "/proc", "--dev", "/dev",
		"--perms", "1777", "--size", size, "--tmpfs", "/dev/shm", "--remount-ro", "/dev",
		"--perms", "1777", "--size", size, "--tmpfs", "/tmp")
	home := cleanAbs(spec.Home)
	if home != "" && home != "/" && !v.covers(home) {
		v.args = append(v.args, "--perms", "0700", "--size", size, "--tmpfs", home)
	}
	for _, d := range toolchains(spec.Path, home) {
		if d == "/" || d == "/tmp" || within(ws, d) || home != "" && within(home, d) {
			// A PATH entry that holds the workspace, the home directory
			// or the host's /tmp would bring all of it (other
			// workspaces, the user's files): its programs stay out.
			continue
		}
		v.bind("--ro-bind", d)
	}
	if home != "" {
		for _, g := range gitConfig {
			v.bind("--ro-bind", filepath.Join(home, g))
		}
	}
	for _, d := range programDirs(cleanAbs(binary)) {
		if d == "/" || homeOf(d, home) == d {
			// A program at the top of a home directory brings itself,
			// not the home directory.
			d = cleanAbs(binary)
		}
		v.bind("--ro-bind", d)
	}
	for _, p := range spec.ReadOnly {
		v.bind("--ro-bind", cleanAbs(p))
	}
	for _, p := range slices.Concat(spec.State, spec.ReadWrite, spec.GitDirs, []string{ws}) {
		v.bind("--bind", cleanAbs(p))
	}
	for _, p := range spec.Locked {
		if p = cleanAbs(p); p != "" && v.covers(p) {
			if _, err := os.Stat(p); err == nil {
				v.args = append(v.args, "--ro-bind", p, p)
			}
		}
	}
	v.hide(spec.Hidden, ws)
	return v.args, nil
}

// hide covers each of hidden that is visible inside: a directory with an
// empty tmpfs, a file with an empty one. A path that holds the workspace
// cannot be hidden from its own run and is left.
func (v *view) hide(hidden []string, ws string) {
	for _, h := range hidden {
		h = cleanAbs(h)
		if h == "" || within(ws, h) || !v.covers(h) {
			continue
		}
		fi, err := os.Stat(h)
		switch {
		case err != nil:
		case fi.IsDir():
			v.args = append(v.args, "--tmpfs", h, "--remount-ro", h)
		default:
			v.args = append(v.args, "--ro-bind", "/dev/null", h)
		}
	}
}

// toolchains are the directories PATH brings into a sandbox: each
// directory, or for one under a home directory (home, /root, /home/*)
// the top-level directory it lives in (~/.nvm for
// ~/.nvm/versions/node/v22/bin), so that interpreters find their
// libraries. A home directory itself brings nothing.
func toolchains(path, home string) []string {
	var out []string
	for _, d := range filepath.SplitList(path) {
		d = cleanAbs(d)
		if d == "" {
			continue
		}
		if root := homeOf(d, home); root != "" {
			if d == root {
				continue
			}
			first, _, _ := strings.Cut(strings.TrimPrefix(d, root+"/"), "/")
			d = filepath.Join(root, first)
		}
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// programDirs are the directories the program at binary needs: its own
// directory, and where a symbolic link leads (an npm CLI's node_modules/.bin
// entry leads into its package); a path inside node_modules brings the
// whole node_modules, where the package's dependencies are.
func programDirs(binary string) []string {
	if binary == "" {
		return nil
	}
	paths := []string{binary}
	if resolved, err := filepath.EvalSymlinks(binary); err == nil && resolved != binary {
		paths = append(paths, resolved)
	}
	var dirs []string
	for _, p := range paths {
		d := filepath.Dir(p)
		if i := strings.Index(d+"/", "/node_modules/"); i >= 0 {
			d = d[:i+len("/node_modules")]
		}
		if !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// homeOf is the home directory d lies in: home, /root or /home/NAME; ""
// for none.
func homeOf(d, home string) string {
	if home != "" && home != "/" && within(d, home) {
		return home
	}
	if within(d, "/root") {
		return "/root"
	}
	if rest, ok := strings.CutPrefix(d, "/home/"); ok && rest != "" {
		name, _, _ := strings.Cut(rest, "/")
		return "/home/" + name
	}
	return ""
}

// within reports whether p is dir or lies under it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}
