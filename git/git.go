// Package git runs the git commands a Ralph iteration needs on a workspace:
// state checks, branch checkout, change detection and idempotent commits
// keyed by trailers.
package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Trailer keys Ralph writes into its commits. A commit carrying both for a
// (session, iteration) pair marks that iteration as committed.
const (
	TrailerSession   = "Ralph-Session"
	TrailerIteration = "Ralph-Iteration"
	// TrailerRole names the role of the iteration's agent (executor,
	// planner).
	TrailerRole = "Ralph-Role"
	// TrailerInterrupted marks the commit of the work an interrupted
	// attempt of an iteration left, made before the iteration runs
	// again; it names the iteration (and carries no TrailerIteration, so
	// the iteration's own commit is still to be made).
	TrailerInterrupted = "Ralph-Interrupted"
)

// ErrNotRepository means the directory is not inside a git work tree.
var ErrNotRepository = errors.New("not a git repository")

// Repo is a git work tree, and the repository it belongs to as Ralph
// found it (Layout): every git command Ralph runs there goes to those
// directories, after checking they are still those, with an
// environment of its own and configuration that cannot run a program
// the work tree or the git directory holds (see hardening).
type Repo struct {
	// Dir is the top level of the work tree.
	Dir    string
	layout Layout
}

// Open returns the repository whose work tree holds dir, found without
// running git (Discover).
func Open(ctx context.Context, dir string) (*Repo, error) {
	l, err := Discover(dir)
	if err != nil {
		return nil, err
	}
	return &Repo{Dir: l.Top, layout: l}, nil
}

// Layout is where r's repository is, as Open found it.
func (r *Repo) Layout() Layout { return r.layout }

// Head is the commit HEAD points at, or "" in a repository without commits.
func (r *Repo) Head(ctx context.Context) (string, error) {
	if head, _, ok := r.readHead(); ok {
		return head, nil
	}
	return r.Resolve(ctx, "HEAD")
}

// Branch is the current branch name ("" when HEAD is detached).
func (r *Repo) Branch(ctx context.Context) (string, error) {
	if _, branch, ok := r.readHead(); ok {
		return branch, nil
	}
	return orNone(r.git(ctx, "symbolic-ref", "--quiet", "--short", "HEAD"))
}

// Status lists the paths with uncommitted changes, untracked files
// included and ignored files not. A rename is both of its paths.
func (r *Repo) Status(ctx context.Context) ([]string, error) {
	st, err := r.State(ctx)
	return st.Pending, err
}

// Checkout switches to branch, creating it from HEAD when it does not exist.
func (r *Repo) Checkout(ctx context.Context, branch string) error {
	if _, err := r.git(ctx, "check-ref-format", "--branch", branch); err != nil {
		return fmt.Errorf("invalid branch name %q: %w", branch, err)
	}
	cur, err := r.Branch(ctx)
	if err != nil {
		return err
	}
	if cur == branch {
		return nil
	}
	if _, err := r.git(ctx, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch); err == nil {
		_, err = r.git(ctx, "checkout", branch)
		return err
	}
	_, err = r.git(ctx, "checkout", "-b", branch)
	return err
}

// ResetHard discards every change since commit: tracked files are reset,
// untracked files removed (ignored and excluded files stay).
func (r *Repo) ResetHard(ctx context.Context, commit string) error {
	if _, err := r.git(ctx, "reset", "--hard", "--quiet", commit); err != nil {
		return err
	}
	_, err := r.git(ctx, "clean", "-fd", "--quiet")
	return err
}

