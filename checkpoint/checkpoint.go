// Package checkpoint keeps decant's position in the target itself: one row
// per pipeline, written in the same target transaction as the rows it
// covers, so data and position commit atomically (exactly once).
//
// On PostgreSQL targets the row lives in decant.checkpoint. The rule for
// "already applied?" is Row.Applied; the write is monotonic.
package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/decant/decant/source"
	"github.com/decant/decant/source/pgsession"
)

// Row is one pipeline's checkpoint.
type Row struct {
	Pipeline string
	SystemID string // the source cluster the positions belong to
	// Commit, Xid and CommitTime describe the last applied transaction
	// (zero until the first).
	Commit source.LSN
	// CSN (GaussDB CSN-ordered slots, 0 elsewhere) is the commit
	// sequence number of the last applied transaction, or one less than
	// a decode position passed since: every transaction at or below it
	// is applied.
	CSN        uint64
	Xid        uint64
	CommitTime time.Time
	// End is the resume position: every source transaction that commits
	// before End has been applied. It is at least Commit+1 after a
	// transaction, and may move on without one when the source reports that
	// nothing else commits below a later position.
	End         source.LSN
	AppliedTime time.Time // when the row was last written
	// PartialCommit and PartialSeq mark a transaction applied only in part:
	// its first PartialSeq changes are on the target. Targets whose DDL
	// commits by itself (MySQL) write them before each schema change, so a
	// restart resumes inside the transaction instead of repeating it.
	PartialCommit source.LSN
	PartialSeq    int
	// Hold, when set and before End, is where streaming must resume: a
	// prepared transaction decoded there is still awaiting COMMIT
	// PREPARED, and the source sends its changes again only to a
	// consumer that starts before it (two-phase decoding).
	Hold source.LSN
	// Timeline is the source's timeline (IDENTIFY_SYSTEM) when a session
	// last started streaming, 0 until one did: against the source's
	// timeline now it tells a dropped slot from a failover to a server
	// without it. A write with 0 keeps the stored one.
	Timeline uint32
	// DDL records that the pipeline was initialised with --ddl: only then
	// does it apply schema changes from the stream. It is set by init
	// (Ensure) and kept by every write after; a checkpoint table made
	// before it existed takes it from whether the pipeline has table
	// definitions recorded, which only init --ddl writes.
	DDL bool
}

// Resume is the position streaming restarts from: End, or Hold when a
// held prepared transaction lies before it. Transactions between Hold and
// End come again and are recognised as applied.
func (r Row) Resume() source.LSN {
	if r.Hold != 0 && r.Hold < r.End {
		return r.Hold
	}
	return r.End
}

// Same reports whether writing r where o is stored would change only
// AppliedTime: the resume position, the CSN, the hold and the timeline are
// o's.
func (r Row) Same(o Row) bool {
	return r.End == o.End && r.CSN == o.CSN && r.Hold == o.Hold && r.Timeline == o.Timeline
}

// Skip returns how many of txn's first changes are already applied.
func (r Row) Skip(txn *source.Txn) int {
	if r.PartialSeq > 0 && txn.Commit == r.PartialCommit {
		return r.PartialSeq
	}
	return 0
}

// Applied reports whether txn has already been applied. By LSN: its commit
// record lies before End; a transaction that commits exactly at End is not
// applied (End starts as the slot's consistent point, where a commit may
// lie). By CSN (GaussDB CSN-ordered slots): its CSN is at most the last
// applied CSN, which the source resends after a restart until it hears
// the confirmation. A transaction without a CSN on such a slot cannot be
// placed, so it is an error (*MissingCSNError), never a silent skip; that
// CSNs rise through the stream is the reader's check.
func (r Row) Applied(txn *source.Txn) (bool, error) {
	if !txn.ByCSN {
		return txn.Commit < r.End, nil
	}
	if txn.CSN == 0 {
		return false, &MissingCSNError{Pipeline: r.Pipeline, Xid: txn.Xid, Commit: txn.Commit}
	}
	return txn.CSN <= r.CSN, nil
}

// MissingCSNError is a transaction of a CSN-ordered slot that came without
// its commit CSN: a malformed stream.
type MissingCSNError struct {
	Pipeline string
	Xid      uint64
	Commit   source.LSN
}

func (e *MissingCSNError) Error() string {
	return fmt.Sprintf("pipeline %s: transaction xid %d (commit %s) on a CSN-ordered slot came without a commit CSN, so whether it is applied cannot be told: the stream is malformed; nothing past it is confirmed (check the decoding options and the server, then run again)",
		e.Pipeline, e.Xid, e.Commit)
}

// Reached reports whether the row covers the catch-up goal g: by CSN,
// every transaction below g.CSN is applied (CSN is the last applied one,
// or one below a decode position passed); by LSN, End reached g.LSN.
func (r Row) Reached(g source.Goal) bool {
	if g.CSN != 0 {
		return r.CSN+1 >= g.CSN
	}
	return r.End >= g.LSN
}

