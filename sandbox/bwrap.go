package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// InstallHint says how to make agent runs containable on Linux.
const InstallHint = "install bubblewrap and socat (Debian/Ubuntu: sudo apt-get install bubblewrap socat; " +
	"Fedora: sudo dnf install bubblewrap socat), or set agent.sandbox: off to run agents uncontained"

// systemDirs are bound read-only: the system's programs, libraries and
// configuration.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"}

// Bubblewrap is the Box of bwrap; Socat, when set, bridges the sandbox's
// loopback to the egress proxy.
type Bubblewrap struct {
	Bwrap, Socat string
	// Prlimit is util-linux's prlimit, which sets a run's limits inside
	// its user namespace; "" where the machine has none.
	Prlimit string
	version string
	// nestedUserns says this bwrap takes --disable-userns (0.8.0 and
	// later): the run cannot make user namespaces of its own.
	nestedUserns bool
	// entersNet says the worker may enter a run's network namespace
	// (CAP_SYS_ADMIN, as root): it listens for the egress proxy in
	// there itself, with no bridge (socat) inside.
	entersNet bool
	// cgroups are where runs get a control group; cgroupErr says why
	// they get none.
	cgroups   cgroups
	cgroupErr error
}

var (
	findOnce sync.Once
	found    *Bubblewrap
	findErr  error
)

// Find returns the Box of this machine, looked up and tried once: bwrap
// on PATH that can create the namespaces a run needs, a user namespace
// among them (as root too: a run's root is nobody outside it), and the
// seccomp filter of runs. Without socat a run can be contained only on
// the networks none and open; Wrap says so.
func Find() (*Bubblewrap, error) {
	findOnce.Do(func() { found, findErr = probe() })
	return found, findErr
}

func probe() (*Bubblewrap, error) {
	bw, err := exec.LookPath("bwrap")
	if err != nil {
		return nil, fmt.Errorf("%w: bwrap not found on PATH", ErrUnavailable)
	}
	if _, err := Filter(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	b := &Bubblewrap{Bwrap: bw, nestedUserns: true}
	b.Socat, _ = exec.LookPath("socat")
	b.Prlimit, _ = exec.LookPath("prlimit")
	out, err := exec.Command(bw, "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("%w: %s --version: %v", ErrUnavailable, bw, err)
	}
	b.version = strings.TrimSpace(string(out))
	// A run needs these namespaces; a kernel or a policy that forbids
	// user namespaces fails here, once, not in every iteration. A bwrap
	// older than 0.8.0 has no --disable-userns: the seccomp filter then
	// refuses new namespaces alone.
	try := func() ([]byte, error) {
		args := append(b.namespaces(NetNone), "--ro-bind", "/", "/", "--", "true")
		return exec.Command(bw, args...).CombinedOutput()
	}
	out, err = try()
	if err != nil && strings.Contains(string(out), "disable-userns") {
		b.nestedUserns = false
		out, err = try()
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s cannot create namespaces here: %v: %s",
			ErrUnavailable, bw, err, strings.TrimSpace(string(out)))
	}
	b.cgroups, b.cgroupErr = findCgroups()
	b.entersNet = b.tryEnterNet()
	return b, nil
}

// tryEnterNet reports whether the worker can open a listener in the
// network namespace of a run: it starts one that runs nothing until the
// listener is open.
func (b *Bubblewrap) tryEnterNet() bool {
	g, err := newGate()
	if err != nil {
		return false
	}
	defer g.close()
	args := append(append(b.namespaces(NetNone), "--ro-bind", "/", "/"), g.args()...)
	cmd := exec.Command(b.Bwrap, append(args, "--", "true")...)
	// fds 4 and 5; fd 3 is unused here.
	cmd.ExtraFiles = []*os.File{nil, g.infoW, g.blockR}
	if cmd.Start() != nil {
		return false
	}
	g.infoW.Close()
	g.blockR.Close()
	ok := false
	if in, err := g.readInfo(); err == nil {
		if l, err := listenIn(fmt.Sprintf("/proc/%d/ns/net", in.ChildPID), in.NetNS); err == nil {
			l.Close()
			ok = true
		}
	}
	g.blockW.Close()
	_ = cmd.Wait()
	return ok
}

