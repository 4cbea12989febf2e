package gauss

import (
	"errors"
	"net/url"
)

// WithPassword returns dsn with password as the user's password, for a
// password read from a file rather than written on the command line. The
// DSN must name a user and no password. Errors never quote the DSN.
func WithPassword(dsn, password string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", errors.New("invalid DSN: want gaussdb://user@host:port/database")
	}
	if u.User == nil || u.User.Username() == "" {
		return "", errors.New("the DSN names no user: want gaussdb://user@host:port/database")
	}
	if _, set := u.User.Password(); set {
		return "", errors.New("the DSN has a password already: leave it out of the DSN or leave out the password file")
	}
	u.User = url.UserPassword(u.User.Username(), password)
	return u.String(), nil
}
