package apply

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/decant/decant/source"
	"github.com/decant/decant/source/pgsession"
)

// Error is a failure to apply one change. It names where it happened and
// never the row's values.
type Error struct {
	Op     string // "insert", "update", "commit"...
	Table  source.TableName
	Xid    uint64
	Commit source.LSN // 0 while a streamed transaction is in progress
	Err    error
}

func (e *Error) Error() string {
	where := fmt.Sprintf("xid %d commit %s", e.Xid, e.Commit)
	if e.Commit == 0 && e.Xid != 0 {
		where = fmt.Sprintf("xid %d (in progress, streamed)", e.Xid)
	}
	if e.Table.Name != "" {
		where += " table " + e.Table.String()
	}
	return fmt.Sprintf("apply %s at %s: %v", e.Op, where, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// GaveUpError is a transient failure the pipeline stopped retrying: the
// first connection failed, the slot stayed held by another session past
// Config.SlotWait, or failures went on past Config.RetryFor without a
// commit. Run again later, it may well succeed (a supervisor restarts it:
// exit code 4), unlike an error that needs a person (NeedsPerson).
type GaveUpError struct{ Err error }

func (e *GaveUpError) Error() string { return e.Err.Error() }
func (e *GaveUpError) Unwrap() error { return e.Err }

// GaveUp reports whether err ends a pipeline that gave up retrying.
func GaveUp(err error) bool {
	var g *GaveUpError
	return errors.As(err, &g)
}

// NeedsPerson reports whether err stops the pipeline until someone acts:
// what the source says needs a person (a lost slot, a full spill
// directory), and a change the target refused for good (a constraint
// violation, a value it cannot hold, a row that is not there), which a
// restart would meet again at once.
func NeedsPerson(err error) bool {
	if source.NeedsPerson(err) {
		return true
	}
	var e *Error
	return errors.As(err, &e) && !Transient(err) && !GaveUp(err)
}

// ErrNoOldRow refuses an UPDATE or DELETE that must find its row by the
// whole old row but came without one.
var ErrNoOldRow = errors.New("the source sent no old values to find the row by; set REPLICA IDENTITY FULL or a primary key on the source table")

// Retryable is implemented by errors that know whether resuming from the
// checkpoint after a reconnect can succeed.
type Retryable interface{ Retryable() bool }

// Transient reports whether err is worth a reconnect and a resume from the
// checkpoint: lost connections, server restarts, a slot still held by a
// dying session, and what a dialect's writer marks Retryable (serialization
// failures, deadlocks: apply/pg and apply/mysql classify their servers'
// errors). Everything else (bad data, missing tables, constraint
// violations, malformed streams) is permanent: a retry would fail the same
// way.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	var r Retryable
	if errors.As(err, &r) {
		return r.Retryable()
	}
	// A server error that its dialect's writer has not classified (a
	// source reader's, a target's outside a statement) is worth a retry
	// when it says the session ended for a passing reason.
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgsession.Transient(pgErr.Code)
	}
	if pgconn.SafeToRetry(err) || pgconn.Timeout(err) {
		return true
	}
	// A failed local file operation (a spill file) carries an errno, and
	// every errno satisfies net.Error: it is no network fault, and a retry
	// would meet the same file system.
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		return false
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) {
		return true
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed)
}

// slotBusy reports whether err says the replication slot is in use by
// another session: the source refused START_REPLICATION (SQLSTATE 55006,
// object_in_use), the reader found the slot active, or another session
// moved slot and checkpoint while this one started.
func slotBusy(err error) bool {
	var busy *source.SlotBusyError
	var moved *slotMovedError
	return pgsession.Code(err) == pgsession.ObjectInUse || errors.As(err, &busy) || errors.As(err, &moved)
}

// Origin says which source change a target statement came from, so that
// a failure can name it.
type Origin struct {
	Op     string // "insert", "update", "checkpoint"...
	Table  source.TableName
	Txn    *source.Txn
	Expect int // rows the statement must affect; -1 for any
	// Net: the statement applies the net change of several source
	// changes (Net); Txn is the last of their transactions.
	Net bool
	// Policy, when not PolicyError, says the statement resolves a
	// conflict of kind Conflict and logs it: the rows it reports are
	// the conflicts it logged (none or one).
	Conflict ConflictKind
	Policy   ConflictPolicy
	// Judges: the statement returns a (kind, policy) row for the
	// conflict it met, if any; it resolved and logged it unless the
	// policy is error, which the writer then stops on.
	Judges bool
}

// Fail wraps err as the Error of this origin.
func (o Origin) Fail(err error) error {
	return &Error{Op: o.Op, Table: o.Table, Xid: o.Txn.Xid, Commit: o.Txn.Commit, Err: err}
}

// ChangeError names the change in err unless err already names one.
func ChangeError(txn *source.Txn, c *source.Change, err error) error {
	var ae *Error
	if errors.As(err, &ae) {
		return err
	}
	return &Error{Op: c.Op.String(), Table: c.Rel.Table(), Xid: txn.Xid, Commit: txn.Commit, Err: err}
}

// OneLine shortens a statement for a one-line message: whitespace runs
// become one space, and it ends after 200 bytes (on a rune boundary).
func OneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= 200 {
		return s
	}
	cut := 200
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