// ProxyProblem is why runs on network cannot be contained here (it wraps
// ErrUnavailable), or nil: a network that goes through the egress proxy
// needs the worker to enter the run's network namespace or socat.
func (b *Bubblewrap) ProxyProblem(network string) error {
	if network == "" {
		network = NetInternet
	}
	if Proxied(network) && !b.entersNet && b.Socat == "" {
		return fmt.Errorf("%w: agent.network %s needs socat, which is not on PATH; a worker that may enter the sandbox's network namespace (root) needs none", ErrUnavailable, network)
	}
	return nil
}

// Bridge says how a run's loopback reaches the egress proxy here.
func (b *Bubblewrap) Bridge() string {
	switch {
	case b.entersNet:
		return "the worker listens in the sandbox's network namespace"
	case b.Socat != "":
		return "socat inside the sandbox"
	}
	return "none (no socat): only agent.network none and open"
}

// ServesProxy says the worker opens the egress proxy's listener in each
// sandbox's network itself, and so may serve the proxy on it
// (Spec.ProxyServe) rather than on a Unix socket.
func (b *Bubblewrap) ServesProxy() bool { return b.entersNet }

// Name is bwrap's version line.
func (b *Bubblewrap) Name() string { return b.version }

// Enforcement says how agent.limits hold on this machine: each limit
// and what holds it.
func (b *Bubblewrap) Enforcement() string {
	tmp := "tmp: size of each tmpfs"
	if b.cgroups.usable() {
		return "processes and memory: a control group per run; " + tmp
	}
	if b.Prlimit == "" {
		return "processes and memory: NOT limited (no control group, and no prlimit: install util-linux); " + tmp
	}
	why := ""
	if b.cgroupErr != nil {
		why = " (" + b.cgroupErr.Error() + ")"
	}
	if os.Geteuid() == 0 {
		return "processes: NOT limited, root is exempt from RLIMIT_NPROC and no control group can be made" + why +
			"; memory: RLIMIT_DATA of each process; " + tmp
	}
	return "processes: RLIMIT_NPROC in the run's user namespace; memory: RLIMIT_DATA of each process (no control group" + why + "); " + tmp
}

