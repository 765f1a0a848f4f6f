// Package attempts keeps a record of the activity attempts a worker is
// running, in the worker's state directory, so that a worker starting
// again on the same host finds those its predecessor left when it died
// and fails them at once (by task token) instead of leaving them to their
// heartbeat timeouts. A record holds the attempt's task token, a secret of
// the worker: records are 0600 in a 0700 directory and removed when the
// attempt ends or has been failed.
package attempts

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/durable-ralph/ralph/internal/recycle"
)

// Record is one running attempt.
type Record struct {
	TaskToken  []byte `json:"task_token"`
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
	ActivityID string `json:"activity_id"`
	Attempt    int32  `json:"attempt"`
	// WorkerPID and WorkerStart (the process's start time in clock ticks
	// since boot, from /proc) name the worker that runs the attempt: a
	// record is an orphan only when that process is gone.
	WorkerPID   int    `json:"worker_pid"`
	WorkerStart uint64 `json:"worker_start"`
	// AgentPID and AgentStart name the agent's process (the leader of
	// its process group) once it runs; 0 before.
	AgentPID   int    `json:"agent_pid,omitempty"`
	AgentStart uint64 `json:"agent_start,omitempty"`
}

// Dir is the directory of one host's records.
type Dir struct {
	Path string
	mu   sync.Mutex
}

// files are d's records, recycled (internal/recycle): an attempt that
// ends leaves its file to the next one.
func (d *Dir) files() recycle.Dir { return recycle.Dir{Path: d.Path} }

// Running is an attempt being recorded: Agent notes its agent's process,
// Done removes the record.
type Running struct {
	dir  *Dir
	name string
	rec  Record
}

// Start records an attempt of this process.
func (d *Dir) Start(rec Record) (*Running, error) {
	rec.WorkerPID = os.Getpid()
	rec.WorkerStart = StartTime(rec.WorkerPID)
	sum := sha256.Sum256(rec.TaskToken)
	r := &Running{dir: d, name: hex.EncodeToString(sum[:12]) + ".json", rec: rec}
	return r, r.write()
}

// agentLine is what Agent appends to a record: its agent's process.
type agentLine struct {
	AgentPID   int    `json:"agent_pid"`
	AgentStart uint64 `json:"agent_start"`
}

// Agent records the agent's process: a line appended to the record, in
// one write (a worker killed meanwhile leaves the line whole or not at
// all; a reader that finds it cut reads the record without it), so that
// no file is created for it.
func (r *Running) Agent(pid int) error {
	r.rec.AgentPID, r.rec.AgentStart = pid, StartTime(pid)
	line, err := json.Marshal(agentLine{AgentPID: r.rec.AgentPID, AgentStart: r.rec.AgentStart})
	if err != nil {
		return err
	}
	r.dir.mu.Lock()
	defer r.dir.mu.Unlock()
	f, err := os.OpenFile(filepath.Join(r.dir.Path, r.name), os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW, 0)
	if err == nil {
		_, err = f.Write(append(line, '\n'))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("record the attempt's agent: %w", err)
	}
	return nil
}

// Done removes the record: the attempt ended in this process.
func (r *Running) Done() {
	r.dir.mu.Lock()
	defer r.dir.mu.Unlock()
	_ = r.dir.files().Remove(r.name)
}

func (r *Running) write() error {
	r.dir.mu.Lock()
	defer r.dir.mu.Unlock()
	data, err := json.Marshal(r.rec)
	if err != nil {
		return err
	}
	// Whole or not at all: another worker of the host reading it
	// (Orphans) removes a record it cannot read.
	if err := r.dir.files().WriteFile(r.name, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("record the attempt: %w", err)
	}
	return nil
}

// Orphan is a record its worker left when it died.
type Orphan struct {
	Record
	dir  *Dir
	name string
}

// Orphans are the records whose worker process is gone. A record that
// cannot be read is removed: it could only be retried by its timeout.
func (d *Dir) Orphans() ([]Orphan, error) {
	entries, err := os.ReadDir(d.Path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the attempts of a worker before this one: %w", err)
	}
	var out []Orphan
	for _, e := range entries {
		path := filepath.Join(d.Path, e.Name())
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		data, err := os.ReadFile(path)
		var rec Record
		if err == nil {
			rec, err = parseRecord(data)
		}
		if err != nil || len(rec.TaskToken) == 0 {
			_ = os.Remove(path)
			continue
		}
		if Alive(rec.WorkerPID, rec.WorkerStart) {
			continue // a worker of this host that still runs
		}
		out = append(out, Orphan{Record: rec, dir: d, name: e.Name()})
	}
	return out, nil
}

// parseRecord reads a record: the attempt, then the lines Agent
// appended, the last whole one of which names its agent.
func parseRecord(data []byte) (Record, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var rec Record
	if err := dec.Decode(&rec); err != nil {
		return Record{}, err
	}
	for {
		var a agentLine
		if dec.Decode(&a) != nil {
			return rec, nil
		}
		rec.AgentPID, rec.AgentStart = a.AgentPID, a.AgentStart
	}
}

// Remove deletes an orphan's record, its token with it (the file is
// emptied before it is kept as a spare).
func (o Orphan) Remove() { _ = o.dir.files().Remove(o.name) }

// KillAgent ends the orphan's agent process group if the agent still
// runs (it normally dies with its worker); it reports whether it did.
func (o Orphan) KillAgent() bool {
	if o.AgentPID <= 0 || !Alive(o.AgentPID, o.AgentStart) {
		return false
	}
	return syscall.Kill(-o.AgentPID, syscall.SIGKILL) == nil
}

// Alive reports whether process pid runs and started at start (clock
// ticks since boot; 0 does not check). A zombie is not alive.
func Alive(pid int, start uint64) bool {
	if pid <= 0 {
		return false
	}
	fields, ok := statFields(pid)
	if !ok || fields[0] == "Z" || fields[0] == "X" {
		return false
	}
	return start == 0 || parseStart(fields) == start
}

// StartTime is process pid's start time in clock ticks since boot, 0
// when unknown.
func StartTime(pid int) uint64 {
	fields, ok := statFields(pid)
	if !ok {
		return 0
	}
	return parseStart(fields)
}

// statFields are the fields of /proc/<pid>/stat after the command name,
// starting with the state.
func statFields(pid int) ([]string, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, false
	}
	fields := strings.Fields(s[i+1:])
	return fields, len(fields) > 19
}

// parseStart reads starttime, field 22 of stat (the 20th after the
// command name).
func parseStart(fields []string) uint64 {
	n, _ := strconv.ParseUint(fields[19], 10, 64)
	return n
}
