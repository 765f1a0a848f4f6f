package fakegithub

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
)

// SetRemote makes bareDir, a bare git repository, the repository's
// content: the one the product pushes to. The head.sha and base.sha of a
// pull request are then the commits its branches point to there, read at
// each request (people push); a branch it lacks, and a fork's branch, read
// as without a remote: a stable fake SHA. The mergeable state of a pull
// request then also says whether its head merges into its base without
// conflicts, and a merge moves the base branch; the repository's
// clone_url is bareDir. An empty bareDir forgets the remote.
func (s *Server) SetRemote(bareDir string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.remote = bareDir
}

// FileAt returns the content of the file at path in commit sha of the
// remote (see SetRemote), and whether there is one: false without a remote,
// for an unknown commit and for a path that is not a file of it. It may be
// called from a scripted CI (see SetCI).
func (s *Server) FileAt(sha, path string) ([]byte, bool) {
	s.mu.Lock()
	dir := s.remote
	s.mu.Unlock()
	if dir == "" {
		return nil, false
	}
	return fileAt(dir, sha, path)
}

func fileAt(dir, sha, path string) ([]byte, bool) {
	out, err := gitOutput(dir, nil, "cat-file", "blob", sha+":"+path)
	return out, err == nil
}

// gitEnv keeps the user's and the system's git configuration (signing,
// hooks, identities) out of the server's git commands.
var gitEnv = []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + os.DevNull, "GIT_TERMINAL_PROMPT=0", "LC_ALL=C"}

// gitOutput runs git with args in the repository dir, with env added to
// the environment, and returns its standard output.
func gitOutput(dir string, env []string, args ...string) ([]byte, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(append(os.Environ(), gitEnv...), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("git %s in %s: %w: %s", strings.Join(args, " "), dir, err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// git runs git like gitOutput and returns its first line of output.
func git(dir string, env []string, args ...string) (string, error) {
	out, err := gitOutput(dir, env, args...)
	line, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(line), err
}

// exitCode is the exit status of the git command that failed with err, or
// -1 if it did not run to an exit.
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

var fullSHA = regexp.MustCompile(`^[0-9a-f]{40}$`)

// branchSHA is the commit that branch of owner's repository points to:
// with the remote, where it points there now; else, and for a fork or a
// branch the remote lacks, a stable fake SHA.
func (s *Server) branchSHA(owner, branch string) string {
	if s.remote != "" && strings.EqualFold(owner, s.owner) {
		if c, ok := revParse(s.remote, branch); ok {
			return c
		}
	}
	return sha(owner + ":" + branch)
}

// revParse is the commit that branch points to in the repository dir.
func revParse(dir, branch string) (string, bool) {
	c, err := git(dir, nil, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch+"^{commit}")
	return c, err == nil && c != ""
}

// resolveRef is the commit that the ref of a URL names: a SHA as is, else
// a branch of the repository (see branchSHA). It is false for a branch the
// remote lacks.
func (s *Server) resolveRef(ref string) (string, bool) {
	if fullSHA.MatchString(ref) {
		return ref, true
	}
	if s.remote == "" {
		return sha(s.owner + ":" + ref), true
	}
	return revParse(s.remote, ref)
}

// hasCommit reports whether the repository dir has commit c.
func hasCommit(dir, c string) bool {
	_, err := git(dir, nil, "cat-file", "-e", c+"^{commit}")
	return err == nil
}

// isAncestor reports whether commit a is an ancestor of commit b (or b).
func isAncestor(dir, a, b string) (bool, error) {
	_, err := git(dir, nil, "merge-base", "--is-ancestor", a, b)
	if exitCode(err) == 1 {
		return false, nil
	}
	return err == nil, err
}

// mergeTree is the tree of commit head merged into commit base, and
// whether that merge conflicts.
func mergeTree(dir, base, head string) (tree string, conflict bool, err error) {
	ff, err := isAncestor(dir, base, head)
	if err != nil {
		return "", false, err
	}
	if ff {
		tree, err = git(dir, nil, "rev-parse", head+"^{tree}")
		return tree, false, err
	}
	tree, err = git(dir, nil, "merge-tree", "--write-tree", "--no-messages", base, head)
	if exitCode(err) == 1 {
		return "", true, nil
	}
	return tree, false, err
}

// conflicts reports whether head does not merge into base without
// conflicts in the remote. What git cannot tell (a fake SHA) does not
// conflict.
func (s *Server) conflicts(base, head string) bool {
	if s.remote == "" {
		return false
	}
	_, conflict, err := mergeTree(s.remote, base, head)
	return err == nil && conflict
}

// errConflict and errBaseMoved are why a merge in the remote fails.
var (
	errConflict  = errors.New("the head does not merge into the base without conflicts")
	errBaseMoved = errors.New("the base branch moved during the merge")
)

// gitMerge merges commit head of a pull request into its base, branch at
// commit base, in the repository dir, as login with method, and returns
// the commit the branch then points to.
//
// It simplifies GitHub: "merge" makes a merge commit of base and head
// (even when it could fast-forward, as GitHub does); "squash" makes one
// commit on base with the merged tree; "rebase" fast-forwards the base to
// the head when it can and otherwise makes one commit on base with the
// merged tree, where GitHub would replay each commit of the head.
func gitMerge(dir, branch, base, head, method, title, message, login string) (string, error) {
	tree, conflict, err := mergeTree(dir, base, head)
	if err != nil {
		return "", err
	}
	if conflict {
		return "", errConflict
	}
	commit := head
	if ff, err := isAncestor(dir, base, head); err != nil {
		return "", err
	} else if method != "rebase" || !ff {
		args := []string{"commit-tree", tree, "-p", base}
		if method == "merge" {
			args = append(args, "-p", head)
		}
		args = append(args, "-m", title)
		if message != "" {
			args = append(args, "-m", message)
		}
		env := []string{
			"GIT_AUTHOR_NAME=" + login, "GIT_AUTHOR_EMAIL=" + login + "@users.noreply.github.com",
			"GIT_COMMITTER_NAME=GitHub", "GIT_COMMITTER_EMAIL=noreply@github.com",
		}
		if commit, err = git(dir, env, args...); err != nil {
			return "", err
		}
	}
	if _, err := git(dir, nil, "update-ref", "refs/heads/"+branch, commit, base); err != nil {
		return "", fmt.Errorf("%w: %w", errBaseMoved, err)
	}
	return commit, nil
}

// cloneURL is the repository's clone_url: the remote's directory when
// SetRemote gave one (git clones it as it clones GitHub's https URL, with
// no server in between), the server's URL otherwise. Callers hold s.mu.
func (s *Server) cloneURL() string {
	if s.remote != "" {
		return s.remote
	}
	return s.URL() + s.owner + "/" + s.name + ".git"
}
