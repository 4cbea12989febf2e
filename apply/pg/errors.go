package pg

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/source/pgsession"
)

// What the target's SQLSTATEs mean to the writer (PostgreSQL, Appendix
// A), as apply/mysql knows MySQL's error numbers. Whether a lost or
// refused session is worth a new one is pgsession's rule, which the
// source readers share; what a transaction's statements meet is here.
const (
	serializationFailure = "40001"
	deadlockDetected     = "40P01"
	lockNotAvailable     = "55P03" // lock_timeout
	undefinedTable       = "42P01"
	invalidSchemaName    = "3F000"
	undefinedColumn      = "42703" // a statement names a column the table does not have
	dataExceptionClass   = "22"    // the message quotes the offending value

	// InvalidParameterValue (22023) is what SET TRANSACTION SNAPSHOT
	// answers for a snapshot whose exporting session has ended.
	InvalidParameterValue = "22023"
	// OutOfSharedMemory (53200): for LOCK TABLE, the lock table is full
	// (max_locks_per_transaction).
	OutOfSharedMemory = "53200"
)

// transient reports whether a target error with SQLSTATE code is worth a
// reconnect and a resume from the checkpoint: a serialization failure, a
// deadlock or a lock timeout passes when the transaction runs again, and
// so does a session-level fault (pgsession.Transient). Everything else
// (bad data, missing tables, constraint violations) fails the same way
// again.
func transient(code string) bool {
	switch code {
	case serializationFailure, deadlockDetected, lockNotAvailable:
		return true
	}
	return pgsession.Transient(code)
}

// Missing reports whether err says a table or its schema does not exist
// (a store decant has not yet created, say).
func Missing(err error) bool {
	code := pgsession.Code(err)
	return code == undefinedTable || code == invalidSchemaName
}

// quoted matches the double-quoted parts of a server message.
var quoted = regexp.MustCompile(`"[^"]*"`)

// describe turns a target error into one line without row values. The
// server's message stays (it names columns, constraints and types), except
// that data exceptions (SQLSTATE class 22) quote the offending value, which
// is replaced. DETAIL is dropped: it often repeats the row ("Key (id)=(5)",
// "Failing row contains (...)"). The result says whether a retry can
// succeed (apply.Retryable).
func describe(err error) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return err
	}
	msg := pgErr.Message
	if strings.HasPrefix(pgErr.Code, dataExceptionClass) {
		msg = quoted.ReplaceAllString(msg, `"…"`)
	}
	return &targetError{msg: msg, code: pgErr.Code, err: err}
}

// Describe is describe for other packages that write to a PostgreSQL
// target (apply/bulk, apply/verify): one line without row values, data
// exceptions without the quoted value, no DETAIL; errors.As still finds
// the *pgconn.PgError.
func Describe(err error) error { return describe(err) }

// targetError keeps the server error for classification (errors.As finds
// the *pgconn.PgError) while printing only the safe part.
type targetError struct {
	msg  string
	code string
	err  error
}

func (e *targetError) Error() string { return fmt.Sprintf("%s (SQLSTATE %s)", e.msg, e.code) }
func (e *targetError) Unwrap() error { return e.err }

// Retryable: what the error wraps may know already (a round trip that
// timed out); else the SQLSTATE says.
func (e *targetError) Retryable() bool { return retryable(e.err, e.code) }

func retryable(err error, code string) bool {
	var r apply.Retryable
	if errors.As(err, &r) {
		return r.Retryable()
	}
	return transient(code)
}

// Classify marks the PostgreSQL server error err carries as worth a retry
// or not by its SQLSTATE (apply.Retryable), keeping err's text; an error
// that carries none, or knows already, is returned as it is. For errors
// that do not pass through describe: those of a bulk copy's sessions.
func Classify(err error) error {
	var r apply.Retryable
	if err == nil || errors.As(err, &r) {
		return err
	}
	code := pgsession.Code(err)
	if code == "" {
		return err
	}
	return &classified{err: err, retryable: transient(code)}
}

// classified is an error Classify marked.
type classified struct {
	err       error
	retryable bool
}

func (e *classified) Error() string   { return e.err.Error() }
func (e *classified) Unwrap() error   { return e.err }
func (e *classified) Retryable() bool { return e.retryable }
