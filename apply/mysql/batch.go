package mysql

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"unsafe"

	"github.com/go-sql-driver/mysql"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source"
)

type stmt struct {
	sql  string
	args []any
	info apply.Origin
	// prepare: a multi-row INSERT or DELETE of runRows rows, which goes
	// as a server-side prepared statement (prepared.go).
	prepare bool
}

// batch is the statements waiting for the next round trip.
type batch struct {
	begin bool // the batch opens the target transaction
	stmts []stmt
	bytes int
	named []driver.NamedValue // the arguments of the last round trip, for reuse
	text  []byte              // the query text of the last round trip, for reuse
}

func (b *batch) add(sql string, args []any, info apply.Origin) {
	b.addStmt(stmt{sql: sql, args: args, info: info})
}

func (b *batch) addStmt(s stmt) {
	b.stmts = append(b.stmts, s)
	b.bytes += len(s.sql) + argBytes(s.args)
}

func (b *batch) reset() {
	clear(b.stmts)
	b.stmts = b.stmts[:0]
	b.bytes = 0
	b.begin = false
}

// argBytes estimates what args add to the interpolated query.
func argBytes(args []any) int {
	n := 0
	for _, a := range args {
		switch v := a.(type) {
		case string:
			n += 2*len(v) + 3
		case []byte:
			n += 2*len(v) + 10
		default:
			n += 24
		}
	}
	return n
}

// savepoint lets a failed batch be undone and replayed statement by
// statement, to say which one failed: MySQL reports the error of a
// multi-statement query without saying which statement it came from.
const savepoint = "SAVEPOINT decant_batch"

// flush sends the batch as one multi-statement query and checks the rows
// each statement affected. A statement to prepare goes on its own, in
// its place, between the multi-statement queries of the others; a
// failure is handled as one of the whole batch (diagnose replays it all
// from the savepoint at its start).
func (t *Target) flush(ctx context.Context) error {
	b := &t.batch
	if len(b.stmts) == 0 && !b.begin {
		return nil
	}
	defer b.reset()
	var prefix []string
	if b.begin {
		prefix = append(prefix, "START TRANSACTION")
	}
	if t.inTx {
		prefix = append(prefix, savepoint)
	}
	rest := b.stmts
	for {
		n := 0
		for n < len(rest) && !t.preparable(&rest[n]) {
			n++
		}
		if n > 0 || len(prefix) > 0 {
			res, err := t.sendBatch(ctx, prefix, rest[:n])
			if err != nil {
				return t.batchFailed(ctx, err)
			}
			counts := res.AllRowsAffected()
			if len(counts) != len(prefix)+n {
				return fmt.Errorf("target answered %d results for %d statements", len(counts), len(prefix)+n)
			}
			if err := t.checkCounts(rest[:n], counts[len(prefix):]); err != nil {
				return err
			}
			prefix, rest = nil, rest[n:]
		}
		if len(rest) == 0 {
			return nil
		}
		got, err := t.execPrepared(ctx, &rest[0])
		switch {
		case errors.Is(err, errNotPrepared):
			continue // no longer preparable: it goes with the text that follows
		case err != nil:
			return t.batchFailed(ctx, err)
		}
		if err := t.checkCounts(rest[:1], []int64{got}); err != nil {
			return err
		}
		rest = rest[1:]
	}
}

// batchFailed handles a batch whose query failed: a transient error, or
// one outside a transaction, is the batch's; else diagnose names the
// statement.
func (t *Target) batchFailed(ctx context.Context, err error) error {
	if apply.Transient(err) || !t.inTx {
		return t.batchError(err)
	}
	return t.diagnose(ctx, err)
}

// checkCounts checks the rows each statement affected, and counts the
// conflicts resolved.
func (t *Target) checkCounts(stmts []stmt, counts []int64) error {
	for i, s := range stmts {
		got := counts[i]
		if s.info.Expect >= 0 && got != int64(s.info.Expect) {
			return t.failed(s.info, rowCountError(s.info, got))
		}
		if s.info.Policy != apply.PolicyError {
			t.conflicts[s.info.Conflict][s.info.Policy] += got
		}
	}
	return nil
}

// sendBatch sends the prefix statements and stmts as one query,
// with the values written in (literals); when one is of a type decant does
// not write, the driver interpolates them instead.
func (t *Target) sendBatch(ctx context.Context, prefix []string, stmts []stmt) (mysql.Result, error) {
	b := &t.batch
	text, ok := b.text[:0], true
	for i, p := range prefix {
		if i > 0 {
			text = append(text, ";\n"...)
		}
		text = append(text, p...)
	}
	for _, s := range stmts {
		if len(text) > 0 {
			text = append(text, ";\n"...)
		}
		if text, ok = t.lit.appendQuery(text, s.sql, s.args); !ok {
			break
		}
	}
	b.text = text
	if ok {
		// The driver copies the query into its packet before Exec
		// returns and keeps no reference to it, so the text is lent, not
		// copied (a 1,000-row batch is a few hundred KB); b.text is not
		// written again until the next batch.
		return t.execNamed(ctx, unsafe.String(unsafe.SliceData(text), len(text)), nil)
	}
	parts := append(prefix, make([]string, 0, len(stmts))...)
	named := b.named[:0]
	for _, s := range stmts {
		parts = append(parts, s.sql)
		named = appendNamed(named, s.args)
	}
	b.named = named
	defer clear(named) // drop the references to the values
	return t.execNamed(ctx, strings.Join(parts, ";\n"), named)
}

