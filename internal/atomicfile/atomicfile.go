// Package atomicfile writes a file whole or not at all: a temporary file
// beside it, then renamed over it, so that a reader (or a process that
// starts after a crash) finds the old content or the new.
package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
)

// WriteFile writes data to path with permissions perm, whole or not at
// all, synced to the disk before it replaces path: it survives the loss
// of the machine. It makes path's directory (0700) when it is missing.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return write(path, data, perm, true)
}

// Replace is WriteFile without the sync: whole or not at all whatever
// happens to the process that writes, at the cost of a file that may be
// empty after the machine itself stopped. For records read back by a
// process that restarts, where a sync on every write would cost more
// than the record.
func Replace(path string, data []byte, perm os.FileMode) error {
	return write(path, data, perm, false)
}

func write(path string, data []byte, perm os.FileMode, sync bool) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(tmp.Name())
		}
	}()
	_, err = tmp.Write(data)
	steps := []func() error{tmp.Close, func() error { return os.Chmod(tmp.Name(), perm) }}
	if sync {
		steps = append([]func() error{tmp.Sync}, steps...)
	}
	for _, step := range steps {
		err = errors.Join(err, step())
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
