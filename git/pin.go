package git

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/durable-ralph/ralph/internal/atomicfile"
)

// Pins keeps, in a directory of the worker that no agent sees, the
// layout of each workspace's repository as Ralph trusts it: recorded when a session
// starts there (Trust) or when Ralph first opens it (Verify), so that a
// worker started after another died still knows a .git that an agent
// replaced. A work tree whose layout changed is marked, and no session
// trusts it again until a person has looked (and removed its record).
// Pins with no directory keep nothing: each Repo then checks its own
// layout for its own life only.
type Pins struct {
	Dir string
}

// pin is the record of one workspace (a work tree, or a directory in
// one).
type pin struct {
	Dir    string `json:"dir"`
	Layout Layout `json:"layout"`
	// Changed says what an agent changed, once it did.
	Changed string `json:"changed,omitempty"`
}

// Path is the file of the record of the workspace dir.
func (p Pins) Path(dir string) string {
	sum := sha256.Sum256([]byte(dir))
	return filepath.Join(p.Dir, hex.EncodeToString(sum[:12])+".json")
}

// Trust records l as the layout of the workspace dir from now on: a
// session starts there, on the repository its user has. A workspace an
// agent changed before is refused until its record is removed.
func (p Pins) Trust(dir string, l Layout) error {
	if p.Dir == "" {
		return nil
	}
	old, ok, err := p.read(dir)
	if err != nil {
		return err
	}
	if ok && old.Changed != "" && l.Same(old.Layout) != nil {
		return fmt.Errorf("%w: an agent changed the git directory of %s in an earlier session (%s): Ralph runs no git there until you have checked its .git; then remove %s",
			ErrUnsafeRepository, dir, old.Changed, p.Path(dir))
	}
	return p.write(pin{Dir: dir, Layout: l})
}

// Verify checks l against the record of the workspace dir: the same
// layout, or none yet (then l is recorded). A different one is marked
// (Mark) and refused.
func (p Pins) Verify(dir string, l Layout) error {
	if p.Dir == "" {
		return nil
	}
	old, ok, err := p.read(dir)
	if err != nil {
		return err
	}
	switch {
	case !ok:
		return p.write(pin{Dir: dir, Layout: l})
	case old.Changed != "":
		return fmt.Errorf("%w: %s was found changed before (%s): Ralph runs no git there until you have checked its .git; then remove %s",
			ErrUnsafeRepository, dir, old.Changed, p.Path(dir))
	}
	if err := old.Layout.Same(l); err != nil {
		p.Mark(dir, err)
		return fmt.Errorf("%w (if you replaced it yourself, remove %s)", err, p.Path(dir))
	}
	return nil
}

// Mark records that the repository of the workspace dir is no longer
// the one recorded, why: no session trusts it again until a person
// removes the record.
func (p Pins) Mark(dir string, why error) {
	if p.Dir == "" {
		return
	}
	old, _, _ := p.read(dir)
	if old.Changed != "" {
		return
	}
	_ = p.write(pin{Dir: dir, Layout: old.Layout, Changed: why.Error()})
}

func (p Pins) read(dir string) (pin, bool, error) {
	data, err := os.ReadFile(p.Path(dir))
	if errors.Is(err, os.ErrNotExist) {
		return pin{}, false, nil
	}
	if err != nil {
		return pin{}, false, fmt.Errorf("read the pinned layout of %s: %w", dir, err)
	}
	var rec pin
	if err := json.Unmarshal(data, &rec); err != nil || rec.Dir != dir {
		return pin{}, false, nil // a torn write: none
	}
	return rec, true, nil
}

func (p Pins) write(rec pin) error {
	data, err := json.Marshal(rec)
	if err == nil {
		err = atomicfile.Replace(p.Path(rec.Dir), data, 0o600)
	}
	if err != nil {
		return fmt.Errorf("pin the layout of %s: %w", rec.Dir, err)
	}
	return nil
}
