package mysql

import (
	"context"
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"

	"github.com/go-sql-driver/mysql"

	"github.com/decant/decant/source"
)

// AllowKeyParam is decant's DSN parameter, named as MySQL Connector/J
// names the same choice, that lets the driver take the server's RSA
// public key from the server itself over an unencrypted connection to a
// remote host, and encrypt the password to it (caching_sha2_password's
// full authentication, sha256_password). A man in the middle would send
// his own key and read the password; without the parameter decant
// refuses the key before the password is sent. decant takes it out of
// the DSN (the driver would make it a session variable).
const AllowKeyParam = "allowPublicKeyRetrieval"

// Fix is what in a MySQL DSN makes a connection encrypted and verified.
const Fix = "tls-ca=FILE (the CA that signed the server's certificate) and tls-server-name=NAME when the certificate names another host"

// linkGuard watches the connections of one target DSN: each connect
// reports its link (source.Links), and on an unencrypted link to a remote
// host the server's public key is refused unless AllowKeyParam allows it.
type linkGuard struct {
	links    *source.Links // set by Connect
	allowKey bool
	verifies bool // the config's TLS checks the chain and the name
	dial     func(ctx context.Context, network, addr string) (net.Conn, error)
}

// takeAllowKey takes AllowKeyParam out of cfg.Params.
func takeAllowKey(cfg *mysql.Config) (bool, error) {
	v, ok := cfg.Params[AllowKeyParam]
	if !ok {
		return false, nil
	}
	delete(cfg.Params, AllowKeyParam)
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("invalid MySQL DSN: %s=%q: want true or false", AllowKeyParam, v)
	}
	return b, nil
}

// newLinkGuard makes the guard of cfg, dialing with cfg.DialFunc. Its
// connections report to the Links of the context Connect is given.
func newLinkGuard(cfg *mysql.Config) (*linkGuard, error) {
	allow, err := takeAllowKey(cfg)
	if err != nil {
		return nil, err
	}
	return &linkGuard{allowKey: allow, dial: cfg.DialFunc,
		verifies: cfg.TLS != nil && !cfg.TLS.InsecureSkipVerify}, nil
}

// connectState is what one connect's dial learnt, found through the
// connect's context: the driver turns the guard's read error into its
// own "invalid connection".
type connectState struct {
	conn *keyGuard
}

type connectStateKey struct{}

// Dial is the driver's DialFunc: it wraps the connection in a keyGuard.
func (g *linkGuard) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := g.dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	k := &keyGuard{Conn: c, addr: addr, refuse: !g.allowKey && !g.linksOf(ctx).Local(c.RemoteAddr())}
	if st, ok := ctx.Value(connectStateKey{}).(*connectState); ok {
		st.conn = k
	}
	return k, nil
}

// linksOf is the guard's Links: Connect's, or, for a config dialed
// without Connect, the context's.
func (g *linkGuard) linksOf(ctx context.Context) *source.Links {
	if g.links != nil {
		return g.links
	}
	return source.LinksFrom(ctx)
}

// connector is the driver's connector with the guard's reports.
type connector struct {
	driver.Connector
	g *linkGuard
}

// Connect connects, reports the link, and says why a refused key ended
// the connect.
func (c connector) Connect(ctx context.Context) (driver.Conn, error) {
	st := &connectState{}
	conn, err := c.Connector.Connect(context.WithValue(ctx, connectStateKey{}, st))
	k := st.conn
	// A plain link is known once the client's first packet is out; a TLS
	// one only once its handshake succeeded.
	if k == nil || err != nil && (k.tls || !k.wrote) {
		return conn, err
	}
	c.g.links.Observe(source.Link{Side: "target", Addr: k.addr, Local: c.g.links.Local(k.RemoteAddr()),
		Encrypted: k.tls, Verified: k.tls && c.g.verifies, Fix: Fix})
	if k.refused != nil {
		if conn != nil {
			conn.Close()
		}
		return nil, k.refused
	}
	return conn, err
}

// keyGuard follows the MySQL packets of a connection's authentication
// (a 3-byte little-endian length, a sequence number, the payload). The
// client's first packet says whether TLS follows (CLIENT_SSL in its
// capability flags); if it does not and refuse is set, the read that
// carries the server's public key (AuthMoreData, 0x01, then a PEM block)
// fails, so the driver never encrypts the password to it. After the
// server's OK or ERR, or once TLS starts, it only passes bytes through.
type keyGuard struct {
	net.Conn
	addr    string
	refuse  bool
	wrote   bool // the client's first packet is sent
	tls     bool
	done    bool
	head    []byte
	skip    int
	refused error
}

// SyscallConn is the socket's, for the driver's liveness check of an
// idle connection (conncheck.go), which reads the socket itself.
func (k *keyGuard) SyscallConn() (syscall.RawConn, error) {
	sc, ok := k.Conn.(syscall.Conn)
	if !ok {
		return nil, errors.New("not a socket")
	}
	return sc.SyscallConn()
}

// clientSSL is CLIENT_SSL of the capability flags.
const clientSSL = 0x0800

func (k *keyGuard) Write(p []byte) (int, error) {
	if !k.wrote && len(p) >= 8 {
		k.wrote = true
		k.tls = binary.LittleEndian.Uint32(p[4:8])&clientSSL != 0
		k.done = k.done || k.tls
	}
	return k.Conn.Write(p)
}

func (k *keyGuard) Read(p []byte) (int, error) {
	n, err := k.Conn.Read(p)
	if !k.done && k.refuse {
		if k.refused = k.scan(p[:n]); k.refused != nil {
			return 0, k.refused
		}
	}
	return n, err
}

// keyMark starts the payload of the packet that carries the server's
// public key: AuthMoreData (0x01), then a PEM block.
var keyMark = []byte("\x01-----BEGIN")

// scan follows the packet framing over b: k.head gathers a packet's
// header and as much of its payload as keyMark is long.
func (k *keyGuard) scan(b []byte) error {
	for len(b) > 0 && !k.done {
		if k.skip > 0 {
			n := min(k.skip, len(b))
			k.skip, b = k.skip-n, b[n:]
			continue
		}
		want := 4
		if len(k.head) >= 4 {
			want = min(4+len(keyMark), packetLen(k.head))
		}
		n := min(want-len(k.head), len(b))
		k.head, b = append(k.head, b[:n]...), b[n:]
		if len(k.head) < want || want == 4 && packetLen(k.head) > 4 {
			continue
		}
		if err := k.judge(); err != nil || k.done {
			return err
		}
		k.skip, k.head = packetLen(k.head)-len(k.head), k.head[:0]
	}
	return nil
}

// packetLen is the length of the packet whose header starts head,
// header included.
func packetLen(head []byte) int {
	return 4 + (int(head[0]) | int(head[1])<<8 | int(head[2])<<16)
}

// judge looks at a packet's first bytes: an OK or ERR ends the
// authentication, the server's public key on a plain connection is
// refused.
func (k *keyGuard) judge() error {
	p := k.head[4:]
	switch {
	case len(p) > 0 && (p[0] == 0x00 || p[0] == 0xFF):
		k.done = true
	case k.wrote && string(p) == string(keyMark):
		return &source.RefusedError{Msg: fmt.Sprintf("refused: the MySQL server at %s sent its RSA public key over an unencrypted connection, to encrypt the password to; "+
			"anyone on the path could have sent his own: use %s, or add %s=true to the DSN to trust it anyway", k.addr, Fix, AllowKeyParam)}
	}
	return nil
}
