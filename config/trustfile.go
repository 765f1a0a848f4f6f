package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/viper"

	"github.com/durable-ralph/ralph/internal/atomicfile"
)

// trustFileName is the file, beside the user config file, that records
// the trusted workspaces.
const trustFileName = "trusted-workspaces.json"

// trustAbout heads the trust file, for whoever opens it.
const trustAbout = "Workspaces whose ralph.yaml may run the settings listed, written by starter trust DIR " +
	"(starter trust --list shows them, starter trust --revoke DIR removes one). " +
	"sha256 is of those settings (key=value), not of the whole file: when they change, starter asks again."

// TrustedWorkspace is a workspace the user trusts with the values its
// ralph.yaml sets that run on this machine: an entry of the trust file.
type TrustedWorkspace struct {
	// Dir is the workspace, absolute and with symbolic links resolved.
	Dir string `json:"dir"`
	// SHA256 is the SHA-256 (hex) of Settings in canonical form.
	SHA256 string `json:"sha256"`
	// Settings are the values trusted, as the user saw them.
	Settings []RunSetting `json:"settings"`
	// TrustedAt is when the user trusted them.
	TrustedAt time.Time `json:"trusted_at"`
}

// trustDoc is the trust file.
type trustDoc struct {
	About      string             `json:"about"`
	Workspaces []TrustedWorkspace `json:"workspaces"`
}

// TrustFile returns the file that records the trusted workspaces:
// trusted-workspaces.json beside the user config file, in
// $XDG_CONFIG_HOME/durable-ralph or ~/.config/durable-ralph.
func TrustFile() (string, error) {
	user, err := userFilePath()
	if err != nil {
		return "", fmt.Errorf("find the file of trusted workspaces: %w", err)
	}
	return filepath.Join(filepath.Dir(user), trustFileName), nil
}

// ReadWorkspace reads the ralph.yaml of the workspace dir, checks it as
// Load would, and returns what it sets that runs on this machine, as
// TrustWorkspace would record it (without TrustedAt); Settings is empty
// when it sets nothing that runs. A dir without ralph.yaml is an error.
func ReadWorkspace(dir string) (TrustedWorkspace, error) {
	file := absPath(filepath.Join(dir, fileName))
	info, err := os.Stat(file)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return TrustedWorkspace{}, fmt.Errorf("%s has no %s: nothing to trust", realDir(dir), fileName)
	case err != nil:
		return TrustedWorkspace{}, fmt.Errorf("config file %s: %w", file, err)
	case info.IsDir():
		return TrustedWorkspace{}, fmt.Errorf("config file %s is a directory", file)
	}
	all := viper.New()
	fv, err := readFile(all, file)
	if err != nil {
		return TrustedWorkspace{}, err
	}
	if err := errors.Join(checkKeys(all, file), checkTrusted(fv, file)); err != nil {
		return TrustedWorkspace{}, err
	}
	w := TrustedWorkspace{Dir: realDir(dir)}
	if runs := readRuns(fv, file); runs != nil {
		w.SHA256, w.Settings = runs.sum, runs.settings
	}
	return w, nil
}

// TrustWorkspace records in the trust file that the user trusts the
// workspace dir with the values its ralph.yaml sets now that run, in
// place of an earlier entry of dir, and returns the entry. A ralph.yaml
// that sets nothing that runs needs no trust: the entry, with no
// Settings, is not recorded, and an earlier one is left as it is.
func TrustWorkspace(dir string, now time.Time) (TrustedWorkspace, error) {
	w, err := ReadWorkspace(dir)
	if err != nil || len(w.Settings) == 0 {
		return w, err
	}
	w.TrustedAt = now.UTC().Truncate(time.Second)
	err = updateTrust(func(entries []TrustedWorkspace) []TrustedWorkspace {
		entries = slices.DeleteFunc(entries, func(e TrustedWorkspace) bool { return e.Dir == w.Dir })
		return append(entries, w)
	})
	return w, err
}

// RevokeWorkspace removes the entry of the workspace dir from the trust
// file and returns it; false if dir had none. dir need not exist any more.
func RevokeWorkspace(dir string) (TrustedWorkspace, bool, error) {
	real := realDir(dir)
	var gone TrustedWorkspace
	found := false
	err := updateTrust(func(entries []TrustedWorkspace) []TrustedWorkspace {
		return slices.DeleteFunc(entries, func(e TrustedWorkspace) bool {
			if e.Dir == real {
				gone, found = e, true
			}
			return e.Dir == real
		})
	})
	return gone, found, err
}

// TrustedWorkspaces returns the entries of the trust file, by directory.
func TrustedWorkspaces() ([]TrustedWorkspace, error) {
	file, err := TrustFile()
	if err != nil {
		return nil, err
	}
	return readTrust(file)
}

// updateTrust rewrites the trust file with the entries change makes of
// its entries. Two processes that update it at once may lose one's change.
func updateTrust(change func([]TrustedWorkspace) []TrustedWorkspace) error {
	file, err := TrustFile()
	if err != nil {
		return err
	}
	entries, err := readTrust(file)
	if err != nil {
		return err
	}
	return writeTrust(file, change(entries))
}

// readTrust reads the trust file, which need not exist.
func readTrust(file string) ([]TrustedWorkspace, error) {
	data, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the trusted workspaces: %w", err)
	}
	var doc trustDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("read the trusted workspaces in %s: %w (fix or remove the file, then trust the workspaces again)", file, err)
	}
	return doc.Workspaces, nil
}

// writeTrust writes the trust file, readable by the user only, in one
// step: a temporary file in its directory, renamed over it.
func writeTrust(file string, entries []TrustedWorkspace) (err error) {
	slices.SortFunc(entries, func(a, b TrustedWorkspace) int { return strings.Compare(a.Dir, b.Dir) })
	data, err := json.MarshalIndent(trustDoc{About: trustAbout, Workspaces: entries}, "", "  ")
	if err != nil {
		return fmt.Errorf("write the trusted workspaces: %w", err)
	}
	err = atomicfile.WriteFile(file, append(data, '\n'), 0o600)
	if err != nil {
		return fmt.Errorf("write the trusted workspaces to %s: %w", file, err)
	}
	return nil
}
