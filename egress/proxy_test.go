package egress

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// ioTimeout bounds every read of a test so that a broken proxy fails the
// test instead of hanging it.
const ioTimeout = 10 * time.Second

// sockPath returns a socket path in a fresh directory, short enough for
// a Unix socket address (t.TempDir's names can be too long).
func sockPath(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "egress")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return filepath.Join(dir, "s")
}

// start serves a proxy with policy and closes it at the end of the test.
func start(t *testing.T, policy Policy) (*Proxy, string) {
	t.Helper()
	path := sockPath(t)
	px, err := Listen(path, policy)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, px.Close()) })
	return px, path
}

// echoServer serves on 127.0.0.1 a TCP echo: it sends back what it gets
// and half-closes at the end of it. ended gets a value as each
// connection ends.
func echoServer(t *testing.T) (addr string, ended <-chan struct{}) {
	t.Helper()
	done := make(chan struct{}, 16)
	addr = serveTCP(t, func(c net.Conn, _ *sync.WaitGroup) {
		defer func() { _ = c.Close() }()
		_, _ = io.Copy(c, c)
		_ = c.(*net.TCPConn).CloseWrite()
		done <- struct{}{}
	})
	return addr, done
}

// serveTCP listens on 127.0.0.1 until the test ends and hands each
// connection to serve on a goroutine of its own; serve may start more on
// wg, which the end of the test waits for too.
func serveTCP(t *testing.T, serve func(c net.Conn, wg *sync.WaitGroup)) (addr string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	t.Cleanup(func() {
		_ = ln.Close()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { serve(c, &wg) })
		}
	})
	return ln.Addr().String()
}

// dialProxy connects to the proxy's socket.
func dialProxy(t *testing.T, path string) net.Conn {
	t.Helper()
	c, err := net.Dial("unix", path)
	require.NoError(t, err)
	require.NoError(t, c.SetDeadline(time.Now().Add(ioTimeout)))
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// connect sends CONNECT target, followed by early (bytes a client sends
// before the answer), and reads the answer.
func connect(t *testing.T, path, target, early string) (*http.Response, net.Conn, *bufio.Reader) {
	t.Helper()
	c := dialProxy(t, path)
	_, err := fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: test\r\n\r\n%s", target, target, early)
	require.NoError(t, err)
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	require.NoError(t, err)
	return res, c, br
}

// body reads the whole body of res.
func body(t *testing.T, res *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	return string(b)
}

func TestConnect(t *testing.T) {
	echo, _ := echoServer(t)
	px, path := start(t, Policy{Allow: []string{echo}})
	tests := []struct {
		name, early, later string
	}{
		{name: "after the answer", later: "hello, echo"},
		{name: "before the answer", early: "early ", later: "and later"},
		{name: "nothing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, c, br := connect(t, path, echo, tt.early)
			require.Equal(t, http.StatusOK, res.StatusCode)
			_, err := io.WriteString(c, tt.later)
			require.NoError(t, err)
			// The end of what the client sends goes through to the echo
			// server, whose end comes back.
			require.NoError(t, c.(*net.UnixConn).CloseWrite())
			got, err := io.ReadAll(br)
			require.NoError(t, err)
			require.Equal(t, tt.early+tt.later, string(got))
		})
	}
	require.Empty(t, px.Refused())

	// An allowed destination that cannot be reached.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := ln.Addr().String()
	require.NoError(t, ln.Close())
	px, path = start(t, Policy{Allow: []string{closed}})
	res, _, _ := connect(t, path, closed, "")
	require.Equal(t, http.StatusBadGateway, res.StatusCode)
	require.Contains(t, body(t, res), "connection refused")
	require.Empty(t, px.Refused())
}

func TestConnectRefused(t *testing.T) {
	echo, _ := echoServer(t)
	px, path := start(t, Policy{Allow: []string{"api.example.com"}})
	for range 2 {
		res, _, _ := connect(t, path, echo, "")
		require.Equal(t, http.StatusForbidden, res.StatusCode)
		require.Equal(t, "refused "+echo+": not on agent.network-allow\n", body(t, res))
		require.Contains(t, res.Header.Get("Proxy-Status"), "error=http_request_denied")
	}
	res, _, _ := connect(t, path, "Other.Example.com.:443", "")
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	require.Equal(t, []string{echo, "other.example.com:443"}, px.Refused())
	require.Empty(t, px.Refused())

	res, _, _ = connect(t, path, "no-port.example.com", "")
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
	require.Contains(t, body(t, res), "CONNECT needs host:port")
	require.Empty(t, px.Refused())
}

