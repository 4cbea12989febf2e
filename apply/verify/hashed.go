package verify

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
	"github.com/decant/decant/source/pgsession"
)

// On a PostgreSQL target a span whose checksums differ is not streamed
// whole: each server sends every row's key and row hash (rowHashSQL, the
// hash sumSQL adds up), and the merge compares those. A resync then reads
// the full source rows of only the keys it inserts, by key, on a session
// of its own. What crosses the network and is parsed here shrinks to a
// few bytes a row.

// hashedView is t as the hashed comparison reads it: the key columns,
// then the row's hash; merged as text. full is t itself, whose rows a
// repair reads by key.
func (t *table) hashedView() *table {
	h := *t
	h.full = t
	k := len(t.key)
	h.srcCols = append(append([]string{}, t.srcKey...), t.rowHashSQL(t.srcHash))
	h.tgtCols = append(append([]string{}, t.tgtKey...), t.rowHashSQL(t.tgtHash))
	h.key = make([]int, k)
	h.isKey = make([]bool, k+1)
	h.src = make(normal, k+1)
	for i := range h.src {
		h.src[i] = asText
	}
	h.tgt = h.src
	h.srcRaw = h.src
	h.norms = make([]normalizer, k+1)
	for i := range h.key {
		h.key[i] = i
		h.isKey[i] = true
	}
	return &h
}

// compareHashes merges the keys and row hashes of a span on both
// PostgreSQL servers; a repair queues what differs by key.
func (w *worker) compareHashes(ctx context.Context, t *table, s span) (*spanResult, error) {
	h := t.hashed
	var fix *fixer
	if w.cfg.Repair != nil {
		var err error
		if fix, err = w.fixer(ctx, h); err != nil {
			return nil, err
		}
	}
	srcRows, err := w.sourceRows(ctx, h, s)
	if err != nil {
		return nil, err
	}
	tgtRows, err := w.targetRows(ctx, h, s)
	if err != nil {
		srcRows.Close()
		return nil, err
	}
	res, err := merge(ctx, h, srcRows, tgtRows, w.cfg.MaxKeys, fix)
	if err := closeBoth(t, srcRows, tgtRows, err); err != nil {
		return nil, err
	}
	return res, nil
}

func closeBoth(t *table, src, tgt rawRows, err error) error {
	serr, terr := src.Close(), tgt.Close()
	switch {
	case serr != nil:
		return fmt.Errorf("read source table %s: %w", t.def.Name, serr)
	case terr != nil:
		return fmt.Errorf("read target table %s: %w", t.target, terr)
	case err != nil:
		return fmt.Errorf("compare table %s: %w", t.def.Name, err)
	}
	return nil
}

// maxFetchParams bounds the parameters of one fetch by key (the protocol
// allows 65535).
const maxFetchParams = 30_000

// fetchSQL selects the compared columns of the source rows with n keys.
func (t *table) fetchSQL(n int) string {
	k := len(t.srcKey)
	tuples := make([]string, n)
	marks := make([]string, k)
	for i := range tuples {
		for j := range marks {
			marks[j] = "$" + strconv.Itoa(i*k+j+1)
		}
		tuples[i] = pgTuple(marks)
	}
	return "SELECT " + strings.Join(t.srcCols, ", ") + " FROM " + t.srcFrom() +
		" WHERE " + pgTuple(t.srcKey) + " IN (" + strings.Join(tuples, ", ") + ")"
}

// fetch reads the source rows of the queued keys (as of the snapshot)
// and queues them for insertion.
func (f *fixer) fetch(ctx context.Context) error {
	conn, err := f.sourceConn(ctx)
	if err != nil {
		return err
	}
	full := f.t.full
	per := max(1, maxFetchParams/len(full.srcKey))
	for start := 0; start < len(f.keys); start += per {
		keys := f.keys[start:min(len(f.keys), start+per)]
		var args [][]byte
		for _, k := range keys {
			args = append(args, k...)
		}
		rr := conn.PgConn().ExecParams(ctx, full.fetchSQL(len(keys)), args, nil, nil, nil)
		for rr.NextRow() {
			f.ins = append(f.ins, sourceRow(full, rr.Values()))
		}
		if _, err := rr.Close(); err != nil {
			return fmt.Errorf("read source table %s by key: %w", full.def.Name, err)
		}
	}
	f.keys = f.keys[:0]
	return nil
}

