package activities

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/git"
)

// repoPart is what an owner or a repository name may be, as a directory
// name.
var repoPart = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// CloneRepo makes (or brings up to date) the worker's clone of in.Repo
// from in.URL, in ClonesDir/<owner>/<name>, with the GitHub token for an
// https URL. A new clone's layout is pinned as the workspace of the
// sessions that will run there; an existing one (a later set's) is
// opened as every workspace is, against that pin, since agents worked
// in it, and fetched under its lock only when its origin is in.URL.
// A change set's repository without a clone of the user's runs in it.
func (a *Agent) CloneRepo(ctx context.Context, in contract.CloneInput) (contract.CloneResult, error) {
	if a.ClonesDir == "" {
		return contract.CloneResult{}, temporal.NewNonRetryableApplicationError(
			"this worker keeps no clones (no clones directory): give the repository's workspace in the set file", contract.ErrTypeInvalidWorkspace, nil)
	}
	if !repoPart.MatchString(in.Repo.Owner) || !repoPart.MatchString(in.Repo.Name) || in.URL == "" {
		return contract.CloneResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("cannot clone %q from %q", in.Repo.FullName(), in.URL), contract.ErrTypeInvalidWorkspace, nil)
	}
	dir := filepath.Join(a.ClonesDir, in.Repo.Owner, in.Repo.Name)
	cred, err := a.gitAuthFor(ctx, in.URL, in.Repo.TokenEnv)
	if err != nil {
		return contract.CloneResult{}, err
	}
	if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
		return contract.CloneResult{Dir: dir}, a.refetch(ctx, cred, in, dir)
	}
	repo, err := git.Clone(ctx, cred, in.URL, dir)
	if err != nil {
		return contract.CloneResult{}, fmt.Errorf("clone %s: %w", in.Repo.FullName(), err)
	}
	if err := a.trustRepo(dir, repo); err != nil {
		return contract.CloneResult{}, err
	}
	return contract.CloneResult{Dir: dir}, nil
}

// refetch brings the worker's existing clone dir of in.Repo up to date:
// checked against its pin and locked (lockClone), its origin in.URL.
func (a *Agent) refetch(ctx context.Context, cred *git.Credential, in contract.CloneInput, dir string) error {
	repo, unlock, err := a.lockClone(ctx, dir)
	if err != nil {
		return err
	}
	defer unlock()
	if got := repo.Remote(ctx); got != in.URL {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("%s is a clone of %q, not of %s's %q: move it away", dir, got, in.Repo.FullName(), in.URL), contract.ErrTypeInvalidWorkspace, nil)
	}
	if err := repo.Fetch(ctx, cred, "origin"); err != nil {
		return fmt.Errorf("fetch %s: %w", in.Repo.FullName(), err)
	}
	return nil
}
