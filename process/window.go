package process

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync"
)

// pidWindow is where the PIDs of the processes a run made lie, so that
// the end of a run reads the environment of those processes only, not
// of every process of the machine (hundreds on a desktop, a few
// milliseconds an iteration). Linux gives PIDs in increasing order and
// wraps at pid_max, so the PIDs given since the run's first process lie
// cyclically between its PID and the last PID given. That holds while
// fewer PIDs were given than it takes to go round, which the machine's
// count of forks since boot tells.
type pidWindow struct {
	// first is the PID of the run's first process; forks the count of
	// forks before it started, or -1 where it could not be read.
	first int
	forks int64
}

// openWindow is the window of a run about to start; set first once it
// has.
func openWindow() pidWindow { return pidWindow{forks: forksSinceBoot()} }

// holds reports whether pid may be one of the run's processes: all do
// where the window cannot be known.
func (w pidWindow) holds(pid int, last int, known bool) bool {
	if !known {
		return true
	}
	if w.first <= last {
		return pid >= w.first && pid <= last
	}
	return pid >= w.first || pid <= last // the PIDs went round pid_max
}

// pidCursor is where the machine's PIDs stand: the count of forks since
// boot (-1 where it could not be read) and the last PID given (0 where
// it could not be). A scan reads it once for all the windows it serves.
type pidCursor struct {
	forks int64
	last  int
}

// readPIDCursor reads where the machine's PIDs stand now.
func readPIDCursor() pidCursor { return pidCursor{forks: forksSinceBoot(), last: lastPID()} }

// bounds is the last PID given, and whether the window holds only what
// lies between first and it, with the machine's PIDs standing at now.
func (w pidWindow) bounds(now pidCursor) (last int, known bool) {
	if w.first <= 0 || !recent(w.forks, now) {
		return 0, false
	}
	return now.last, true
}

// recent reports whether the PIDs given since the count of forks stood
// at since, to now, cannot have gone round pid_max: a PID alive since
// then is the same process. Threads take PIDs too and count as forks:
// half of pid_max keeps a wide margin from going round.
func recent(since int64, now pidCursor) bool {
	limit := pidMax()
	return since >= 0 && limit > 0 && now.forks >= 0 && now.last > 0 && now.forks-since < int64(limit/2)
}

// forksSinceBoot is the "processes" line of /proc/stat (forks and
// threads made since boot, in the whole machine), or -1.
func forksSinceBoot() int64 {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return -1
	}
	for line := range bytes.Lines(data) {
		if v, ok := bytes.CutPrefix(line, []byte("processes ")); ok {
			n, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
			if err != nil {
				return -1
			}
			return n
		}
	}
	return -1
}

// lastPID is the PID given last in this PID namespace (the last field of
// /proc/loadavg), or 0.
func lastPID() int {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(data))
	if len(fields) < 5 {
		return 0
	}
	n, _ := strconv.Atoi(fields[4])
	return n
}

// pidMax is the kernel's pid_max, read once, or 0.
var pidMax = sync.OnceValue(func() int {
	data, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	return n
})
