package process

import (
	"bytes"
	"os"
	"slices"
	"strconv"
	"sync"
)

// scans is the one scanner of this process's runs.
var scans = newScanner()

// scanner finds the processes that hold runs' marks in their environment
// by reading /proc, once for all the runs that ask at about the same time:
// runs that end together (sessions started together, whose agents think
// alike) would otherwise each read the environment of every process of
// the others, N scans of N processes. A run's question is answered by the
// first scan that begins after it was asked, so that every process alive
// when it asked is seen.
type scanner struct {
	mu      sync.Mutex
	cond    *sync.Cond
	begun   uint64               // scans begun
	done    uint64               // scans finished (scans run one at a time)
	running bool                 // a scan is under way
	asked   map[string]pidWindow // the marks the next scan looks for
	found   map[string][]int     // what the scans found, until its asker reads it
	seen    map[int]seenMarks    // processes found holding marks (see scan)
}

func newScanner() *scanner {
	s := &scanner{asked: map[string]pidWindow{}, found: map[string][]int{}, seen: map[int]seenMarks{}}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// marked lists the live processes (not zombies) among those the run
// could have made (w) whose environment holds mark, a run's KEY=value.
// A mark is asked by one caller at a time (its run's end).
func (s *scanner) marked(mark string, w pidWindow) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked[mark] = w
	want := s.begun + 1
	for s.done < want {
		if s.running {
			s.cond.Wait()
			continue
		}
		s.running = true
		s.begun++
		batch, n := s.asked, s.begun
		s.asked = map[string]pidWindow{}
		s.mu.Unlock()
		found := s.scan(batch, n)
		s.mu.Lock()
		for m := range batch {
			s.found[m] = found[m]
		}
		s.done = s.begun
		s.running = false
		s.cond.Broadcast()
	}
	pids := s.found[mark]
	delete(s.found, mark)
	return pids
}

// seenMarks is what a scan read of a process that held marks: its
// marks, and the count of forks before it was born (the largest window
// start that held it), which tells when its PID may have gone round.
type seenMarks struct {
	marks  []string
	since  int64
	listed uint64 // the last scan that listed it
}

// scan reads the environment of the processes that lie in at least one
// of the windows of marks, and returns, for each mark, the live processes
// of its window that hold it; n is the scan's number. A process found
// holding marks is read once: its marks are kept (seen) while its PID is
// listed in /proc and cannot have gone round, since the sessions' agents
// live through many other runs' ends (200 sessions at once: a fifth of
// the worker's CPU went to reading the same environments again). A
// process with no mark is read again each time: it may be one of this
// process's children between fork and exec, whose environment is about
// to change. A process that later replaces its environment keeps the
// marks it was seen with: it was the run's. Scans run one at a time, so
// seen needs no lock of its own.
func (s *scanner) scan(marks map[string]pidWindow, n uint64) map[string][]int {
	names, err := procNames()
	if err != nil {
		return nil
	}
	now := readPIDCursor()
	type bounded struct {
		w     pidWindow
		last  int
		known bool
	}
	windows := make(map[string]bounded, len(marks))
	for m, w := range marks {
		last, known := w.bounds(now)
		windows[m] = bounded{w, last, known}
	}
	// Keep what was seen only where this process holds no mark itself:
	// its children, between fork and exec, hold its marks.
	keep := os.Getenv(markVar) == ""
	found := map[string][]int{}
	self := os.Getpid()
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid == self {
			continue
		}
		seen, cached := s.seen[pid]
		if cached = cached && recent(seen.since, now); cached {
			seen.listed = n
			s.seen[pid] = seen
		}
		since, inAny := int64(-1), false
		for _, b := range windows {
			if b.w.holds(pid, b.last, b.known) {
				inAny = true
				if b.known {
					since = max(since, b.w.forks)
				}
			}
		}
		if !inAny {
			continue
		}
		if !cached {
			seen = seenMarks{marks: readMarks(name), since: since, listed: n}
			if keep && len(seen.marks) > 0 && recent(since, now) {
				s.seen[pid] = seen
			}
		}
		alive, looked := false, false
		for _, m := range seen.marks {
			b, ok := windows[m]
			if !ok || !b.w.holds(pid, b.last, b.known) || slices.Contains(found[m], pid) {
				continue
			}
			if !looked {
				state, _, ok := procStat(pid)
				alive, looked = ok && state != 'Z' && state != 'X', true
			}
			if alive {
				found[m] = append(found[m], pid)
			}
		}
	}
	for pid, seen := range s.seen {
		if seen.listed != n {
			delete(s.seen, pid) // ended, or its PID may have gone round
		}
	}
	return found
}

// readMarks returns the run marks (markVar=value) in the environment of
// process pid, a name under /proc.
func readMarks(pid string) []string {
	env, err := os.ReadFile("/proc/" + pid + "/environ")
	prefix := []byte(markVar + "=")
	if err != nil || !bytes.Contains(env, prefix) {
		return nil
	}
	var marks []string
	for kv := range bytes.SplitSeq(env, []byte{0}) {
		if bytes.HasPrefix(kv, prefix) {
			marks = append(marks, string(kv))
		}
	}
	return marks
}

// procNames lists /proc, unsorted (a scan needs no order).
func procNames() ([]string, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Readdirnames(-1)
}
