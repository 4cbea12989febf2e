// Package pg writes decant's transactions into a PostgreSQL target through
// github.com/jackc/pgx/v5: runs of inserts as COPY, everything else as
// prepared statements sent in pipelined batches, the checkpoint row in the
// same transaction, with session_replication_role = replica so target
// triggers and foreign keys behave as under native logical replication.
package pg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
	"github.com/decant/decant/source/pgsession"
)

// Config configures a Target.
type Config struct {
	DSN      string // postgres:// URL of the target database
	Pipeline string
	Router   *mapping.Router // source table → target table; identity when nil
	Columns  map[source.TableName]mapping.ColumnRules
	// Plain applies every change on its own, in source order, never
	// gathering a window of net changes (apply.Net): for a target whose
	// own consumers must see every intermediate row state (--compact=false).
	Plain bool
	// SkipUnsupportedDDL records and skips a schema change decant cannot
	// translate instead of stopping (--on-unsupported-ddl skip).
	SkipUnsupportedDDL bool
	// Timeout bounds every round trip to the target (a batch, a COPY, a
	// COMMIT, a catalog read): past it the connection is given up with a
	// *source.TimeoutError, which the pipeline retries. 0: no bound.
	Timeout time.Duration
	// AsyncCommit commits with synchronous_commit = off (durable.go).
	AsyncCommit bool
	// Conflicts says what to do with a change that finds the target
	// otherwise than the source left it (conflict.go).
	Conflicts apply.ConflictPolicies
	Logger    *slog.Logger
}

// Limits on what is buffered before a round trip.
const (
	batchStmts  = 1000    // statements per pipelined batch
	batchBytes  = 4 << 20 // parameter bytes per batch
	copyMinRows = 8       // shorter insert runs go as INSERTs in the batch
	copyBytes   = 4 << 20 // COPY data per round trip
)

// Target is the PostgreSQL writer. It is not safe for concurrent use.
type Target struct {
	cfg  Config
	log  *slog.Logger
	conn *pgx.Conn

	tables map[source.TableName]*mapping.TargetTable
	// plans holds a plan per source table, for the shape last announced:
	// the source announces a table again after a schema change or a
	// reconnect, and the older shape's plan is not needed any more.
	plans  map[source.TableName]*plan
	schema map[uint32]*source.TableDef // source definitions last applied, by table OID
	last   *plan                       // plan of the previous change: rows come in runs
	stmts  map[string]string           // SQL → prepared statement name

	inTx      bool
	originSet bool   // the main session carries a replication origin of the pipeline (origin.go)
	origin    string // the replication origin the session took
	batch     batch
	ahead     ahead // a batch sent and not yet answered (batch.go)
	run       insertRun
	args      [][]byte // scratch parameter list, reused row after row

	// A window of net changes (net.go) and when not to gather one.
	net    apply.Net[*plan]
	replay apply.Replay
	arrays TextArrays
	masks  []updateGroup
	mask   []byte

	streams apply.Streams[streamWriter] // transactions streamed while in progress, by xid (stream.go)
	wal     *walState                   // what the sessions know of the WAL; shared with the streams' writers (durable.go)
	gone    []int32                     // backend pids of sessions given up, until fence saw them end

	// Conflicts resolved in the open transaction, and by the commits
	// since TakeConflicts; a streamed transaction's writer counts its
	// commit's in its parent's (the main writer's).
	conflicts, committedConflicts apply.ConflictTally
	parent                        *Target
}

var _ apply.Target = (*Target)(nil)
var _ apply.ConflictCounter = (*Target)(nil)