// After returns the row as it stands once txn, ending at end, is applied.
func (r Row) After(txn *source.Txn, end source.LSN) Row {
	r.Commit, r.Xid, r.CommitTime = txn.Commit, txn.Xid, txn.CommitTime
	r.End = max(r.End, end)
	r.CSN = max(r.CSN, txn.CSN)
	r.PartialCommit, r.PartialSeq = 0, 0
	return r
}

// ErrNotFound means the pipeline has no checkpoint row on the target.
var ErrNotFound = errors.New("no checkpoint")

// ErrRegressed means a write would move the checkpoint backwards: another
// process applied past this one (two agents on one pipeline).
var ErrRegressed = errors.New("checkpoint is ahead of this agent")

// PGCreate creates the checkpoint table on a PostgreSQL target.
var PGCreate = `CREATE SCHEMA IF NOT EXISTS decant;
CREATE TABLE IF NOT EXISTS decant.checkpoint (
	pipeline     text PRIMARY KEY,
	system_id    text NOT NULL,
	commit_lsn   pg_lsn NOT NULL,
	end_lsn      pg_lsn NOT NULL,
	commit_csn   bigint,
	xid          bigint,
	commit_time  timestamptz,
	applied_time timestamptz NOT NULL DEFAULT now(),
	partial_commit_lsn pg_lsn,
	partial_seq  integer NOT NULL DEFAULT 0,
	hold_lsn     pg_lsn,
	timeline     bigint,
	ddl          boolean
);
` + pgUpgrade

// pgUpgrade adds the columns added since the table's first version to a
// checkpoint table made by an older decant, and records the version.
var pgUpgrade = `ALTER TABLE decant.checkpoint ADD COLUMN IF NOT EXISTS hold_lsn pg_lsn;
ALTER TABLE decant.checkpoint ADD COLUMN IF NOT EXISTS timeline bigint;
ALTER TABLE decant.checkpoint ADD COLUMN IF NOT EXISTS ddl boolean;
DO $decant$ BEGIN
	IF to_regclass('decant.schema') IS NOT NULL THEN
		UPDATE decant.checkpoint c SET ddl = EXISTS (SELECT 1 FROM decant.schema s WHERE s.pipeline = c.pipeline) WHERE c.ddl IS NULL;
	END IF;
END $decant$;
` + pgSetVersion

// PGAdvance moves the checkpoint forward inside the applying transaction.
// It matches no row (and the caller must roll back) if the stored position
// is already past the new one. Parameters: PGAdvanceArgs.
const PGAdvance = `UPDATE decant.checkpoint
	SET commit_lsn = $2, end_lsn = $3, xid = $4, commit_time = $5, commit_csn = $6, applied_time = now(),
		partial_commit_lsn = NULL, partial_seq = 0, hold_lsn = $7, timeline = coalesce($8, timeline)
	WHERE pipeline = $1 AND end_lsn <= $3 AND coalesce(commit_csn, 0) <= coalesce($6::bigint, 0)`

// PGAdvanceArgs renders the row as PGAdvance's text-format parameters.
func (r Row) PGAdvanceArgs() [][]byte {
	args := [][]byte{
		[]byte(r.Pipeline),
		[]byte(r.Commit.String()),
		[]byte(r.End.String()),
		nil,
		nil,
		nil,
		nil,
		nil,
	}
	if r.Timeline != 0 {
		args[7] = strconv.AppendUint(nil, uint64(r.Timeline), 10)
	}
	if r.Hold != 0 {
		args[6] = []byte(r.Hold.String())
	}
	if r.CSN != 0 {
		args[5] = strconv.AppendUint(nil, r.CSN, 10)
	}
	if r.Xid != 0 {
		args[3] = strconv.AppendUint(nil, r.Xid, 10)
	}
	if !r.CommitTime.IsZero() {
		args[4] = r.CommitTime.UTC().AppendFormat(nil, "2006-01-02 15:04:05.999999Z07:00")
	}
	return args
}

// PGEnsure creates the table if needed and inserts the pipeline's row at
// row's position unless one exists. It returns the stored row and whether
// it was created. A stored row from another source system is an error.
func PGEnsure(ctx context.Context, conn *pgx.Conn, row Row) (Row, bool, error) {
	if err := pgVersion(ctx, conn); err != nil {
		return Row{}, false, err
	}
	if _, err := conn.Exec(ctx, PGCreate); err != nil {
		return Row{}, false, fmt.Errorf("create checkpoint table decant.checkpoint on target: %w", err)
	}
	if _, err := conn.Exec(ctx, PGSchemaCreate); err != nil {
		return Row{}, false, fmt.Errorf("create decant.schema on target: %w", err)
	}
	var csn *int64
	if row.CSN != 0 {
		v := int64(row.CSN)
		csn = &v
	}
	tag, err := conn.Exec(ctx, `INSERT INTO decant.checkpoint (pipeline, system_id, commit_lsn, end_lsn, commit_csn, ddl)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (pipeline) DO NOTHING`,
		row.Pipeline, row.SystemID, row.Commit.String(), row.End.String(), csn, row.DDL)
	if err != nil {
		return Row{}, false, fmt.Errorf("insert checkpoint of pipeline %s: %w", row.Pipeline, err)
	}
	if row.DDL { // init --ddl on a pipeline made without: from now on it applies schema changes
		if _, err := conn.Exec(ctx, `UPDATE decant.checkpoint SET ddl = true WHERE pipeline = $1 AND ddl IS NOT true`, row.Pipeline); err != nil {
			return Row{}, false, fmt.Errorf("record DDL capture in the checkpoint of pipeline %s: %w", row.Pipeline, err)
		}
	}
	stored, err := PGRead(ctx, conn, row.Pipeline)
	if err != nil {
		return Row{}, false, err
	}
	if stored.SystemID != row.SystemID {
		return stored, false, fmt.Errorf("target already holds pipeline %s from source system %s, not %s: use another --pipeline or run decant drop for it", row.Pipeline, stored.SystemID, row.SystemID)
	}
	return stored, tag.RowsAffected() == 1, nil
}

