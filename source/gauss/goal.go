package gauss

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/decant/decant/source"
	"github.com/decant/decant/source/pgsession"
)

// Where a catch-up (or a cutover fence) ends on a CSN-ordered slot.
//
// The log end IDENTIFY_SYSTEM reports is no goal there: WAL that no
// transaction of the slot ends at (a checkpoint, the bgwriter's
// running-xacts record, writes to tables outside white-table-list) moves
// it, and in CSN order only commits and decode positions show how far the
// stream is. So the goal is a CSN: gs_get_next_xid_csn() says what the next
// commit gets, and every transaction committed before it has a smaller
// CSN. A decode position requested right after (it carries the CSN at the
// moment it is written, which is not below that next CSN) comes in CSN
// order behind all of them, so the goal is reached even when the last of
// those transactions was not replicated; a transaction at or past the
// goal's CSN-1 reaches it too. An older decode position still in the slot
// reaches it only if no commit came between, when it is as good.
const (
	nextCSNQuery    = "SELECT next_csn::text FROM gs_get_next_xid_csn()"
	addPositionCall = "SELECT gs_add_logical_decoding_position_xlog()"
)

// Goal is where a catch-up ends (apply.GoalSource): the log end srv
// reports on an LSN-ordered slot; on a CSN-ordered one, the next CSN, with
// a decode position requested behind it (CSNGoal).
func (r *Reader) Goal(ctx context.Context, srv source.Server) (source.Goal, error) {
	if !r.cfg.Options.CSNOrder() {
		return source.Goal{LSN: srv.WALEnd}, nil
	}
	if !r.cfg.Options.DecodePosition() {
		return source.Goal{}, setupf("slot %s is CSN-ordered: a catch-up (and a cutover) ends at a decode position decant requests, so it needs the decoding option enable-decode-position=true", r.cfg.Slot)
	}
	var g source.Goal
	err := r.bound().Do(ctx, "taking the catch-up goal", func(ctx context.Context) error {
		cc := r.conn
		cc.Replication = false
		conn, err := Connect(ctx, cc)
		if err != nil {
			return err
		}
		defer pgsession.Close(ctx, conn)
		g, err = CSNGoal(ctx, conn)
		return err
	})
	return g, err
}

// CSNGoal reads the CSN the next commit will get (the highest of every
// node gs_get_next_xid_csn() lists) and then asks for a decode position,
// on conn, an ordinary SQL session.
func CSNGoal(ctx context.Context, conn *pgconn.PgConn) (source.Goal, error) {
	res, err := conn.Exec(ctx, nextCSNQuery).ReadAll()
	if err != nil {
		return source.Goal{}, fmt.Errorf("read the next CSN (gs_get_next_xid_csn): %w", err)
	}
	var next uint64
	for _, r := range res {
		for _, row := range r.Rows {
			if len(row) != 1 {
				return source.Goal{}, fmt.Errorf("read the next CSN: gs_get_next_xid_csn() gave %d columns, want next_csn", len(row))
			}
			v, err := strconv.ParseUint(string(row[0]), 10, 64)
			if err != nil {
				return source.Goal{}, fmt.Errorf("read the next CSN: %w", err)
			}
			next = max(next, v)
		}
	}
	if next == 0 {
		return source.Goal{}, fmt.Errorf("read the next CSN: gs_get_next_xid_csn() named no CSN")
	}
	if _, err := conn.Exec(ctx, addPositionCall).ReadAll(); err != nil {
		return source.Goal{}, fmt.Errorf("ask the source for a decode position: %w", err)
	}
	return source.Goal{CSN: next}, nil
}

// Fence takes cutover's goal for the pipeline: on a CSN-ordered slot the
// catch-up goal (CSNGoal), on an LSN-ordered one the log end now, with a
// decode position requested behind it when the stream sends them, so an
// idle parallel stream reaches it without waiting for its own request.
func (a *Admin) Fence(ctx context.Context) (source.Goal, error) {
	if a.opts.CSNOrder() && !a.opts.DecodePosition() {
		return source.Goal{}, setupf("slot %s is CSN-ordered: cutover's fence is a decode position decant requests, so it needs the decoding option enable-decode-position=true", a.slot)
	}
	var g source.Goal
	if !a.opts.CSNOrder() {
		srv, err := identify(ctx, a.conn)
		if err != nil {
			return g, err
		}
		g.LSN = srv.WALEnd
		if !a.opts.DecodePosition() || !a.opts.Parallel() {
			return g, nil
		}
	}
	cc, err := ParseDSN(a.dsn)
	if err != nil {
		return g, err
	}
	conn, err := Connect(ctx, cc) // an ordinary session: the position functions are SQL
	if err != nil {
		return g, err
	}
	defer pgsession.Close(ctx, conn)
	if a.opts.CSNOrder() {
		return CSNGoal(ctx, conn)
	}
	if _, err := conn.Exec(ctx, addPositionCall).ReadAll(); err != nil {
		return g, fmt.Errorf("ask the source for a decode position: %w", err)
	}
	return g, nil
}
