package mysql

import (
	"errors"
	"net/url"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// WithPassword returns dsn with password as the user's password, for a
// password read from a file rather than written on the command line. The
// DSN must name a user and no password. Errors never quote the DSN.
func WithPassword(dsn, password string) (string, error) {
	if strings.HasPrefix(dsn, "mysql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", errors.New("invalid MySQL DSN")
		}
		if u.User == nil || u.User.Username() == "" {
			return "", errors.New("the MySQL DSN names no user: want mysql://user@host:port/database")
		}
		if _, set := u.User.Password(); set {
			return "", errors.New("the MySQL DSN has a password already: leave it out of the DSN or leave out the password file")
		}
		u.User = url.UserPassword(u.User.Username(), password)
		return u.String(), nil
	}
	// The driver's form, user[:password]@net(addr)/db?params: the user
	// part ends at the last "@" before the last "/" (a "/" in the
	// parameters is written %2F), and the password at the first ":".
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "", errors.New("invalid MySQL DSN")
	}
	if cfg.Passwd != "" {
		return "", errors.New("the MySQL DSN has a password already: leave it out of the DSN or leave out the password file")
	}
	slash := strings.LastIndex(dsn, "/")
	at := strings.LastIndex(dsn[:max(slash, 0)], "@")
	if at <= 0 {
		return "", errors.New("the MySQL DSN names no user: want user@tcp(host:port)/database")
	}
	user, _, _ := strings.Cut(dsn[:at], ":")
	return user + ":" + password + dsn[at:], nil
}
