// Package mysql writes decant's transactions into a MySQL 8 or MariaDB
// 10.11 target through github.com/go-sql-driver/mysql: a window of row
// changes folded into their net effect per key (apply.Net) as a few
// set-based statements per table (net.go), runs of inserts as multi-row
// INSERTs, runs of deletes by key as DELETE ... IN (...), other changes as
// single statements, all grouped into multi-statement batches (one round
// trip each) inside one transaction that also advances the checkpoint row
// decant_checkpoint. Values are converted by mapping's
// MySQL converters; a value the target cannot hold follows the
// unrepresentable-value policy.
package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
)

// Config configures a Target.
type Config struct {
	DSN      string // mysql://user:pass@host:port/db or the driver's form
	Pipeline string
	Router   *mapping.Router // source table → target table; table name in the DSN's database when nil
	Columns  map[source.TableName]mapping.ColumnRules
	Policy   mapping.Policy
	// Plain applies every change on its own, in source order, never
	// gathering a window of net changes (apply.Net): for a target whose
	// own consumers must see every intermediate row state (--compact=false).
	Plain bool
	// SkipUnsupportedDDL records and skips a schema change decant cannot
	// translate instead of stopping (--on-unsupported-ddl skip).
	SkipUnsupportedDDL bool
	// Timeout bounds every round trip to the target (a batch, a COMMIT,
	// a schema change, a catalog read): past it the connection is given
	// up with a *source.TimeoutError, which the pipeline retries. 0: no
	// bound.
	Timeout time.Duration
	// Conflicts says what to do with a change that finds the target
	// otherwise than the source left it (conflict.go).
	Conflicts apply.ConflictPolicies
	Logger    *slog.Logger
}

// Limits on what one batch holds; the byte limit also stays below half the
// server's max_allowed_packet.
const (
	batchStmts = 200
	batchBytes = 4 << 20
	runRows    = 1000 // rows per multi-row INSERT or DELETE ... IN
)

