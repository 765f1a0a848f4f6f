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
}

func newScanner() *scanner {
	s := &scanner{asked: map[string]pidWindow{}, found: map[string][]int{}}
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
		batch := s.asked
		s.asked = map[string]pidWindow{}
		s.mu.Unlock()
		found := scanMarks(batch)
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

// scanMarks reads the environment of the processes that lie in at least
// one of the windows of marks, and returns, for each mark, the live
// processes of its window that hold it.
func scanMarks(marks map[string]pidWindow) map[string][]int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	type bounded struct {
		w     pidWindow
		last  int
		known bool
	}
	windows := make(map[string]bounded, len(marks))
	for m, w := range marks {
		last, known := w.bounds()
		windows[m] = bounded{w, last, known}
	}
	prefix := []byte(markVar + "=")
	found := map[string][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		inAny := false
		for _, b := range windows {
			if b.w.holds(pid, b.last, b.known) {
				inAny = true
				break
			}
		}
		if !inAny {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(env, prefix) {
			continue
		}
		live := func() bool {
			state, _, ok := procStat(pid)
			return ok && state != 'Z' && state != 'X'
		}
		for kv := range bytes.SplitSeq(env, []byte{0}) {
			if !bytes.HasPrefix(kv, prefix) {
				continue
			}
			m := string(kv)
			b, ok := windows[m]
			if !ok || !b.w.holds(pid, b.last, b.known) || slices.Contains(found[m], pid) {
				continue
			}
			if !live() {
				break
			}
			found[m] = append(found[m], pid)
		}
	}
	return found
}
