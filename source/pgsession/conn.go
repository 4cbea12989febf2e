// Package pgsession opens the PostgreSQL sessions of every decant stage
// (the source reader, the PostgreSQL target, the bulk copy, verify) the
// same way: a DSN in libpq's URL or key=value form, decant's session
// settings, short TCP keepalives. It also holds what those stages share
// about a session: the one quoting rule for PostgreSQL identifiers and
// the server errors (SQLSTATE, PostgreSQL's Appendix A) that say a
// session ended for a reason that passes.
//
// It sits below apply and source/pgoutput and imports neither.
package pgsession

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/decant/decant/source"
)

// sessionParams are the settings decant gives every source and target
// session, so that values travel in one canonical text form: ISO dates,
// UTC, round-trip float digits, hex bytea, UTF-8. A DSN may name its own
// application_name; every other one is decant's.
func sessionParams() map[string]string {
	return map[string]string{
		"DateStyle":          "ISO, MDY",
		"IntervalStyle":      "postgres",
		"TimeZone":           "UTC",
		"extra_float_digits": "3",
		"bytea_output":       "hex",
		"client_encoding":    "UTF8",
		"application_name":   "decant",
	}
}

// defaultConnectTimeout bounds a connect whose DSN names no
// connect_timeout, so an unreachable host fails promptly.
const defaultConnectTimeout = 10 * time.Second

// ParseDSN parses a postgres:// URL (or key=value string) into a pgconn
// config with decant's session settings. It gives a connect timeout of
// 10 s when the DSN names none, and dials with short TCP keepalives
// (source.Dialer). Its errors never contain the DSN's password. A
// session it opens reports its link as the source's (linkGuard).
func ParseDSN(dsn string) (*pgconn.Config, error) {
	return parseDSN(dsn, "source")
}

// parseDSN is ParseDSN for a session to side ("source", "target").
func parseDSN(dsn, side string) (*pgconn.Config, error) {
	if dsn == "" {
		return nil, fmt.Errorf("empty DSN: want postgres://user:password@host:port/database")
	}
	if loc := urlScheme.FindStringIndex(dsn); loc != nil && loc[0] == 0 {
		if scheme := dsn[:loc[1]-3]; scheme != "postgres" && scheme != "postgresql" {
			return nil, fmt.Errorf("DSN scheme %q is not postgres://", scheme)
		}
	}
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("invalid DSN: %w", DSNError(dsn, err))
	}
	for k, v := range sessionParams() {
		if _, set := cfg.RuntimeParams[k]; !set || k != "application_name" {
			cfg.RuntimeParams[k] = v
		}
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = defaultConnectTimeout
	}
	// ConnectTimeout bounds the whole connect, dial included.
	cfg.DialFunc = source.Dialer().DialContext
	if err := guardLink(cfg, side); err != nil {
		return nil, err
	}
	return cfg, nil
}

// ReplicationConfig is ParseDSN for a logical replication connection
// (replication=database: the session is a walsender that also takes SQL).
func ReplicationConfig(dsn string) (*pgconn.Config, error) {
	cfg, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["replication"] = "database"
	return cfg, nil
}

// ConnectReplication opens a logical replication connection to the
// source.
func ConnectReplication(ctx context.Context, dsn string) (*pgconn.PgConn, error) {
	return connectReplication(ctx, dsn, nil)
}

// ConnectStream opens a logical replication connection to the source
// for streaming changes: its reads are coalesced (source.Coalesce).
func ConnectStream(ctx context.Context, dsn string) (*pgconn.PgConn, error) {
	return connectReplication(ctx, dsn, source.CoalescingDialer)
}

// connectReplication connects for replication, dialing with dial when
// it is set.
func connectReplication(ctx context.Context, dsn string, dial pgconn.DialFunc) (*pgconn.PgConn, error) {
	cfg, err := ReplicationConfig(dsn)
	if err != nil {
		return nil, err
	}
	if dial != nil {
		cfg.DialFunc = dial
	}
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to source %s for replication: %w", Hosts(cfg), err)
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
	pc, err := parseDSN(dsn, role)
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
		return nil, fmt.Errorf("connect to %s %s: %w", role, Hosts(pc), err)
	}
	return conn, nil
}

// Hosts names the servers a config tries, in order, as host:port: one,
// or several for a DSN that lists them (postgres://h1,h2/db, tried in
// turn at each connect until one fits target_session_attrs). pgconn
// makes a fallback per TLS mode too (sslmode=prefer tries TLS, then
// plain), so each server is named once.
func Hosts(cfg *pgconn.Config) string {
	seen := map[string]bool{}
	var hosts []string
	add := func(host string, port uint16) {
		h := fmt.Sprintf("%s:%d", host, port)
		if !seen[h] {
			seen[h] = true
			hosts = append(hosts, h)
		}
	}
	add(cfg.Host, cfg.Port)
	for _, f := range cfg.Fallbacks {
		add(f.Host, f.Port)
	}
	return strings.Join(hosts, ",")
}

// Close closes a connection even when ctx is already cancelled, giving
// the goodbye message a few seconds.
func Close(ctx context.Context, conn *pgconn.PgConn) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
	defer cancel()
	conn.Close(cctx)
}
