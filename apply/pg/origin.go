package pg

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/decant/decant/source"
	"github.com/decant/decant/source/pgsession"
)

// Replication origins (PostgreSQL's "Replication Progress Tracking"):
// every transaction a decant apply session commits carries an origin of
// its pipeline, so that a decant reader of this server, the source of a
// pipeline in the other direction (decant cutover --reverse), skips it
// (source.IsDecantOrigin) and never sends a change back where it came
// from. PostgreSQL 15 lets one origin be active in one session only, and
// a pipeline may write through several at once (the sessions of streamed
// transactions, resync's workers), so a session takes the first of
// OriginName(pipeline), then OriginName(pipeline)+".N" for N from 1, that
// no session holds; the main session starts at the first, and normally
// gets it, the others at ".1".

// OriginName is the replication origin of a pipeline's apply session.
func OriginName(pipeline string) string { return source.DecantOriginPrefix + pipeline }

// maxOrigins bounds the origins a session tries: as many as sessions
// write for the pipeline at once, at most.
const maxOrigins = 64

// setupOrigin makes the main session's transactions carry an origin of
// the pipeline. It runs after fence: a session given up may still hold
// the first.
func (t *Target) setupOrigin(ctx context.Context) error {
	if t.originSet {
		return nil
	}
	if err := t.takeOrigin(ctx, 0); err != nil {
		return err
	}
	t.originSet = true
	if t.origin != OriginName(t.cfg.Pipeline) {
		return nil // another session holds the main origin, and may its extras
	}
	err := t.bound().Do(ctx, "dropping unused replication origins", func(ctx context.Context) error {
		return releaseOrigins(ctx, t.conn, t.cfg.Pipeline)
	})
	if err != nil {
		return fmt.Errorf("target: drop the unused replication origins of pipeline %s: %w", t.cfg.Pipeline, err)
	}
	return nil
}

// setupStreamOrigin gives a streamed transaction's session an origin of
// the pipeline, past the main session's.
func (t *Target) setupStreamOrigin(ctx context.Context) error { return t.takeOrigin(ctx, 1) }

// takeOrigin sets the session up with the first origin of the pipeline,
// from the from-th, that no session holds.
func (t *Target) takeOrigin(ctx context.Context, from int) error {
	var err error
	for n := from; n <= maxOrigins; n++ {
		name := OriginName(t.cfg.Pipeline)
		if n > 0 {
			name += "." + strconv.Itoa(n)
		}
		err = t.bound().Do(ctx, "setting up the replication origin", func(ctx context.Context) error {
			return sessionOrigin(ctx, t.conn, name)
		})
		if !originInUse(err) {
			if err != nil {
				return originError(name, t.cfg.Pipeline, err)
			}
			t.origin = name
			return nil
		}
	}
	return fmt.Errorf("target: all %d replication origins of pipeline %s are in use: %w", maxOrigins+1-from, t.cfg.Pipeline, err)
}

// sessionOrigin creates origin name if it does not exist yet and sets the
// session up with it, in one transaction: another session's
// releaseOrigins never sees it created and not yet taken.
func sessionOrigin(ctx context.Context, conn *pgx.Conn, name string) error {
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_replication_origin_create($1) WHERE pg_replication_origin_oid($1) IS NULL`, name); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `SELECT pg_replication_origin_session_setup($1)`, name)
		return err
	})
}

// releaseOrigins drops the pipeline's extra origins (".N") that no
// session holds. Each origin PostgreSQL has seen used keeps one of the
// target's max_replication_slots replication states until it is
// dropped: without this, every session given up while it held one would
// keep it for good.
func releaseOrigins(ctx context.Context, conn *pgx.Conn, pipeline string) error {
	rows, err := conn.Query(ctx, `SELECT roname FROM pg_replication_origin WHERE starts_with(roname, $1)`, OriginName(pipeline)+".")
	if err != nil {
		return err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, name := range names {
		if _, err := conn.Exec(ctx, `SELECT pg_replication_origin_drop($1)`, name); err != nil && !originInUse(err) {
			return err
		}
	}
	return nil
}

// dropOwnOrigin gives up and drops the extra origin a session is leaving
// (its main origin is kept: the pipeline's next session takes it again).
// Best effort: what it leaves, the next main session's releaseOrigins
// drops.
func (t *Target) dropOwnOrigin(ctx context.Context) {
	if !strings.Contains(t.origin, ".") || t.inTx {
		return
	}
	if _, err := t.conn.Exec(ctx, `SELECT pg_replication_origin_session_reset()`); err == nil {
		t.conn.Exec(ctx, `SELECT pg_replication_origin_drop($1)`, t.origin)
	}
}

// originInUse reports PostgreSQL's "replication origin ... is already
// active for PID ...".
func originInUse(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "55006"
}

// originError says what keeps the session from taking the origin.
func originError(name, pipeline string, err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "42501":
			return fmt.Errorf("target: set up replication origin %s: permission denied: the target user must be a superuser, or be granted EXECUTE on pg_replication_origin_create, pg_replication_origin_oid and pg_replication_origin_session_setup: %w", name, err)
		case "53400":
			return fmt.Errorf("target: set up replication origin %s: no free replication state: raise max_replication_slots on the target: %w", name, err)
		case "55000":
			return fmt.Errorf("target: set up replication origin %s: the target cannot take it now (origins need max_replication_slots of at least 1 on the target): %w", name, err)
		}
	}
	return fmt.Errorf("target: set up replication origin %s: %w", name, err)
}

// DropOrigins removes the pipeline's replication origins from the target
// and says how many there were. PostgreSQL refuses while a session holds
// one: drop runs when no run does.
func DropOrigins(ctx context.Context, conn *pgx.Conn, pipeline string) (int, error) {
	name := OriginName(pipeline)
	var n int
	err := conn.QueryRow(ctx, `SELECT count(pg_replication_origin_drop(roname)) FROM pg_replication_origin
		WHERE roname = $1 OR starts_with(roname, $1 || '.')`, name).Scan(&n)
	if err != nil {
		return 0, originError(name, pipeline, err)
	}
	return n, nil
}

// HasSlot reports whether the target cluster holds a replication slot
// of that name: a decant pipeline of that name then streams from the
// target, and the transactions it applied elsewhere must not be sent
// back here (source/pgoutput echo.go).
func HasSlot(ctx context.Context, dsn, slot string) (bool, error) {
	conn, err := pgsession.ConnectAs(ctx, "target", dsn)
	if err != nil {
		return false, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var has bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_replication_slots WHERE slot_name = $1)`, slot).Scan(&has); err != nil {
		return false, fmt.Errorf("target: look for slot %s: %w", slot, err)
	}
	return has, nil
}