// New returns a Target; Open connects.
func New(cfg Config) (*Target, error) {
	if _, err := pgsession.ParseDSN(cfg.DSN); err != nil {
		return nil, fmt.Errorf("target: %w", err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Router == nil {
		cfg.Router = mapping.NewRouter(nil, false)
	}
	return &Target{cfg: cfg, log: log}, nil
}

// Connect opens a target session with decant's settings.
func Connect(ctx context.Context, dsn string) (*pgx.Conn, error) {
	return pgsession.ConnectAs(ctx, "target", dsn)
}

// Open connects if needed and reads the checkpoint.
func (t *Target) Open(ctx context.Context) (checkpoint.Row, error) {
	if t.conn != nil && t.conn.IsClosed() {
		t.Close(ctx)
	}
	if t.conn == nil {
		if err := t.connect(ctx); err != nil {
			return checkpoint.Row{}, err
		}
	}
	if t.inTx {
		if err := t.Rollback(ctx); err != nil {
			return checkpoint.Row{}, err
		}
	}
	if err := t.fence(ctx); err != nil {
		return checkpoint.Row{}, err
	}
	if err := t.setupOrigin(ctx); err != nil {
		return checkpoint.Row{}, err
	}
	var cp checkpoint.Row
	err := t.bound().Do(ctx, "reading the checkpoint", func(ctx context.Context) error {
		var err error
		if cp, err = checkpoint.PGRead(ctx, t.conn, t.cfg.Pipeline); err != nil {
			return err
		}
		t.schema, err = checkpoint.PGSchemaLoad(ctx, t.conn, t.cfg.Pipeline)
		return err
	})
	return cp, err
}

func (t *Target) bound() source.Bound {
	return source.Bound{Peer: "target", Setting: "--target-timeout", Timeout: t.cfg.Timeout}
}

// fence makes sure that no session this writer gave up still runs. One
// abandoned in the middle of a round trip (a stalled network, a COMMIT
// waiting for a slow disk) may yet commit what it was sent, after the new
// session read the older checkpoint: the replay would then apply those
// transactions twice. Terminating it and waiting until it is gone makes
// its outcome final before the checkpoint is read.
func (t *Target) fence(ctx context.Context) error {
	if len(t.gone) == 0 {
		return nil
	}
	err := t.bound().Do(ctx, "ending the previous target session", func(ctx context.Context) error {
		return apply.AwaitEnded(ctx, t.log, slog.String("pid", fmt.Sprint(t.gone)), func(ctx context.Context) (int, error) {
			var running int
			err := t.conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
				WHERE pid = ANY($1) AND pid <> pg_backend_pid() AND usename = current_user`, t.gone).Scan(&running)
			if err != nil {
				return 0, fmt.Errorf("end the previous target session (pid %v): %w", t.gone, err)
			}
			return running, nil
		})
	})
	if err == nil {
		t.gone = t.gone[:0]
	}
	return err
}

// connect opens the writer's session: decant's settings, nothing learned
// about tables or statements yet.
func (t *Target) connect(ctx context.Context) error {
	conn, err := Connect(ctx, t.cfg.DSN)
	if err != nil {
		return err
	}
	// Like PostgreSQL's apply worker: ordinary triggers and foreign key
	// checks do not fire for replicated rows.
	//
	// Generic plans: a set-based statement's array of keys would otherwise
	// be planned for its actual length, and past a few thousand keys the
	// planner prefers hashing the whole table to looking the keys up (on
	// a 1M-row table, 20,000 keys: 526 ms against 362 ms). Row statements
	// find one row by key either way.
	if err := t.bound().Do(ctx, "SET session_replication_role", func(ctx context.Context) error {
		_, err := conn.Exec(ctx, "SET session_replication_role = replica; SET plan_cache_mode = force_generic_plan")
		return err
	}); err != nil {
		conn.Close(ctx)
		return fmt.Errorf("target: set session_replication_role = replica (the target user must be a superuser): %w", err)
	}
	if err := t.walSession(ctx, conn); err != nil {
		conn.Close(ctx)
		return err
	}
	if err := t.createConflictLog(ctx, conn); err != nil {
		conn.Close(ctx)
		return err
	}
	t.conn, t.originSet = conn, false
	t.forgetTables()
	t.stmts = map[string]string{}
	return nil
}

// Close drops the connection, and those of streamed transactions; open
// transactions are rolled back by the server.
func (t *Target) Close(ctx context.Context) {
	t.closeStreams(ctx)
	t.await() // what it would report is given up with the session; reading it leaves the session idle
	if t.conn != nil {
		t.gone = append(t.gone, int32(t.conn.PgConn().PID()))
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
		if !t.conn.IsClosed() {
			t.dropOwnOrigin(cctx)
		}
		t.conn.Close(cctx)
		cancel()
	}
	t.origin = ""
	t.conn, t.inTx, t.last = nil, false, nil
	t.batch.reset()
	t.run.reset()
	t.net.Reset()
}

// Apply writes changes of txn into the open transaction.
func (t *Target) Apply(ctx context.Context, txn *source.Txn, changes []source.Change) error {
	t.begin(txn)
	gather := t.replay.Gather(txn) && !t.cfg.Plain
	for i := range changes {
		c := &changes[i]
		if err := t.change(ctx, txn, c, gather); err != nil {
			return t.lacksColumns(ctx, apply.ChangeError(txn, c, err))
		}
	}
	return nil
}

// begin opens the transaction (as the batch's first statement) unless
// one is open.
func (t *Target) begin(txn *source.Txn) {
	if !t.inTx {
		t.batch.add("BEGIN", nil, apply.Origin{Op: "begin", Txn: txn, Expect: -1})
		t.inTx = true
	}
}

// change applies c: into the window of net changes when gather allows
// and the table's plan takes it (apply.Net), else on its own, after the
// window.
func (t *Target) change(ctx context.Context, txn *source.Txn, c *source.Change, gather bool) error {
	if c.Op == source.OpDDL || c.Op == source.OpTruncate {
		if err := t.sendNet(ctx); err != nil {
			return err
		}
		if err := t.endRun(ctx); err != nil {
			return err
		}
		if c.Op == source.OpDDL {
			return t.applyDDL(ctx, txn, c.DDL)
		}
		return t.truncate(ctx, txn, c)
	}
	p, err := t.plan(ctx, c.Rel)
	if err != nil {
		return err
	}
	if t.cfg.Conflicts.Resolves(p.Target) {
		return t.resolvingChange(ctx, txn, p, c)
	}
	if gather && t.net.Add(p, p.Plan, txn, c) {
		if !t.net.Full() {
			return nil
		}
		if err := t.sendNet(ctx); err != nil {
			return err
		}
		return t.sendAhead(ctx)
	}
	// A table with triggers sees everything before its change; any other
	// only its own earlier changes.
	if p.Net == mapping.NetPlain {
		err = t.sendNet(ctx)
	} else {
		err = t.sendNetOf(ctx, p)
	}
	if err != nil {
		return err
	}
	if c.Op == source.OpInsert {
		// A run spans the chunks of one transaction but never two
		// transactions, so a failing COPY names its own.
		if t.run.plan != p || t.run.txn != txn {
			if err := t.endRun(ctx); err != nil {
				return err
			}
			t.run.start(p, txn)
		}
		if err := t.run.add(c.New); err != nil {
			return err
		}
		if len(t.run.buf) >= copyBytes {
			return t.endRun(ctx)
		}
		return nil
	}
	if err := t.endRun(ctx); err != nil {
		return err
	}
	if !p.Identifies() {
		return fmt.Errorf("source table has replica identity NOTHING, so its %ss cannot be replicated; set REPLICA IDENTITY FULL or add a primary key on the source", c.Op)
	}
	switch c.Op {
	case source.OpUpdate:
		err = t.update(ctx, txn, p, c)
	case source.OpDelete:
		err = t.delete(ctx, txn, p, c)
	}
	if err != nil {
		return err
	}
	return t.maybeFlush(ctx)
}

func (t *Target) maybeFlush(ctx context.Context) error {
	if t.batch.len() >= batchStmts || t.batch.bytes >= batchBytes {
		return t.flush(ctx)
	}
	return nil
}

func (t *Target) update(ctx context.Context, txn *source.Txn, p *plan, c *source.Change) error {
	sql, set, m := p.shapes.Update(c)
	args := t.args[:0]
	for _, i := range p.Cols {
		if set[i] {
			args = append(args, param(c.New[i]))
		}
	}
	args, err := p.appendWhere(args, c, m)
	if err != nil {
		return err
	}
	for _, col := range p.Fixed {
		args = append(args, param(c.New[col]))
	}
	t.args = args
	return t.queue(ctx, sql, args, apply.Origin{Op: "update", Table: p.Target, Txn: txn, Expect: 1})
}

func (t *Target) delete(ctx context.Context, txn *source.Txn, p *plan, c *source.Change) error {
	sql, m := p.shapes.Delete(c)
	args, err := p.appendWhere(t.args[:0], c, m)
	if err != nil {
		return err
	}
	t.args = args
	return t.queue(ctx, sql, args, apply.Origin{Op: "delete", Table: p.Target, Txn: txn, Expect: 1})
}

// maxPrepared bounds the statements one session prepares. A whole-row
// UPDATE or DELETE takes a statement per pattern of NULL old values, so a
// wide keyless table with many such patterns could otherwise fill the
// server's memory with prepared statements; past the bound, new shapes
// go unprepared (parsed at each use).
const maxPrepared = 256

// queue adds a row statement to the batch, prepared unless the session
// holds maxPrepared already. args are encoded at once.
func (t *Target) queue(ctx context.Context, sql string, args [][]byte, info apply.Origin) error {
	name, ok := t.stmts[sql]
	if !ok && len(t.stmts) >= maxPrepared {
		t.batch.add(sql, args, info)
		return nil
	}
	if !ok {
		var err error
		if name, err = t.prepare(ctx, sql); err != nil {
			return err
		}
	}
	t.batch.addPrepared(name, args, info)
	return nil
}

func (t *Target) truncate(ctx context.Context, txn *source.Txn, c *source.Change) error {
	names := make([]source.TableName, len(c.Truncated))
	partitioned := make([]bool, len(c.Truncated))
	for i, rel := range c.Truncated {
		tt, err := t.table(ctx, t.cfg.Router.Route(rel.Table()))
		if err != nil {
			return &apply.Error{Op: "truncate", Table: rel.Table(), Xid: txn.Xid, Commit: txn.Commit, Err: err}
		}
		names[i], partitioned[i] = tt.Name, tt.Partitioned
	}
	t.batch.add(renderTruncate(names, partitioned, c.RestartIdentity), nil,
		apply.Origin{Op: "truncate", Table: names[0], Txn: txn, Expect: -1})
	return t.maybeFlush(ctx)
}

// endRun writes the pending run of inserts: a short one as INSERTs in the
// batch, a long one as COPY after flushing the batch (order matters).
func (t *Target) endRun(ctx context.Context) error {
	r := &t.run
	if r.plan == nil || r.n == 0 {
		r.reset()
		return nil
	}
	defer r.reset()
	if r.n < copyMinRows {
		name, err := t.prepare(ctx, r.plan.insertSQL)
		if err != nil {
			return &apply.Error{Op: "insert", Table: r.plan.Target, Xid: r.txn.Xid, Commit: r.txn.Commit, Err: err}
		}
		for _, row := range r.first {
			args := t.args[:0]
			for _, i := range r.plan.Cols {
				args = append(args, param(row[i]))
			}
			t.args = args
			t.batch.addPrepared(name, args, apply.Origin{Op: "insert", Table: r.plan.Target, Txn: r.txn, Expect: 1, Net: r.net})
		}
		return t.maybeFlush(ctx)
	}
	if err := t.flush(ctx); err != nil {
		return err
	}
	err := t.bound().Do(ctx, "COPY", func(ctx context.Context) error {
		tag, err := t.conn.PgConn().CopyFrom(ctx, bytes.NewReader(r.buf), r.plan.copySQL)
		if err == nil && tag.RowsAffected() != int64(r.n) {
			err = fmt.Errorf("COPY wrote %d rows, expected %d", tag.RowsAffected(), r.n)
		}
		return err
	})
	if err != nil {
		err = &apply.Error{Op: "insert", Table: r.plan.Target, Xid: r.txn.Xid, Commit: r.txn.Commit, Err: describe(err)}
		if r.net {
			err = t.replay.Fail(err)
		}
		return err
	}
	return nil
}

// flush sends the batch in one round trip and checks every result.
func (t *Target) flush(ctx context.Context) error {
	if err := t.await(); err != nil {
		return err
	}
	if t.batch.len() == 0 {
		return nil
	}
	defer t.batch.reset()
	return t.bound().Do(ctx, "a batch of statements", func(ctx context.Context) error {
		return t.results(t.conn.PgConn().ExecBatch(ctx, &t.batch.b), t.batch.info)
	})
}

// results reads a batch's results, its statements described by stmts, and
// returns the first failure: an error, or a row count other than expected.
func (t *Target) results(mrr *pgconn.MultiResultReader, stmts []apply.Origin) error {
	var failed error
	i := 0 // results come in statement order; a failing one ends them
	for ; mrr.NextResult(); i++ {
		info := stmts[i]
		var judged error
		if info.Judges && failed == nil {
			judged = t.judged(mrr.ResultReader())
		}
		tag, err := mrr.ResultReader().Close()
		if failed != nil {
			continue
		}
		switch {
		case err == nil && judged != nil:
			failed = info.Fail(judged)
		case err != nil:
			failed = info.Fail(describe(err))
		case info.Expect >= 0 && tag.RowsAffected() != int64(info.Expect):
			failed = info.Fail(rowCountError(info, tag.RowsAffected()))
		case info.Policy != apply.PolicyError:
			t.conflicts[info.Conflict][info.Policy] += tag.RowsAffected()
		}
		if failed != nil && info.Net {
			failed = t.replay.Fail(failed)
		}
	}
	if err := mrr.Close(); err != nil && failed == nil {
		failed = describe(err)
		if i < len(stmts) {
			failed = stmts[i].Fail(failed)
			if stmts[i].Net {
				failed = t.replay.Fail(failed)
			}
		}
	}
	return failed
}

func rowCountError(info apply.Origin, got int64) error {
	switch {
	case info.Op == "checkpoint":
		return fmt.Errorf("%w: the stored checkpoint is past this position; another decant is applying this pipeline, stop it", checkpoint.ErrRegressed)
	case info.Op == "skip":
		return &apply.SkipCancelledError{Commit: info.Txn.Commit}
	case got < int64(info.Expect):
		err := errors.New("no target row matches the source row's key: the target has diverged from the source (a row was changed or removed behind decant's back, the table was not copied before streaming, or the source changed a column the target has as GENERATED ALWAYS AS IDENTITY)")
		if info.Expect > 1 {
			err = fmt.Errorf("%d of %d rows found; %w", got, info.Expect, err)
		}
		return err
	}
	return fmt.Errorf("%d target rows match the source row's key, expected 1: the target table lacks the source's primary key or unique constraint", got)
}

// Commit writes the checkpoint and commits; with no transaction open it
// writes the checkpoint alone.
func (t *Target) Commit(ctx context.Context, cp checkpoint.Row) error {
	if err := t.sendNet(ctx); err != nil {
		return t.lacksColumns(ctx, err)
	}
	if err := t.endRun(ctx); err != nil {
		return t.lacksColumns(ctx, err)
	}
	info := apply.Origin{Op: "checkpoint", Txn: &source.Txn{Xid: cp.Xid, Commit: cp.Commit}, Expect: 1}
	t.batch.add(checkpoint.PGAdvance, cp.PGAdvanceArgs(), info)
	if err := t.flush(ctx); err != nil {
		return t.lacksColumns(ctx, err)
	}
	if !t.inTx {
		return t.committedAlone(ctx)
	}
	t.inTx = false
	return t.bound().Do(ctx, "COMMIT", func(ctx context.Context) error {
		res, err := t.conn.PgConn().Exec(ctx, t.commitSQL()).ReadAll()
		if err == nil && (len(res) == 0 || res[0].CommandTag.String() != "COMMIT") {
			err = errors.New("the target rolled the transaction back")
		}
		if err == nil {
			err = t.committed(res[1:])
		}
		if err != nil {
			return &apply.Error{Op: "commit", Xid: cp.Xid, Commit: cp.Commit, Err: describe(err)}
		}
		t.replay.Committed()
		t.conflictsCommitted()
		return nil
	})
}

// Rollback abandons the open transaction and anything not yet sent.
func (t *Target) Rollback(ctx context.Context) error {
	t.await() // the transaction is abandoned whatever the batch sent ahead did
	t.conflicts = apply.ConflictTally{}
	t.batch.reset()
	t.run.reset()
	t.net.Reset()
	if !t.inTx || t.conn == nil {
		t.inTx = false
		return nil
	}
	t.inTx = false
	if t.conn.IsClosed() {
		// A statement interrupted by a cancelled context (a clean stop)
		// closes the connection, and the server rolled the transaction
		// back with it: nothing is left to abandon.
		t.Close(ctx)
		return nil
	}
	if err := t.bound().Do(ctx, "ROLLBACK", func(ctx context.Context) error {
		_, err := t.conn.PgConn().Exec(ctx, "ROLLBACK").ReadAll()
		return err
	}); err != nil {
		t.Close(ctx)
		return fmt.Errorf("target rollback: %w", err)
	}
	return nil
}

// prepare returns the name of a prepared statement for sql, preparing it on
// first use (one round trip per statement shape per session).
func (t *Target) prepare(ctx context.Context, sql string) (string, error) {
	if name, ok := t.stmts[sql]; ok {
		return name, nil
	}
	if err := t.await(); err != nil {
		return "", err
	}
	name := fmt.Sprintf("decant_%d", len(t.stmts)+1)
	if err := t.bound().Do(ctx, "PREPARE", func(ctx context.Context) error {
		_, err := t.conn.PgConn().Prepare(ctx, name, sql, nil)
		return describe(err)
	}); err != nil {
		return "", err
	}
	t.stmts[sql] = name
	return name, nil
}

// param is a value as a text-format parameter; nil is NULL.
func param(v source.Value) []byte {
	if v.Kind == source.ValueNull {
		return nil
	}
	return v.Data
}

// Inspect reads a target table's columns and primary key from the catalog;
// ErrNoTable when it does not exist.
func Inspect(ctx context.Context, conn *pgx.Conn, name source.TableName) (*mapping.TargetTable, error) {
	var oid uint32
	var kind string
	err := conn.QueryRow(ctx, `SELECT c.oid, c.relkind::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p')`, name.Schema, name.Name).Scan(&oid, &kind)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: %s", ErrNoTable, name)
	}
	if err != nil {
		return nil, fmt.Errorf("read target table %s: %w", name, err)
	}
	tt := &mapping.TargetTable{Name: name, Partitioned: kind == "p"}
	rows, err := conn.Query(ctx, columnsSQL, oid)
	if err != nil {
		return nil, fmt.Errorf("read columns of target table %s: %w", name, err)
	}
	var c mapping.TargetColumn
	var cmp string
	_, err = pgx.ForEachRow(rows, []any{&c.Name, &c.Generated, &c.IdentityAlways, &c.Type, &cmp}, func() error {
		c.Compare = map[string]mapping.Compare{"equal": mapping.CompareEqual, "both": mapping.CompareEqualText}[cmp]
		tt.Columns = append(tt.Columns, c)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read columns of target table %s: %w", name, err)
	}
	rows, err = conn.Query(ctx, `SELECT a.attname FROM pg_index i
		CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
		JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
		WHERE i.indrelid = $1 AND i.indisprimary ORDER BY k.ord`, oid)
	if err != nil {
		return nil, fmt.Errorf("read primary key of target table %s: %w", name, err)
	}
	tt.PrimaryKey, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("read primary key of target table %s: %w", name, err)
	}
	if err := inspectUnique(ctx, conn, oid, tt); err != nil {
		return nil, fmt.Errorf("read unique indexes and triggers of target table %s: %w", name, err)
	}
	return tt, nil
}

// inspectUnique reads what decides whether the table's changes may be
// compacted (mapping.NetMode): its unique indexes and exclusion
// constraints, and triggers or rules that fire for replicated rows
// (session_replication_role = replica fires those enabled ALWAYS or
// REPLICA). A unique index counts as Unique when it is checked at once for
// every row: not partial, on plain columns, not deferrable, and valid (an
// index being built concurrently may already be checked).
func inspectUnique(ctx context.Context, conn *pgx.Conn, oid uint32, tt *mapping.TargetTable) error {
	rows, err := conn.Query(ctx, `SELECT i.indisunique AND NOT i.indisexclusion AND i.indimmediate AND i.indisvalid
			AND i.indpred IS NULL AND i.indexprs IS NULL AND bool_and(a.attname IS NOT NULL),
			array_agg(coalesce(a.attname::text, '') ORDER BY k.ord)
		FROM pg_index i
		CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
		LEFT JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum AND k.attnum > 0
		WHERE i.indrelid = $1 AND (i.indisunique OR i.indisexclusion) AND k.ord <= i.indnkeyatts
		GROUP BY i.indexrelid, i.indisunique, i.indisexclusion, i.indimmediate, i.indisvalid, i.indpred IS NULL, i.indexprs IS NULL`, oid)
	if err != nil {
		return err
	}
	var plain bool
	var cols []string
	_, err = pgx.ForEachRow(rows, []any{&plain, &cols}, func() error {
		if plain {
			tt.Unique = append(tt.Unique, slices.Clone(cols))
		} else {
			tt.OtherUnique = true
		}
		return nil
	})
	if err != nil {
		return err
	}
	return conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = $1 AND NOT tgisinternal AND tgenabled IN ('A', 'R'))
		OR EXISTS (SELECT 1 FROM pg_rewrite WHERE ev_class = $1)`, oid).Scan(&tt.Triggers)
}

// columnsSQL reads the columns of table $1: name, generated, identity
// ALWAYS, type as a cast spells it (with the column's modifier: a bare
// "character" or "bit" would be of length 1), and how a whole-row match compares it
// (mapping.Compare): "equal" when the type's default btree operator class
// says equal values are identical (it has an equalimage function, and the
// column's collation is deterministic), "both" when the type has equality
// all the same (btree or hash), "text" without (point, json, composites).
//
// The type is followed through domains to its base and through arrays to
// their element, as PostgreSQL's own lookup of a type's equality does
// (array_eq needs the element's); an array, range or multirange compares
// at most "both". An operator class for a type to which the column's is
// implicitly binary-coercible counts (varchar uses text's, cidr inet's).
const columnsSQL = `SELECT a.attname, a.attgenerated <> '', a.attidentity = 'a', format_type(a.atttypid, a.atttypmod),
		CASE WHEN NOT m.eq THEN 'text' WHEN m.exact AND coalesce(co.collisdeterministic, true) THEN 'equal' ELSE 'both' END
	FROM pg_attribute a
	LEFT JOIN pg_collation co ON co.oid = a.attcollation
	CROSS JOIN LATERAL (
		WITH RECURSIVE chain(t, arr, depth) AS (
			SELECT a.atttypid, false, 0
			UNION ALL
			SELECT CASE ty.typtype WHEN 'd' THEN ty.typbasetype ELSE ty.typelem END, c.arr OR ty.typtype <> 'd', c.depth + 1
			FROM chain c JOIN pg_type ty ON ty.oid = c.t
			WHERE c.depth < 16 AND (ty.typtype = 'd' OR (ty.typelem <> 0 AND ty.typsubscript = 'array_subscript_handler'::regproc
				AND NOT EXISTS (SELECT 1 FROM pg_opclass o WHERE o.opcdefault AND o.opcintype = ty.oid AND o.opcmethod IN (` + btreeAM + `, ` + hashAM + `))))
		)
		SELECT st.typtype IN ('r', 'm', 'e') OR bt.opcfamily IS NOT NULL OR EXISTS (SELECT 1 FROM pg_opclass o
				WHERE o.opcmethod = ` + hashAM + ` AND o.opcdefault AND st.typtype <> 'c' AND (o.opcintype = s.t OR EXISTS (SELECT 1 FROM pg_cast k
					WHERE k.castsource = s.t AND k.casttarget = o.opcintype AND k.castmethod = 'b' AND k.castcontext = 'i'))) AS eq,
			NOT s.arr AND st.typtype NOT IN ('r', 'm') AND EXISTS (SELECT 1 FROM pg_amproc p WHERE p.amprocfamily = bt.opcfamily
				AND p.amproclefttype = bt.opcintype AND p.amprocrighttype = bt.opcintype AND p.amprocnum = 4) AS exact
		FROM (SELECT t, arr FROM chain ORDER BY depth DESC LIMIT 1) s
		JOIN pg_type st ON st.oid = s.t
		LEFT JOIN LATERAL (SELECT o.opcfamily, o.opcintype FROM pg_opclass o
			WHERE o.opcmethod = ` + btreeAM + ` AND o.opcdefault AND st.typtype <> 'c'
				AND (o.opcintype = s.t OR (st.typtype = 'e' AND o.opcintype = 'anyenum'::regtype)
					OR EXISTS (SELECT 1 FROM pg_cast k WHERE k.castsource = s.t AND k.casttarget = o.opcintype AND k.castmethod = 'b' AND k.castcontext = 'i'))
			ORDER BY o.opcintype = s.t DESC LIMIT 1) bt ON true
	) m
	WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped
	ORDER BY a.attnum`

// The OIDs of the btree and hash access methods (fixed in pg_am.dat).
const (
	btreeAM = "403"
	hashAM  = "405"
)

// ErrNoTable means a target table does not exist.
var ErrNoTable = errors.New("target table does not exist")

func (t *Target) table(ctx context.Context, name source.TableName) (*mapping.TargetTable, error) {
	if tt, ok := t.tables[name]; ok {
		return tt, nil
	}
	if err := t.await(); err != nil {
		return nil, err
	}
	var tt *mapping.TargetTable
	err := t.bound().Do(ctx, "reading the target catalog", func(ctx context.Context) error {
		var err error
		tt, err = Inspect(ctx, t.conn, name)
		return err
	})
	if errors.Is(err, ErrNoTable) {
		return nil, fmt.Errorf("%w; create it on the target (decant init lists missing tables)", err)
	}
	if err != nil {
		return nil, err
	}
	t.tables[name] = tt
	return tt, nil
}
