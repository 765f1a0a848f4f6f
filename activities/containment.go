package activities

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/activities/github"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/git"
	"github.com/durable-ralph/ralph/redact"
	"github.com/durable-ralph/ralph/secretscan"
	"github.com/durable-ralph/ralph/tasks"
)

// protectedDir is where the work of iterations that changed a protected
// path is kept, relative to the workspace.
const protectedDir = contract.StateDir + "/protected"

// protectedPatch is the patch of iteration n's work, relative to the
// workspace.
func protectedPatch(n int) string {
	return path.Join(protectedDir, fmt.Sprintf("iteration-%d.patch", n))
}

// guardProtected keeps an iteration that changed a protected path
// (git.protected-paths) from being committed. It reads the paths the
// iteration changed from res.FilesChanged, which inspect already listed,
// so an iteration that changed none costs no git process. One that did
// has its whole work, the agent's own commits included, written to
// .ralph/protected/iteration-N.patch, and the workspace is put back at
// the iteration's start commit. The iteration fails, says why
// (NotCommitted), and the next prompt is told. Ralph commits nothing
// without auto-commit: then only an iteration whose agent made commits of
// its own is set aside.
func (a *Agent) guardProtected(ctx context.Context, it *iteration, res *contract.IterationResult) error {
	in := it.in
	if res.Halt != "" || !(in.Git.AutoCommit || res.AgentCommits > 0) {
		return nil
	}
	hit := git.Protected(in.Git.Protected(), res.FilesChanged)
	if len(hit) == 0 {
		return nil
	}
	patch := protectedPatch(in.Iteration)
	start := it.progress.StartHead
	if err := it.repo.SetAside(ctx, start, filepath.Join(in.Workspace, filepath.FromSlash(patch))); err != nil {
		return fmt.Errorf("set aside the work of iteration %d, which changed protected paths: %w", in.Iteration, err)
	}
	shown := strings.Join(firstFew(hit, 5), ", ")
	what := "changed protected path " + shown
	if len(hit) > 1 {
		what = "changed protected paths " + shown
	}
	res.NotCommitted = fmt.Sprintf("%s (patch: %s; allow with git.protected-paths: [])", what, patch)
	if res.Outcome == contract.OutcomeSuccess {
		res.Outcome, res.Reason = contract.OutcomeAgentError, what
	}
	res.CompletionClaimed, res.Commit, res.Head, res.AgentCommits = false, "", start, 0
	if st, err := tasks.Load(in.Workspace, it.mode); err == nil {
		res.Task = taskState(st)
	}
	res.Notices = append(res.Notices, protectedNotice(hit, patch))
	return nil
}

// protectedNotice tells the next iteration that the last one's work was
// kept aside because it changed the protected paths hit.
func protectedNotice(hit []string, patch string) string {
	excludes := ""
	for _, p := range firstFew(hit, 10) {
		excludes += " --exclude=" + p
	}
	return fmt.Sprintf("Ralph did not commit the last iteration's work: it changed %s, which the operator protects (git.protected-paths) and the agent may not change. "+
		"Ralph put the workspace back where that iteration started and kept its whole change in %s. "+
		"Do not change those paths again. Redo the work without them (`git apply%s %s` brings back the rest of the change); "+
		"if the task cannot be done without changing them, say so in your final message.",
		strings.Join(firstFew(hit, 10), ", "), patch, excludes, patch)
}

// scanPush refuses, with a non-retryable ErrTypeSecretInPush, a push of
// branch whose commits (those reachable from it and not from not) add a
// line holding a secret: a secret value of the worker (its secret-looking
// variables, Secrets, the GitHub token the push would send) or a
// well-known credential's shape. The error says what and where, never
// the value.
func (a *Agent) scanPush(ctx context.Context, repo *git.Repo, branch string, not []string, tokenEnv string) error {
	secrets := a.Secrets
	if from, token := github.WorkerToken(a.GitHubFileToken, os.Getenv, tokenEnv); token != "" {
		secrets = append(secrets[:len(secrets):len(secrets)], strings.TrimPrefix(from, "$")+"="+token)
	}
	if a.GitHubApp != nil {
		secrets = append(secrets[:len(secrets):len(secrets)], a.GitHubApp.Tokens()...)
	}
	scan := secretscan.New(redact.New(append(os.Environ(), a.Env...), secrets...))
	var found []contract.SecretFinding
	err := repo.AddedLines(ctx, "refs/heads/"+branch, not, func(l git.AddedLine) bool {
		if what := scan.Line(l.Text); what != "" {
			found = append(found, contract.SecretFinding{What: what, File: l.File, Line: l.Line, Commit: l.Commit})
		}
		return len(found) < 20
	})
	if err != nil {
		return fmt.Errorf("scan %s for secrets before the push: %w", branch, err)
	}
	if len(found) == 0 {
		return nil
	}
	places := make([]string, 0, len(found))
	for _, f := range found {
		places = append(places, fmt.Sprintf("%s at %s:%d (commit %s)", f.What, f.File, f.Line, contract.ShortSHA(f.Commit)))
	}
	msg := fmt.Sprintf("Ralph did not push %s: it would publish %s. Remove it from the branch's history (rewrite the commits that add it), "+
		"revoke it if it is real, then add the ready label again", branch, strings.Join(firstFew(places, 5), "; "))
	return temporal.NewNonRetryableApplicationError(msg, contract.ErrTypeSecretInPush, nil, found)
}
