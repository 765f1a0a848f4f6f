// Package atomicfile writes a file whole or not at all: a temporary file
// beside it, synced, then renamed over it, so that a reader (or a
// process that starts after a crash) finds the old content or the new.
package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
)

// WriteFile writes data to path with permissions perm, whole or not at
// all, making path's directory (0700) when it is missing.
func WriteFile(path string, data []byte, perm os.FileMode) (err error) {
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
	for _, step := range []func() error{tmp.Sync, tmp.Close, func() error { return os.Chmod(tmp.Name(), perm) }} {
		err = errors.Join(err, step())
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
