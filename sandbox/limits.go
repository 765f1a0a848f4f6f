package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Defaults of agent.limits: what one agent run may use unless the
// session says otherwise. A laptop survives a run that takes them all.
const (
	DefaultProcesses = 2048
	DefaultMemory    = 4 << 30
	DefaultTmp       = 1 << 30
)

// Limits bound what one contained run may use. A zero field is its
// default; see Enforcement for how each is held on a machine.
type Limits struct {
	// Processes is the most processes and threads the run may have at
	// once.
	Processes int
	// Memory is the most memory, in bytes, the run's processes may use
	// together (a cgroup), or each (RLIMIT_DATA) where the worker can
	// make no cgroup.
	Memory int64
	// Tmp is the size, in bytes, of each of the run's private file
	// systems in memory: /tmp, its home directory, /dev/shm.
	Tmp int64
}

// withDefaults is l with its zero fields at their defaults.
func (l Limits) withDefaults() Limits {
	if l.Processes <= 0 {
		l.Processes = DefaultProcesses
	}
	if l.Memory <= 0 {
		l.Memory = DefaultMemory
	}
	if l.Tmp <= 0 {
		l.Tmp = DefaultTmp
	}
	return l
}

// ParseSize reads a size in bytes written as people write it: 512MiB,
// 4GiB, 1G, 2048K, or a number of bytes. K, M, G and T are powers of
// 1024, with or without "iB" or "B".
func ParseSize(s string) (int64, error) {
	m := sizePattern.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("%q is not a size (such as 512MiB or 4GiB)", s)
	}
	n, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a size (such as 512MiB or 4GiB)", s)
	}
	shift := map[string]uint{"": 0, "K": 10, "M": 20, "G": 30, "T": 40}[strings.ToUpper(m[2])]
	return int64(n * float64(int64(1)<<shift)), nil
}

var sizePattern = regexp.MustCompile(`(?i)^\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGT]?)(?:i?B)?\s*$`)

// FormatSize writes n bytes as people read it (4GiB, 512MiB).
func FormatSize(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// cgroups are the places where the worker makes a control group for
// each run: one directory for cgroup v2, one per controller (pids,
// memory) for v1. Empty when it can make none here.
type cgroups struct {
	v2          string
	pids, memry string
}

// usable reports whether runs get a control group.
func (c cgroups) usable() bool { return c.v2 != "" || c.pids != "" && c.memry != "" }

// parentName is the control group under which the worker makes the
// groups of its runs.
const parentName = "ralph"

// cgroupRoot is where the cgroup hierarchies are mounted: v2's, or v1's
// one directory per controller.
const cgroupRoot = "/sys/fs/cgroup"

// findCgroups finds where runs' control groups can be made: a cgroup v2
// hierarchy at /sys/fs/cgroup whose root delegates memory and pids, or
// the v1 pids and memory hierarchies, where this process may create a
// group (root, usually). It makes the parent group and tries one group
// in it. Groups earlier workers left are removed when empty.
func findCgroups() (cgroups, error) {
	if _, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers")); err == nil {
		dir := filepath.Join(cgroupRoot, parentName)
		if err := makeParentV2(cgroupRoot, dir); err != nil {
			return cgroups{}, err
		}
		return tried(cgroups{v2: dir})
	}
	c := cgroups{pids: filepath.Join(cgroupRoot, "pids", parentName), memry: filepath.Join(cgroupRoot, "memory", parentName)}
	for _, d := range []string{c.pids, c.memry} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return cgroups{}, fmt.Errorf("no control group for agent runs: %w", err)
		}
	}
	return tried(c)
}

// tried is c when a run's group can be made in it.
func tried(c cgroups) (cgroups, error) {
	if err := c.try(); err != nil {
		return cgroups{}, err
	}
	return c, nil
}

