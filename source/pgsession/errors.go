package pgsession

import (
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
)

// SQLSTATEs a session-level decision names (PostgreSQL, Appendix A).
const (
	// ObjectInUse (55006): on a replication connection, the slot is
	// held by another session.
	ObjectInUse = "55006"
	// QueryCanceled (57014): a statement was cancelled; only decant
	// cancels its own, when it stops.
	QueryCanceled = "57014"
)

// Code returns the SQLSTATE of the server error err carries, or "" when
// it carries none.
func Code(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// Transient reports whether SQLSTATE code says a session ended, or could
// not start, for a reason that passes, so that a new session can resume:
// a connection exception (class 08), insufficient resources (53: too
// many connections, out of memory or disk), operator intervention (57:
// the server shutting down, restarting or still starting) other than
// QueryCanceled, and ObjectInUse (a replication slot still held by a
// session that has not yet noticed its client died). What the statements
// of a transaction meet (serialization failures, deadlocks) is the
// writer's to classify: apply/pg.
func Transient(code string) bool {
	if len(code) != 5 {
		return false
	}
	switch code[:2] {
	case "08", "53", "57":
		return code != QueryCanceled
	}
	return code == ObjectInUse
}
