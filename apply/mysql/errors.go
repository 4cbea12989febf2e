package mysql

import (
	"crypto/x509"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"regexp"

	"github.com/go-sql-driver/mysql"
)

// Server errors after which a reconnect and a resume from the checkpoint
// can succeed: deadlock, lock wait timeout, too many connections, server
// shutting down, connection killed, query interrupted, read-only while
// failing over.
var transientNumbers = map[uint16]bool{1213: true, 1205: true, 1040: true, 1053: true, 1927: true, 1317: true, 1290: true, 1836: true}

// Server errors whose message quotes the offending value: duplicate
// entries, bad dates, bad strings, truncated data, invalid JSON.
var valueNumbers = map[uint16]bool{1062: true, 1264: true, 1265: true, 1292: true, 1366: true, 1367: true, 3140: true}

var quotedValue = regexp.MustCompile(`'(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.)*"`)

// targetError keeps a driver error for errors.As and classification while
// printing only what is safe.
type targetError struct {
	msg       string
	err       error
	retryable bool
}

func (e *targetError) Error() string   { return e.msg }
func (e *targetError) Unwrap() error   { return e.err }
func (e *targetError) Retryable() bool { return e.retryable }

// describe turns a driver error into one line without row values and
// marks whether it is worth a retry.
func describe(err error) error {
	if err == nil {
		return nil
	}
	var te *targetError
	if errors.As(err, &te) {
		return err
	}
	var my *mysql.MySQLError
	if errors.As(err, &my) {
		msg := my.Message
		if valueNumbers[my.Number] {
			msg = redactLiterals(msg)
		}
		hint := ""
		if my.Number == 1153 || my.Number == 1301 {
			hint = "; raise max_allowed_packet on the target"
		}
		return &targetError{msg: fmt.Sprintf("%s (MySQL error %d)%s", msg, my.Number, hint), err: err, retryable: transientNumbers[my.Number]}
	}
	if errors.Is(err, mysql.ErrPktTooLarge) || errors.Is(err, driver.ErrSkip) {
		// ErrSkip: the driver could not interpolate the statement, which
		// for decant's arguments means it would exceed the packet limit.
		return &targetError{msg: "a statement exceeds the target's max_allowed_packet; raise max_allowed_packet on the target", err: err}
	}
	var unknownCA x509.UnknownAuthorityError
	if errors.As(err, &unknownCA) {
		return &targetError{msg: "the target's TLS certificate is not signed by a CA decant trusts; give the CA's certificate as tls-ca=FILE in the target DSN (" + err.Error() + ")", err: err}
	}
	var badName x509.HostnameError
	if errors.As(err, &badName) {
		return &targetError{msg: "the target's TLS certificate is not valid for the name decant verifies (the DSN's host, or tls-server-name); connect by a name the certificate carries or set tls-server-name in the target DSN (" + err.Error() + ")", err: err}
	}
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn) {
		return &targetError{msg: "lost the connection to the target: " + err.Error(), err: err, retryable: true}
	}
	return err
}

// redactLiterals replaces every quoted literal of a message: a value
// may be quoted more than once, or next to another ("Duplicate entry
// '5-x' for key 'PRIMARY'", "Incorrect datetime value: '...' for column
// 'c'"), and a key or column name lost is a smaller harm than a value
// kept.
func redactLiterals(msg string) string {
	return quotedValue.ReplaceAllLiteralString(msg, "'…'")
}

// connGone reports whether err says the connection was already closed.
func connGone(err error) bool {
	return errors.Is(err, sql.ErrConnDone) || errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn)
}