// Exclude adds pattern to .git/info/exclude unless it is there, so Ralph's
// own files never dirty the tree nor enter a commit.
func (r *Repo) Exclude(ctx context.Context, pattern string) error {
	path, err := r.excludeFile(ctx)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("read %s: %w", path, err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == pattern {
			return nil
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	if len(data) > 0 && !bytes.HasSuffix(data, []byte("\n")) {
		data = append(data, '\n')
	}
	data = append(data, pattern+"\n"...)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// CountCommits counts the commits reachable from HEAD and not from base.
// An empty base counts every commit.
func (r *Repo) CountCommits(ctx context.Context, base string) (int, error) {
	head, err := r.Head(ctx)
	if err != nil || head == "" {
		return 0, err
	}
	rng := "HEAD"
	if base != "" {
		rng = base + "..HEAD"
	}
	out, err := r.git(ctx, "rev-list", "--count", rng)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(out))
}

// ChangedSince lists the files changed by commits between base and HEAD;
// a rename is both of its paths.
func (r *Repo) ChangedSince(ctx context.Context, base string) ([]string, error) {
	head, err := r.Head(ctx)
	if err != nil || head == "" || head == base {
		return nil, err
	}
	args := []string{"diff", "--name-only", "--no-renames", "-z", base, "HEAD"}
	if base == "" {
		args = []string{"ls-tree", "-r", "--name-only", "-z", "HEAD"}
	}
	out, err := r.git(ctx, args...)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, f := range strings.Split(out, "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	return files, nil
}

// FindCommit returns the commit Ralph made for (session, iteration), or
// "". It looks at HEAD and its first parent only, where the commit is
// when an iteration is retried, so the cost does not grow with history.
func (r *Repo) FindCommit(ctx context.Context, session string, iteration int) (string, error) {
	head, err := r.Head(ctx)
	if err != nil || head == "" {
		return "", err
	}
	out, err := r.git(ctx, "log", "-2", "--first-parent", "--format=%H%x00%B%x00", head)
	if err != nil {
		return "", err
	}
	return commitWith(out, TrailerSession+": "+session, TrailerIteration+": "+strconv.Itoa(iteration)), nil
}

// HeadHas reports whether HEAD's commit message holds every one of
// lines (trailers, "Key: value").
func (r *Repo) HeadHas(ctx context.Context, lines ...string) (bool, error) {
	head, err := r.Head(ctx)
	if err != nil || head == "" {
		return false, err
	}
	out, err := r.git(ctx, "log", "-1", "--format=%H%x00%B%x00", head)
	if err != nil {
		return false, err
	}
	return commitWith(out, lines...) != "", nil
}

// commitWith is the first commit in out (hash and message, each ended by
// NUL) whose message holds every one of lines.
func commitWith(out string, lines ...string) string {
	fields := strings.Split(out, "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		hash, msg := strings.TrimSpace(fields[i]), fields[i+1]
		if hash != "" && hasLines(msg, lines) {
			return hash
		}
	}
	return ""
}

func hasLines(msg string, want []string) bool {
	have := strings.Split(msg, "\n")
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// MaintainEvery is how many iterations' commits pass between two of
// git's automatic maintenance checks (git maintenance run --auto, which
// packs loose objects once there are too many). git commit runs that
// check, a process of its own, after every commit; an iteration's commit
// skips it but every MaintainEvery-th, which still keeps a session of
// thousands of commits packed.
const MaintainEvery = 25

// CommitAll stages every change and commits it with subject, body and the
// Ralph trailers for (session, iteration). It returns the new commit.
func (r *Repo) CommitAll(ctx context.Context, subject, body, session string, iteration int, trailers ...string) (string, error) {
	own := []string{TrailerSession + ": " + session, TrailerIteration + ": " + strconv.Itoa(iteration)}
	return r.commit(ctx, commitHow{maintain: iteration%MaintainEvery == 0}, subject, body, append(own, trailers...)...)
}

// Commit stages every change and commits it with subject, body and
// trailers ("Key: value"). It returns the new commit.
func (r *Repo) Commit(ctx context.Context, subject, body string, trailers ...string) (string, error) {
	return r.commit(ctx, commitHow{maintain: true}, subject, body, trailers...)
}

// Amend stages every change and puts it, with subject, body and
// trailers, in place of HEAD's commit. It returns the new commit.
func (r *Repo) Amend(ctx context.Context, subject, body string, trailers ...string) (string, error) {
	return r.commit(ctx, commitHow{maintain: true, amend: true}, subject, body, trailers...)
}

// commitHow says how commit commits: with git's automatic maintenance
// after it or not, amending HEAD or not.
type commitHow struct {
	maintain, amend bool
}

// commit stages every change and commits it as how says.
func (r *Repo) commit(ctx context.Context, how commitHow, subject, body string, trailers ...string) (string, error) {
	if _, err := r.git(ctx, r.addAll(ctx, filepath.Join(r.layout.GitDir, "index"))...); err != nil {
		return "", err
	}
	var msg strings.Builder
	msg.WriteString(subject)
	msg.WriteString("\n\n")
	if body != "" {
		msg.WriteString(strings.TrimSpace(body))
		msg.WriteString("\n\n")
	}
	for _, t := range trailers {
		fmt.Fprintf(&msg, "%s\n", t)
	}
	args := slices.Clone(r.identity(ctx))
	if !how.maintain {
		args = append(args, "-c", "maintenance.auto=false")
	}
	args = append(args, "commit", "--quiet", "--no-verify", "--file", "-")
	if how.amend {
		args = append(args, "--amend")
	}
	if _, err := r.gitIn(ctx, msg.String(), args...); err != nil {
		return "", err
	}
	return r.Head(ctx)
}

// identity are the options that give git an author and committer when
// the repository's configuration has none: Ralph's.
func (r *Repo) identity(ctx context.Context) []string {
	if v, ok := identities.Load(r.Dir); ok {
		return v.([]string)
	}
	var opts []string
	if ident, _ := r.git(ctx, "config", "user.email"); strings.TrimSpace(ident) == "" {
		opts = []string{"-c", "user.name=Ralph", "-c", "user.email=ralph@localhost"}
	}
	identities.Store(r.Dir, opts)
	return opts
}

// IsAncestor reports whether commit a is an ancestor of commit b (or b
// itself).
func (r *Repo) IsAncestor(ctx context.Context, a, b string) (bool, error) {
	_, err := r.git(ctx, "merge-base", "--is-ancestor", a, b)
	if err == nil {
		return true, nil
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) && exitErr.ExitCode() == 1 {
		return false, nil
	}
	return false, err
}

// BranchAt points branch at commit and checks it out, carrying
// uncommitted changes along; it fails, changing nothing, when they
// conflict with the move.
func (r *Repo) BranchAt(ctx context.Context, branch, commit string) error {
	_, err := r.git(ctx, "checkout", "--quiet", "-B", branch, commit)
	return err
}

// Resolve returns the commit ref names, or "" when there is none.
func (r *Repo) Resolve(ctx context.Context, ref string) (string, error) {
	return orNone(r.git(ctx, "rev-parse", "--verify", "--quiet", ref+"^{commit}"))
}

// orNone is git's output, trimmed, or "" where git answered "there is
// none" by its exit status 1, as the --quiet forms of rev-parse --verify
// and symbolic-ref do.
func orNone(out string, err error) (string, error) {
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) && exitErr.ExitCode() == 1 {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// Detach checks out commit on a detached HEAD, carrying uncommitted
// changes along as BranchAt does.
func (r *Repo) Detach(ctx context.Context, commit string) error {
	_, err := r.git(ctx, "checkout", "--quiet", "--detach", commit)
	return err
}

// SetRef points ref (a full name under refs/) at commit, which keeps the
// commit reachable whatever happens to the branches. A ref of Ralph's own
// (under refs/ralph/) is written as git writes a loose ref, without a
// process (writeRef); any other ref, or one in refs writeRef does not
// know, by git update-ref.
func (r *Repo) SetRef(ctx context.Context, ref, commit string) error {
	if strings.HasPrefix(ref, "refs/ralph/") {
		if done, err := r.writeRef(ref, commit); done {
			return err
		}
	}
	_, err := r.git(ctx, "update-ref", ref, commit)
	return err
}

// Remote is the URL of the origin remote, or "" when there is none.
func (r *Repo) Remote(ctx context.Context) string {
	out, err := r.git(ctx, "remote", "get-url", "origin")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

// RepoName names the repository as owner/name when origin is a GitHub-like
// URL, and as the directory name otherwise.
func (r *Repo) RepoName(ctx context.Context) string {
	if name := nameFromRemote(r.Remote(ctx)); name != "" {
		return name
	}
	return filepath.Base(r.Dir)
}

var remoteName = regexp.MustCompile(`[:/]([^/:]+/[^/]+?)(?:\.git)?/?$`)

func nameFromRemote(url string) string {
	if m := remoteName.FindStringSubmatch(url); m != nil {
		return m[1]
	}
	return ""
}

func (r *Repo) git(ctx context.Context, args ...string) (string, error) {
	return r.run(ctx, call{}, args...)
}

func (r *Repo) gitIn(ctx context.Context, stdin string, args ...string) (string, error) {
	return r.run(ctx, call{stdin: stdin}, args...)
}

// FileAt is the content of the file name (slash-separated, from the top
// of the work tree) in commit rev.
func (r *Repo) FileAt(ctx context.Context, rev, name string) ([]byte, error) {
	out, err := r.git(ctx, "show", rev+":"+name)
	if err != nil {
		return nil, err
	}
	return []byte(out), nil
}

// RestoreFile puts the file name (slash-separated, from the top of the
// work tree) back as commit rev has it, in the work tree and the index.
func (r *Repo) RestoreFile(ctx context.Context, rev, name string) error {
	_, err := r.git(ctx, "checkout", rev, "--", name)
	return err
}

// DiffStat is git's one-line summary of the changes from one commit to
// another ("3 files changed, 40 insertions(+), 2 deletions(-)").
func (r *Repo) DiffStat(ctx context.Context, from, to string) (string, error) {
	out, err := r.git(ctx, "diff", "--shortstat", "--no-ext-diff", "--no-textconv", from, to)
	return strings.TrimSpace(out), err
}

// HasRef reports whether ref (a full ref name such as refs/heads/main)
// exists.
func (r *Repo) HasRef(ctx context.Context, ref string) bool {
	_, err := r.git(ctx, "show-ref", "--verify", "--quiet", ref)
	return err == nil
}

// Fetch fetches refspecs from remote, with cred (nil for none) given to
// git by the credential helper of Credential.
func (r *Repo) Fetch(ctx context.Context, cred *Credential, remote string, refspecs ...string) error {
	args := append([]string{"fetch", "--quiet", "--no-tags", "--no-recurse-submodules", "--upload-pack=git-upload-pack", remote}, refspecs...)
	_, err := r.withCredential(ctx, cred, args...)
	return err
}

// Push pushes branch to the branch of the same name on remote, never by
// force, with cred (nil for none).
func (r *Repo) Push(ctx context.Context, cred *Credential, remote, branch string) error {
	ref := "refs/heads/" + branch
	_, err := r.withCredential(ctx, cred, "push", "--quiet", "--porcelain", "--no-recurse-submodules",
		"--receive-pack=git-receive-pack", remote, ref+":"+ref)
	return err
}

// AddWorktree adds a work tree at dir. With create it checks out a new
// branch starting at from; otherwise it checks out the existing branch.
func (r *Repo) AddWorktree(ctx context.Context, dir, branch, from string, create bool) error {
	// A work tree whose directory was deleted still holds its branch.
	if _, err := r.git(ctx, "worktree", "prune"); err != nil {
		return err
	}
	args := []string{"worktree", "add", "--quiet"}
	if create {
		args = append(args, "-b", branch, dir, from)
	} else {
		args = append(args, dir, branch)
	}
	_, err := r.git(ctx, args...)
	return err
}

// RemoveWorktree removes the work tree at dir, and forgets work trees
// whose directory is gone. Its branch stays. Without force, a work tree
// with uncommitted changes is refused; with it, a locked one goes too.
// Git's own check of the changes would run git status inside the work
// tree, with what its config.worktree and nested repositories (the
// agent's to write) say: the check is Ralph's hardened status instead.
func (r *Repo) RemoveWorktree(ctx context.Context, dir string, force bool) error {
	if !force {
		wt, err := Open(ctx, dir)
		if err != nil {
			return err
		}
		if pending, err := wt.Status(ctx); err != nil {
			return err
		} else if len(pending) > 0 {
			return fmt.Errorf("the work tree %s has uncommitted changes (%s)", dir, strings.Join(pending[:min(len(pending), 5)], ", "))
		}
	}
	args := []string{"worktree", "remove", "--force"}
	if force {
		args = append(args, "--force") // twice: also a locked one
	}
	if _, err := r.git(ctx, append(args, dir)...); err != nil {
		return err
	}
	_, err := r.git(ctx, "worktree", "prune")
	return err
}

// Log is the subject lines of the commits reachable from head and not from
// base, newest first, at most n.
func (r *Repo) Log(ctx context.Context, base, head string, n int) ([]string, error) {
	out, err := r.git(ctx, "log", "--format=%h %s", fmt.Sprintf("-n%d", n), base+".."+head)
	if err != nil {
		return nil, err
	}
	var subjects []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line != "" {
			subjects = append(subjects, line)
		}
	}
	return subjects, nil
}

// call is how one git command runs: its stdin, what it adds to the
// environment, and files it inherits as fds 3, 4, ….
type call struct {
	stdin string
	env   []string
	files []*os.File
}

// run runs git with args on r, as hardening says: after r's layout is
// checked again, with GIT_DIR, GIT_COMMON_DIR and GIT_WORK_TREE set to
// it, an environment without the worker's secrets (gitEnv) and
// configuration that runs nothing the repository holds. A command that
// finds a lock file a dead git left is run again once it is removed.
func (r *Repo) run(ctx context.Context, c call, args ...string) (string, error) {
	out, err := r.runOnce(ctx, c, args...)
	if err != nil {
		if lock := r.staleLock(err.Error()); lock != "" && os.Remove(lock) == nil {
			return r.runOnce(ctx, c, args...)
		}
	}
	return out, err
}

func (r *Repo) runOnce(ctx context.Context, c call, args ...string) (string, error) {
	if err := r.layout.Check(); err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "git", append(slices.Clone(hardening), args...)...)
	// A cancelled iteration stops git with SIGTERM, on which git removes
	// its lock files (index.lock, a ref's .lock) before it exits; SIGKILL
	// would leave them, and every later git add or commit in the
	// workspace would fail until a person deleted them.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	cmd.Dir = r.Dir
	cmd.Env = append(append(gitEnv(os.Environ(), r.layout), r.layout.env()...), c.env...)
	cmd.ExtraFiles = c.files
	if c.stdin != "" {
		cmd.Stdin = strings.NewReader(c.stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return stdout.String(), fmt.Errorf("git %s: %s: %w", strings.Join(args, " "), msg, err)
	}
	return stdout.String(), nil
}

// CountCommitsBetween counts the commits reachable from head and not from
// base.
func (r *Repo) CountCommitsBetween(ctx context.Context, base, head string) (int, error) {
	out, err := r.git(ctx, "rev-list", "--count", base+".."+head)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(out))
}
