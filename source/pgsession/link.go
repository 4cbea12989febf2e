package pgsession

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"net"
	"strconv"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/decant/decant/source"
)

// AllowCleartextParam is decant's DSN parameter, named in libpq's style,
// that lets a cleartext password cross an unencrypted connection to a
// host that is not this machine. decant takes it out of the DSN; the
// server never sees it.
const AllowCleartextParam = "allow_cleartext_password"

// Fix is what in a PostgreSQL or GaussDB DSN makes a connection encrypted
// and verified.
const Fix = "sslmode=verify-full and sslrootcert=FILE (the CA that signed the server's certificate)"

// guardLink takes AllowCleartextParam out of cfg's startup parameters and
// makes every connect of cfg report its link as side's (source.Links),
// and refuse, on an unencrypted link to a remote host that the DSN does
// not allow, a server's request for a cleartext password before the
// password is sent.
func guardLink(cfg *pgconn.Config, side string) error {
	allow := false
	if v, ok := cfg.RuntimeParams[AllowCleartextParam]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("invalid DSN: %s=%q: want true or false", AllowCleartextParam, v)
		}
		allow = b
		delete(cfg.RuntimeParams, AllowCleartextParam)
	}
	cfg.AfterNetConnect = func(ctx context.Context, _ *pgconn.Config, c net.Conn) (net.Conn, error) {
		if tc, ok := c.(*tls.Conn); ok {
			// pgconn leaves the handshake to the first write; the link's
			// state is known only after it.
			// On an error pgconn closes the conn returned: never nil.
			if err := tc.HandshakeContext(ctx); err != nil {
				return c, fmt.Errorf("TLS handshake: %w", err)
			}
		}
		links := source.LinksFrom(ctx)
		k := source.Link{Side: side, Addr: c.RemoteAddr().String(), Local: links.Local(c.RemoteAddr()), Fix: Fix}
		k.Encrypted, k.Verified = source.TLSOf(c)
		links.Observe(k)
		if k.Encrypted || k.Local || allow {
			return c, nil
		}
		return &cleartextGuard{Conn: c, addr: k.Addr}, nil
	}
	return nil
}

// CleartextRefused is the error of a connection that refused to send a
// cleartext password over an unencrypted link to a remote host.
func CleartextRefused(addr string) error {
	return &source.RefusedError{Msg: fmt.Sprintf("refused: the server at %s asks for a cleartext password over an unencrypted connection; "+
		"use %s, or add %s=true to the DSN to send it anyway", addr, Fix, AllowCleartextParam)}
}

// cleartextGuard reads the server's side of the startup phase, message by
// message, and fails the read that carries AuthenticationCleartextPassword
// (R, code 3), so that pgconn never answers it. After AuthenticationOk or
// any message other than an authentication request or
// NegotiateProtocolVersion it only passes bytes through.
type cleartextGuard struct {
	net.Conn
	addr string
	head []byte // the current message's first bytes: type, length, code
	skip int    // bytes of the current message still to pass
	done bool
}

func (g *cleartextGuard) Read(p []byte) (int, error) {
	n, err := g.Conn.Read(p)
	if !g.done {
		if serr := g.scan(p[:n]); serr != nil {
			return 0, serr
		}
	}
	return n, err
}

// startupHead is what scan reads of a message: type (1), length (4),
// and for R the authentication code (4).
const startupHead = 9

// scan follows the message framing over b.
func (g *cleartextGuard) scan(b []byte) error {
	for len(b) > 0 && !g.done {
		if g.skip > 0 {
			k := min(g.skip, len(b))
			g.skip, b = g.skip-k, b[k:]
			continue
		}
		k := min(startupHead-len(g.head), len(b))
		g.head, b = append(g.head, b[:k]...), b[k:]
		if len(g.head) < 5 {
			continue
		}
		typ, total := g.head[0], 1+int(binary.BigEndian.Uint32(g.head[1:5]))
		if typ != 'R' && typ != 'v' || total < startupHead {
			g.done = true // past authentication, or not ours to judge
			return nil
		}
		if len(g.head) < startupHead {
			continue
		}
		if typ == 'R' {
			switch binary.BigEndian.Uint32(g.head[5:]) {
			case 3:
				return CleartextRefused(g.addr)
			case 0:
				g.done = true
				return nil
			}
		}
		g.skip, g.head = total-startupHead, g.head[:0]
	}
	return nil
}