// makeParentV2 makes dir under the v2 root with the memory and pids
// controllers given to its children.
func makeParentV2(root, dir string) error {
	ctrl, err := os.ReadFile(filepath.Join(root, "cgroup.controllers"))
	if err != nil {
		return fmt.Errorf("no control group for agent runs: %w", err)
	}
	for _, c := range []string{"memory", "pids"} {
		if !strings.Contains(" "+strings.TrimSpace(string(ctrl))+" ", " "+c+" ") {
			return fmt.Errorf("no control group for agent runs: cgroup v2 has no %s controller here", c)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("no control group for agent runs: %w", err)
	}
	for _, d := range []string{root, dir} {
		if err := os.WriteFile(filepath.Join(d, "cgroup.subtree_control"), []byte("+memory +pids"), 0); err != nil {
			return fmt.Errorf("no control group for agent runs: give memory and pids to %s: %w", d, err)
		}
	}
	return nil
}

// try makes and removes one group, and removes the empty groups of dead
// workers.
func (c cgroups) try() error {
	for _, parent := range c.parents() {
		entries, _ := os.ReadDir(parent)
		for _, e := range entries {
			if e.IsDir() && strings.HasPrefix(e.Name(), "run-") {
				_ = unix.Rmdir(filepath.Join(parent, e.Name())) // busy while its run lives
			}
		}
	}
	g, err := c.make(Limits{}.withDefaults())
	if err != nil {
		return err
	}
	g.remove()
	return nil
}

func (c cgroups) parents() []string {
	if c.v2 != "" {
		return []string{c.v2}
	}
	return []string{c.pids, c.memry}
}

var runSeq atomic.Int64

// group is the control group of one run: a directory per hierarchy
// (one for v2).
type group struct {
	dirs []string
	v2   bool
}

// make makes the group of one run, bounded by l.
func (c cgroups) make(l Limits) (group, error) {
	name := fmt.Sprintf("run-%d-%d", os.Getpid(), runSeq.Add(1))
	var g group
	settings := map[string]string{}
	if c.v2 != "" {
		d := filepath.Join(c.v2, name)
		g.dirs, g.v2 = []string{d}, true
		settings[filepath.Join(d, "pids.max")] = strconv.Itoa(l.Processes)
		settings[filepath.Join(d, "memory.max")] = strconv.FormatInt(l.Memory, 10)
		settings[filepath.Join(d, "memory.swap.max")] = "0"
	} else {
		p, m := filepath.Join(c.pids, name), filepath.Join(c.memry, name)
		g.dirs = []string{p, m}
		settings[filepath.Join(p, "pids.max")] = strconv.Itoa(l.Processes)
		settings[filepath.Join(m, "memory.limit_in_bytes")] = strconv.FormatInt(l.Memory, 10)
	}
	for _, d := range g.dirs {
		if err := os.Mkdir(d, 0o755); err != nil {
			g.remove()
			return group{}, fmt.Errorf("control group of the agent run: %w", err)
		}
	}
	for file, v := range settings {
		err := os.WriteFile(file, []byte(v), 0)
		if errors.Is(err, os.ErrNotExist) && strings.HasSuffix(file, "memory.swap.max") {
			continue // a kernel without swap accounting
		}
		if err != nil {
			g.remove()
			return group{}, fmt.Errorf("control group of the agent run: %w", err)
		}
	}
	return g, nil
}

// remove removes the group once its processes are gone; the kernel may
// hold an emptied group busy for a moment.
func (g group) remove() {
	for _, d := range g.dirs {
		for i := 0; i < 50; i++ {
			if err := unix.Rmdir(d); err == nil || errors.Is(err, os.ErrNotExist) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// run is what applies one run's limits: the seccomp filter bwrap reads
// (fd 3), the run's control group where the machine gives one, and the
// gate that holds bwrap until the group and the network are ready.
type run struct {
	filter  *os.File
	limits  Limits
	group   group
	grouped bool
	// born: the run's first process was started in its group (spawn).
	born bool
	gate *gate
	// serve, when set, serves the egress proxy on the listener the
	// worker opens in the sandbox's network (served).
	serve  func(net.Listener)
	served net.Listener
}

// newRun prepares the limits of one run, bounded by l.
func (b *Bubblewrap) newRun(l Limits) (*run, error) {
	r := &run{limits: l}
	var err error
	if r.filter, err = filterFile(); err != nil {
		return nil, err
	}
	if r.gate, err = newGate(); err != nil {
		r.release()
		return nil, err
	}
	if b.cgroups.usable() {
		if r.group, err = b.cgroups.make(l); err != nil {
			r.release()
			return nil, fmt.Errorf("sandbox: %w", err)
		}
		r.grouped = true
	}
	return r, nil
}

// spawn starts cmd, the run's first process, born in the run's group
// where it can be (startIn).
func (r *run) spawn(cmd *exec.Cmd) error {
	if !r.grouped {
		return cmd.Start()
	}
	var err error
	r.born, err = r.group.startIn(cmd)
	return err
}

// inside is the command line that starts the sandbox's contents within
// the limits when the run has no control group: prlimit, as the
// sandbox's first process, sets RLIMIT_NPROC (counted in the sandbox's
// own user namespace, for the run alone: set outside, it would count
// every process of the user) and RLIMIT_DATA, then runs cmd. A run in a
// control group, or on a machine without prlimit, runs cmd as it is.
func (r *run) inside(prlimit string, cmd []string) []string {
	if r.grouped || prlimit == "" {
		return cmd
	}
	return append([]string{prlimit,
		fmt.Sprintf("--nproc=%d:%d", r.limits.Processes, r.limits.Processes),
		fmt.Sprintf("--data=%d:%d", r.limits.Memory, r.limits.Memory), "--"}, cmd...)
}

// release closes what is left of the run's files and removes its
// control group; it runs once the run has ended.
func (r *run) release() {
	if r.filter != nil {
		r.filter.Close()
	}
	if r.gate != nil {
		r.gate.close()
	}
	if r.served != nil {
		r.served.Close()
	}
	if r.grouped {
		// The kernel holds an emptied group busy for a moment: the run's
		// end does not wait for it (a worker that dies first leaves it to
		// the next worker's findCgroups).
		go r.group.remove()
	}
}