// failed is the error of a statement of the batch. A set-based statement
// of a window of net changes cannot name the change the target refused:
// its failure asks for a replay of the target transaction change by
// change (apply.Replay), which does.
func (t *Target) failed(info apply.Origin, err error) error {
	err = info.Fail(err)
	if info.Net {
		err = t.replay.Fail(err)
	}
	return err
}

// net reports whether the batch holds a set-based statement of a window
// of net changes.
func (b *batch) net() bool {
	for _, s := range b.stmts {
		if s.info.Net {
			return true
		}
	}
	return false
}

// batchError attributes an error to the batch's only statement when there
// is one (outside a transaction: the checkpoint alone).
func (t *Target) batchError(err error) error {
	if len(t.batch.stmts) == 1 {
		return t.batch.stmts[0].info.Fail(describe(err))
	}
	return describe(err)
}

// diagnose undoes a failed batch and replays it one statement at a time to
// find and name the statement that fails. When that is a set-based
// statement, or none fails again, and the batch holds one, the error asks
// for a replay of the target transaction change by change (failed).
func (t *Target) diagnose(ctx context.Context, batchErr error) error {
	unnamed := func() error {
		if t.batch.net() {
			return t.replay.Fail(describe(batchErr))
		}
		return describe(batchErr)
	}
	if _, err := t.exec(ctx, "ROLLBACK TO "+savepoint, nil); err != nil {
		return unnamed()
	}
	for _, s := range t.batch.stmts {
		res, err := t.exec(ctx, s.sql, s.args)
		if err != nil {
			return t.failed(s.info, describe(err))
		}
		if got := res.AllRowsAffected(); s.info.Expect >= 0 && len(got) == 1 && got[0] != int64(s.info.Expect) {
			return t.failed(s.info, rowCountError(s.info, got[0]))
		}
	}
	return unnamed()
}

func rowCountError(info apply.Origin, got int64) error {
	switch {
	case info.Judges:
		return apply.ConflictError(info.Conflict)
	case info.Op == "checkpoint":
		return fmt.Errorf("%w: the stored checkpoint is past this position; another decant is applying this pipeline, stop it", checkpoint.ErrRegressed)
	case info.Op == "insert":
		return fmt.Errorf("%d of %d rows inserted", got, info.Expect)
	case got < int64(info.Expect):
		return fmt.Errorf("%d of %d changed rows found on the target: the target has diverged from the source (a row was changed or removed behind decant's back, or the table was not copied before streaming)", got, info.Expect)
	}
	return fmt.Errorf("%d target rows matched, expected %d: the target table lacks the source's primary key or unique constraint", got, info.Expect)
}

// exec runs a query on the raw driver connection, whose result reports
// the rows affected by each statement of a multi-statement query.
func (t *Target) exec(ctx context.Context, query string, args []any) (mysql.Result, error) {
	return t.execNamed(ctx, query, appendNamed(nil, args))
}

// appendNamed appends args to named as the driver's numbered arguments,
// following those already there.
func appendNamed(named []driver.NamedValue, args []any) []driver.NamedValue {
	for _, a := range args {
		named = append(named, driver.NamedValue{Ordinal: len(named) + 1, Value: a})
	}
	return named
}

// execNamed is exec with the arguments already numbered.
func (t *Target) execNamed(ctx context.Context, query string, named []driver.NamedValue) (mysql.Result, error) {
	var res mysql.Result
	err := t.bound().Do(ctx, "a batch of statements", func(ctx context.Context) error {
		return t.conn.Raw(func(dc any) error {
			ex, ok := dc.(driver.ExecerContext)
			if !ok {
				return errors.New("MySQL driver connection cannot execute")
			}
			r, err := ex.ExecContext(ctx, query, named)
			if err != nil {
				return err
			}
			res, _ = r.(mysql.Result)
			return nil
		})
	})
	if err == nil && res == nil {
		err = errors.New("MySQL driver returned no per-statement result")
	}
	return res, err
}

// runKind is what a run collects.
type runKind uint8

const (
	runInsert runKind = iota + 1
	runDelete
)

// run collects consecutive inserts (or deletes by key) into one table
// within one transaction, to become one multi-row statement.
type run struct {
	kind  runKind
	plan  *plan
	txn   *source.Txn
	args  []any
	rows  int
	bytes int
}

func (r *run) continues(kind runKind, p *plan, txn *source.Txn) bool {
	return r.kind == kind && r.plan == p && r.txn == txn
}

func (r *run) start(kind runKind, p *plan, txn *source.Txn) {
	r.kind, r.plan, r.txn = kind, p, txn
}

// add accounts for one row whose values were appended from index from.
func (r *run) add(args []any, from int) {
	r.args = args
	r.rows++
	r.bytes += argBytes(args[from:])
}

func (r *run) reset() {
	r.kind, r.plan, r.txn, r.rows, r.bytes = 0, nil, nil, 0, 0
	r.args = r.args[:0]
}
