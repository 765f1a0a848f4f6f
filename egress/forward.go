package egress

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"strings"
)

// hopHeaders are the headers of one hop, which a proxy does not pass on
// (RFC 9110, section 7.6.1), with the proxy's own.
var hopHeaders = []string{
	"Connection",
	"Keep-Alive",
	"Proxy-Authenticate",
	"Proxy-Authorization",
	"Proxy-Connection",
	"Te",
	"Trailer",
	"Transfer-Encoding",
	"Upgrade",
}

// removeHopHeaders removes from h the hop-by-hop headers and those that
// its Connection header names.
func removeHopHeaders(h http.Header) {
	for _, v := range h.Values("Connection") {
		for name := range strings.SplitSeq(v, ",") {
			if name = textproto.TrimString(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}

// forward serves an absolute-form plain HTTP request: it sends it on
// through the checked dialer and streams the answer back.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request) {
	hostport := r.URL.Host
	if r.URL.Port() == "" {
		hostport = net.JoinHostPort(r.URL.Hostname(), "80")
	}
	d, err := parseDest(hostport)
	if err != nil {
		http.Error(w, "egress proxy: "+err.Error(), http.StatusBadRequest)
		return
	}
	// The policy decides before the exchange, whatever the agent's end
	// of the connection does: a client that half-closed it after its
	// request has its request's context ended, yet still reads the
	// answer, which must be the refusal.
	ctx, cancel := context.WithTimeout(p.ctx, dialTimeout)
	_, err = p.gate.check(ctx, d)
	cancel()
	if err != nil {
		p.record(err)
		fail(w, err)
		return
	}
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.Close = false
	removeHopHeaders(out.Header)
	res, err := p.transport.RoundTrip(out)
	if err != nil {
		if r.Context().Err() != nil {
			// No answer is owed to a client that is gone; a handler that
			// returned without one would send an empty 200.
			panic(http.ErrAbortHandler)
		}
		fail(w, err)
		return
	}
	defer func() { _ = res.Body.Close() }()
	removeHopHeaders(res.Header)
	for k, vv := range res.Header {
		w.Header()[k] = vv
	}
	for _, k := range []string{"Content-Type", "Date"} {
		if _, ok := res.Header[k]; !ok {
			w.Header()[k] = nil // not added by the server either
		}
	}
	w.WriteHeader(res.StatusCode)
	if err := stream(w, res.Body); err != nil {
		// The answer cannot be completed: end it abruptly, so that the
		// agent does not take a truncated body for a whole one.
		panic(http.ErrAbortHandler)
	}
	for k, vv := range res.Trailer {
		w.Header()[http.TrailerPrefix+k] = vv
	}
}

// stream copies body to w, flushing after every read, so that an event
// stream reaches the agent event by event.
func stream(w http.ResponseWriter, body io.Reader) error {
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return werr
			}
			if ferr := rc.Flush(); ferr != nil {
				return ferr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
