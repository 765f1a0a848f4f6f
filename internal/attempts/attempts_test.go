package attempts_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/internal/attempts"
)

// deadProcess is the PID and start time of a process that ran and was
// reaped.
func deadProcess(t *testing.T) (int, uint64) {
	t.Helper()
	cmd := exec.Command("sleep", "30")
	require.NoError(t, cmd.Start())
	pid, start := cmd.Process.Pid, attempts.StartTime(cmd.Process.Pid)
	require.NotZero(t, start)
	require.True(t, attempts.Alive(pid, start))
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	require.False(t, attempts.Alive(pid, start))
	return pid, start
}

func TestRecordsOfThisWorkerAreNotOrphans(t *testing.T) {
	d := &attempts.Dir{Path: filepath.Join(t.TempDir(), "attempts", "host")}
	r, err := d.Start(attempts.Record{TaskToken: []byte("token-1"), WorkflowID: "s1", Attempt: 1})
	require.NoError(t, err)
	require.NoError(t, r.Agent(os.Getpid()))

	fi, err := os.Stat(d.Path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	entries, err := os.ReadDir(d.Path)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	fi, err = os.Stat(filepath.Join(d.Path, entries[0].Name()))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "a record holds a task token")

	orphans, err := d.Orphans()
	require.NoError(t, err)
	require.Empty(t, orphans, "this process still runs the attempt")
	r.Done()
	require.Empty(t, records(t, d.Path), "a finished attempt leaves no record")
	requireNoToken(t, d.Path, "token-1")

	// The next attempt's record is written in the file the last one left.
	spares := len(entriesOf(t, d.Path))
	require.NotZero(t, spares, "the record's file is kept as a spare")
	r, err = d.Start(attempts.Record{TaskToken: []byte("token-2"), WorkflowID: "s1", Attempt: 2})
	require.NoError(t, err)
	require.Len(t, records(t, d.Path), 1)
	require.Len(t, entriesOf(t, d.Path), spares, "no file was created")
	r.Done()
}

// entriesOf are the names in dir.
func entriesOf(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// records are the names of the records in dir (not its spares).
func records(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, name := range entriesOf(t, dir) {
		if strings.HasSuffix(name, ".json") {
			out = append(out, name)
		}
	}
	return out
}

// requireNoToken fails when a file of dir holds token.
func requireNoToken(t *testing.T, dir, token string) {
	t.Helper()
	for _, name := range entriesOf(t, dir) {
		data, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		require.NotContains(t, string(data), token, "%s keeps a removed record's token", name)
	}
}

func TestOrphansOfADeadWorker(t *testing.T) {
	d := &attempts.Dir{Path: t.TempDir()}
	pid, start := deadProcess(t)
	write := func(name string, v any) {
		data, err := json.Marshal(v)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(d.Path, name), data, 0o600))
	}
	write("dead.json", attempts.Record{TaskToken: []byte("t-dead"), WorkflowID: "s1", WorkerPID: pid, WorkerStart: start})
	// Our own PID with another start time: the PID was reused, the
	// worker that wrote the record is gone.
	write("reused.json", attempts.Record{TaskToken: []byte("t-reused"), WorkflowID: "s2", WorkerPID: os.Getpid(), WorkerStart: attempts.StartTime(os.Getpid()) + 1})
	write("alive.json", attempts.Record{TaskToken: []byte("t-alive"), WorkflowID: "s3", WorkerPID: os.Getpid(), WorkerStart: attempts.StartTime(os.Getpid())})
	require.NoError(t, os.WriteFile(filepath.Join(d.Path, "torn.json"), []byte(`{"task_tok`), 0o600))

	orphans, err := d.Orphans()
	require.NoError(t, err)
	var ids []string
	for _, o := range orphans {
		ids = append(ids, o.WorkflowID)
	}
	require.ElementsMatch(t, []string{"s1", "s2"}, ids)
	_, err = os.Stat(filepath.Join(d.Path, "torn.json"))
	require.True(t, os.IsNotExist(err), "a torn record is dropped")
	for _, o := range orphans {
		o.Remove()
	}
	require.Equal(t, []string{"alive.json"}, records(t, d.Path), "only the live worker's record stays")
	requireNoToken(t, d.Path, "t-dead")
	requireNoToken(t, d.Path, "t-reused")
}

func TestKillAgentEndsTheOrphanedAgentGroup(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 60 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	o := attempts.Orphan{Record: attempts.Record{AgentPID: cmd.Process.Pid, AgentStart: attempts.StartTime(cmd.Process.Pid)}}
	require.True(t, o.KillAgent())
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the agent's group still runs")
	}
	require.False(t, o.KillAgent(), "a dead agent is not killed twice")
	stale := attempts.Orphan{Record: attempts.Record{AgentPID: os.Getpid(), AgentStart: attempts.StartTime(os.Getpid()) + 1}}
	require.False(t, stale.KillAgent(), "a reused PID is not the agent")
}

// TestOrphanRecordNamesItsAgent: Agent appends the agent's process to
// the record instead of writing it again; a line cut by a crash is read
// as no agent, and a record of an older worker (one JSON value) still
// reads.
func TestOrphanRecordNamesItsAgent(t *testing.T) {
	d := &attempts.Dir{Path: t.TempDir()}
	pid, start := deadProcess(t)
	r, err := d.Start(attempts.Record{TaskToken: []byte("t-agent"), WorkflowID: "appended", Attempt: 1})
	require.NoError(t, err)
	require.NoError(t, r.Agent(os.Getpid()))
	name := records(t, d.Path)[0]
	data, err := os.ReadFile(filepath.Join(d.Path, name))
	require.NoError(t, err)
	lines := strings.SplitAfter(string(data), "\n")
	require.Len(t, lines, 3, "the record, the agent's line, nothing after: %q", data)
	// The worker that wrote it is made a dead one.
	var rec attempts.Record
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &rec))
	rec.WorkerPID, rec.WorkerStart = pid, start
	first, err := json.Marshal(rec)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(d.Path, name), []byte(string(first)+"\n"+lines[1]), 0o600))

	dead := func(token string) []byte {
		data, err := json.Marshal(attempts.Record{TaskToken: []byte(token), WorkflowID: token, WorkerPID: pid, WorkerStart: start})
		require.NoError(t, err)
		return data
	}
	require.NoError(t, os.WriteFile(filepath.Join(d.Path, "cut.json"), append(dead("cut"), "\n{\"agent_pid\":77"...), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(d.Path, "older.json"), dead("older"), 0o600))

	orphans, err := d.Orphans()
	require.NoError(t, err)
	agents := map[string]int{}
	for _, o := range orphans {
		agents[o.WorkflowID] = o.AgentPID
	}
	require.Equal(t, map[string]int{"appended": os.Getpid(), "cut": 0, "older": 0}, agents)
}
