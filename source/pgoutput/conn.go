package pgoutput

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/decant/decant/source"
)

// SessionParams are the settings decant gives every source and target
// session, so that values travel in one canonical text form: ISO dates, UTC,
// round-trip float digits, hex bytea, UTF-8.
var SessionParams = map[string]string{
	"DateStyle":          "ISO, MDY",
	"IntervalStyle":      "postgres",
	"TimeZone":           "UTC",
	"extra_float_digits": "3",
	"bytea_output":       "hex",
	"client_encoding":    "UTF8",
	"application_name":   "decant",
}

// ParseDSN parses a postgres:// URL (or key=value string) into a pgconn
// config with decant's session settings. It gives a connect timeout of 10 s
// when the DSN names none, so an unreachable host fails promptly, and dials
// with short TCP keepalives (source.Dialer).
func ParseDSN(dsn string) (*pgconn.Config, error) {
	if dsn == "" {
		return nil, fmt.Errorf("empty DSN: want postgres://user:password@host:port/database")
	}
	if i := strings.Index(dsn, "://"); i >= 0 {
		if scheme := dsn[:i]; scheme != "postgres" && scheme != "postgresql" {
			return nil, fmt.Errorf("DSN scheme %q is not postgres://", scheme)
		}
	}
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("invalid DSN: %s", redactDSN(err.Error()))
	}
	for k, v := range SessionParams {
		if _, set := cfg.RuntimeParams[k]; !set || k != "application_name" {
			cfg.RuntimeParams[k] = v
		}
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 10 * time.Second
	}
	// ConnectTimeout bounds the whole connect, dial included.
	cfg.DialFunc = source.Dialer().DialContext
	return cfg, nil
}

// redactDSN keeps passwords out of parse errors, which quote the input.
func redactDSN(msg string) string {
	if i := strings.Index(msg, "://"); i >= 0 {
		if at := strings.Index(msg[i:], "@"); at > 0 {
			return msg[:i+3] + "***" + msg[i+at:]
		}
	}
	return msg
}

func replicationConfig(dsn string) (*pgconn.Config, error) {
	cfg, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["replication"] = "database"
	return cfg, nil
}

// connectReplication opens a logical replication connection.
func connectReplication(ctx context.Context, dsn string) (*pgconn.PgConn, error) {
	cfg, err := replicationConfig(dsn)
	if err != nil {
		return nil, err
	}
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to source %s:%d for replication: %w", cfg.Host, cfg.Port, err)
	}
	return conn, nil
}

// Connect opens an ordinary SQL session on the source.
func Connect(ctx context.Context, dsn string) (*pgx.Conn, error) {
	return ConnectAs(ctx, "source", dsn)
}

// ConnectAs opens an SQL session with decant's session settings; role
// ("source", "target") names the server in errors.
func ConnectAs(ctx context.Context, role, dsn string) (*pgx.Conn, error) {
	pc, err := ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", role, err)
	}
	cfg, err := pgx.ParseConfig("")
	if err != nil {
		return nil, err
	}
	cfg.Config = *pc
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to %s %s:%d: %w", role, pc.Host, pc.Port, err)
	}
	return conn, nil
}

// closeConn closes a connection even when ctx is already cancelled, giving
// the goodbye message a few seconds.
func closeConn(ctx context.Context, conn *pgconn.PgConn) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
	defer cancel()
	conn.Close(cctx)
}

// queryOne runs a query returning one text value on a replication
// connection (simple protocol only).
func queryOne(ctx context.Context, conn *pgconn.PgConn, sql string, scan func(string) error) error {
	res, err := conn.Exec(ctx, sql).ReadAll()
	if err != nil {
		return err
	}
	if len(res) == 0 || len(res[0].Rows) != 1 || len(res[0].Rows[0]) != 1 {
		return fmt.Errorf("query %q returned no single value", sql)
	}
	return scan(string(res[0].Rows[0][0]))
}

func quoteIdent(s string) string { return pgx.Identifier{s}.Sanitize() }

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