// Target is the MySQL writer. It is not safe for concurrent use.
type Target struct {
	cfg Config
	log *slog.Logger

	db        *sql.DB
	conn      *sql.Conn
	connID    int64 // the server's connection id (CONNECTION_ID())
	maria     bool
	maxPacket int
	lit       literals // how the session's string literals are written
	gone      []int64  // connection ids of sessions given up, until fence saw them end

	tables map[source.TableName]*Table
	// plans holds a plan per source table, for the shape last announced:
	// the source announces a table again after a schema change or a
	// reconnect, and the older shape's plan is not needed any more.
	plans  map[source.TableName]*plan
	schema map[uint32]*source.TableDef // source definitions last applied, by table OID
	last   *plan

	inTx  bool
	batch batch
	run   run
	// Prepared statements of the session by their text, and whether the
	// server refused one (prepared.go).
	stmts     map[string]*sql.Stmt
	noPrepare bool

	// A window of net changes (net.go) and when not to gather one.
	net    apply.Net[*plan]
	replay apply.Replay

	streams          apply.Streams[streamWriter] // transactions streamed while in progress, by xid (stream.go)
	readCommittedSet bool                        // the session was asked for READ COMMITTED (stream.go)

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
	if _, err := ParseDSN(cfg.DSN); err != nil {
		return nil, fmt.Errorf("target: %w", err)
	}
	if cfg.Router == nil {
		cfg.Router = mapping.NewRouter(nil, true)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Target{cfg: cfg, log: log}, nil
}

// Open connects if needed and reads the checkpoint.
func (t *Target) Open(ctx context.Context) (checkpoint.Row, error) {
	if t.conn != nil {
		if err := t.bound().Do(ctx, "ping", t.conn.PingContext); err != nil {
			t.Close(ctx)
		}
	}
	if t.conn == nil {
		if err := t.connect(ctx); err != nil {
			return checkpoint.Row{}, err
		}
	}
	if err := t.Rollback(ctx); err != nil {
		return checkpoint.Row{}, err
	}
	if err := t.fence(ctx); err != nil {
		return checkpoint.Row{}, err
	}
	var cp checkpoint.Row
	err := t.bound().Do(ctx, "reading the checkpoint", func(ctx context.Context) error {
		var err error
		if cp, err = checkpoint.MySQLRead(ctx, t.conn, t.cfg.Pipeline); err != nil {
			return err
		}
		t.schema, err = checkpoint.MySQLSchemaLoad(ctx, t.conn, t.cfg.Pipeline)
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
// transactions twice. Killing it and waiting until it is gone makes its
// outcome final before the checkpoint is read.
func (t *Target) fence(ctx context.Context) error {
	if len(t.gone) == 0 {
		return nil
	}
	ids := make([]any, len(t.gone))
	for i, id := range t.gone {
		ids[i] = id
	}
	list := "?" + strings.Repeat(", ?", len(ids)-1)
	err := t.bound().Do(ctx, "ending the previous target session", func(ctx context.Context) error {
		return apply.AwaitEnded(ctx, t.log, slog.String("id", fmt.Sprint(t.gone)), func(ctx context.Context) (int, error) {
			var running int
			err := t.conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID IN ("+list+")", ids...).Scan(&running)
			if err != nil {
				return 0, fmt.Errorf("end the previous target session (id %v): %w", t.gone, describe(err))
			}
			if running == 0 {
				return 0, nil
			}
			for _, id := range t.gone {
				var my *mysql.MySQLError
				if _, err := t.conn.ExecContext(ctx, "KILL CONNECTION ?", id); err != nil && !(errors.As(err, &my) && my.Number == 1094) {
					return 0, fmt.Errorf("end the previous target session (id %d): %w", id, describe(err))
				}
			}
			return running, nil
		})
	})
	if err == nil {
		t.gone = t.gone[:0]
	}
	return err
}

// connect opens the writer's session; nothing is learned about tables yet.
func (t *Target) connect(ctx context.Context) error {
	s, err := Connect(ctx, t.cfg.DSN)
	if err != nil {
		return err
	}
	t.db, t.conn, t.connID, t.maria, t.maxPacket = s.DB, s.Conn, s.ID, s.Maria, s.MaxPacket
	t.lit = literals{noBackslash: s.NoBackslash}
	t.readCommittedSet, t.noPrepare = false, false
	t.forgetTables()
	if err := t.createConflictLog(ctx); err != nil {
		t.Close(ctx)
		return err
	}
	return nil
}

// Close drops the connection, and those of streamed transactions.
func (t *Target) Close(ctx context.Context) {
	t.closeStreams(ctx)
	if t.conn != nil {
		t.gone = append(t.gone, t.connID)
		t.closePrepared()
		t.conn.Close()
		t.db.Close()
	}
	t.conn, t.db, t.inTx, t.last = nil, nil, false, nil
	t.batch.reset()
	t.run.reset()
	t.net.Reset()
}

// Session is one target connection with what decant learned about the
// server.
type Session struct {
	DB        *sql.DB
	Conn      *sql.Conn
	ID        int64 // CONNECTION_ID()
	Maria     bool  // MariaDB rather than MySQL
	MaxPacket int   // max_allowed_packet
	// NoBackslash: the session's sql_mode has NO_BACKSLASH_ESCAPES, so
	// a backslash in a string literal is itself (decant's sql_mode has
	// not, but a server may force it).
	NoBackslash bool
}

// Connect opens a session with decant's settings. The DSN's timeout (10 s
// by default) bounds it all: the driver's own applies to the dial only,
// and a server that accepts TCP but never greets would hang the handshake.
func Connect(ctx context.Context, dsn string) (Session, error) {
	cfg, g, err := parseDSN(dsn)
	if err != nil {
		return Session{}, fmt.Errorf("target: %w", err)
	}
	g.links = source.LinksFrom(ctx)
	mc, err := mysql.NewConnector(cfg)
	if err != nil {
		return Session{}, fmt.Errorf("target: %w", err)
	}
	db := sql.OpenDB(connector{Connector: mc, g: g})
	var s Session
	connect := source.Bound{Peer: "target", Setting: "timeout= in the target DSN", Timeout: cfg.Timeout}
	err = connect.Do(ctx, "connect", func(ctx context.Context) error {
		conn, err := db.Conn(ctx)
		if err == nil {
			if err = conn.PingContext(ctx); err != nil {
				conn.Close()
			}
		}
		if err != nil {
			return fmt.Errorf("connect to target %s database %s: %w", cfg.Addr, cfg.DBName, describe(err))
		}
		s = Session{DB: db, Conn: conn}
		var version string
		if err := conn.QueryRowContext(ctx, `SELECT VERSION(), @@max_allowed_packet, CONNECTION_ID(), FIND_IN_SET('NO_BACKSLASH_ESCAPES', @@sql_mode) > 0`).Scan(&version, &s.MaxPacket, &s.ID, &s.NoBackslash); err != nil {
			conn.Close()
			return fmt.Errorf("read target version: %w", describe(err))
		}
		s.Maria = strings.Contains(strings.ToLower(version), "mariadb")
		return nil
	})
	if err != nil {
		db.Close()
		return Session{}, err
	}
	return s, nil
}

func (s Session) close() {
	s.Conn.Close()
	s.DB.Close()
}

// Apply writes changes of txn into the open transaction.
func (t *Target) Apply(ctx context.Context, txn *source.Txn, changes []source.Change) (err error) {
	defer func() { err = t.lockHint(err) }()
	t.begin()
	gather := t.replay.Gather(txn) && !t.cfg.Plain
	for i := range changes {
		c := &changes[i]
		if err := t.change(ctx, txn, c, gather); err != nil {
			return apply.ChangeError(txn, c, err)
		}
	}
	return nil
}

// begin opens the transaction with the next batch unless one is open.
func (t *Target) begin() {
	if !t.inTx {
		t.batch.begin = true
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
		if c.Op == source.OpTruncate {
			return t.truncate(ctx, txn, c)
		}
		if err := t.endRun(ctx); err != nil {
			return err
		}
		return t.applyDDL(ctx, txn, c.DDL)
	}
	p, err := t.plan(ctx, c.Rel)
	if err != nil {
		return err
	}
	if t.cfg.Conflicts.Resolves(p.Target) {
		return t.resolvingChange(ctx, txn, p, c)
	}
	if gather && t.net.Add(p, p.Plan, txn, c) {
		if t.net.Full() {
			return t.sendNet(ctx)
		}
		return nil
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
	switch c.Op {
	case source.OpInsert:
		return t.insert(ctx, txn, p, c)
	case source.OpUpdate:
		if err := t.endRun(ctx); err != nil {
			return err
		}
		return t.update(ctx, txn, p, c)
	case source.OpDelete:
		return t.delete(ctx, txn, p, c)
	}
	return fmt.Errorf("unexpected change %s", c.Op)
}

func (t *Target) insert(ctx context.Context, txn *source.Txn, p *plan, c *source.Change) error {
	if !t.run.continues(runInsert, p, txn) {
		if err := t.endRun(ctx); err != nil {
			return err
		}
		t.run.start(runInsert, p, txn)
	}
	n := len(t.run.args)
	args, err := p.convertRow(t.run.args, c.New, p.Cols)
	if err != nil {
		return err
	}
	t.run.add(args, n)
	return t.maybeEndRun(ctx)
}

func (t *Target) delete(ctx context.Context, txn *source.Txn, p *plan, c *source.Change) error {
	if p.MatchOf(c).Whole {
		if err := t.endRun(ctx); err != nil {
			return err
		}
		sql, args, err := p.deleteStmt(c)
		if err != nil {
			return err
		}
		t.batch.add(sql, args, apply.Origin{Op: "delete", Table: p.Rel.Table(), Txn: txn, Expect: 1})
		return t.maybeFlush(ctx)
	}
	if !t.run.continues(runDelete, p, txn) {
		if err := t.endRun(ctx); err != nil {
			return err
		}
		t.run.start(runDelete, p, txn)
	}
	old, err := keyRow(p, c, mapping.Match{})
	if err != nil {
		return err
	}
	n := len(t.run.args)
	args, err := p.convertRow(t.run.args, old, p.Key)
	if err != nil {
		return err
	}
	t.run.add(args, n)
	return t.maybeEndRun(ctx)
}

// keyRow is the image that holds a change's old key: the old row when the
// source sent one, else the new row (an UPDATE that kept its key). A
// whole-row match needs the old row.
func keyRow(p *plan, c *source.Change, m mapping.Match) ([]source.Value, error) {
	switch {
	case c.Old != nil:
		return c.Old, nil
	case m.Whole:
		return nil, apply.ErrNoOldRow
	}
	return c.New, nil
}

func (t *Target) update(ctx context.Context, txn *source.Txn, p *plan, c *source.Change) error {
	sql, args, err := p.updateStmt(c)
	if err != nil {
		return err
	}
	t.batch.add(sql, args, apply.Origin{Op: "update", Table: p.Rel.Table(), Txn: txn, Expect: 1})
	return t.maybeFlush(ctx)
}

// deleteStmt is the single-row DELETE of c, found by its old row, and
// its arguments.
func (p *plan) deleteStmt(c *source.Change) (string, []any, error) {
	sql, m := p.shapes.Delete(c)
	old, err := keyRow(p, c, m)
	if err != nil {
		return "", nil, err
	}
	args, err := p.convertRow(nil, old, p.WhereCols(m))
	if err != nil {
		return "", nil, err
	}
	return sql, args, nil
}

// updateStmt is the single-row UPDATE of c and its arguments: the columns
// it sets, then those that find the row.
func (p *plan) updateStmt(c *source.Change) (string, []any, error) {
	sql, set, m := p.shapes.Update(c)
	var setCols []int
	for _, i := range p.Cols {
		if set[i] {
			setCols = append(setCols, i)
		}
	}
	args, err := p.convertRow(nil, c.New, setCols)
	if err != nil {
		return "", nil, err
	}
	old, err := keyRow(p, c, m)
	if err != nil {
		return "", nil, err
	}
	if args, err = p.convertRow(args, old, p.WhereCols(m)); err != nil {
		return "", nil, err
	}
	return sql, args, nil
}

// truncate empties the tables with DELETE: TRUNCATE TABLE would commit the
// target transaction implicitly and break its atomicity with the
// checkpoint. RESTART IDENTITY is not applied for the same reason (ALTER
// TABLE ... AUTO_INCREMENT commits too); replicated rows carry their ids.
func (t *Target) truncate(ctx context.Context, txn *source.Txn, c *source.Change) error {
	if err := t.endRun(ctx); err != nil {
		return err
	}
	for _, rel := range c.Truncated {
		name := t.cfg.Router.Route(rel.Table())
		if _, err := t.table(ctx, name); err != nil {
			return &apply.Error{Op: "truncate", Table: rel.Table(), Xid: txn.Xid, Commit: txn.Commit, Err: err}
		}
		t.batch.add("DELETE FROM "+quoteTable(name), nil, apply.Origin{Op: "truncate", Table: rel.Table(), Txn: txn, Expect: -1})
	}
	return t.maybeFlush(ctx)
}

func (t *Target) maybeEndRun(ctx context.Context) error {
	if t.run.rows >= runRows || t.run.bytes >= t.byteLimit()/2 {
		return t.endRun(ctx)
	}
	return nil
}

// endRun turns the pending run into one statement in the batch.
func (t *Target) endRun(ctx context.Context) error {
	r := &t.run
	if r.rows == 0 {
		r.reset()
		return nil
	}
	query := r.plan.insertSQL(r.rows)
	if r.kind == runDelete {
		query = repeatMarks(r.plan.deleteHead, r.plan.keyMarks, r.rows, ")")
	}
	op := map[runKind]string{runInsert: "insert", runDelete: "delete"}[r.kind]
	t.batch.addStmt(stmt{sql: query, args: r.args, info: apply.Origin{Op: op, Table: r.plan.Rel.Table(), Txn: r.txn, Expect: r.rows},
		prepare: r.rows == runRows})
	r.args = nil // now owned by the batch
	r.reset()
	return t.maybeFlush(ctx)
}

func (t *Target) byteLimit() int {
	return min(batchBytes, t.maxPacket/2)
}

func (t *Target) maybeFlush(ctx context.Context) error {
	if len(t.batch.stmts) >= batchStmts || t.batch.bytes >= t.byteLimit() {
		return t.flush(ctx)
	}
	return nil
}

// Commit writes the checkpoint and commits; with no transaction open it
// writes the checkpoint alone.
func (t *Target) Commit(ctx context.Context, cp checkpoint.Row) (err error) {
	defer func() { err = t.lockHint(err) }()
	if err := t.sendNet(ctx); err != nil {
		return err
	}
	if err := t.endRun(ctx); err != nil {
		return err
	}
	info := apply.Origin{Op: "checkpoint", Txn: &source.Txn{Xid: cp.Xid, Commit: cp.Commit}, Expect: 1}
	t.batch.add(checkpoint.MySQLAdvance, cp.MySQLAdvanceArgs(), info)
	if err := t.flush(ctx); err != nil {
		return err
	}
	if !t.inTx {
		t.replay.Committed()
		return nil
	}
	t.inTx = false
	return t.bound().Do(ctx, "COMMIT", func(ctx context.Context) error {
		if _, err := t.conn.ExecContext(ctx, "COMMIT"); err != nil {
			return &apply.Error{Op: "commit", Xid: cp.Xid, Commit: cp.Commit, Err: describe(err)}
		}
		t.replay.Committed()
		t.conflictsCommitted()
		return nil
	})
}

// Rollback abandons the open transaction and anything not yet sent.
func (t *Target) Rollback(ctx context.Context) error {
	t.conflicts = apply.ConflictTally{}
	t.batch.reset()
	t.run.reset()
	t.net.Reset()
	if !t.inTx || t.conn == nil {
		t.inTx = false
		return nil
	}
	t.inTx = false
	if err := t.bound().Do(ctx, "ROLLBACK", func(ctx context.Context) error {
		_, err := t.conn.ExecContext(ctx, "ROLLBACK")
		return err
	}); err != nil {
		t.Close(ctx)
		if connGone(err) {
			// A statement interrupted by a cancelled context (a clean
			// stop) closes the connection, and the server rolls the
			// transaction back with it: nothing is left to abandon.
			return nil
		}
		return fmt.Errorf("target rollback: %w", describe(err))
	}
	return nil
}
