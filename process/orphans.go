package process

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTicks is the unit of /proc's start times: USER_HZ, 100 on every
// Linux the project runs on.
const clockTicks = 100

// EndOrphans ends what the runs of processes that are gone left
// running: the processes whose environment holds a run's mark (made by
// Run) whose maker is dead, its PID free or taken by a process that
// started after the run did. A worker that starts after another died on
// its machine calls it: a sandbox whose worker was killed as it started
// can outlive it (bubblewrap sets its parent-death signal after it
// forks), and nothing else would end it. It returns how many it ended.
func EndOrphans() int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	boot, ok := bootTime()
	if !ok {
		return 0
	}
	type maker struct {
		start time.Time
		ok    bool
	}
	makers := map[int]maker{} // PID → when the process with it started
	var orphans []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		by, began, ok := markIn(env)
		if !ok {
			continue
		}
		m, seen := makers[by]
		if !seen {
			m.start, m.ok = startedAt(by, boot)
			makers[by] = m
		}
		// A run's maker started before the run did; one that started
		// later is another process with the same PID.
		if !m.ok || m.start.After(began) {
			if state, _, ok := procStat(pid); ok && state != 'Z' && state != 'X' {
				orphans = append(orphans, pid)
			}
		}
	}
	for _, pid := range orphans {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return len(orphans)
}

// markIn reads a run's mark in a process's environment: the PID of the
// process that made the run and when the run began.
func markIn(env []byte) (maker int, began time.Time, ok bool) {
	for kv := range bytes.SplitSeq(env, []byte{0}) {
		v, found := bytes.CutPrefix(kv, []byte(markVar+"="))
		if !found {
			continue
		}
		f := strings.Split(string(v), ".")
		if len(f) != 3 {
			return 0, time.Time{}, false
		}
		pid, err1 := strconv.Atoi(f[0])
		nanos, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			return 0, time.Time{}, false
		}
		return pid, time.Unix(0, nanos), true
	}
	return 0, time.Time{}, false
}

// startedAt is when the process pid started, from its stat and the
// machine's boot time; ok is false when there is no such process.
func startedAt(pid int, boot time.Time) (time.Time, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return time.Time{}, false
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return time.Time{}, false
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 20 {
		return time.Time{}, false
	}
	ticks, err := strconv.ParseInt(fields[19], 10, 64) // starttime, field 22
	if err != nil {
		return time.Time{}, false
	}
	return boot.Add(time.Duration(ticks) * time.Second / clockTicks), true
}

// bootTime is when the machine booted (btime of /proc/stat).
func bootTime() (time.Time, bool) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}, false
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			sec, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return time.Unix(sec, 0), err == nil
		}
	}
	return time.Time{}, false
}
