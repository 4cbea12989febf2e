package gauss

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/decant/decant/source"
	"github.com/decant/decant/source/pgsession"
)

// ConnConfig is how to reach a GaussDB/openGauss server.
type ConnConfig struct {
	Host     string
	Port     uint16
	User     string
	Password string
	Database string
	// Replication adds replication=database to the startup packet, which
	// makes the session a logical walsender (spec 1.1).
	Replication bool
	// Params are further startup parameters (GUCs such as
	// application_name, TimeZone, DateStyle).
	Params         map[string]string
	ConnectTimeout time.Duration // 0 = no limit beyond the context's
	// AuthIterations is the iteration count the user's SHA256 password was
	// stored with (the server's auth_iteration_count when it was set),
	// needed only when pg_hba says md5 for such a password (request code
	// 11, which does not send it); 0 means the server's default, 10000.
	AuthIterations int
	TLS            TLSConfig
	// AllowCleartext lets a cleartext password cross an unencrypted
	// connection to a remote host (the DSN's allow_cleartext_password,
	// pgsession.AllowCleartextParam); without it decant refuses.
	AllowCleartext bool
	// Coalesce batches the socket's reads while data arrives fast
	// (source.Coalesce): for a connection that streams changes.
	Coalesce bool
}

// TLSConfig is how to secure the connection, as libpq's parameters of
// the same names say. Both servers answer an SSLRequest like PostgreSQL
// (openGauss postmaster.cpp ProcessStartupPacket).
type TLSConfig struct {
	// Mode: "disable" and "allow" use plain TCP; "prefer" (the default)
	// asks for TLS and goes on in plain TCP if the server declines;
	// "require" insists on TLS (and verifies the chain when RootCert is
	// set, as libpq does); "verify-ca" verifies the server's chain against
	// RootCert; "verify-full" also its host name.
	Mode     string
	RootCert string // PEM file of trusted CAs
	Cert     string // PEM client certificate, with Key
	Key      string
}

const (
	defaultPort           = 5432
	defaultConnectTimeout = 10 * time.Second
	// protocolVersion351 is what gsql and the JDBC driver announce; the
	// server then sends the PBKDF2 iteration count with a sha256 request.
	protocolVersion351 = 3<<16 | 51
	maxStartupMsgLen   = 1 << 20
)

// Validate checks the configuration without connecting.
func (c ConnConfig) Validate() error {
	switch {
	case c.Host == "":
		return errors.New("gaussdb: host is required")
	case c.Port == 0:
		return errors.New("gaussdb: port is required")
	case c.User == "":
		return errors.New("gaussdb: user is required")
	}
	for k := range c.Params {
		switch k {
		case "user", "database", "replication":
			return fmt.Errorf("gaussdb: startup parameter %q is set from the config's own field", k)
		}
	}
	return nil
}

// ParseDSN accepts gaussdb://user:pass@host:port/db?params and
// opengauss://... (also postgres:// and postgresql:// for convenience).
// Query parameters: connect_timeout (seconds, default 10), sslmode,
// sslrootcert, sslcert, sslkey (TLSConfig), replication
// (database), auth_iteration_count (see ConnConfig.AuthIterations),
// allow_cleartext_password (ConnConfig.AllowCleartext); any
// other parameter goes to the startup packet. The port
// defaults to 5432 and the database to the user name.
func ParseDSN(dsn string) (ConnConfig, error) {
	const form = "want gaussdb://user:password@host:port/database"
	if dsn == "" {
		return ConnConfig{}, errors.New("empty DSN: " + form)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		// url.Error quotes the whole input, password included.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return ConnConfig{}, fmt.Errorf("invalid DSN: %w; %s", pgsession.DSNError(dsn, err), form)
	}
	switch u.Scheme {
	case "gaussdb", "opengauss", "postgres", "postgresql":
	default:
		return ConnConfig{}, fmt.Errorf("DSN scheme %q is not gaussdb:// or opengauss://", u.Scheme)
	}
	cfg := ConnConfig{
		Host:           u.Hostname(),
		Port:           defaultPort,
		Database:       strings.TrimPrefix(u.Path, "/"),
		ConnectTimeout: defaultConnectTimeout,
	}
	if strings.Contains(u.Host, ",") {
		return ConnConfig{}, errors.New("invalid DSN: several hosts are not supported; " + form)
	}
	if cfg.Host == "" {
		return ConnConfig{}, errors.New("invalid DSN: no host; " + form)
	}
	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 {
			return ConnConfig{}, fmt.Errorf("invalid DSN: port %q", p)
		}
		cfg.Port = uint16(n)
	}
	if u.User != nil {
		cfg.User = u.User.Username()
		cfg.Password, _ = u.User.Password()
	}
	if cfg.User == "" {
		return ConnConfig{}, errors.New("invalid DSN: no user; " + form)
	}
	if cfg.Database == "" {
		cfg.Database = cfg.User
	}
	if err := cfg.applyQuery(u.Query()); err != nil {
		return ConnConfig{}, err
	}
	if err := cfg.TLS.validate(); err != nil {
		return ConnConfig{}, err
	}
	return cfg, nil
}

