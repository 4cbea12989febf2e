package source

import (
	"cmp"
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"slices"
	"sync"
)

// Every connection decant opens reports what protects it (a Link) to the
// process's Links, which warns once per side when a connection to a host
// that is not this machine is unencrypted, or encrypted with a server
// certificate nobody checked, and keeps the last state of each side for
// the decant_connection_tls metric. Connections to this machine (a
// loopback address or a unix socket) cannot be intercepted on the wire and
// are exempt from warnings and from the refusals of the drivers (no
// cleartext password, no password encrypted to an unverified key).

// Link is how one connection is protected.
type Link struct {
	Side      string // "source" or "target"
	Addr      string // host:port dialed
	Encrypted bool   // TLS
	Verified  bool   // the server's certificate chain and name were checked
	Local     bool   // a loopback address or a unix socket: exempt
	// Fix is the DSN setting that makes the connection verified, for
	// the warning: "sslmode=verify-full and sslrootcert=FILE".
	Fix string
}

// LinkState is a side's last link, for metrics.
type LinkState struct {
	Side                string
	Encrypted, Verified bool
}

// Links is the process's record of its links: one per process (main makes
// it and puts it in the context with WithLinks), so that a warning is
// logged once per side however often the side reconnects.
type Links struct {
	log *slog.Logger
	// loopbackIsRemote treats loopback hosts as remote: set only to test
	// the rules for remote hosts on a machine whose only network is
	// loopback. It only makes decant stricter.
	loopbackIsRemote bool

	mu     sync.Mutex
	last   map[string]LinkState
	warned map[string]bool
}

// NewLinks records links and logs their warnings to log.
// loopbackIsRemote: see Links.
func NewLinks(log *slog.Logger, loopbackIsRemote bool) *Links {
	return &Links{log: log, loopbackIsRemote: loopbackIsRemote, last: map[string]LinkState{}, warned: map[string]bool{}}
}

type linksKey struct{}

// WithLinks returns ctx carrying l.
func WithLinks(ctx context.Context, l *Links) context.Context {
	return context.WithValue(ctx, linksKey{}, l)
}

// LinksFrom returns the Links ctx carries. Without one (a library caller,
// a unit test) it returns a new one logging to slog.Default: its
// warnings then come once per connection, not once per process.
func LinksFrom(ctx context.Context) *Links {
	if l, ok := ctx.Value(linksKey{}).(*Links); ok && l != nil {
		return l
	}
	return NewLinks(slog.Default(), false)
}

// Local reports whether addr, the peer of a dialed connection, is on this
// machine: a unix socket or a loopback IP. The decision is by the address
// the connection reached, not by the name in the DSN, so a name that
// resolves elsewhere is not exempt.
func (l *Links) Local(addr net.Addr) bool {
	if l.loopbackIsRemote {
		return false
	}
	switch a := addr.(type) {
	case *net.UnixAddr:
		return true
	case *net.TCPAddr:
		return a.IP.IsLoopback()
	}
	return false
}

// Observe records k as its side's last link and logs a warning the first
// time the side has a link to a remote host that is not verified.
func (l *Links) Observe(k Link) {
	l.mu.Lock()
	l.last[k.Side] = LinkState{Side: k.Side, Encrypted: k.Encrypted, Verified: k.Verified}
	warn := !k.Local && !k.Verified && !l.warned[k.Side]
	if warn {
		l.warned[k.Side] = true
	}
	l.mu.Unlock()
	if !warn {
		return
	}
	msg := k.Side + " connection is not encrypted: the password and every row cross the network in clear"
	if k.Encrypted {
		msg = k.Side + " connection is encrypted but the server's certificate is not verified: anyone on the path can pose as the server"
	}
	l.log.Warn(msg, "side", k.Side, "addr", k.Addr, "fix", k.Fix)
}

// States is the last link of each side that has connected, by side.
func (l *Links) States() []LinkState {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]LinkState, 0, len(l.last))
	for _, s := range l.last {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b LinkState) int { return cmp.Compare(a.Side, b.Side) })
	return out
}

// TLSOf tells whether c is a TLS connection and whether crypto/tls
// verified the server's chain and name in its handshake. A chain checked
// by a callback alone (sslmode=verify-ca) is not verified: the name was
// not checked.
func TLSOf(c net.Conn) (encrypted, verified bool) {
	tc, ok := c.(*tls.Conn)
	if !ok {
		return false, false
	}
	return true, len(tc.ConnectionState().VerifiedChains) > 0
}

// RefusedError is a connect that decant ended to keep a password off the
// network: the server asked for it in a form anyone on the path could
// read or capture. A retry would be refused the same way.
type RefusedError struct{ Msg string }

func (e *RefusedError) Error() string { return e.Msg }

// Retryable is false: only a change of the DSN or the server helps.
func (e *RefusedError) Retryable() bool { return false }
