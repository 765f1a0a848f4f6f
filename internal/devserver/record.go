package devserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Files a server keeps in its state directory besides the database.
const (
	// LockFile is locked (flock, exclusive) by the server that runs on the
	// state directory, for as long as it runs, and holds its PID.
	LockFile = "devserver.lock"
	// RecordFile is the Record of the running server, written once it
	// answers and removed when it stops.
	RecordFile = "devserver.json"
	// LogFile is the server's log.
	LogFile = "temporal.log"
)

// Record is what a running server writes about itself in its state
// directory, for the commands that look for it.
type Record struct {
	// PID is the process the server runs in.
	PID int `json:"pid"`
	// Address is the frontend's host:port.
	Address string `json:"address"`
	// UIURL is the Web UI's base URL, or "" when it is off.
	UIURL string `json:"ui_url,omitempty"`
	// Namespace is the namespace the server registered.
	Namespace string `json:"namespace"`
	// StateDir is the state directory.
	StateDir string `json:"state_dir"`
	// Started is when the server began to answer.
	Started time.Time `json:"started"`
}

// Log is the path of the server's log.
func (r Record) Log() string { return filepath.Join(r.StateDir, LogFile) }

// State is whether a server runs on a state directory.
type State int

// States of a state directory.
const (
	// NotRunning: nothing holds the lock; a record there is stale.
	NotRunning State = iota
	// Starting: a process holds the lock and has not recorded its
	// address yet.
	Starting
	// Running: the lock's holder recorded its address.
	Running
)

// LockedError refuses a second server on a state directory.
type LockedError struct {
	// StateDir is the state directory.
	StateDir string
	// Holder is the running server: its PID, and the rest when it has
	// recorded it.
	Holder Record
}

func (e *LockedError) Error() string {
	if e.Holder.Address == "" {
		return fmt.Sprintf("a Temporal dev server is starting on the state directory %s (PID %d): one server per state directory", e.StateDir, e.Holder.PID)
	}
	return fmt.Sprintf("a Temporal dev server already runs on the state directory %s (PID %d, address %s): one server per state directory; use that one, or stop it first (starter dev stop)",
		e.StateDir, e.Holder.PID, e.Holder.Address)
}

// lock is the lock of a state directory, held by the server on it.
type lock struct {
	f   *os.File
	dir string
}

// acquire locks stateDir for this process, or returns a *LockedError
// naming the server that holds it.
func acquire(stateDir string) (*lock, error) {
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return nil, fmt.Errorf("create state dir: %w", err)
	}
	path := filepath.Join(stateDir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open the lock of %s: %w", stateDir, err)
	}
	// Find holds a shared lock for a moment to look: a few tries tell
	// such a look from a server.
	for try := 0; ; try++ {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || try == 20 {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				rec, _, _ := Find(stateDir)
				return nil, &LockedError{StateDir: stateDir, Holder: rec}
			}
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	l := &lock{f: f, dir: stateDir}
	if err = f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	if err != nil {
		l.release()
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return l, nil
}

// publish writes rec as the record of the state directory, whole or not
// at all.
func (l *lock) publish(rec Record) error {
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return fmt.Errorf("encode the server's record: %w", err)
	}
	path := filepath.Join(l.dir, RecordFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write the server's record: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write the server's record: %w", err)
	}
	return nil
}

// release removes the record and unlocks the state directory. The lock
// file stays: removing it would let two servers lock two files.
func (l *lock) release() {
	if rec, err := ReadRecord(l.dir); err == nil && rec.PID == os.Getpid() {
		_ = os.Remove(filepath.Join(l.dir, RecordFile))
	}
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	l.f.Close()
}

// ReadRecord reads the record of stateDir as it is, stale or not.
func ReadRecord(stateDir string) (Record, error) {
	data, err := os.ReadFile(filepath.Join(stateDir, RecordFile))
	if err != nil {
		return Record{}, err
	}
	var rec Record
	if err := json.Unmarshal(data, &rec); err != nil {
		return Record{}, fmt.Errorf("read %s: %w", filepath.Join(stateDir, RecordFile), err)
	}
	return rec, nil
}

// Find says whether a server runs on stateDir and, when one does, its
// record: only its PID while it is Starting. It takes no lock a server
// could want for longer than a moment.
func Find(stateDir string) (Record, State, error) {
	path := filepath.Join(stateDir, LockFile)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return Record{}, NotRunning, nil
	}
	if err != nil {
		return Record{}, NotRunning, fmt.Errorf("open the lock of %s: %w", stateDir, err)
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
	if err == nil {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return Record{}, NotRunning, nil
	}
	if !errors.Is(err, syscall.EWOULDBLOCK) {
		return Record{}, NotRunning, fmt.Errorf("look at the lock of %s: %w", stateDir, err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Record{}, NotRunning, fmt.Errorf("read %s: %w", path, err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	if rec, err := ReadRecord(stateDir); err == nil && rec.PID == pid {
		return rec, Running, nil
	}
	return Record{PID: pid, StateDir: stateDir}, Starting, nil
}
