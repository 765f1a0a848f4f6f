package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ErrStart is the error of a sandbox that was started but could not be
// finished (its control group joined, its network's listener opened):
// its contents never ran.
var ErrStart = errors.New("sandbox: the run could not be set up")

// gate holds a run's bubblewrap before it runs anything of the run's
// own: bwrap tells the child's PID and namespaces on the info pipe, and
// waits on the block pipe once the sandbox is built, before it starts the
// command (--info-fd, --block-fd). Between the two the worker puts the
// run in its control group (no shell to join it first) and, where it
// may enter the run's network namespace, opens the proxy's listener in
// there itself (no bridge process inside).
type gate struct {
	infoR, infoW   *os.File // bwrap writes its info on infoW (fd 4)
	blockR, blockW *os.File // bwrap reads blockR (fd 5) until a byte comes
}

// gate fds: the seccomp filter is fd 3.
const (
	infoFD  = 4
	blockFD = 5
	// infoTimeout bounds the wait for bwrap's info.
	infoTimeout = 30 * time.Second
)

func newGate() (*gate, error) {
	g := &gate{}
	var err error
	if g.infoR, g.infoW, err = os.Pipe(); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	if g.blockR, g.blockW, err = os.Pipe(); err != nil {
		g.close()
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	return g, nil
}

// args are bwrap's options of the gate.
func (g *gate) args() []string {
	return []string{"--info-fd", strconv.Itoa(infoFD), "--block-fd", strconv.Itoa(blockFD)}
}

// close closes what is left open of the gate; a bwrap still waiting on
// it reads the end of the block pipe, so nothing may close it before the
// run is ready or its processes are killed.
func (g *gate) close() {
	for _, f := range []*os.File{g.infoR, g.infoW, g.blockR, g.blockW} {
		if f != nil {
			f.Close()
		}
	}
}

// info is what bwrap writes on --info-fd.
type info struct {
	ChildPID int    `json:"child-pid"`
	NetNS    uint64 `json:"net-namespace"`
}

// readInfo reads the info bwrap writes once it made the sandbox's first
// process; io.EOF when bwrap ended before (its own error is on its
// stderr and in its exit status).
func (g *gate) readInfo() (info, error) {
	// bwrap writes it right after its first clone: far sooner, unless
	// the machine is stuck.
	_ = g.infoR.SetReadDeadline(time.Now().Add(infoTimeout))
	var in info
	if err := json.NewDecoder(g.infoR).Decode(&in); err != nil {
		if errors.Is(err, io.EOF) {
			return info{}, io.EOF
		}
		return info{}, fmt.Errorf("bwrap's info: %w", err)
	}
	if in.ChildPID <= 0 {
		return info{}, errors.New("bwrap's info names no child")
	}
	return in, nil
}

// ready finishes run r, started as process pid: the sandbox's first
// process joins the run's control group, the proxy's listener opens in
// its network namespace when the worker serves it there, and then the
// run may start. When any step fails, bwrap and its child are killed
// before the gate opens, so nothing of the run runs outside its limits.
func (r *run) ready(pid int) error {
	g := r.gate
	g.infoW.Close() // bwrap has its own copy; EOF when it dies first
	g.blockR.Close()
	in, err := g.readInfo()
	if errors.Is(err, io.EOF) {
		// bwrap failed before it started anything: its exit status and
		// stderr say why.
		return nil
	}
	if err == nil && r.grouped && !r.born {
		err = r.group.join(pid, in.ChildPID)
	}
	if err == nil && r.serve != nil {
		err = r.listen(in)
	}
	if err != nil {
		_ = syscall.Kill(in.ChildPID, syscall.SIGKILL)
		_ = syscall.Kill(pid, syscall.SIGKILL)
		return fmt.Errorf("%w: %v", ErrStart, err)
	}
	if _, err := g.blockW.Write([]byte{1}); err != nil {
		return fmt.Errorf("%w: %v", ErrStart, err)
	}
	g.blockW.Close()
	return nil
}

// join puts the processes pids in every hierarchy of the group; their
// children to come are born in it.
func (g group) join(pids ...int) error {
	for _, d := range g.dirs {
		for _, pid := range pids {
			if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
				return fmt.Errorf("join the control group %s: %w", d, err)
			}
		}
	}
	return nil
}

// listen opens the proxy's listener, 127.0.0.1:ProxyPort, in the
// network namespace of the sandbox whose info is in, and hands it to the
// egress proxy, which serves the run's connections on it: no bridge
// between them.
func (r *run) listen(in info) error {
	l, err := listenIn(fmt.Sprintf("/proc/%d/ns/net", in.ChildPID), in.NetNS)
	if err != nil {
		return err
	}
	r.served = l
	r.serve(l)
	return nil
}

// listenIn listens on 127.0.0.1:ProxyPort in the network namespace ns
// (whose inode, when not 0, must be inode). The address is bound freely
// (the sandbox may not have brought its loopback up yet); connections
// come once it has.
//
// One thread enters the namespaces, locked to a goroutine that never
// ends and does nothing else: a thread that ends takes with it the
// processes it started (bwrap's --die-with-parent and the runs'
// Pdeathsig follow the thread that forked them, not the worker), so a
// goroutine may not end locked to a thread it moved, as the usual way of
// discarding such a thread does.
func listenIn(ns string, inode uint64) (net.Listener, error) {
	enterer.once.Do(func() {
		enterer.reqs = make(chan enterReq)
		go serveEnter(enterer.reqs)
	})
	req := enterReq{ns: ns, inode: inode, done: make(chan enterResult, 1)}
	enterer.reqs <- req
	res := <-req.done
	return res.l, res.err
}

// enterer is the thread that enters runs' network namespaces.
var enterer struct {
	once sync.Once
	reqs chan enterReq
}

type enterReq struct {
	ns    string
	inode uint64
	done  chan enterResult
}

type enterResult struct {
	l   net.Listener
	err error
}

// serveEnter answers the requests on its own thread, which goes back to the
// worker's network namespace after each.
func serveEnter(reqs <-chan enterReq) {
	runtime.LockOSThread() // for good: see listenIn
	home, homeErr := os.Open("/proc/thread-self/ns/net")
	for req := range reqs {
		if homeErr != nil {
			req.done <- enterResult{err: fmt.Errorf("the worker's network namespace: %w", homeErr)}
			continue
		}
		l, err := listenInThread(req.ns, req.inode)
		// Back home, so that no ended run's namespace is kept alive by
		// this thread; one that stays away only ever enters others.
		_ = unix.Setns(int(home.Fd()), unix.CLONE_NEWNET)
		req.done <- enterResult{l, err}
	}
}
func listenInThread(ns string, inode uint64) (net.Listener, error) {
	f, err := os.Open(ns)
	if err != nil {
		return nil, fmt.Errorf("the sandbox's network namespace: %w", err)
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, fmt.Errorf("the sandbox's network namespace: %w", err)
	}
	if inode != 0 && st.Ino != inode {
		return nil, fmt.Errorf("the network namespace of %s is not the sandbox's", ns)
	}
	if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
		return nil, fmt.Errorf("enter the sandbox's network namespace: %w", err)
	}
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		if cerr := c.Control(func(fd uintptr) {
			err = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_FREEBIND, 1)
		}); cerr != nil {
			return cerr
		}
		return err
	}}
	l, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:"+strconv.Itoa(ProxyPort))
	if err != nil {
		return nil, fmt.Errorf("listen in the sandbox: %w", err)
	}
	return l, nil
}