// sourceConn is the fixer's own source session, under the run's
// snapshot: the worker's streams the span meanwhile.
func (f *fixer) sourceConn(ctx context.Context) (*pgx.Conn, error) {
	if f.src != nil {
		return f.src, nil
	}
	c, err := pgsession.Connect(ctx, f.w.cfg.Source)
	if err != nil {
		return nil, err
	}
	if f.w.cfg.Snapshot != "" {
		if err := importSnapshot(ctx, c, f.w.cfg.Snapshot); err != nil {
			c.Close(ctx)
			return nil, err
		}
	}
	f.src = c
	return c, nil
}

// sumStats counts a table's span checksums and those that differed. A
// checksum saves the hashed comparison of a span only when the span is
// equal: once most of a table's spans have differed (changes spread over
// the key), the rest skip the checksum and go straight to the hashed
// comparison, which finds the same.
type sumStats struct{ n, diff atomic.Int64 }

// sumTrial is how many checksums a table takes before their outcome
// decides whether the rest pay.
const sumTrial = 8

func (s *sumStats) tried()    { s.n.Add(1) }
func (s *sumStats) differed() { s.diff.Add(1) }

// pay says whether checksumming the next span is worth it: until
// sumTrial spans were checksummed, or while at most 3 in 4 differed.
func (s *sumStats) pay() bool {
	n, d := s.n.Load(), s.diff.Load()
	return n < sumTrial || 4*d <= 3*n
}

// The row hash both PostgreSQL servers compute (a span's checksum sums
// it; the hashed comparison streams it) is hash_record_extended over the
// compared columns, which hashes each value by its type without printing
// it (about three times cheaper than hashing ROW(...)::text). A column is
// hashed as itself only where equal values under its type's equality
// print alike and both sides have the same type: otherwise, and for the
// other types, its text is hashed. Text is hashed under the "C"
// collation, whose equality is byte equality.

// hashedAsItself reports whether values of the type compare equal
// exactly when their text does. Not floats (-0 = 0), jsonb (1.0 = 1.00),
// numeric without a scale (1.5 = 1.50), nor types without a hash.
func hashedAsItself(oid uint32, typmod int32) bool {
	switch oid {
	case pgtype.Int2OID, pgtype.Int4OID, pgtype.Int8OID, pgtype.OIDOID, pgtype.BoolOID, pgtype.TextOID,
		pgtype.VarcharOID, pgtype.ByteaOID, pgtype.UUIDOID, pgtype.DateOID, pgtype.TimestampOID, pgtype.TimestamptzOID:
		return true
	case pgtype.NumericOID:
		return typmod >= 0
	}
	return false
}

// hashExpr is a column as the row hash reads it.
func hashExpr(col string, oid uint32, asItself bool) string {
	q := mapping.QuotePG(col)
	switch {
	case !asItself:
		return "(" + q + ")::text COLLATE \"C\""
	case oid == pgtype.TextOID || oid == pgtype.VarcharOID:
		return q + " COLLATE \"C\""
	}
	return q
}

// setRowHash picks each compared column's row hash expression on both
// PostgreSQL servers; byType false hashes ROW(...)::text, for a target
// older than PostgreSQL 14 (no hash_record_extended).
func (t *table) setRowHash(def *source.TableDef, tt *mapping.TargetTable, byType bool) {
	targets := t.tgtNames
	srcType := map[string]string{}
	for _, c := range def.Columns {
		srcType[c.Name] = c.SQLType
	}
	tgtType := map[string]string{}
	for _, c := range tt.Columns {
		tgtType[c.Name] = c.Type
	}
	t.srcHash, t.tgtHash = nil, nil
	for n, i := range t.cols {
		c := t.rel.Columns[i]
		same := srcType[c.Name] != "" && srcType[c.Name] == tgtType[targets[n]]
		itself := same && hashedAsItself(c.Type, c.TypeMod)
		t.srcHash = append(t.srcHash, hashExpr(c.Name, c.Type, itself))
		t.tgtHash = append(t.tgtHash, hashExpr(targets[n], c.Type, itself))
	}
	t.byType = byType
	if t.key != nil {
		t.hashed = t.hashedView()
	}
}

// rowHashSQL is the row hash over exprs (setRowHash).
func (t *table) rowHashSQL(exprs []string) string {
	if !t.byType {
		return "hashtextextended(ROW(" + strings.Join(exprs, ", ") + ")::text, 0)"
	}
	// hash_record_extended combines its columns' hashes linearly (h*31 +
	// next), so a sum of them would miss values swapped between rows:
	// hashing the row's hash again makes the sum one of independent
	// values.
	return "hashint8extended(hash_record_extended(ROW(" + strings.Join(exprs, ", ") + "), 0), 0)"
}
