package mysql

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/decant/decant/source"
	"github.com/decant/decant/source/pgsession"
)

// IsDSN reports whether dsn names a MySQL/MariaDB target: a mysql:// URL or
// the driver's own user:pass@tcp(host:port)/db form.
func IsDSN(dsn string) bool {
	return strings.HasPrefix(dsn, "mysql://") || strings.Contains(dsn, "@tcp(") || strings.Contains(dsn, "@unix(")
}

// ParseDSN turns mysql://user:pass@host:port/db?param=value (or the
// driver's form) into a driver config with decant's session: utf8mb4, UTC,
// strict sql_mode, foreign key checks off while applying, client-side
// interpolation (by the driver, or for a batch by literals.go) so a batch
// is one round trip,
// several statements per round trip, and UPDATE reporting matched rather
// than changed rows. The target database is required. TLS with a private
// CA or a client certificate comes from decant's tls-* parameters (tls.go).
// Connections dial with short TCP keepalives (source.Dialer), through
// the guard of link.go (AllowKeyParam).
func ParseDSN(dsn string) (*mysql.Config, error) {
	cfg, _, err := parseDSN(dsn)
	return cfg, err
}

// parseDSN is ParseDSN with the guard the config dials through.
func parseDSN(dsn string) (*mysql.Config, *linkGuard, error) {
	var cfg *mysql.Config
	var err error
	if strings.HasPrefix(dsn, "mysql://") {
		cfg, err = fromURL(dsn)
	} else {
		cfg, err = mysql.ParseDSN(dsn)
	}
	if err != nil {
		return nil, nil, pgsession.DSNError(dsn, err)
	}
	if cfg.DBName == "" {
		return nil, nil, fmt.Errorf("MySQL DSN names no database: want mysql://user:pass@host:port/database")
	}
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["time_zone"] = "'+00:00'"
	cfg.Params["sql_mode"] = "'STRICT_ALL_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION,NO_AUTO_VALUE_ON_ZERO'"
	cfg.Params["foreign_key_checks"] = "0"
	if err := cfg.Apply(mysql.Charset("utf8mb4", "utf8mb4_bin")); err != nil {
		return nil, nil, err
	}
	cfg.Loc = time.UTC
	cfg.ParseTime = false
	cfg.InterpolateParams = true
	cfg.MultiStatements = true
	cfg.ClientFoundRows = true
	cfg.AllowNativePasswords = true
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	cfg.DialFunc = source.Dialer().DialContext
	host, _, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		host = cfg.Addr
	}
	if cfg.TLSConfig == "true" && cfg.TLS != nil {
		// For a mysql:// URL the driver parsed the query alone and took
		// the name to verify from its default address: use the host's.
		cfg.TLS.ServerName = host
	}
	if err := applyTLS(cfg, host); err != nil {
		return nil, nil, err
	}
	// Ask the server for its max_allowed_packet, so that a statement too
	// large for it fails before it is sent, with a clear error.
	cfg.MaxAllowedPacket = 0
	g, err := newLinkGuard(cfg)
	if err != nil {
		return nil, nil, err
	}
	cfg.DialFunc = g.Dial
	return cfg, g, nil
}

func fromURL(dsn string) (*mysql.Config, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return nil, fmt.Errorf("invalid MySQL DSN: %w", pgsession.DSNError(dsn, err))
	}
	cfg := mysql.NewConfig()
	cfg.Net = "tcp"
	host := u.Host
	if u.Port() == "" {
		host += ":3306"
	}
	cfg.Addr = host
	if u.User != nil {
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
	}
	cfg.DBName = strings.TrimPrefix(u.Path, "/")
	// Driver parameters in the query string, e.g. ?tls=true&timeout=5s,
	// re-encoded: the driver's parser ends the database name at the last
	// "/", which may be in a value (tls-ca=/etc/ssl/ca.pem).
	if q := u.Query(); len(q) > 0 {
		parsed, err := mysql.ParseDSN("/?" + q.Encode())
		if err != nil {
			return nil, fmt.Errorf("invalid MySQL DSN parameters: %w", pgsession.DSNError(dsn, err))
		}
		parsed.Net, parsed.Addr, parsed.User, parsed.Passwd, parsed.DBName = cfg.Net, cfg.Addr, cfg.User, cfg.Passwd, cfg.DBName
		return parsed, nil
	}
	return cfg, nil
}