func (c *ConnConfig) applyQuery(q url.Values) error {
	for k, vs := range q {
		v := vs[len(vs)-1]
		switch k {
		case "connect_timeout":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return fmt.Errorf("invalid DSN: connect_timeout %q is not a number of seconds", v)
			}
			c.ConnectTimeout = time.Duration(n) * time.Second
		case "sslmode":
			switch v {
			case "disable", "allow", "prefer", "require", "verify-ca", "verify-full":
				c.TLS.Mode = v
			default:
				return fmt.Errorf("invalid DSN: unknown sslmode %q: want disable, allow, prefer, require, verify-ca or verify-full", v)
			}
		case "sslrootcert":
			c.TLS.RootCert = v
		case "sslcert":
			c.TLS.Cert = v
		case "sslkey":
			c.TLS.Key = v
		case "sslpassword", "sslcrl":
			return fmt.Errorf("invalid DSN: %s is not supported: use an unencrypted key file, and no CRL", k)
		case pgsession.AllowCleartextParam:
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("invalid DSN: %s=%q: want true or false", k, v)
			}
			c.AllowCleartext = b
		case "auth_iteration_count":
			// The server's GUC of that name, as it was
			// when the password was set; decant's, not sent.
			n, err := strconv.Atoi(v)
			if err != nil || n < 2048 || n > maxIteration {
				return fmt.Errorf("invalid DSN: auth_iteration_count %q is not a number from 2048 to 10000000", v)
			}
			c.AuthIterations = n
		case "replication":
			if v != "database" {
				return fmt.Errorf("invalid DSN: replication=%q, only replication=database is supported", v)
			}
			c.Replication = true
		case "user", "database", "dbname", "password", "host", "port":
			return fmt.Errorf("invalid DSN: put %s in the URL itself, not in its query", k)
		default:
			if c.Params == nil {
				c.Params = map[string]string{}
			}
			c.Params[k] = v
		}
	}
	return nil
}

// Connect dials cfg over plain TCP, sends the startup message, performs the
// authentication the server asks for (trust, cleartext, MD5, GaussDB SHA256,
// MD5_SHA256 and SM3; see auth.go), waits for ReadyForQuery collecting
// ParameterStatus and BackendKeyData, and hands the connection to pgx, so
// the caller gets an ordinary *pgconn.PgConn (simple-protocol Exec,
// ReceiveMessage, Frontend() for CopyData).
//
// A method decant cannot speak fails with an error naming it and the
// pg_hba.conf setting to use instead; a wrong password fails with the
// server's ErrorResponse (a *pgconn.PgError), which never contains it.
func Connect(ctx context.Context, cfg ConnConfig) (*pgconn.PgConn, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	addr := net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
	fail := func(err error) (*pgconn.PgConn, error) {
		return nil, fmt.Errorf("connect to gaussdb %s as %s: %w", addr, cfg.User, err)
	}
	if cfg.ConnectTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.ConnectTimeout)
		defer cancel()
	}
	raw, err := source.Dialer().DialContext(ctx, "tcp", addr)
	if err != nil {
		return fail(err)
	}
	if cfg.Coalesce {
		raw = source.Coalesce(raw)
	}
	// The handshake does blocking reads; cancelling ctx unblocks them.
	stop := context.AfterFunc(ctx, func() { raw.SetDeadline(time.Unix(1, 0)) })
	nc, err := startTLS(raw, cfg.TLS, cfg.Host)
	if err != nil {
		stop()
		raw.Close()
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return fail(err)
	}
	refuse := observeLink(ctx, raw, nc, addr) && !cfg.AllowCleartext
	hc, err := handshake(nc, cfg, refuse)
	if !stop() || (err != nil && ctx.Err() != nil) {
		nc.Close()
		if err == nil || errors.Is(err, io.EOF) || isTimeout(err) {
			err = ctx.Err()
		}
		return fail(err)
	}
	if err != nil {
		nc.Close()
		return fail(err)
	}
	if err := nc.SetDeadline(time.Time{}); err != nil {
		nc.Close()
		return fail(err)
	}
	pc, err := pgxConfig(cfg)
	if err != nil {
		nc.Close()
		return fail(err)
	}
	hc.Conn, hc.Config, hc.CustomData = nc, pc, map[string]any{}
	conn, err := pgconn.Construct(hc)
	if err != nil {
		nc.Close()
		return fail(err)
	}
	return conn, nil
}

