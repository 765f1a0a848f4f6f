package git

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"
)

// staleAge is how old a lock file that no process holds open must be
// before Ralph takes it for one a dead git left: git holds its index
// lock open while it works, and a ref's lock lives for the moment
// between writing it and renaming it over the ref.
const staleAge = time.Second

// lockInUse is git's message for a lock file another git holds, or one
// a killed git left: "Unable to create '/w/.git/index.lock': File
// exists."
var lockInUse = regexp.MustCompile(`Unable to create '([^']+\.lock)': File exists`)

// staleLock is the lock file git's message msg names, when it is a
// lock file of r's git directories that a dead git left: no process has
// it open and it has not changed for staleAge (it waits that long). ""
// when there is none, or the lock is alive.
func (r *Repo) staleLock(msg string) string {
	m := lockInUse.FindStringSubmatch(msg)
	if m == nil {
		return ""
	}
	return r.stale(m[1])
}

// stale is path when it is a lock file of r's git directories that no
// live process holds: unchanged for staleAge and open in no process.
func (r *Repo) stale(path string) string {
	path = filepath.Clean(path)
	if !within(path, r.layout.GitDir) && !within(path, r.layout.CommonDir) || filepath.Ext(path) != ".lock" {
		return ""
	}
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	if wait := staleAge - time.Since(fi.ModTime()); wait > 0 {
		time.Sleep(wait)
	}
	again, err := os.Lstat(path)
	if err != nil || idOf(again) != idOf(fi) || again.ModTime() != fi.ModTime() || again.Size() != fi.Size() {
		return "" // gone, or in use
	}
	if openedByAnyone(path) {
		return ""
	}
	return path
}

// ClearStaleLocks removes the lock files of the index and HEAD that a
// git killed with its worker left (a stale index.lock makes every git
// add and commit fail, the agent's too). A lock some process holds is
// left.
func (r *Repo) ClearStaleLocks() []string {
	var removed []string
	for _, p := range []string{
		filepath.Join(r.layout.GitDir, "index.lock"),
		filepath.Join(r.layout.GitDir, "HEAD.lock"),
		filepath.Join(r.layout.CommonDir, "packed-refs.lock"),
		filepath.Join(r.layout.CommonDir, "shallow.lock"),
	} {
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		if s := r.stale(p); s != "" && os.Remove(s) == nil {
			removed = append(removed, s)
		}
	}
	return removed
}

// openedByAnyone reports whether a process this one can see has path
// open. Processes of other users are not visible to an ordinary user;
// they cannot write a lock in this user's repository either.
func openedByAnyone(path string) bool {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return true // cannot tell: leave it
	}
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		dir := filepath.Join("/proc", p.Name(), "fd")
		fds, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if target, err := os.Readlink(filepath.Join(dir, fd.Name())); err == nil && target == path {
				return true
			}
		}
	}
	return false
}
