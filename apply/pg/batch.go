package pg

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"

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

// insertRun collects consecutive inserts into one table within one
// transaction; the rows stay where the reader put them.
type insertRun struct {
	plan  *plan
	txn   *source.Txn
	rows  []*source.Change
	bytes int
	buf   []byte
}

func (r *insertRun) start(p *plan, txn *source.Txn) {
	r.plan, r.txn = p, txn
}

func (r *insertRun) add(c *source.Change) {
	r.rows = append(r.rows, c)
	for _, v := range c.New {
		r.bytes += len(v.Data) + 1
	}
}

func (r *insertRun) reset() {
	r.plan, r.txn = nil, nil
	clear(r.rows)
	r.rows = r.rows[:0]
	r.bytes = 0
}

// copyData renders the run in COPY text format.
func (r *insertRun) copyData() (*bytes.Reader, error) {
	buf := r.buf[:0]
	for _, c := range r.rows {
		for n, i := range r.plan.Cols {
			if n > 0 {
				buf = append(buf, '\t')
			}
			switch v := c.New[i]; v.Kind {
			case source.ValueNull:
				buf = append(buf, `\N`...)
			case source.ValueText:
				buf = appendCopyText(buf, v.Data)
			default:
				return nil, fmt.Errorf("column %s: inserted value is not in text form", r.plan.Rel.Columns[i].Name)
			}
		}
		buf = append(buf, '\n')
	}
	r.buf = buf
	return bytes.NewReader(buf), nil
}

// quoted matches the double-quoted parts of a server message.
var quoted = regexp.MustCompile(`"[^"]*"`)

// describe turns a target error into one line without row values. The
// server's message stays (it names columns, constraints and types), except
// that data exceptions (SQLSTATE class 22) quote the offending value, which
// is replaced. DETAIL is dropped: it often repeats the row ("Key (id)=(5)",
// "Failing row contains (...)").
func describe(err error) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return err
	}
	msg := pgErr.Message
	if strings.HasPrefix(pgErr.Code, "22") {
		msg = quoted.ReplaceAllString(msg, `"…"`)
	}
	return &targetError{msg: msg, code: pgErr.Code, err: err}
}

// targetError keeps the server error for classification (errors.As finds
// the *pgconn.PgError) while printing only the safe part.
type targetError struct {
	msg  string
	code string
	err  error
}

func (e *targetError) Error() string { return fmt.Sprintf("%s (SQLSTATE %s)", e.msg, e.code) }
func (e *targetError) Unwrap() error { return e.err }