// observeLink reports the link to the source (source.Links) and whether it
// is unencrypted to a remote host, where a cleartext password is refused.
func observeLink(ctx context.Context, raw, nc net.Conn, addr string) (exposed bool) {
	links := source.LinksFrom(ctx)
	k := source.Link{Side: "source", Addr: addr, Local: links.Local(raw.RemoteAddr()), Fix: pgsession.Fix}
	k.Encrypted, k.Verified = source.TLSOf(nc)
	links.Observe(k)
	return !k.Encrypted && !k.Local
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// pgxConfig is the pgconn.Config the constructed connection keeps: pgx
// uses it for its frontend, context handling and cancel requests only.
func pgxConfig(cfg ConnConfig) (*pgconn.Config, error) {
	q := func(s string) string {
		return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", `\'`) + "'"
	}
	pc, err := pgconn.ParseConfig(fmt.Sprintf("host=%s port=%d user=%s dbname=%s sslmode=disable",
		q(cfg.Host), cfg.Port, q(cfg.User), q(cfg.Database)))
	if err != nil {
		return nil, fmt.Errorf("build connection config: %w", err)
	}
	return pc, nil
}

// startupParams are the startup packet's parameters, in a fixed order.
func startupParams(cfg ConnConfig) [][2]string {
	ps := [][2]string{{"user", cfg.User}, {"database", cfg.Database}}
	if cfg.Replication {
		ps = append(ps, [2]string{"replication", "database"})
	}
	keys := make([]string, 0, len(cfg.Params))
	for k := range cfg.Params {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		ps = append(ps, [2]string{k, cfg.Params[k]})
	}
	if _, ok := cfg.Params["application_name"]; !ok {
		ps = append(ps, [2]string{"application_name", "decant"})
	}
	if _, ok := cfg.Params["client_encoding"]; !ok {
		ps = append(ps, [2]string{"client_encoding", "UTF8"})
	}
	return ps
}

// handshake runs the startup phase up to ReadyForQuery. It reads straight
// from nc, one message at a time, so that nothing the server sends after
// ReadyForQuery is left in a private buffer when pgx takes over. With
// refuseCleartext, a request for a cleartext password fails before the
// password is sent.
func handshake(nc net.Conn, cfg ConnConfig, refuseCleartext bool) (*pgconn.HijackedConn, error) {
	if _, err := nc.Write(startupMessage(cfg)); err != nil {
		return nil, fmt.Errorf("send startup message: %w", err)
	}
	hc := &pgconn.HijackedConn{ParameterStatuses: map[string]string{}}
	for {
		typ, body, err := readMessage(nc)
		if err != nil {
			return nil, err
		}
		switch typ {
		case 'R':
			if refuseCleartext && len(body) >= 4 && binary.BigEndian.Uint32(body) == authCleartext {
				return nil, pgsession.CleartextRefused(nc.RemoteAddr().String())
			}
			answer, done, err := authAnswer(body, cfg.User, cfg.Password, cfg.AuthIterations)
			if err != nil {
				return nil, err
			}
			if done {
				continue
			}
			msg, _ := (&pgproto3.PasswordMessage{Password: answer}).Encode(nil)
			if _, err := nc.Write(msg); err != nil {
				return nil, fmt.Errorf("send password message: %w", err)
			}
		case 'E':
			var er pgproto3.ErrorResponse
			if err := er.Decode(body); err != nil {
				return nil, fmt.Errorf("decode error response: %w", err)
			}
			return nil, pgconn.ErrorResponseToPgError(&er)
		case 'S':
			var ps pgproto3.ParameterStatus
			if err := ps.Decode(body); err != nil {
				return nil, fmt.Errorf("decode parameter status: %w", err)
			}
			hc.ParameterStatuses[ps.Name] = ps.Value
		case 'K':
			var kd pgproto3.BackendKeyData
			if err := kd.Decode(body); err != nil {
				return nil, fmt.Errorf("decode backend key data: %w", err)
			}
			hc.PID, hc.SecretKey = kd.ProcessID, kd.SecretKey
		case 'Z':
			var rq pgproto3.ReadyForQuery
			if err := rq.Decode(body); err != nil {
				return nil, fmt.Errorf("decode ready for query: %w", err)
			}
			hc.TxStatus = rq.TxStatus
			return hc, nil
		case 'N', 'v':
			// A notice (e.g. a password expiry warning), or PostgreSQL's
			// NegotiateProtocolVersion when it speaks an older minor version.
		default:
			return nil, fmt.Errorf("unexpected message %q during startup", typ)
		}
	}
}

func startupMessage(cfg ConnConfig) []byte {
	b := make([]byte, 8, 256)
	binary.BigEndian.PutUint32(b[4:], protocolVersion351)
	for _, kv := range startupParams(cfg) {
		b = append(append(append(append(b, kv[0]...), 0), kv[1]...), 0)
	}
	b = append(b, 0)
	binary.BigEndian.PutUint32(b, uint32(len(b)))
	return b
}

func readMessage(r io.Reader) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, fmt.Errorf("read from server: %w", err)
	}
	n := int(binary.BigEndian.Uint32(hdr[1:]))
	if n < 4 || n > maxStartupMsgLen {
		return 0, nil, fmt.Errorf("server sent message %q with invalid length %d", hdr[0], n)
	}
	body := make([]byte, n-4)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, nil, fmt.Errorf("read from server: %w", err)
	}
	return hdr[0], body, nil
}
