package activities

import (
	"context"
	"errors"
	"path/filepath"

	"go.temporal.io/sdk/temporal"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/git"
)

// pins are where the worker pins the layout of each workspace's
// repository (git.Pins), in its records; none without records.
func (a *Agent) pins() git.Pins {
	if a.Records == "" {
		return git.Pins{}
	}
	return git.Pins{Dir: filepath.Join(a.Records, "repos")}
}

// openRepo opens the repository of the workspace dir (openWorkspace)
// and checks it against the layout the worker pinned for dir: the git
// directories a session started with, whatever an agent did since.
func (a *Agent) openRepo(ctx context.Context, dir string) (*git.Repo, error) {
	repo, err := openWorkspace(ctx, dir)
	if err != nil {
		return nil, a.unsafeRepo(dir, err)
	}
	if err := a.pins().Verify(dir, repo.Layout()); err != nil {
		return nil, a.unsafeRepo(dir, err)
	}
	return repo, nil
}

// lockClone opens the clone dir (openRepo) and takes its lock
// (git.Repo.Lock), held while Ralph changes what all its work trees
// share; the caller defers unlock. Errors are openRepo's and Lock's as
// they are: both name what failed.
func (a *Agent) lockClone(ctx context.Context, dir string) (repo *git.Repo, unlock func(), err error) {
	repo, err = a.openRepo(ctx, dir)
	if err != nil {
		return nil, nil, err
	}
	if unlock, err = repo.Lock(ctx); err != nil {
		return nil, nil, err
	}
	return repo, unlock, nil
}

// trustRepo pins the layout of repo, the repository of the workspace
// dir, as a session starts there.
func (a *Agent) trustRepo(dir string, repo *git.Repo) error {
	return a.unsafeRepo(dir, a.pins().Trust(dir, repo.Layout()))
}

// unsafeRepo is err, made a failure no retry fixes when the repository
// of the workspace dir is not the one the worker trusts (an agent
// replaced or redirected its git directory); the pin is marked, so that
// no worker trusts it again until a person looked.
func (a *Agent) unsafeRepo(dir string, err error) error {
	if errors.Is(err, git.ErrWorkspaceGone) || errors.Is(err, git.ErrNotRepository) {
		// Deleted, or its .git removed, while the session ran.
		return temporal.NewNonRetryableApplicationError(rootCause(err), contract.ErrTypeInvalidWorkspace, err)
	}
	if !errors.Is(err, git.ErrUnsafeRepository) {
		return err
	}
	a.pins().Mark(dir, err)
	return temporal.NewNonRetryableApplicationError(err.Error()+"; Ralph runs no git there, and the session stops", contract.ErrTypeUnsafeRepository, err)
}

// rootCause is the message of the innermost error of err's chain that
// git made (the one that names the workspace), without the steps that
// wrapped it.
func rootCause(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil || next == git.ErrWorkspaceGone || next == git.ErrNotRepository {
			return err.Error()
		}
		err = next
	}
}
