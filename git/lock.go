package git

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// lockFile is the file, in a repository's common git directory, whose
// lock Lock holds.
const lockFile = "ralph-clone.lock"

// lockPoll is how often Lock tries again while another holds the lock.
const lockPoll = 20 * time.Millisecond

// Lock takes the repository's lock, shared by all its work trees and by
// every process on the machine (an advisory flock on a file in the
// common git directory), waiting while another holds it or until ctx
// ends. Ralph holds it while it changes what all work trees share:
// fetching into refs/remotes, adding work trees, editing info/exclude,
// pushing. Git's own lock files would make a second fetch of the same
// ref fail rather than wait. The lock goes with the process that holds
// it, so a killed worker leaves none.
func (r *Repo) Lock(ctx context.Context) (unlock func(), err error) {
	if err := r.layout.Check(); err != nil {
		return nil, err
	}
	path := filepath.Join(r.layout.CommonDir, lockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the clone's lock: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if err != syscall.EWOULDBLOCK && err != syscall.EINTR {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("wait for the clone's lock %s: %w", path, ctx.Err())
		case <-time.After(lockPoll):
		}
	}
}
