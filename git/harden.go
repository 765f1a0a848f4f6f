package git

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// hardening is the configuration every git command of Ralph's runs
// with, before its own arguments: nothing git would run on the
// repository's behalf runs. The repository's configuration is the
// user's (the sandbox locks it, Layout pins the directory holding it),
// but a hook, a file system monitor or a pager may name a program of
// the work tree (husky's core.hooksPath), and a submodule's
// configuration is the agent's to write: git never starts a command in
// a submodule here. Filter and merge drivers are not named here: git
// reads them from configuration only, which no agent can write once the
// layout is pinned and the nested repositories (gitlinks) are left out
// of git add.
var hardening = []string{
	"-c", "core.fsmonitor=false",
	"-c", "core.hooksPath=/dev/null",
	"-c", "core.pager=cat",
	"-c", "core.editor=false",
	"-c", "sequence.editor=false",
	"-c", "core.askPass=",
	"-c", "core.alternateRefsCommand=true",
	"-c", "submodule.recurse=false",
	"-c", "fetch.recurseSubmodules=false",
	"-c", "push.recurseSubmodules=no",
	"-c", "diff.ignoreSubmodules=all",
	"-c", "diff.submodule=short",
	"-c", "status.submoduleSummary=false",
	"-c", "rebase.autoStash=false",
	"-c", "merge.autoStash=false",
	"-c", "protocol.ext.allow=never",
}

// passed are the variables of the worker that git gets: where things
// are, who the user is, how to reach remotes. Nothing else of the
// worker's environment (its tokens, its chat and webhook secrets)
// reaches git or what git starts.
var passed = map[string]bool{
	"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "TZ": true, "TMPDIR": true,
	"XDG_CONFIG_HOME": true, "SSH_AUTH_SOCK": true, "GNUPGHOME": true,
	"GIT_SSH": true, "GIT_SSH_COMMAND": true, "GIT_SSH_VARIANT": true,
	"GIT_SSL_CAINFO": true, "GIT_SSL_CAPATH": true, "GIT_SSL_NO_VERIFY": true, "SSL_CERT_FILE": true, "SSL_CERT_DIR": true,
	"GIT_CONFIG_NOSYSTEM": true, "GIT_CONFIG_GLOBAL": true, "GIT_CONFIG_SYSTEM": true,
	"GIT_AUTHOR_NAME": true, "GIT_AUTHOR_EMAIL": true, "GIT_AUTHOR_DATE": true,
	"GIT_COMMITTER_NAME": true, "GIT_COMMITTER_EMAIL": true, "GIT_COMMITTER_DATE": true,
	"GIT_TRACE": true, "GIT_TRACE2": true, "GIT_TRACE2_EVENT": true, "GIT_TRACE_PERFORMANCE": true,
	"HTTP_PROXY": true, "HTTPS_PROXY": true, "NO_PROXY": true, "ALL_PROXY": true,
	"http_proxy": true, "https_proxy": true, "no_proxy": true, "all_proxy": true,
}

// gitEnv is the environment of a git command on l, from the worker's
// environ: the passed variables, a PATH without directories an agent
// can write (relative ones, the work tree's, the git directories'),
// and git's own settings: no prompt, messages Ralph can read, no
// replaced objects or grafts (an agent's refs/replace could hide a
// commit from the pre-push secret scan and not from the push).
func gitEnv(environ []string, l Layout) []string {
	out := make([]string, 0, 16)
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if !passed[name] {
			continue
		}
		if name == "PATH" {
			kv = "PATH=" + safePath(value, l)
		}
		out = append(out, kv)
	}
	return append(out, "GIT_TERMINAL_PROMPT=0", "LC_ALL=C", "GIT_NO_REPLACE_OBJECTS=1", "GIT_GRAFT_FILE="+noGrafts)
}

// noGrafts is a grafts file that cannot exist (/dev/null is no
// directory): git then reads no grafts, the agent's info/grafts neither,
// and prints no hint about them.
const noGrafts = "/dev/null/no-grafts"

// safePath is path without the directories an agent could write.
func safePath(path string, l Layout) string {
	var keep []string
	for _, d := range filepath.SplitList(path) {
		if !filepath.IsAbs(d) {
			continue
		}
		d = filepath.Clean(d)
		if within(d, l.Top) || within(d, l.GitDir) || within(d, l.CommonDir) {
			continue
		}
		keep = append(keep, d)
	}
	return strings.Join(keep, string(filepath.ListSeparator))
}

// Credential is what git sends to a remote that asks for one (an
// https origin): a user name and a token. It reaches git through a
// credential helper that reads it from a pipe, once, never through the
// environment or the command line: no process git starts can read it
// from there, and the user's helpers neither see nor store it.
type Credential struct {
	Username, Password string
}

// credentialHelper prints what fd 3 holds when git asks for a
// credential ("get"); it does nothing when git stores or erases one.
const credentialHelper = `!f() { test "$1" = get && cat <&3; }; f`

// withCredential runs git with args, with cred on a pipe for the
// credential helper; nil runs it as it is.
func (r *Repo) withCredential(ctx context.Context, cred *Credential, args ...string) (string, error) {
	if cred == nil {
		return r.git(ctx, args...)
	}
	if strings.ContainsAny(cred.Username+cred.Password, "\n\x00") {
		return "", fmt.Errorf("a credential for git cannot hold a line break")
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return "", fmt.Errorf("a credential for git: %w", err)
	}
	defer pr.Close()
	// The pipe holds 64 KiB: the credential is written whole before git
	// starts, and the helper's cat sees its end.
	_, err = fmt.Fprintf(pw, "username=%s\npassword=%s\n", cred.Username, cred.Password)
	if cerr := pw.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("a credential for git: %w", err)
	}
	full := append([]string{"-c", "credential.helper=", "-c", "credential.helper=" + credentialHelper}, args...)
	return r.run(ctx, call{files: []*os.File{pr}}, full...)
}