// TestInternet tests that Internet lets through public addresses only,
// and that the allow list wins over the address.
func TestInternet(t *testing.T) {
	echo, _ := echoServer(t)
	allowed, _ := echoServer(t)
	_, port, err := net.SplitHostPort(echo)
	require.NoError(t, err)
	px, path := start(t, Policy{Internet: true, Allow: []string{allowed}})
	tests := []struct {
		target string
		status int
		reason string
	}{
		{echo, http.StatusForbidden, "loopback address 127.0.0.1"},
		{"10.0.0.1:443", http.StatusForbidden, "private address 10.0.0.1"},
		{"169.254.169.254:80", http.StatusForbidden, "link-local address 169.254.169.254"},
		{"[::ffff:127.0.0.1]:" + port, http.StatusForbidden, "loopback address 127.0.0.1"},
		{"localhost:" + port, http.StatusForbidden, "loopback address "},
		{allowed, http.StatusOK, ""},
	}
	var want []string
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			res, _, _ := connect(t, path, tt.target, "")
			require.Equal(t, tt.status, res.StatusCode)
			if tt.status == http.StatusForbidden {
				d, err := parseDest(tt.target)
				require.NoError(t, err)
				require.True(t, strings.HasPrefix(body(t, res), "refused "+d.String()+": "+tt.reason), tt.target)
				require.Contains(t, res.Header.Get("Proxy-Status"), "error=destination_ip_prohibited")
				if !slices.Contains(want, d.String()) {
					want = append(want, d.String())
				}
			}
		})
	}
	// Plain HTTP goes through the same check.
	c := dialProxy(t, path)
	_, err = io.WriteString(c, "GET http://10.1.2.3/ HTTP/1.1\r\nHost: 10.1.2.3\r\n\r\n")
	require.NoError(t, err)
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	require.Equal(t, "refused 10.1.2.3:80: private address 10.1.2.3\n", body(t, res))
	require.Equal(t, append(want, "10.1.2.3:80"), px.Refused())
}

// TestClose tests that Close ends an open tunnel and an open stream,
// removes the socket and leaves no goroutine behind.
func TestClose(t *testing.T) {
	echo, ended := echoServer(t)
	stream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "data: first\n\n")
		http.NewResponseController(w).Flush()
		<-r.Context().Done() // an endless stream
	}))
	t.Cleanup(stream.Close)
	streamHost := stream.Listener.Addr().String()
	before := runtime.NumGoroutine()

	path := sockPath(t)
	px, err := Listen(path, Policy{Allow: []string{echo, streamHost}})
	require.NoError(t, err)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.ModeSocket|0o600, fi.Mode())

	res, tunnel, br := connect(t, path, echo, "")
	require.Equal(t, http.StatusOK, res.StatusCode)
	_, err = io.WriteString(tunnel, "x")
	require.NoError(t, err)
	b := make([]byte, 1)
	_, err = io.ReadFull(br, b)
	require.NoError(t, err)

	c := dialProxy(t, path)
	_, err = fmt.Fprintf(c, "GET http://%s/ HTTP/1.1\r\nHost: %s\r\n\r\n", streamHost, streamHost)
	require.NoError(t, err)
	sr := bufio.NewReader(c)
	res, err = http.ReadResponse(sr, nil)
	require.NoError(t, err)
	events := bufio.NewReader(res.Body)
	line, err := events.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "data: first\n", line)

	require.NoError(t, px.Close())
	rest, err := io.ReadAll(br)
	require.NoError(t, err, "the tunnel ends with EOF")
	require.Empty(t, rest)
	select {
	case <-ended:
	case <-time.After(ioTimeout):
		t.Fatal("the tunnel's upstream connection is still open")
	}
	_, err = io.ReadAll(events)
	require.Error(t, err, "the stream ends abruptly")
	_, err = os.Stat(path)
	require.ErrorIs(t, err, os.ErrNotExist)
	require.NoError(t, px.Close(), "a second Close")

	_ = tunnel.Close()
	_ = c.Close()
	stream.CloseClientConnections()
	// Eventually runs the condition in a goroutine of its own: one more.
	require.Eventually(t, func() bool { return runtime.NumGoroutine() <= before+1 },
		ioTimeout, time.Millisecond, "goroutines were left running")

	px, err = Listen(path, Policy{})
	require.NoError(t, err, "the path is free again")
	require.NoError(t, px.Close())
}

func TestListenErrors(t *testing.T) {
	path := sockPath(t)
	_, err := Listen(path, Policy{Allow: []string{"https://api.example.com"}})
	require.ErrorContains(t, err, `egress policy: allow entry "https://api.example.com": is a URL`)
	_, err = os.Stat(path)
	require.ErrorIs(t, err, os.ErrNotExist)

	px, err := Listen(path, Policy{})
	require.NoError(t, err)
	defer func() { require.NoError(t, px.Close()) }()
	_, err = Listen(path, Policy{})
	require.Error(t, err, "the socket exists")
	_, err = Listen(filepath.Join(path, "missing", "s"), Policy{})
	require.Error(t, err)
}

// BenchmarkListen measures the start and end of a proxy, which every
// agent run pays.
func BenchmarkListen(b *testing.B) {
	path := sockPath(b)
	policy := Policy{Internet: true, Allow: []string{"api.anthropic.com", "*.githubusercontent.com", "127.0.0.1:43567"}}
	for b.Loop() {
		px, err := Listen(path, policy)
		if err != nil {
			b.Fatal(err)
		}
		if err := px.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
