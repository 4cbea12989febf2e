package pgoutput

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/decant/decant/source"
	"github.com/decant/decant/source/pgsession"
)

// Exported is a slot created together with an exported snapshot: the
// database exactly as of the slot's consistent point, which other
// sessions adopt with SET TRANSACTION SNAPSHOT to copy the tables. A copy
// taken under it and streaming from Consistent on neither miss nor repeat
// a transaction. The snapshot lives only while the session that created
// the slot stays open and runs nothing else: Close it after the copy.
type Exported struct {
	conn       *pgconn.PgConn
	Slot       string
	Consistent source.LSN
	Snapshot   string
}

// ExportSlot creates a pgoutput slot on a replication session and
// exports its snapshot. From PostgreSQL 15 on the slot is made for
// two-phase decoding, as EnsureSlot makes them.
func ExportSlot(ctx context.Context, dsn, slot string) (*Exported, error) {
	return exportSlot(ctx, dsn, slot, false)
}

// ExportTempSlot creates a temporary pgoutput slot with an exported
// snapshot: the source drops it when the session ends, however it ends,
// so it only marks the position the snapshot is consistent at (decant
// add-tables copies tables under it; the pipeline's own slot streams
// their later changes).
func ExportTempSlot(ctx context.Context, dsn, slot string) (*Exported, error) {
	return exportSlot(ctx, dsn, slot, true)
}

func exportSlot(ctx context.Context, dsn, slot string, temporary bool) (*Exported, error) {
	conn, err := pgsession.ConnectReplication(ctx, dsn)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Exported, error) {
		pgsession.Close(ctx, conn)
		return nil, err
	}
	var version int
	if err := queryOne(ctx, conn, "SHOW server_version_num", func(v string) error {
		version, err = strconv.Atoi(v)
		return err
	}); err != nil {
		return fail(fmt.Errorf("read the source's version: %w", err))
	}
	// PostgreSQL 15 takes options in parentheses; 14 the older keywords.
	kind := ""
	if temporary {
		kind = " TEMPORARY"
	}
	sql := fmt.Sprintf("CREATE_REPLICATION_SLOT %s%s LOGICAL pgoutput EXPORT_SNAPSHOT", pgsession.QuoteIdent(slot), kind)
	if version >= 150000 {
		sql = fmt.Sprintf("CREATE_REPLICATION_SLOT %s%s LOGICAL pgoutput (SNAPSHOT 'export', TWO_PHASE true)", pgsession.QuoteIdent(slot), kind)
	}
	res, err := conn.Exec(ctx, sql).ReadAll()
	if err != nil {
		return fail(fmt.Errorf("create slot %s with an exported snapshot: %w", slot, err))
	}
	if len(res) != 1 || len(res[0].Rows) != 1 || len(res[0].Rows[0]) < 3 {
		return fail(fmt.Errorf("create slot %s: unexpected answer", slot))
	}
	row := res[0].Rows[0]
	lsn, err := source.ParseLSN(string(row[1]))
	if err != nil {
		return fail(fmt.Errorf("create slot %s: consistent point: %w", slot, err))
	}
	if len(row[2]) == 0 {
		return fail(fmt.Errorf("create slot %s: the source exported no snapshot", slot))
	}
	return &Exported{conn: conn, Slot: slot, Consistent: lsn, Snapshot: string(row[2])}, nil
}

// Close ends the session, and with it the snapshot.
func (e *Exported) Close(ctx context.Context) { pgsession.Close(ctx, e.conn) }
