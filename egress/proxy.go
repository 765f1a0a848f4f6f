package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"sync"
	"syscall"
	"time"
)

// Limits of the agent's side of the proxy. Tunnels and responses have no
// overall timeout: a model's answer streams for as long as it takes.
const (
	maxHeaderBytes    = 64 << 10
	readHeaderTimeout = 30 * time.Second
	idleTimeout       = 2 * time.Minute
)

// Proxy is an HTTP proxy on a Unix socket that lets through the
// destinations of its Policy and refuses the others.
type Proxy struct {
	gate      gate
	srv       *http.Server
	transport *http.Transport
	// ctx is the context of every request; cancel ends it, and so every
	// dial and forwarded exchange.
	ctx    context.Context
	cancel context.CancelFunc
	// wg counts the serve loop, the handlers and the tunnels' copies.
	wg sync.WaitGroup

	mu     sync.Mutex
	closed bool
	// conns are both ends of the open tunnels.
	conns map[net.Conn]struct{}
	// refused are the destinations refused since Refused was last
	// called, in first-seen order; seen holds the same.
	refused []string
	seen    map[string]bool
}

// Listen serves the proxy on a Unix socket at path, which must not exist,
// with mode 0600 (removed on Close), and returns at once.
func Listen(path string, p Policy) (*Proxy, error) {
	px, err := New(p)
	if err != nil {
		return nil, err
	}
	ln, err := listenUnix(path)
	if err != nil {
		px.Close()
		return nil, err
	}
	px.Serve(ln)
	return px, nil
}

// New is a proxy of policy p that serves no listener yet (Serve).
func New(p Policy) (*Proxy, error) {
	rules, err := p.rules()
	if err != nil {
		return nil, fmt.Errorf("egress policy: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	px := &Proxy{
		gate:   gate{internet: p.Internet, rules: rules},
		ctx:    ctx,
		cancel: cancel,
		conns:  make(map[net.Conn]struct{}),
		seen:   make(map[string]bool),
	}
	px.transport = &http.Transport{
		Proxy:                  nil, // never the worker's own proxy variables
		DialContext:            px.dialAddr,
		DisableCompression:     true, // pass the body on as it comes
		MaxIdleConns:           16,
		IdleConnTimeout:        90 * time.Second,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: maxHeaderBytes,
	}
	px.srv = &http.Server{
		Handler:           http.HandlerFunc(px.serve),
		MaxHeaderBytes:    maxHeaderBytes,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	return px, nil
}

// Serve serves the proxy on ln until Close, which closes ln (a Unix
// socket's file with it), and returns at once: a Unix socket, or the
// listener the worker opened in a sandbox's network.
func (p *Proxy) Serve(ln net.Listener) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		_ = p.srv.Serve(ln)
	}()
}

// listenUnix listens on a Unix socket at path with mode 0600. The mode is
// set on the socket before it is bound, so that the file never has
// another, and again on the file in case the system ignored that.
func listenUnix(path string) (net.Listener, error) {
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { _ = syscall.Fchmod(int(fd), 0o600) })
	}}
	ln, err := lc.Listen(context.Background(), "unix", path)
	if err != nil {
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	return ln, nil
}

// Close stops the proxy: it stops accepting, ends the open tunnels and
// exchanges, waits for their goroutines and removes the socket.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()

	p.cancel()
	err := p.srv.Close()
	for c := range conns {
		_ = c.Close()
	}
	p.wg.Wait()
	p.transport.CloseIdleConnections()
	if err != nil {
		return fmt.Errorf("egress proxy close: %w", err)
	}
	return nil
}

// Refused returns the destinations (host:port) refused since the last
// call, each once, in first-seen order, and forgets them.
func (p *Proxy) Refused() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.refused
	p.refused = nil
	clear(p.seen)
	return out
}

// serve handles one request of the agent.
func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	if !p.enter() {
		http.Error(w, "egress proxy: closed", http.StatusServiceUnavailable)
		return
	}
	defer p.wg.Done()
	switch {
	case r.Method == http.MethodConnect:
		p.connect(w, r)
	case r.URL.Scheme == "http" && r.URL.Host != "":
		p.forward(w, r)
	default:
		http.Error(w, "egress proxy: only CONNECT host:port and absolute-form http:// requests are served", http.StatusBadRequest)
	}
}

// enter counts a handler in wg, unless the proxy is closed.
func (p *Proxy) enter() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.wg.Add(1)
	return true
}

// track records the ends of a new tunnel to be closed by Close, or closes
// them at once if the proxy is closed.
func (p *Proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		if p.closed {
			_ = c.Close()
			continue
		}
		p.conns[c] = struct{}{}
	}
	return !p.closed
}

// untrack forgets the ends of a tunnel that is over.
func (p *Proxy) untrack(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		delete(p.conns, c)
	}
}

// dial connects to d if the policy lets it through, and records it if
// it is refused.
func (p *Proxy) dial(ctx context.Context, d dest) (net.Conn, error) {
	conn, err := p.gate.dial(ctx, d)
	p.record(err)
	return conn, err
}

// record notes the destination err refuses, if it is a refusal.
func (p *Proxy) record(err error) {
	var r *refusal
	if errors.As(err, &r) {
		p.mu.Lock()
		if !p.seen[r.dest] {
			p.seen[r.dest] = true
			p.refused = append(p.refused, r.dest)
		}
		p.mu.Unlock()
	}
}

// dialAddr is the dialer of the transport of plain HTTP requests.
func (p *Proxy) dialAddr(ctx context.Context, _, addr string) (net.Conn, error) {
	d, err := parseDest(addr)
	if err != nil {
		return nil, err
	}
	return p.dial(ctx, d)
}

// fail answers a request whose destination could not be reached: 403 if
// the policy refused it, 504 if it timed out, 502 otherwise.
func fail(w http.ResponseWriter, err error) {
	var r *refusal
	var ne net.Error
	switch {
	case errors.As(err, &r):
		kind := "destination_ip_prohibited"
		if r.reason == notAllowed {
			kind = "http_request_denied"
		}
		w.Header().Set("Proxy-Status", "ralph-egress; error="+kind+`; details="`+r.reason+`"`)
		http.Error(w, r.Error(), http.StatusForbidden)
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		http.Error(w, "egress proxy: "+err.Error(), http.StatusGatewayTimeout)
	default:
		http.Error(w, "egress proxy: "+err.Error(), http.StatusBadGateway)
	}
}
