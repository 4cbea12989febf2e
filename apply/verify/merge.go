package verify

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"hash/maphash"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"
)

// rawRows is one side's rows of a span, streamed: the text of each
// column, nil for NULL. Values are valid until the next call of Next.
type rawRows interface {
	Next() bool
	Values() [][]byte
	Close() error
}

type pgRows struct{ rr *pgconn.ResultReader }

func (r pgRows) Next() bool       { return r.rr.NextRow() }
func (r pgRows) Values() [][]byte { return r.rr.Values() }
func (r pgRows) Close() error     { _, err := r.rr.Close(); return err }

type mysqlRows struct {
	rows *sql.Rows
	vals []sql.RawBytes
	out  [][]byte
	ptrs []any
	err  error
}

func newMySQLRows(rows *sql.Rows, n int) *mysqlRows {
	r := &mysqlRows{rows: rows, vals: make([]sql.RawBytes, n), out: make([][]byte, n), ptrs: make([]any, n)}
	for i := range r.vals {
		r.ptrs[i] = &r.vals[i]
	}
	return r
}

func (r *mysqlRows) Next() bool {
	if r.err != nil || !r.rows.Next() {
		return false
	}
	if r.err = r.rows.Scan(r.ptrs...); r.err != nil {
		return false
	}
	return true
}

func (r *mysqlRows) Values() [][]byte {
	for i, v := range r.vals {
		r.out[i] = v
	}
	return r.out
}

func (r *mysqlRows) Close() error {
	err := r.err
	if err == nil {
		err = r.rows.Err()
	}
	if cerr := r.rows.Close(); err == nil {
		err = cerr
	}
	return err
}

// row is one row in normal form: its key fields and a hash of its other
// fields (or of all, for a table without a key).
type row struct {
	key  [][]byte
	hash uint64
	buf  []byte
	ends []int
}

// fill normalizes vals into r. key lists the key positions (nil: none).
// isKey marks the key positions.
func (r *row) fill(vals [][]byte, norm normal, key []int, isKey []bool) error {
	r.buf = r.buf[:0]
	r.ends = r.ends[:0]
	for _, k := range key {
		v := vals[k]
		var err error
		if v != nil {
			var null bool
			if r.buf, null, err = norm[k](r.buf, v); err != nil {
				return err
			}
			_ = null // keys are NOT NULL; a NULL conversion compares as empty
		}
		r.ends = append(r.ends, len(r.buf))
	}
	keyEnd := len(r.buf)
	for i, v := range vals {
		if isKey != nil && isKey[i] {
			continue
		}
		if v == nil {
			r.buf = append(r.buf, 0)
			continue
		}
		r.buf = append(r.buf, 1, 0, 0, 0, 0)
		start := len(r.buf)
		var null bool
		var err error
		if r.buf, null, err = norm[i](r.buf, v); err != nil {
			return err
		}
		if null {
			r.buf = append(r.buf[:start-5], 0)
			continue
		}
		n := len(r.buf) - start
		r.buf[start-4], r.buf[start-3], r.buf[start-2], r.buf[start-1] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	}
	r.hash = hash64(r.buf[keyEnd:])
	r.key = r.key[:0]
	prev := 0
	for _, e := range r.ends {
		r.key = append(r.key, r.buf[prev:e])
		prev = e
	}
	return nil
}

// hashSeed seeds the row hashes. Hashes are only compared within one
// run, so a seed of the process's own does.
var hashSeed = maphash.MakeSeed()

func hash64(b []byte) uint64 { return maphash.Bytes(hashSeed, b) }

// Key is a row's key, one text per key column, as the side that has the
// row holds it (normalized for a MySQL target).
type Key []string

func keyOf(fields [][]byte) Key {
	k := make(Key, len(fields))
	for i, f := range fields {
		if utf8.Valid(f) {
			k[i] = string(f)
		} else {
			k[i] = `\x` + hex.EncodeToString(f)
		}
	}
	return k
}

// spanResult is what comparing one span found.
type spanResult struct {
	SourceRows, TargetRows    int64
	Missing, Extra, Different int64
	MissingKeys, ExtraKeys    []Key
	DifferentKeys             []Key
	sourceHash, targetHash    [2]uint64 // keyless tables: sums of row hashes
}

func (r *spanResult) differs() bool {
	return r.Missing+r.Extra+r.Different > 0 || r.SourceRows != r.TargetRows || r.sourceHash != r.targetHash
}

