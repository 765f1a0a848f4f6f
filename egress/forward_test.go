package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestForward sends an absolute-form GET as curl does and reads an event
// stream whose second event is only sent once the first has arrived.
func TestForward(t *testing.T) {
	got := make(chan http.Header, 1)
	next := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("X-Answer", "yes")
		_, _ = io.WriteString(w, "data: one\n\n")
		http.NewResponseController(w).Flush()
		select {
		case <-next:
		case <-r.Context().Done():
			return
		}
		_, _ = io.WriteString(w, "data: two\n\n")
	}))
	t.Cleanup(ts.Close)
	host := ts.Listener.Addr().String()
	px, path := start(t, Policy{Allow: []string{host}})

	c := dialProxy(t, path)
	_, err := fmt.Fprintf(c, "GET http://%s/events?x=1 HTTP/1.1\r\nHost: %s\r\n"+
		"Proxy-Authorization: Basic dTpw\r\nProxy-Connection: Keep-Alive\r\n"+
		"Connection: keep-alive, X-Hop\r\nX-Hop: 1\r\nX-Keep: 1\r\n\r\n", host, host)
	require.NoError(t, err)
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
	require.Equal(t, "yes", res.Header.Get("X-Answer"))

	h := <-got
	require.Equal(t, "1", h.Get("X-Keep"))
	for _, name := range []string{"Proxy-Authorization", "Proxy-Connection", "X-Hop", "Connection"} {
		require.Empty(t, h.Values(name), name)
	}
	events := bufio.NewReader(res.Body)
	line, err := events.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "data: one\n", line)
	close(next)
	rest, err := io.ReadAll(events)
	require.NoError(t, err)
	require.Equal(t, "\ndata: two\n\n", string(rest))
	require.Empty(t, px.Refused())
}

func TestForwardRefused(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		t.Error("the request went through")
	}))
	t.Cleanup(ts.Close)
	host := ts.Listener.Addr().String()
	px, path := start(t, Policy{Allow: []string{"api.example.com"}})
	tests := []struct {
		name, request string
		status        int
		body          string
	}{
		{"not allowed", "GET http://" + host + "/ HTTP/1.1\r\nHost: " + host + "\r\n\r\n",
			http.StatusForbidden, "refused " + host + ": not on agent.network-allow\n"},
		{"not allowed again", "POST http://" + host + "/x HTTP/1.1\r\nHost: " + host + "\r\nContent-Length: 2\r\n\r\nhi",
			http.StatusForbidden, "refused " + host + ": not on agent.network-allow\n"},
		{"origin form", "GET /path HTTP/1.1\r\nHost: " + host + "\r\n\r\n",
			http.StatusBadRequest, "egress proxy: only CONNECT host:port and absolute-form http:// requests are served\n"},
		{"header too large", "GET http://" + host + "/ HTTP/1.1\r\nHost: " + host + "\r\nX-Big: " + strings.Repeat("a", maxHeaderBytes+8<<10) + "\r\n\r\n",
			http.StatusRequestHeaderFieldsTooLarge, ""},
		{"https absolute form", "GET https://" + host + "/ HTTP/1.1\r\nHost: " + host + "\r\n\r\n",
			http.StatusBadRequest, "egress proxy: only CONNECT host:port and absolute-form http:// requests are served\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dialProxy(t, path)
			_, err := io.WriteString(c, tt.request)
			require.NoError(t, err)
			res, err := http.ReadResponse(bufio.NewReader(c), nil)
			require.NoError(t, err)
			require.Equal(t, tt.status, res.StatusCode)
			if tt.body != "" {
				require.Equal(t, tt.body, body(t, res))
			}
		})
	}
	require.Equal(t, []string{host}, px.Refused())
	require.Empty(t, px.Refused())
}

// bridge listens on 127.0.0.1 and connects every connection to the
// proxy's socket, as socat does in the sandbox, so that a real client can
// use the proxy.
func bridge(t *testing.T, path string) *url.URL {
	t.Helper()
	addr := serveTCP(t, func(c net.Conn, wg *sync.WaitGroup) {
		u, err := net.Dial("unix", path)
		if err != nil {
			_ = c.Close()
			return
		}
		wg.Go(func() { pipe(u, c, nil) })
		pipe(c, u, nil)
	})
	return &url.URL{Scheme: "http", Host: addr}
}

// TestClient goes through the proxy with Go's own HTTP client, which
// speaks to it as curl and node do: CONNECT for https, absolute form for
// http.
func TestClient(t *testing.T) {
	echoBody := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, _ = fmt.Fprintf(w, "%s %s %s", r.Method, r.URL.Path, b)
	})
	secure := httptest.NewTLSServer(echoBody)
	t.Cleanup(secure.Close)
	plain := httptest.NewServer(echoBody)
	t.Cleanup(plain.Close)
	other := httptest.NewServer(echoBody)
	t.Cleanup(other.Close)
	px, path := start(t, Policy{Allow: []string{secure.Listener.Addr().String(), plain.Listener.Addr().String()}})

	transport := secure.Client().Transport.(*http.Transport).Clone()
	transport.Proxy = http.ProxyURL(bridge(t, path))
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport}
	for _, base := range []string{secure.URL, plain.URL} {
		for i := range 3 { // the connections are kept and used again
			res, err := client.Post(base+"/v1/messages", "text/plain", strings.NewReader(fmt.Sprint("body ", i)))
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, res.StatusCode)
			require.Equal(t, fmt.Sprint("POST /v1/messages body ", i), body(t, res))
		}
	}
	res, err := client.Get(other.URL + "/")
	require.NoError(t, err)
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	require.Contains(t, body(t, res), "not on agent.network-allow")

	_, err = client.Get(strings.Replace(other.URL, "http:", "https:", 1))
	require.ErrorContains(t, err, "Forbidden")
	require.Equal(t, []string{other.Listener.Addr().String()}, px.Refused())
}

// TestForwardHalfClosed: an absolute-form request whose client
// half-closes the connection after sending it (as printf | nc does) has
// its request's context ended at once, yet reads the answer: a refused
// one is answered 403, and one whose name takes a while to resolve (and
// then does not) 502, never an empty 200.
func TestForwardHalfClosed(t *testing.T) {
	slow := net.DefaultResolver
	net.DefaultResolver = &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		time.Sleep(300 * time.Millisecond)
		return nil, errors.New("no name server here")
	}}
	t.Cleanup(func() { net.DefaultResolver = slow })
	for _, tc := range []struct {
		policy Policy
		target string
		status int
		body   string
	}{
		{Policy{Internet: true}, "127.0.0.1:7233", http.StatusForbidden, "refused 127.0.0.1:7233"},
		{Policy{Allow: []string{"api.example.com"}}, "127.0.0.1:7233", http.StatusForbidden, "refused 127.0.0.1:7233"},
		{Policy{Internet: true}, "slow.invalid:80", http.StatusBadGateway, "resolve slow.invalid"},
	} {
		_, path := start(t, tc.policy)
		c, err := net.Dial("unix", path)
		require.NoError(t, err)
		require.NoError(t, c.SetDeadline(time.Now().Add(ioTimeout)))
		_, err = fmt.Fprintf(c, "GET http://%s/ HTTP/1.1\r\nHost: %s\r\n\r\n", tc.target, tc.target)
		require.NoError(t, err)
		require.NoError(t, c.(*net.UnixConn).CloseWrite())
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		require.NoError(t, err)
		require.Equal(t, tc.status, res.StatusCode, tc.target)
		require.Contains(t, body(t, res), tc.body)
		_ = c.Close()
	}
}
