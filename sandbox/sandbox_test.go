package sandbox_test

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/sandbox"
)

// box is this machine's Box; tests that need one fail under CI when it
// is missing and are skipped elsewhere.
func box(t testing.TB) *sandbox.Bubblewrap {
	t.Helper()
	b, err := sandbox.Find()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI installs bubblewrap and socat: %v", err)
		}
		t.Skip(err)
	}
	return b
}

// run runs script under sh in a sandbox of spec and returns its output.
func run(t *testing.T, spec sandbox.Spec, script string, stdin ...string) (string, error) {
	t.Helper()
	return runIn(t, box(t), spec, script, stdin...)
}

// runIn is run in the sandbox of b.
func runIn(t *testing.T, b *sandbox.Bubblewrap, spec sandbox.Spec, script string, stdin ...string) (string, error) {
	t.Helper()
	c, err := b.Wrap(spec, sandbox.Command{Path: "/bin/sh", Args: []string{"-c", script}, Env: []string{"PATH=" + spec.Path, "HOME=" + spec.Home}})
	require.NoError(t, err)
	return runWrapped(t, c, strings.Join(stdin, ""))
}

// runWrapped runs the command Wrap made as a runner must: with its
// files, its Setup once it started, its Release once it ended.
func runWrapped(t *testing.T, c sandbox.Command, stdin string) (string, error) {
	t.Helper()
	cmd := exec.Command(c.Path, c.Args...)
	cmd.Env = c.Env
	cmd.Stdin = strings.NewReader(stdin)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	defer c.Release()
	if err := c.Start(cmd); err != nil {
		_ = cmd.Wait()
		return out.String(), err
	}
	err := cmd.Wait()
	return out.String(), err
}

// fixture is a host with a home holding secrets and a toolchain, a
// workspace, and another workspace.
type fixture struct {
	home, ws, other, tool, state string
}

func newFixture(t *testing.T) fixture {
	root := t.TempDir()
	f := fixture{
		home:  filepath.Join(root, "home"),
		ws:    filepath.Join(root, "work", "ws"),
		other: filepath.Join(root, "work", "other"),
	}
	f.tool = filepath.Join(f.home, ".tool", "v1", "bin")
	f.state = filepath.Join(f.home, ".local", "state", "durable-ralph")
	for _, d := range []string{f.ws, f.other, f.tool, f.state, filepath.Join(f.home, ".ssh"), filepath.Join(f.home, ".agentstate")} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	write := func(p, s string) { require.NoError(t, os.WriteFile(p, []byte(s), 0o755)) }
	write(filepath.Join(f.home, ".ssh", "id_ed25519"), "PRIVATE")
	write(filepath.Join(f.home, ".tool", "lib.txt"), "library")
	write(filepath.Join(f.tool, "hello"), "#!/bin/sh\necho hello from the toolchain\n")
	write(filepath.Join(f.state, "temporal.db"), "db")
	write(filepath.Join(f.home, ".bashrc"), "# rc\n")
	write(filepath.Join(f.other, "secret.txt"), "other session")
	require.NoError(t, os.MkdirAll(filepath.Join(f.ws, ".git"), 0o755))
	write(filepath.Join(f.ws, ".git", "config"), "[core]\n")
	return f
}

func (f fixture) spec(network string) sandbox.Spec {
	return sandbox.Spec{
		Workspace: f.ws,
		State:     []string{filepath.Join(f.home, ".agentstate")},
		Hidden:    append(sandbox.Credentials(f.home), f.state),
		Home:      f.home,
		Path:      f.tool + ":/usr/bin:/bin",
		Binary:    "/bin/sh",
		Network:   network,
		Locked:    []string{filepath.Join(f.ws, ".git", "config")},
	}
}

func TestFilesystemView(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name, script string
		ok           bool
		want         string
	}{
		{"workspace is writable", "echo x > out.txt && cat out.txt", true, "x"},
		{"toolchain runs and sees its library", "hello && cat " + filepath.Join(f.home, ".tool", "lib.txt"), true, "library"},
		{"backend state is writable", "touch " + filepath.Join(f.home, ".agentstate", "s"), true, ""},
		{"ssh key does not exist", "cat " + filepath.Join(f.home, ".ssh", "id_ed25519"), false, "No such file"},
		{"home is empty", "cat " + filepath.Join(f.home, ".bashrc"), false, "No such file"},
		{"state directory does not exist", "ls " + f.state, false, "No such file"},
		{"other workspace does not exist", "cat " + filepath.Join(f.other, "secret.txt"), false, "No such file"},
		{"system is read-only", "touch /usr/ralph-test", false, "Read-only"},
		{"a locked file of the workspace is read-only", "echo '[core] hooksPath = /tmp' >> .git/config", false, "Read-only"},
		{"only its own processes", "ls /proc | grep -c '^[0-9]'", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := run(t, f.spec(sandbox.NetNone), tt.script)
			if tt.ok {
				require.NoError(t, err, out)
			} else {
				require.Error(t, err, out)
			}
			require.Contains(t, out, tt.want)
		})
	}
	// The toolchain's state survives: it was the host's directory.
	require.FileExists(t, filepath.Join(f.home, ".agentstate", "s"))
	_, err := os.Stat(filepath.Join(f.home, ".bashrc"))
	require.NoError(t, err)
}