// merge reads both sides of a span in key order and notes every key only
// the source has (missing), only the target has (extra), or both have
// with other values (different). At most max keys of each are kept.
//
// With fix set, each difference is queued for repair as it is found:
// values are valid only until the side's next row.
func merge(ctx context.Context, t *table, src, tgt rawRows, max int, fix *fixer) (*spanResult, error) {
	res := &spanResult{}
	var a, b readRow
	var cmp rowComparer
	cmp.init(t)
	nextA := func() (bool, error) {
		if !src.Next() {
			return false, nil
		}
		res.SourceRows++
		return true, a.fill(src.Values(), t.srcRaw, t)
	}
	tgtRaw := make(normal, len(t.srcRaw))
	for i := range tgtRaw {
		tgtRaw[i] = asText
	}
	nextB := func() (bool, error) {
		if !tgt.Next() {
			return false, nil
		}
		res.TargetRows++
		return true, b.fill(tgt.Values(), tgtRaw, t)
	}
	hasA, err := nextA()
	if err != nil {
		return nil, err
	}
	hasB, err := nextB()
	if err != nil {
		return nil, err
	}
	note := func(n *int64, keys *[]Key, fields [][]byte) {
		*n++
		if len(*keys) < max {
			*keys = append(*keys, keyOf(fields))
		}
	}
	for hasA || hasB {
		c := 0
		switch {
		case !hasA:
			c = 1
		case !hasB:
			c = -1
		default:
			c = compareKeys(t.orders, a.key, b.key)
		}
		differs := true
		switch {
		case c < 0:
			note(&res.Missing, &res.MissingKeys, a.key)
		case c > 0:
			note(&res.Extra, &res.ExtraKeys, b.key)
		case !cmp.same(&a, &b):
			note(&res.Different, &res.DifferentKeys, a.key)
		default:
			differs = false
		}
		if fix != nil && differs {
			if err := repairRow(ctx, fix, c, src, tgt); err != nil {
				return nil, err
			}
		}
		if c <= 0 {
			if hasA, err = nextA(); err != nil {
				return nil, err
			}
		}
		if c >= 0 {
			if hasB, err = nextB(); err != nil {
				return nil, err
			}
		}
	}
	return res, nil
}

// repairRow queues the repair of one difference the merge found: c < 0
// the source's row is missing, c > 0 the target's is extra, c == 0 they
// differ (the target's is deleted, the source's inserted).
func repairRow(ctx context.Context, fix *fixer, c int, src, tgt rawRows) error {
	if c >= 0 {
		if err := fix.remove(ctx, tgt.Values()); err != nil {
			return err
		}
	}
	if c <= 0 {
		return fix.insert(ctx, src.Values())
	}
	return nil
}

// sumRows counts and hashes the rows of a table without a key, in any
// order: the sums of two hashes of each row compare the multisets.
func sumRows(rows rawRows, norm normal, count *int64, sum *[2]uint64) error {
	var r row
	for rows.Next() {
		if err := r.fill(rows.Values(), norm, nil, nil); err != nil {
			return err
		}
		*count++
		sum[0] += r.hash
		sum[1] += hash64(append(r.buf, 0x5a)) * 0x9e3779b97f4a7c15
	}
	return nil
}

// readRow is one row as the merge holds it: its key in normal form, then
// its other columns as read (a source value converted as the target
// writer sends it), each normalized only when the other side's value
// differs as read: most rows are equal byte for byte, and normalizing
// (a JSON document, above all) costs more than reading.
type readRow struct {
	buf     []byte
	ends    []int // of each field in buf: the key's, then the others'
	null    []bool
	key     [][]byte
	scratch []byte
}

// fill reads vals into r; raw reads each column's value.
func (r *readRow) fill(vals [][]byte, raw normal, t *table) error {
	r.buf, r.ends, r.null = r.buf[:0], r.ends[:0], r.null[:0]
	for _, k := range t.key {
		if v := vals[k]; v != nil {
			// Keys are NOT NULL; a NULL conversion compares as empty.
			start := len(r.buf)
			var err error
			if r.buf, _, err = raw[k](r.buf, v); err != nil {
				return err
			}
			if norm := t.norms[k]; norm != nil {
				r.scratch = append(r.scratch[:0], r.buf[start:]...)
				r.buf = norm(r.buf[:start], r.scratch)
			}
		}
		r.push(false)
	}
	for i, v := range vals {
		if t.isKey[i] {
			continue
		}
		null := v == nil
		if !null {
			var err error
			if r.buf, null, err = raw[i](r.buf, v); err != nil {
				return err
			}
		}
		r.push(null)
	}
	r.key = r.key[:0]
	for f := range t.key {
		r.key = append(r.key, r.field(f))
	}
	return nil
}

func (r *readRow) push(null bool) {
	r.ends = append(r.ends, len(r.buf))
	r.null = append(r.null, null)
}

func (r *readRow) field(f int) []byte {
	start := 0
	if f > 0 {
		start = r.ends[f-1]
	}
	return r.buf[start:r.ends[f]]
}

// rowComparer compares the columns other than the key of two rows with
// the same key.
type rowComparer struct {
	norms  []normalizer // by field after the key
	na, nb []byte
}

func (c *rowComparer) init(t *table) {
	for i := range t.isKey {
		if !t.isKey[i] {
			c.norms = append(c.norms, t.norms[i])
		}
	}
}

// same says whether a and b hold equal values in normal form.
func (c *rowComparer) same(a, b *readRow) bool {
	k := len(a.ends) - len(c.norms)
	for i, norm := range c.norms {
		f := k + i
		if a.null[f] || b.null[f] {
			if a.null[f] != b.null[f] {
				return false
			}
			continue
		}
		va, vb := a.field(f), b.field(f)
		if bytes.Equal(va, vb) {
			continue
		}
		if norm == nil {
			return false
		}
		c.na, c.nb = norm(c.na[:0], va), norm(c.nb[:0], vb)
		if !bytes.Equal(c.na, c.nb) {
			return false
		}
	}
	return true
}
