package mysql

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/decant/decant/apply"
)

// Full multi-row INSERTs and DELETEs (runRows rows: a bulk load, a large
// window) go as server-side prepared statements, kept on the session,
// one per table and shape: the server then never lexes the values, which
// is most of what it spends on a run of inserts (MariaDB 10.11,
// 1,000,000 rows of int, bigint, text, decimal, datetime and JSON in
// 1,000-row statements: 3.0 s of server CPU against 4.9 s with the values
// written in). Shorter statements (the end of a run, one cut by its
// bytes, pgbench's few hundred rows a window) stay in the batch's text:
// prepared once and closed, they measured no cheaper for the server, and
// cost a round trip more.

// A parameter is received as the literal the batch would write for it
// (literals): integers and floats as numbers, strings in the
// connection's character set. Only []byte differs (a _binary literal,
// but a string parameter), so a statement holding one is written as
// text.

// maxPrepared bounds the statements kept prepared on the session (one
// per table and shape in steady use): past it they are all closed.
const maxPrepared = 32

// preparable says whether s goes as a prepared statement.
func (t *Target) preparable(s *stmt) bool {
	if !s.prepare || t.noPrepare {
		return false
	}
	for _, a := range s.args {
		switch a.(type) {
		case nil, int64, uint64, float64, bool, string, json.RawMessage:
		default:
			return false
		}
	}
	return true
}

// errNotPrepared: the server refused to prepare a statement (a limit on
// prepared statements, a proxy without them). No statement is prepared on
// the session again, and flush sends this one as text.
var errNotPrepared = errors.New("the target refused to prepare a statement")

// execPrepared runs s as a prepared statement and returns the rows it
// affected.
func (t *Target) execPrepared(ctx context.Context, s *stmt) (int64, error) {
	st, err := t.prepared(ctx, s.sql)
	if err != nil {
		if ctx.Err() != nil || apply.Transient(err) || connGone(err) {
			return 0, err
		}
		t.noPrepare = true
		t.log.Warn("the target refused a prepared statement; writing values into the statements instead", "error", describe(err))
		return 0, errNotPrepared
	}
	var n int64
	err = t.bound().Do(ctx, "a prepared statement", func(ctx context.Context) error {
		res, err := st.ExecContext(ctx, s.args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}

// prepared returns the session's prepared statement for query.
func (t *Target) prepared(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := t.stmts[query]; ok {
		return st, nil
	}
	if len(t.stmts) >= maxPrepared {
		t.closePrepared()
	}
	var st *sql.Stmt
	err := t.bound().Do(ctx, "prepare a statement", func(ctx context.Context) error {
		var err error
		st, err = t.conn.PrepareContext(ctx, query)
		return err
	})
	if err != nil {
		return nil, err
	}
	if t.stmts == nil {
		t.stmts = map[string]*sql.Stmt{}
	}
	t.stmts[query] = st
	return st, nil
}

// closePrepared closes the session's prepared statements.
func (t *Target) closePrepared() {
	for q, st := range t.stmts {
		st.Close()
		delete(t.stmts, q)
	}
}
