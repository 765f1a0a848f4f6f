package sandbox

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// A run's processes must be in its control group before they run
// anything. Moving a process into a group (a write of its PID to
// cgroup.procs) takes the kernel's lock of every thread group for
// writing, which waits for an RCU grace period: 5 to 27 ms on the
// benchmark machine, for every contained run whose start is not within a
// grace period of another move. A thread that moves itself (a write of 0
// to a v1 group's tasks file) takes no such lock (60–140 µs there), and a
// process is born in the groups of the thread that forks it. So on
// cgroup v1 the runs' processes are started by one thread of the worker
// that moves itself into the run's groups, starts bubblewrap, which is
// born there with all it starts, and moves itself back: the spawner.
//
// On cgroup v2 a thread cannot be in another group than its process's
// (outside threaded groups), but clone3 can put the new process in a
// group of its caller's choice (CLONE_INTO_CGROUP): the same, with no
// thread moving. A move on v2 waits as long as on v1 (5–15 ms on the
// benchmark machine, a v2 hierarchy mounted beside its v1 ones).

// spawner is that thread: locked to a goroutine for good, never the
// process's first thread (in v1's memory controller the group of the
// thread group's leader is the one charged for the process's memory).
type spawner struct {
	reqs chan spawnReq
	tid  int // the thread's ID
	// home holds the tasks file of the thread's own group, by hierarchy
	// (the directory the hierarchy is mounted on).
	home map[string]string
}

type spawnReq struct {
	tasks []string // the tasks files of the run's groups
	start func() error
	done  chan spawnResult
}

type spawnResult struct {
	started bool // start ran, in the run's groups
	err     error
}

// theSpawner is the worker's spawner, started at its first use; nil
// with the error that kept it from starting.
var theSpawner = sync.OnceValues(func() (*spawner, error) {
	s := &spawner{reqs: make(chan spawnReq)}
	started := make(chan error, 1)
	go s.lock(started)
	if err := <-started; err != nil {
		return nil, err
	}
	return s, nil
})

// lock locks the goroutine to its thread and serves there, unless the
// thread is the process's first: then another goroutine, which cannot
// run on this locked thread, takes its place and this one lets go.
func (s *spawner) lock(started chan<- error) {
	runtime.LockOSThread()
	if unix.Gettid() != unix.Getpid() {
		s.serve(started)
		return
	}
	locked := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		close(locked)
		s.serve(started)
	}()
	<-locked
	runtime.UnlockOSThread()
}

// serve runs the requests on this thread. It never returns once it has
// served one (the processes it started are sent their parent-death
// signal, bubblewrap's --die-with-parent, when their parent thread ends).
func (s *spawner) serve(started chan<- error) {
	home, err := threadGroups()
	if err != nil {
		started <- fmt.Errorf("the spawner's own control groups: %w", err)
		return // the goroutine ends locked: the thread with it
	}
	s.home, s.tid = home, unix.Gettid()
	started <- nil
	broken := false
	for req := range s.reqs {
		if broken {
			req.done <- spawnResult{} // started by the asker, where it is
			continue
		}
		var res spawnResult
		res, broken = s.spawn(req)
		req.done <- res
	}
}

// spawn moves the thread into the groups of req, starts its process
// there, and moves the thread home. A process is not started when the
// thread could not enter all its groups. broken reports a thread that
// could not go home: it starts nothing any more (a process it started
// would be born in an earlier run's group, and the thread would keep
// that group from being removed).
func (s *spawner) spawn(req spawnReq) (res spawnResult, broken bool) {
	var entered []string
	for _, t := range req.tasks {
		if err := os.WriteFile(t, []byte("0"), 0); err != nil {
			break
		}
		entered = append(entered, t)
	}
	if len(entered) == len(req.tasks) {
		res = spawnResult{started: true, err: req.start()}
	}
	for _, t := range entered {
		home, ok := s.home[hierarchyOf(t)]
		if !ok || os.WriteFile(home, []byte("0"), 0) != nil {
			broken = true
		}
	}
	return res, broken
}

// hierarchyOf is the hierarchy (mount directory) of a v1 group's file
// under /sys/fs/cgroup: /sys/fs/cgroup/pids for
// /sys/fs/cgroup/pids/ralph/run-1/tasks.
func hierarchyOf(file string) string {
	rel, err := filepath.Rel(cgroupRoot, file)
	if err != nil {
		return ""
	}
	first, _, _ := strings.Cut(rel, string(filepath.Separator))
	return filepath.Join(cgroupRoot, first)
}

// threadGroups reads the calling thread's v1 groups: the tasks file of
// each, by the directory its hierarchy is mounted on (one per
// controller: /sys/fs/cgroup/pids, /sys/fs/cgroup/memory).
func threadGroups() (map[string]string, error) {
	data, err := os.ReadFile("/proc/thread-self/cgroup")
	if err != nil {
		return nil, err
	}
	home := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		// hierarchy-ID:controller-list:path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 || parts[1] == "" {
			continue // v2's line, 0::path
		}
		for _, ctrl := range strings.Split(parts[1], ",") {
			if strings.HasPrefix(ctrl, "name=") {
				continue
			}
			home[filepath.Join(cgroupRoot, ctrl)] = filepath.Join(cgroupRoot, ctrl, parts[2], "tasks")
		}
	}
	if len(home) == 0 {
		return nil, errors.New("no cgroup v1 hierarchy in /proc/thread-self/cgroup")
	}
	return home, nil
}

// startIn starts cmd, a run's first process, so that it is born in g:
// on v1 by the spawner from within g's groups, on v2 by clone3's
// CLONE_INTO_CGROUP (Linux 5.7). born is false where it could not be (no
// spawner, a group it could not enter, a kernel without clone3): cmd was
// started where the worker is, and must be moved.
func (g group) startIn(cmd *exec.Cmd) (born bool, err error) {
	if g.v2 {
		return g.cloneInto(cmd)
	}
	s, serr := theSpawner()
	if serr != nil {
		return false, cmd.Start()
	}
	req := spawnReq{start: cmd.Start, done: make(chan spawnResult, 1)}
	for _, d := range g.dirs {
		req.tasks = append(req.tasks, filepath.Join(d, "tasks"))
	}
	s.reqs <- req
	if res := <-req.done; res.started {
		return true, res.err
	}
	return false, cmd.Start()
}

// cloneInto starts cmd in g, a v2 group, by CLONE_INTO_CGROUP.
func (g group) cloneInto(cmd *exec.Cmd) (bool, error) {
	if !cloneIntoWorks(g.dirs[0]) {
		return false, cmd.Start()
	}
	fd, err := unix.Open(g.dirs[0], unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, cmd.Start()
	}
	defer unix.Close(fd)
	var attr syscall.SysProcAttr
	if cmd.SysProcAttr != nil {
		attr = *cmd.SysProcAttr
	}
	attr.UseCgroupFD, attr.CgroupFD = true, fd
	cmd.SysProcAttr = &attr
	return true, cmd.Start()
}

// cloneProbe is whether this kernel starts processes in a v2 group
// (clone3 with CLONE_INTO_CGROUP), found once, by starting true in the
// first run's group.
var cloneProbe struct {
	once sync.Once
	ok   bool
}

func cloneIntoWorks(dir string) bool {
	cloneProbe.once.Do(func() {
		fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return
		}
		defer unix.Close(fd)
		cmd := exec.Command("/bin/true")
		cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
		cloneProbe.ok = cmd.Run() == nil
	})
	return cloneProbe.ok
}
