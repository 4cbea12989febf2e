package pg

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/source"
)

// batch is the statements waiting for the next round trip.
type batch struct {
	b     pgconn.Batch
	info  []apply.Origin
	bytes int
}

func (b *batch) len() int { return len(b.info) }

func (b *batch) add(sql string, args [][]byte, info apply.Origin) {
	b.b.ExecParams(sql, args, nil, nil, nil)
	b.note(args, info)
}

// addPrepared queues a prepared statement; args are encoded at once and may
// be reused by the caller.
func (b *batch) addPrepared(name string, args [][]byte, info apply.Origin) {
	b.b.ExecPrepared(name, args, nil, nil)
	b.note(args, info)
}

func (b *batch) note(args [][]byte, info apply.Origin) {
	b.info = append(b.info, info)
	for _, a := range args {
		b.bytes += len(a)
	}
}

func (b *batch) reset() {
	b.b = pgconn.Batch{}
	b.info = b.info[:0]
	b.bytes = 0
}

// ahead is a batch sent and not yet answered: the server works through a
// window of net changes while the applier gathers the next one, instead
// of each waiting for the other. Its results are read (await) before the
// session is used for anything else, so an error still stops the group
// before its commit, naming the statement's own table and transaction.
// A batch is sent ahead only inside an open transaction, so whatever
// needs the session idle (Open, RecordStop) never finds one.
type ahead struct {
	mrr  *pgconn.MultiResultReader
	info []apply.Origin
	w    *source.Watchdog // bounds the wait for the results, from when it begins
}

// sendAhead sends the batch without waiting for its results; those of the
// batch sent before are read first.
func (t *Target) sendAhead(ctx context.Context) error {
	if err := t.await(); err != nil {
		return err
	}
	if t.batch.len() == 0 {
		return nil
	}
	rctx, w := t.bound().Unarmed(ctx, "a batch of statements")
	t.ahead = ahead{mrr: t.conn.PgConn().ExecBatch(rctx, &t.batch.b), info: t.batch.info, w: w}
	t.batch.info = nil // the batch sent ahead keeps its list
	t.batch.reset()
	return nil
}

// await reads the results of the batch sent ahead, if one is.
func (t *Target) await() error {
	a := t.ahead
	if a.mrr == nil {
		return nil
	}
	t.ahead = ahead{}
	a.w.Arm()
	err := a.w.Explain(t.results(a.mrr, a.info))
	a.w.Release()
	return err
}

// insertRun collects consecutive inserts into one table within one
// transaction. Its first copyMinRows rows are kept, to go as INSERTs
// should the run stay that short; once it reaches that length they and
// every later row are rendered into COPY text as they come and not kept,
// so what a long run holds is its COPY data (at most copyBytes), not its
// decoded rows.
type insertRun struct {
	plan  *plan
	txn   *source.Txn
	n     int              // rows in the run
	first [][]source.Value // its first rows, while it is short
	buf   []byte           // its rows in COPY text format, once it is long
	// net: the rows are a window's net inserts (net.go), of several
	// transactions; txn is the last.
	net bool
}

func (r *insertRun) start(p *plan, txn *source.Txn) {
	r.plan, r.txn = p, txn
}

// add takes an inserted row.
func (r *insertRun) add(row []source.Value) error {
	r.n++
	if r.n < copyMinRows {
		r.first = append(r.first, row)
		return nil
	}
	for _, f := range r.first {
		if err := r.render(f); err != nil {
			return err
		}
	}
	clear(r.first)
	r.first = r.first[:0]
	return r.render(row)
}

// render appends row in COPY text format.
func (r *insertRun) render(row []source.Value) error {
	for n, i := range r.plan.Cols {
		if n > 0 {
			r.buf = append(r.buf, '\t')
		}
		switch v := row[i]; v.Kind {
		case source.ValueNull:
			r.buf = append(r.buf, `\N`...)
		case source.ValueText:
			r.buf = appendCopyText(r.buf, v.Data)
		default:
			return fmt.Errorf("column %s: inserted value is not in text form", r.plan.Rel.Columns[i].Name)
		}
	}
	r.buf = append(r.buf, '\n')
	return nil
}

func (r *insertRun) reset() {
	r.plan, r.txn, r.n, r.net = nil, nil, 0, false
	clear(r.first)
	r.first = r.first[:0]
	r.buf = r.buf[:0]
}
