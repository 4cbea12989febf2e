package bulk

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/decant/decant/apply/pg"
	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
)

// pgWriter copies into a PostgreSQL target: the source's COPY TO STDOUT
// streams through a pipe into the target's COPY FROM STDIN, so a task is
// never held in memory.
type pgWriter struct {
	cfg   Config
	conn  *pgx.Conn
	plans map[source.TableName]*pgPlan
}

var _ writer = (*pgWriter)(nil)

// pgPlan is how one table is copied.
type pgPlan struct {
	*mapping.Plan
	// binary: every written column has the same built-in type on both
	// sides, and that type has binary send and receive functions on both
	// (binaryIO).
	binary bool
	copyIn string // the target's COPY ... FROM STDIN
}

func newPGWriter(ctx context.Context, cfg Config) (*pgWriter, error) {
	conn, err := pg.Connect(ctx, cfg.Target)
	if err != nil {
		return nil, err
	}
	// As the applier does: target triggers and foreign keys do not fire
	// for replicated rows.
	if _, err := conn.Exec(ctx, "SET session_replication_role = replica"); err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("target: set session_replication_role = replica (the target user must be a superuser): %w", pg.Describe(err))
	}
	return &pgWriter{cfg: cfg, conn: conn, plans: map[source.TableName]*pgPlan{}}, nil
}

func (w *pgWriter) close(ctx context.Context) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
	defer cancel()
	w.conn.Close(cctx)
}

// firstUserOID is FirstNormalObjectId: types below it are built in.
const firstUserOID = 16384

func (w *pgWriter) plan(ctx context.Context, src *srcSession, j *tableJob) (*pgPlan, error) {
	if p, ok := w.plans[j.def.Name]; ok {
		return p, nil
	}
	tt, err := pg.Inspect(ctx, w.conn, j.target)
	if err != nil {
		return nil, err
	}
	mp, err := mapping.NewPlan(j.rel, *tt, w.cfg.Columns[j.def.Name])
	if err != nil {
		return nil, err
	}
	types, err := w.columnTypes(ctx, j.target)
	if err != nil {
		return nil, err
	}
	p := &pgPlan{Plan: mp, binary: true}
	var oids []uint32
	for _, i := range mp.Cols {
		typ := j.rel.Columns[i].Type
		if typ >= firstUserOID || types[mp.Targets[i].Name] != typ {
			p.binary = false
		}
		oids = append(oids, typ)
	}
	if p.binary {
		if p.binary, err = binaryIO(ctx, src.conn, src.version, oids); err != nil {
			return nil, fmt.Errorf("source: %w", err)
		}
	}
	if p.binary {
		if p.binary, err = binaryIO(ctx, w.conn, 0, oids); err != nil {
			return nil, fmt.Errorf("target: %w", err)
		}
	}
	p.copyIn = copyInSQL(mp, p.binary)
	w.plans[j.def.Name] = p
	return p, nil
}