// namespaces are the options of a run on network: a user namespace with
// no capability and no way to make another, and namespaces of its own
// for processes, IPC and the host name (and the network unless open).
func (b *Bubblewrap) namespaces(network string) []string {
	args := []string{"--die-with-parent", "--new-session", "--unshare-user"}
	if b.nestedUserns {
		args = append(args, "--disable-userns")
	}
	args = append(args, "--cap-drop", "ALL", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--hostname", "ralph-sandbox")
	if network != NetOpen {
		args = append(args, "--unshare-net")
	}
	return args
}

// proxySocket is where the egress proxy's socket is bound inside.
const proxySocket = "/run/ralph/egress.sock"

// Wrap returns bwrap's command line running cmd as spec says, within
// spec.Limits. The command it returns has a file to inherit (the seccomp
// filter, fd 3) and a Release for after it ended.
func (b *Bubblewrap) Wrap(spec Spec, cmd Command) (Command, error) {
	network := spec.Network
	if network == "" {
		network = NetInternet
	}
	if Proxied(network) {
		if err := b.ProxyProblem(network); err != nil {
			return Command{}, err
		}
		if b.entersNet && spec.ProxyServe == nil || !b.entersNet && spec.ProxySocket == "" {
			return Command{}, errors.New("sandbox: no egress proxy for agent.network " + network)
		}
	}
	lim := spec.Limits.withDefaults()
	m, err := mounts(spec, cmd.Path, lim.Tmp)
	if err != nil {
		return Command{}, err
	}
	args := append(b.namespaces(network), m...)
	env := sandboxEnv(cmd.Env)
	bridged := Proxied(network) && !b.entersNet
	if bridged {
		args = append(args, "--bind", spec.ProxySocket, proxySocket, "--ro-bind", b.Socat, b.Socat)
	}
	if Proxied(network) {
		env = proxyEnv(env)
	}
	// Nothing is mounted after this: the root of the sandbox is read-only
	// too, so no write goes to memory that no limit counts.
	args = append(args, "--remount-ro", "/")
	run, err := b.newRun(lim)
	if err != nil {
		return Command{}, err
	}
	if Proxied(network) && b.entersNet {
		run.serve = spec.ProxyServe
	}
	args = append(append(args, "--add-seccomp-fd", "3"), run.gate.args()...)
	args = append(args, "--chdir", spec.Workspace, "--")
	contents := append([]string{cmd.Path}, cmd.Args...)
	if bridged {
		// sh starts the bridge to the proxy, waits until it listens,
		// and becomes the agent.
		contents = append([]string{"/bin/sh", "-c", bridgeScript, "ralph-sandbox", b.Socat}, contents...)
	}
	return Command{Path: b.Bwrap, Args: append(args, run.inside(b.Prlimit, contents)...), Env: env, Guarded: true,
		Files: []*os.File{run.filter, run.gate.infoW, run.gate.blockR}, Ready: run.ready, Spawn: run.spawn, Release: run.release}, nil
}

// bridgeScript runs socat ($1) to bridge the sandbox's 127.0.0.1:3128 to
// the egress proxy's socket, waits until it says it listens (its -d -d
// notice, read from a pipe: no polling), then runs the agent ("$@" after
// the socat path) on the stdin it was given (kept on fd 3). socat starts
// with SIGPIPE ignored, so its later notices, with nobody reading them,
// do not end it; the agent gets the default back.
var bridgeScript = fmt.Sprintf(`s=$1; shift; exec 3<&0
trap '' PIPE
r=$( { "$s" -d -d TCP-LISTEN:%d,bind=127.0.0.1,reuseaddr,fork UNIX-CONNECT:%s 2>&1 >/dev/null </dev/null & } |
  while read -r l; do case $l in *"listening on"*) echo ready; break;; esac; done )
trap - PIPE
[ "$r" = ready ] || { echo "ralph-sandbox: the bridge to the egress proxy did not start" >&2; exit 127; }
exec "$@" <&3 3<&-`, ProxyPort, proxySocket)

// sandboxEnv is env with TMPDIR on the private /tmp.
func sandboxEnv(env []string) []string {
	out := make([]string, 0, len(env)+8)
	for _, kv := range env {
		if strings.HasPrefix(kv, "TMPDIR=") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "TMPDIR=/tmp")
}

// proxyNames are the variables that point HTTP clients at a proxy.
var proxyNames = []string{"HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy", "NO_PROXY", "no_proxy"}

// proxyEnv points env's HTTP clients at the egress proxy, and nothing
// bypasses it (NO_PROXY empty: the sandbox's loopback has nothing else).
func proxyEnv(env []string) []string {
	out := make([]string, 0, len(env)+len(proxyNames))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(proxyNames, name) {
			out = append(out, kv)
		}
	}
	url := "http://127.0.0.1:" + strconv.Itoa(ProxyPort)
	for _, n := range proxyNames {
		v := url
		if strings.EqualFold(n, "NO_PROXY") {
			v = ""
		}
		out = append(out, n+"="+v)
	}
	return out
}

// cleanAbs is p made absolute and clean, or "" for a relative path.
func cleanAbs(p string) string {
	if !filepath.IsAbs(p) {
		return ""
	}
	return filepath.Clean(p)
}