// A PATH entry that holds the workspace (or the home directory, or /tmp)
// would bring everything under it: other workspaces stay out.
func TestPathAboveTheWorkspaceBringsNothing(t *testing.T) {
	f := newFixture(t)
	spec := f.spec(sandbox.NetNone)
	spec.Path = filepath.Dir(f.ws) + ":" + f.home + ":/tmp:" + spec.Path
	out, err := run(t, spec, "cat "+filepath.Join(f.other, "secret.txt")+"; cat "+filepath.Join(f.home, ".bashrc"))
	require.Error(t, err, out)
	require.NotContains(t, out, "other session")
	require.NotContains(t, out, "# rc")
}

// serve answers each connection of l with handle, then closes it, until
// l is closed.
func serve(l net.Listener, handle func(net.Conn)) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		handle(c)
		c.Close()
	}
}

func TestNetworkNoneReachesNoHostPort(t *testing.T) {
	b := box(t)
	if b.Socat == "" {
		t.Skip("socat is not installed")
	}
	f := newFixture(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	go serve(l, func(net.Conn) {})
	connect := "socat -u /dev/null TCP:" + l.Addr().String()
	for _, tt := range []struct {
		network string
		ok      bool
	}{{sandbox.NetNone, false}, {sandbox.NetOpen, true}} {
		spec := f.spec(tt.network)
		spec.ReadOnly = []string{b.Socat}
		out, err := run(t, spec, connect)
		if tt.ok {
			require.NoError(t, err, "%s: %s", tt.network, out)
		} else {
			require.Error(t, err, "%s: %s", tt.network, out)
			require.Contains(t, out, "Connection refused", tt.network)
		}
	}
}

func TestProcessesAreItsOwn(t *testing.T) {
	f := newFixture(t)
	out, err := run(t, f.spec(sandbox.NetNone), "for p in /proc/[0-9]*; do echo ${p#/proc/}; done")
	require.NoError(t, err, out)
	pids := strings.Fields(out)
	require.Less(t, len(pids), 6, "a sandbox sees only its own few processes: %v", pids)
	require.Contains(t, pids, "1")
}

func TestProxiedNetworkReachesOnlyTheProxy(t *testing.T) {
	b := box(t)
	if b.Socat == "" {
		t.Skip("socat is not installed")
	}
	f := newFixture(t)
	handle := func(c net.Conn) {
		line, _ := bufio.NewReader(c).ReadString('\n')
		_, _ = c.Write([]byte("proxy got " + line))
	}
	spec := f.spec(sandbox.NetAllowList)
	spec.ProxySocket = fakeProxy(t, handle) // socat's
	spec.ProxyServe = serveOn(t, handle)    // the worker's listener's
	spec.ReadOnly = []string{b.Socat}       // the client
	for _, bridged := range bridges(t, b) {
		t.Run(bridged.name, func(t *testing.T) {
			out, err := runIn(t, bridged.box, spec, `read -r x; echo "stdin: $x"; echo "$HTTPS_PROXY"; echo ping | socat - TCP:127.0.0.1:3128; echo pong | socat - TCP:127.0.0.1:3128`, "the prompt\n")
			require.NoError(t, err, out)
			require.Contains(t, out, "stdin: the prompt", "the program reads the stdin it was given")
			require.Contains(t, out, "http://127.0.0.1:3128")
			require.Contains(t, out, "proxy got ping")
			require.Contains(t, out, "proxy got pong", "the bridge serves on after its first connection")
		})
	}
}

// bridges are the ways b's runs reach the egress proxy here: socat
// inside, and the worker's own listener where it may enter a run's
// network namespace (root); CI, as root, runs both.
func bridges(t *testing.T, b *sandbox.Bubblewrap) []struct {
	name string
	box  *sandbox.Bubblewrap
} {
	out := []struct {
		name string
		box  *sandbox.Bubblewrap
	}{{"socat", sandbox.WithSocatBridge(b)}}
	if b.EntersNet() {
		out = append(out, struct {
			name string
			box  *sandbox.Bubblewrap
		}{"worker_listener", b})
	} else if os.Geteuid() == 0 {
		t.Errorf("a root worker may enter a sandbox's network namespace, but this one found it may not")
	}
	return out
}

// TestRunsOnTheWorkerListenerAreNotKilled: a run whose listener the
// worker opened in its network namespace ends as its command ends, run
// after run. (The thread that entered a namespace once ended with its
// goroutine, and with it, by bwrap's --die-with-parent, whichever run
// that thread had started: one run in ten was killed.)
func TestRunsOnTheWorkerListenerAreNotKilled(t *testing.T) {
	b := box(t)
	if !b.EntersNet() {
		t.Skip("this worker may not enter a sandbox's network namespace (not root)")
	}
	f := newFixture(t)
	spec := f.spec(sandbox.NetInternet)
	spec.ProxyServe = serveOn(t, func(net.Conn) {})
	for i := range 40 {
		out, err := runIn(t, b, spec, "echo ran")
		require.NoError(t, err, "run %d: %s", i, out)
		require.Equal(t, "ran\n", out, "run %d", i)
	}
}

// serveOn is a Spec.ProxyServe that handles each connection of the
// listener it is given, until t ends.
func serveOn(t *testing.T, handle func(net.Conn)) func(net.Listener) {
	return func(l net.Listener) {
		t.Cleanup(func() { l.Close() })
		go serve(l, handle)
	}
}

// fakeProxy is the socket of an egress proxy that handles each
// connection, until t ends.
func fakeProxy(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "egress.sock")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	go serve(l, handle)
	return sock
}
