package egress

import (
	"bufio"
	"io"
	"net"
	"net/http"
)

// established is the answer to a CONNECT whose destination is connected.
const established = "HTTP/1.1 200 Connection established\r\n\r\n"

// connect serves CONNECT host:port: it dials the destination if the
// policy lets it through, answers 200 and copies both ways until both
// ends are done.
func (p *Proxy) connect(w http.ResponseWriter, r *http.Request) {
	d, err := parseDest(r.URL.Host)
	if err != nil {
		http.Error(w, "egress proxy: CONNECT needs host:port: "+err.Error(), http.StatusBadRequest)
		return
	}
	up, err := p.dial(r.Context(), d)
	if err != nil {
		fail(w, err)
		return
	}
	client, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		_ = up.Close()
		http.Error(w, "egress proxy: "+err.Error(), http.StatusInternalServerError)
		return
	}
	if !p.track(client, up) {
		return
	}
	defer p.untrack(client, up)
	if _, err := io.WriteString(client, established); err != nil {
		_ = client.Close()
		_ = up.Close()
		return
	}
	p.tunnel(client, brw.Reader, up)
}

// tunnel copies client (whose first bytes may wait in br) to up and up to
// client until both ways are done, then closes both.
func (p *Proxy) tunnel(client net.Conn, br *bufio.Reader, up net.Conn) {
	done := make(chan struct{})
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer close(done)
		pipe(client, up, nil)
	}()
	pipe(up, client, br)
	<-done
	_ = client.Close()
	_ = up.Close()
}

// pipe copies what waits in buffered, if anything, then src to dst. At
// the end of src it half-closes dst, passing the end on; on an error it
// closes both, which ends the other way too.
func pipe(dst, src net.Conn, buffered *bufio.Reader) {
	var err error
	if buffered != nil && buffered.Buffered() > 0 {
		b, _ := buffered.Peek(buffered.Buffered())
		_, err = dst.Write(b)
	}
	if err == nil {
		_, err = io.Copy(dst, src) // the raw connections, so that Linux splices
	}
	if cw, ok := dst.(interface{ CloseWrite() error }); ok && err == nil {
		if cw.CloseWrite() == nil {
			return
		}
	}
	_ = dst.Close()
	_ = src.Close()
}