// columnTypes reads the type OIDs of a target table's columns.
func (w *pgWriter) columnTypes(ctx context.Context, table source.TableName) (map[string]uint32, error) {
	rows, err := w.conn.Query(ctx, `SELECT attname, atttypid FROM pg_attribute
		WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped`, mapping.QuotePGTable(table))
	if err != nil {
		return nil, fmt.Errorf("read column types of target table %s: %w", table, pg.Describe(err))
	}
	types := map[string]uint32{}
	var name string
	var oid uint32
	_, err = pgx.ForEachRow(rows, []any{&name, &oid}, func() error {
		types[name] = oid
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read column types of target table %s: %w", table, pg.Describe(err))
	}
	return types, nil
}

// binaryIOSQL counts the types among $1 whose values cannot go through
// binary COPY: a type, or one its values are made of, without a send or
// receive function. COPY looks up only the column type's own functions,
// but a domain's receive (domain_recv) calls its base type's, an array's
// (array_send, array_recv) its element's, a composite's (record_send)
// its attributes', a range's its subtype's and a multirange's its range
// type's, and those fail on the first value, so the check follows them
// as PostgreSQL does. Fixed-length types with an element (name, point)
// are followed too, which can only turn binary off. The multirange
// branch is for servers that have pg_range.rngmultitypid (14 and later).
func binaryIOSQL(multiranges bool) string {
	multi := ""
	if multiranges {
		multi = `
			UNION ALL SELECT r.rngtypid FROM pg_range r WHERE r.rngmultitypid = ty.oid`
	}
	return `WITH RECURSIVE parts(oid, depth) AS (
		SELECT DISTINCT o, 0 FROM unnest($1::oid[]) o
		UNION ALL
		SELECT c.part, p.depth + 1 FROM parts p JOIN pg_type ty ON ty.oid = p.oid
		CROSS JOIN LATERAL (
			SELECT ty.typbasetype WHERE ty.typtype = 'd'
			UNION ALL SELECT ty.typelem WHERE ty.typelem <> 0
			UNION ALL SELECT r.rngsubtype FROM pg_range r WHERE r.rngtypid = ty.oid` + multi + `
			UNION ALL SELECT a.atttypid FROM pg_attribute a
				WHERE ty.typtype = 'c' AND a.attrelid = ty.typrelid AND a.attnum > 0 AND NOT a.attisdropped
		) c(part)
		WHERE p.depth < 32
	)
	SELECT count(*) FROM parts p LEFT JOIN pg_type ty ON ty.oid = p.oid
	WHERE ty.oid IS NULL OR ty.typsend = 0 OR ty.typreceive = 0`
}

// binaryIO reports whether every type in oids can be copied in binary on
// the server of conn (version is its server_version_num, 0 to read it).
func binaryIO(ctx context.Context, conn *pgx.Conn, version int, oids []uint32) (bool, error) {
	if version == 0 {
		if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
			return false, fmt.Errorf("read the server version: %w", pg.Describe(err))
		}
	}
	var lacking int
	if err := conn.QueryRow(ctx, binaryIOSQL(version >= 140000), oids).Scan(&lacking); err != nil {
		return false, fmt.Errorf("check the binary send and receive functions of the copied columns' types: %w", pg.Describe(err))
	}
	return lacking == 0, nil
}

// copyInSQL is the target's COPY of the written columns.
func copyInSQL(p *mapping.Plan, binary bool) string {
	var b strings.Builder
	b.WriteString("COPY " + mapping.QuotePGTable(p.Target) + " (")
	for n, i := range p.Cols {
		if n > 0 {
			b.WriteString(", ")
		}
		b.WriteString(mapping.QuotePG(p.Targets[i].Name))
	}
	b.WriteString(") FROM STDIN")
	if binary {
		b.WriteString(" (FORMAT binary)")
	}
	return b.String()
}

func (w *pgWriter) copy(ctx context.Context, src *srcSession, j *tableJob, t *task, prog *progress) (int64, error) {
	p, err := w.plan(ctx, src, j)
	if err != nil {
		return 0, err
	}
	tx, err := w.conn.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("begin target transaction: %w", pg.Describe(err))
	}
	defer tx.Rollback(context.WithoutCancel(ctx))

	m := newMeter(prog, j.def.Name, !p.binary)
	data, finish := copyOut(ctx, src, selectSQL(j.def, j.partitioned, p.Plan, t, p.binary), m)
	tag, tgtErr := w.conn.PgConn().CopyFrom(ctx, data, p.copyIn)
	if err := finish(); err != nil {
		return 0, err
	}
	if tgtErr != nil {
		return 0, fmt.Errorf("write the target: %w", pg.Describe(tgtErr))
	}
	rows := tag.RowsAffected()
	if err := markDonePG(ctx, tx, w.cfg.Pipeline, t, rows, m.bytes); err != nil {
		return 0, err
	}
	// Once the rows and the mark are in, the commit is not cancelled: a
	// task either lands and is counted, or fails before its commit.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if err := tx.Commit(cctx); err != nil {
		return 0, fmt.Errorf("commit the target transaction: %w", pg.Describe(err))
	}
	m.finish(rows)
	t.Done, t.Rows, t.Bytes = true, rows, m.bytes
	return rows, nil
}