// PGRead reads the pipeline's row; ErrNotFound when there is none. A
// checkpoint table made by an older decant is upgraded here first
// (SchemaVersion), so that run upgrades it in place without another init;
// one from a newer decant is refused.
func PGRead(ctx context.Context, conn *pgx.Conn, pipeline string) (Row, error) {
	if err := pgVersion(ctx, conn); err != nil {
		return Row{}, err
	}
	r, err := pgRead(ctx, conn, pipeline)
	if pgsession.Code(err) != "42703" { // undefined_column: a table that says its version but lacks a column
		return r, err
	}
	if _, err := conn.Exec(ctx, pgUpgrade); err != nil {
		return Row{}, fmt.Errorf("add decant's columns to decant.checkpoint on the target: %w", err)
	}
	return pgRead(ctx, conn, pipeline)
}

func pgRead(ctx context.Context, conn *pgx.Conn, pipeline string) (Row, error) {
	var r Row
	var xid, csn *int64
	var commitTime *time.Time
	var hold *string
	var timeline *int64
	err := conn.QueryRow(ctx, `SELECT pipeline, system_id, commit_lsn::text, end_lsn::text, xid, commit_csn, commit_time, applied_time, hold_lsn::text, timeline,
			coalesce(ddl, false)
		FROM decant.checkpoint WHERE pipeline = $1`, pipeline).
		Scan(&r.Pipeline, &r.SystemID, &r.Commit, &r.End, &xid, &csn, &commitTime, &r.AppliedTime, &hold, &timeline, &r.DDL)
	// PostgreSQL targets apply DDL inside the transaction and never write a
	// partial position.
	if errors.Is(err, pgx.ErrNoRows) || isMissingPG(err) {
		return Row{}, fmt.Errorf("%w for pipeline %s on the target; run decant init first", ErrNotFound, pipeline)
	}
	if err != nil {
		return Row{}, fmt.Errorf("read checkpoint of pipeline %s: %w", pipeline, err)
	}
	if xid != nil {
		r.Xid = uint64(*xid)
	}
	if csn != nil {
		r.CSN = uint64(*csn)
	}
	if commitTime != nil {
		r.CommitTime = *commitTime
	}
	if timeline != nil {
		r.Timeline = uint32(*timeline)
	}
	if hold != nil {
		if r.Hold, err = source.ParseLSN(*hold); err != nil {
			return Row{}, fmt.Errorf("read checkpoint of pipeline %s: %w", pipeline, err)
		}
	}
	return r, nil
}

// PGDelete removes the pipeline's row; it reports whether there was one.
func PGDelete(ctx context.Context, conn *pgx.Conn, pipeline string) (bool, error) {
	tag, err := conn.Exec(ctx, `DELETE FROM decant.checkpoint WHERE pipeline = $1`, pipeline)
	if isMissingPG(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("delete checkpoint of pipeline %s: %w", pipeline, err)
	}
	return tag.RowsAffected() > 0, nil
}

// PGReset sets the pipeline's row to row's position outright, backwards
// too, clearing the last transaction, the partial mark, the hold and the
// timeline (the next run records it). Only resync writes it: once with
// position 0, which no slot can stream from, so run refuses while a
// resync is unfinished; then at the new slot's consistent point once
// every table is repaired. The row must exist.
func PGReset(ctx context.Context, conn *pgx.Conn, row Row) error {
	tag, err := conn.Exec(ctx, `UPDATE decant.checkpoint
	SET commit_lsn = $2, end_lsn = $3, xid = NULL, commit_time = NULL, commit_csn = NULL, applied_time = now(),
		partial_commit_lsn = NULL, partial_seq = 0, hold_lsn = NULL, timeline = NULL
	WHERE pipeline = $1`, row.Pipeline, row.Commit.String(), row.End.String())
	if err == nil && tag.RowsAffected() != 1 {
		err = ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("reset checkpoint of pipeline %s to %s: %w", row.Pipeline, row.End, err)
	}
	return nil
}
