package integration

import (
	"bytes"
	"net"
	"net/url"
	"sync"
	"testing"
)

// proxy is a TCP proxy on loopback between decant and a server, for the
// faults of a network or a peer that stops answering without closing
// anything:
//   - Stall keeps every socket open but stops forwarding bytes, both ways,
//     on the connections there are and on new ones (the peer hangs);
//   - Resume forwards again: first what was held, then what follows, and
//     an end of stream that came meanwhile;
//   - CloseAll cuts every connection and forwards again for new ones;
//   - HoldOn holds the client-to-server bytes of the first connection
//     whose client sends a pattern, from the read holding it, until Resume
//     (the request is sent, the server never sees it).
type proxy struct {
	t      testing.TB
	ln     net.Listener
	server string // address forwarded to

	mu      sync.Mutex
	changed *sync.Cond // stalled, links or a link's held changed
	stalled bool
	hold    []byte // armed HoldOn pattern
	held    bool   // the pattern was seen
	links   map[*link]bool
	wg      sync.WaitGroup
}

// link is one proxied connection.
type link struct {
	client, server net.Conn
	held           bool // client-to-server bytes wait for Resume (HoldOn)
	closed         bool
}

// newProxy listens on 127.0.0.1:0 and forwards to server (host:port)
// until the test ends.
func newProxy(t testing.TB, server string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{t: t, ln: ln, server: server, links: map[*link]bool{}}
	p.changed = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.CloseAll()
		p.wg.Wait()
	})
	return p
}

// Addr is the proxy's host:port.
func (p *proxy) Addr() string { return p.ln.Addr().String() }

// DSN is dsn (a postgres:// or mysql:// URL) pointed at the proxy, with
// its query parameters added.
func (p *proxy) DSN(dsn string, params map[string]string) string {
	p.t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		p.t.Fatal(err)
	}
	u.Host = p.Addr()
	q := u.Query()
	for k, v := range params {
		q.Set(k, v)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.server)
		if err != nil {
			c.Close()
			continue
		}
		l := &link{client: c, server: s}
		p.mu.Lock()
		p.links[l] = true
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pump(l, true)
		go p.pump(l, false)
	}
}

// pump copies one direction of l. Bytes read while the proxy is stalled
// (or the link held) wait for Resume; so does an end of stream, which then
// closes the whole link.
func (p *proxy) pump(l *link, up bool) {
	defer p.wg.Done()
	src, dst := l.server, l.client
	if up {
		src, dst = l.client, l.server
	}
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.wait(l, up, buf[:n]) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			if !p.wait(l, up, nil) {
				return
			}
			break
		}
	}
	p.close(l)
}

// wait blocks while the link may not forward; false when it was closed.
func (p *proxy) wait(l *link, up bool, data []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if up && p.hold != nil && bytes.Contains(data, p.hold) {
		l.held, p.hold, p.held = true, nil, true
		p.changed.Broadcast()
	}
	for !l.closed && (p.stalled || (up && l.held)) {
		p.changed.Wait()
	}
	return !l.closed
}

func (p *proxy) close(l *link) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !l.closed {
		l.closed = true
		l.client.Close()
		l.server.Close()
		delete(p.links, l)
		p.changed.Broadcast()
	}
}

// Stall stops forwarding, keeping every socket open.
func (p *proxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stalled = true
}

// Resume forwards again, held bytes first.
func (p *proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stalled = false
	for l := range p.links {
		l.held = false
	}
	p.changed.Broadcast()
}

// CloseAll cuts every connection; new ones are forwarded.
func (p *proxy) CloseAll() {
	p.mu.Lock()
	links := make([]*link, 0, len(p.links))
	for l := range p.links {
		links = append(links, l)
	}
	p.stalled = false
	p.mu.Unlock()
	for _, l := range links {
		p.close(l)
	}
}

// HoldOn arms a hold: the first connection whose client sends pattern
// gets its client-to-server direction held until Resume.
func (p *proxy) HoldOn(pattern string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hold, p.held = []byte(pattern), false
}

// Held reports whether the armed pattern was seen.
func (p *proxy) Held() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}
