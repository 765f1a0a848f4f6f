package process

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// EndGroup ends what is left of process group pgid: SIGTERM, then SIGKILL
// for whatever still runs after KillGrace. Zombies count as gone: nothing
// may reap them here.
func EndGroup(pgid int) {
	if !groupAlive(pgid) {
		return
	}
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	if awaitEnd(func() bool { return !groupAlive(pgid) }) {
		return
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// awaitEnd polls gone until it says true, for at most KillGrace, and
// reports whether it did. It looks again after 100 µs, then twice as long
// each time up to 50 ms: most processes end within a fraction of a
// millisecond of SIGTERM (the bridge of a sandbox that is being torn down
// too, at the end of every contained run), and a fixed 50 ms poll made
// every such end cost an iteration 50 ms (a first look after 1 ms, 1 ms).
func awaitEnd(gone func() bool) bool {
	deadline := time.Now().Add(KillGrace)
	for wait := 100 * time.Microsecond; time.Now().Before(deadline); wait = min(2*wait, 50*time.Millisecond) {
		time.Sleep(wait)
		if gone() {
			return true
		}
	}
	return false
}

// markVar is the environment variable that marks the processes of one
// agent run.
const markVar = "RALPH_AGENT_RUN"

var runSeq atomic.Int64

// runMark is the KEY=value that marks one agent run's processes: unique
// on this machine.
func runMark() string {
	return fmt.Sprintf("%s=%d.%d.%d", markVar, os.Getpid(), time.Now().UnixNano(), runSeq.Add(1))
}

// endMarked ends the processes whose environment holds mark, the run's
// escapees: SIGTERM, then SIGKILL after KillGrace. A process that cleared
// its environment is beyond it.
func endMarked(mark string, w pidWindow) {
	pids := marked(mark, w)
	if len(pids) == 0 {
		return
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	if awaitEnd(func() bool { return len(marked(mark, w)) == 0 }) {
		return
	}
	for _, pid := range marked(mark, w) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// marked lists the live processes (not zombies) whose environment holds
// mark, among those the run could have made (w); the runs that ask at
// about the same time share one read of /proc (scanner).
func marked(mark string, w pidWindow) []int { return scans.marked(mark, w) }

// groupAlive reports whether a process of group pgid still runs (is not
// a zombie).
func groupAlive(pgid int) bool {
	if errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH) {
		// No process at all, not even a zombie: no need to look at
		// every process of the machine, as below.
		return false
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		// No /proc: ask the kernel, which counts zombies as alive.
		return syscall.Kill(-pgid, 0) == nil
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		state, group, ok := procStat(pid)
		if ok && group == pgid && state != 'Z' && state != 'X' {
			return true
		}
	}
	return false
}

// procStat reads the state and process group of pid from /proc.
func procStat(pid int) (state byte, pgrp int, ok bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// pid (comm) state ppid pgrp ...; comm may hold spaces and parens.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, 0, false
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 3 || len(fields[0]) != 1 {
		return 0, 0, false
	}
	g, err := strconv.Atoi(fields[2])
	if err != nil {
		return 0, 0, false
	}
	return fields[0][0], g, true
}
