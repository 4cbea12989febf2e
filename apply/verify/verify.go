// Package verify compares a PostgreSQL source's tables with their target
// tables (PostgreSQL or MySQL/MariaDB), row by row, as decant wrote them:
// columns renamed and left out as mapping says, values converted as the
// target writer converts them and brought to one normal form per target
// column type, so a PostgreSQL → MySQL pair compares equal when the data is.
//
// A table with a key is cut into spans of about Config.SpanRows source
// rows by key (when every key column sorts alike on both servers; else one
// span; bounds.go cuts a single integer key without reading it). For each
// span both sides are read in key order, streamed, and merged: rows are
// matched by key, their other values compared (normalized only where they
// differ as read), and the keys only the source has (missing), only the
// target has (extra) or both have with other values (different) are
// listed. Memory holds one row per side and the listed keys, never a
// table. A table without a key is compared by its row count and sums of
// row hashes (a multiset), without keys.
//
// On a PostgreSQL target both servers first count each span and sum its
// row hashes; only spans where they disagree are streamed, as keys and
// row hashes (hashed.go). On a MySQL target every span is streamed whole,
// because only here can a source value be converted as the target writer
// converts it.
//
// While decant run applies changes, a span read on both sides at slightly
// different moments may differ only in passing: spans that differ are read
// again once Config.Settle says the target has caught up, and only what
// still differs is reported. Row values never appear in the report, logs
// or errors; keys do.
package verify

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"golang.org/x/sync/errgroup"

	"github.com/decant/decant/apply/mysql"
	"github.com/decant/decant/apply/pg"
	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
	"github.com/decant/decant/source/pgsession"
)

// Config says what to compare.
type Config struct {
	Source string // source DSN (PostgreSQL)
	Target string // target DSN
	MySQL  bool   // the target is MySQL or MariaDB
	// Tables are the source tables to compare, as the source describes them.
	Tables []*source.TableDef
	// AppendOnly are the tables among them that decant publishes
	// append-only: compared as multisets of rows, by no key.
	AppendOnly []source.TableName
	Router     *mapping.Router
	Columns    map[source.TableName]mapping.ColumnRules
	Policy     mapping.Policy
	// Jobs is how many spans are compared at once (each holds a session
	// on either side).
	Jobs int
	// SpanRows is about how many source rows one span holds.
	SpanRows int64
	// MaxKeys is how many keys of each kind (missing, extra, different)
	// a table's report lists.
	MaxKeys int
	// Settle, when set, is called before differing spans are compared
	// again; it returns once the target has caught up with the source
	// (or it is time to look anyway).
	Settle func(ctx context.Context) error
	// Snapshot, when set, is an exported snapshot every source session
	// reads under (SET TRANSACTION SNAPSHOT).
	Snapshot string
	// Repair, when set, makes Run repair what differs (repair.go).
	Repair *Repair
	Logger *slog.Logger
}

// Validate fills in defaults and checks the rest.
func (c *Config) Validate() error {
	if c.Source == "" || c.Target == "" {
		return errors.New("verify: source and target are required")
	}
	if c.Router == nil {
		return errors.New("verify: no router")
	}
	if c.Jobs <= 0 {
		c.Jobs = 1
	}
	if c.SpanRows <= 0 {
		c.SpanRows = 100_000
	}
	if c.MaxKeys <= 0 {
		c.MaxKeys = 20
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Repair != nil && (c.Repair.Writer == nil || c.Repair.Batch < 1) {
		return errors.New("verify: a repair needs a writer and a batch of at least 1 row")
	}
	return nil
}

// Report is what verify found.
type Report struct {
	Equal bool `json:"equal"`
	// Rechecked says differing spans were compared a second time.
	Rechecked bool          `json:"rechecked"`
	Tables    []TableReport `json:"tables"`
}

// Differing lists the tables that differ.
func (r *Report) Differing() []TableReport {
	var out []TableReport
	for _, t := range r.Tables {
		if !t.Equal {
			out = append(out, t)
		}
	}
	return out
}

// TableReport is one table's comparison.
type TableReport struct {
	Source string `json:"source"`
	Target string `json:"target"`
	// Key names the source key columns; empty for a table without a key.
	Key []string `json:"key,omitempty"`
	// AppendOnly: decant publishes the table append-only (Config), and
	// compared it as a multiset.
	AppendOnly bool  `json:"append_only,omitempty"`
	Equal      bool  `json:"equal"`
	SourceRows int64 `json:"source_rows"`
	TargetRows int64 `json:"target_rows"`
	Spans      int   `json:"spans"`
	// DifferingSpans counts the spans whose rows differ.
	DifferingSpans int   `json:"differing_spans"`
	Missing        int64 `json:"missing"`
	Extra          int64 `json:"extra"`
	Different      int64 `json:"different"`
	MissingKeys    []Key `json:"missing_keys,omitempty"`
	ExtraKeys      []Key `json:"extra_keys,omitempty"`
	DifferentKeys  []Key `json:"different_keys,omitempty"`
	// Error says why the table could not be compared.
	Error string `json:"error,omitempty"`
}

// Run compares the tables.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &runner{cfg: &cfg}
	if cfg.Repair != nil {
		r.progress = &progress{p: cfg.Repair.Progress, spans: map[source.TableName]int{}}
	}
	if cfg.MySQL {
		s, err := mysql.Connect(ctx, cfg.Target)
		if err != nil {
			return nil, err
		}
		s.Conn.Close()
		defer s.DB.Close()
		// A repairing worker deletes on a session of its own while it
		// reads a span on another.
		s.DB.SetMaxOpenConns(2*cfg.Jobs + 1)
		r.my = s.DB
	}

	n := len(cfg.Tables)
	tables := make([]*table, n)
	spans := make([][]span, n)
	failed := make([]string, n)
	err := r.parallel(ctx, n, func(ctx context.Context, w *worker, i int) error {
		t, s, err := w.prepare(ctx, cfg.Tables[i])
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			failed[i] = err.Error()
			return nil
		}
		tables[i], spans[i] = t, s
		r.progress.planned(cfg.Tables[i].Name, t.rows, len(s))
		return nil
	})
	if err != nil {
		return nil, err
	}

	type task struct{ table, span int }
	var tasks []task
	results := make([][]*spanResult, n)
	for i := range tables {
		results[i] = make([]*spanResult, len(spans[i]))
		for j := range spans[i] {
			tasks = append(tasks, task{i, j})
		}
	}
	compareTasks := func(tasks []task) error {
		return r.parallel(ctx, len(tasks), func(ctx context.Context, w *worker, k int) error {
			tk := tasks[k]
			res, err := w.compare(ctx, tables[tk.table], spans[tk.table][tk.span])
			results[tk.table][tk.span] = res
			if err == nil && cfg.Repair != nil {
				r.progress.compared(cfg.Tables[tk.table].Name, res.SourceRows)
			}
			return err
		})
	}
	if err := compareTasks(tasks); err != nil {
		return nil, err
	}

	rep := &Report{}
	var again []task
	for _, tk := range tasks {
		if results[tk.table][tk.span].differs() {
			again = append(again, tk)
		}
	}
	if len(again) > 0 && cfg.Settle != nil {
		cfg.Logger.Info("spans differ; comparing them again once the target has caught up", "spans", len(again))
		if err := cfg.Settle(ctx); err != nil {
			return nil, err
		}
		if err := compareTasks(again); err != nil {
			return nil, err
		}
		rep.Rechecked = true
	}

	rep.Equal = true
	for i, def := range cfg.Tables {
		tr := TableReport{Source: def.Name.String(), Target: targetText(cfg.Router.Route(def.Name)), Error: failed[i],
			AppendOnly: slices.Contains(cfg.AppendOnly, def.Name)}
		if t := tables[i]; t != nil {
			tr.Key = t.keyNames
			tr.Spans = len(spans[i])
			for _, res := range results[i] {
				tr.add(res, cfg.MaxKeys)
			}
		}
		tr.Equal = tr.Error == "" && tr.DifferingSpans == 0
		rep.Equal = rep.Equal && tr.Equal
		rep.Tables = append(rep.Tables, tr)
		cfg.Logger.Debug("table verified", "table", tr.Source, "equal", tr.Equal, "source_rows", tr.SourceRows, "target_rows", tr.TargetRows)
	}
	return rep, nil
}

func (tr *TableReport) add(res *spanResult, max int) {
	tr.SourceRows += res.SourceRows
	tr.TargetRows += res.TargetRows
	if !res.differs() {
		return
	}
	tr.DifferingSpans++
	tr.Missing += res.Missing
	tr.Extra += res.Extra
	tr.Different += res.Different
	tr.MissingKeys = appendMax(tr.MissingKeys, res.MissingKeys, max)
	tr.ExtraKeys = appendMax(tr.ExtraKeys, res.ExtraKeys, max)
	tr.DifferentKeys = appendMax(tr.DifferentKeys, res.DifferentKeys, max)
}

func appendMax(dst, src []Key, max int) []Key {
	return append(dst, src[:min(len(src), max-min(len(dst), max))]...)
}

func targetText(t source.TableName) string {
	if t.Schema == "" {
		return t.Name
	}
	return t.String()
}

// runner is one Run: what its workers share.
type runner struct {
	cfg      *Config
	my       *sql.DB // MySQL target: a pool of sessions with decant's settings
	progress *progress
}

// worker holds one session on each side, opened on first use.
type worker struct {
	cfg      *Config
	run      *runner
	src, tgt *pgx.Conn
	fix      *fixer // repairs (Config.Repair), made on first use
}

func (w *worker) source(ctx context.Context) (*pgx.Conn, error) {
	if w.src == nil {
		c, err := pgsession.Connect(ctx, w.cfg.Source)
		if err != nil {
			return nil, err
		}
		if w.cfg.Snapshot != "" {
			if err := importSnapshot(ctx, c, w.cfg.Snapshot); err != nil {
				c.Close(ctx)
				return nil, err
			}
		}
		w.src = c
	}
	return w.src, nil
}

func (w *worker) target(ctx context.Context) (*pgx.Conn, error) {
	if w.tgt == nil {
		c, err := pg.Connect(ctx, w.cfg.Target)
		if err != nil {
			return nil, err
		}
		w.tgt = c
	}
	return w.tgt, nil
}

func (w *worker) close(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
	defer cancel()
	if w.fix != nil {
		w.fix.close(ctx)
	}
	for _, c := range []*pgx.Conn{w.src, w.tgt} {
		if c != nil {
			c.Close(ctx)
		}
	}
}

// parallel runs fn for 0..n-1 on up to Jobs workers; the first error
// stops the others and is returned.
func (r *runner) parallel(ctx context.Context, n int, fn func(ctx context.Context, w *worker, i int) error) error {
	var next atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	for range min(r.cfg.Jobs, n) {
		g.Go(func() error {
			w := &worker{cfg: r.cfg, run: r}
			defer w.close(gctx)
			for {
				i := int(next.Add(1)) - 1
				if i >= n || gctx.Err() != nil {
					return nil
				}
				if err := fn(gctx, w, i); err != nil {
					return err
				}
			}
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}

// compare reads one span on both sides and merges them. On a PostgreSQL
// target both servers first sum the span's row hashes; only a span whose
// counts or sums differ is streamed and merged to find its keys. When
// repairing, what differs is repaired as it is found.
func (w *worker) compare(ctx context.Context, t *table, s span) (*spanResult, error) {
	res, err := w.compareOnly(ctx, t, s)
	if err != nil || w.cfg.Repair == nil || !res.differs() {
		return res, err
	}
	if t.key == nil {
		return res, w.repairKeyless(ctx, t)
	}
	return res, w.fix.flush(ctx)
}

func (w *worker) compareOnly(ctx context.Context, t *table, s span) (*spanResult, error) {
	if !w.cfg.MySQL {
		if t.key != nil && !t.sums.pay() {
			return w.compareHashes(ctx, t, s)
		}
		res, same, err := w.sums(ctx, t, s)
		if err != nil || same || t.key == nil {
			return res, err
		}
		t.sums.differed()
		return w.compareHashes(ctx, t, s)
	}
	var fix *fixer
	if w.cfg.Repair != nil && t.key != nil {
		var err error
		if fix, err = w.fixer(ctx, t); err != nil {
			return nil, err
		}
	}
	srcRows, err := w.sourceRows(ctx, t, s)
	if err != nil {
		return nil, err
	}
	tgtRows, err := w.targetRows(ctx, t, s)
	if err != nil {
		srcRows.Close()
		return nil, err
	}
	var res *spanResult
	if t.key == nil {
		res = &spanResult{}
		err = sumRows(srcRows, t.src, &res.SourceRows, &res.sourceHash)
		if err == nil {
			err = sumRows(tgtRows, t.tgt, &res.TargetRows, &res.targetHash)
		}
	} else {
		res, err = merge(ctx, t, srcRows, tgtRows, w.cfg.MaxKeys, fix)
	}
	if err := closeBoth(t, srcRows, tgtRows, err); err != nil {
		return nil, err
	}
	return res, nil
}

// sourceRows streams a span's compared columns from the source, in key
// order.
func (w *worker) sourceRows(ctx context.Context, t *table, s span) (rawRows, error) {
	src, err := w.source(ctx)
	if err != nil {
		return nil, err
	}
	q, args := t.srcQuery(s)
	return pgRows{src.PgConn().ExecParams(ctx, q, args, nil, nil, nil)}, nil
}

// targetRows is sourceRows for the target.
func (w *worker) targetRows(ctx context.Context, t *table, s span) (rawRows, error) {
	if !w.cfg.MySQL {
		tgt, err := w.target(ctx)
		if err != nil {
			return nil, err
		}
		q, args := t.pgTargetQuery(s)
		return pgRows{tgt.PgConn().ExecParams(ctx, q, args, nil, nil, nil)}, nil
	}
	q, margs, err := t.mysqlTargetQuery(s)
	if err == nil {
		var rows *sql.Rows
		if rows, err = w.run.my.QueryContext(ctx, q, margs...); err == nil {
			return newMySQLRows(rows, len(t.tgtCols)), nil
		}
		err = mysql.Describe(err)
	}
	return nil, fmt.Errorf("read target table %s: %w", t.target, err)
}

// sumSQL counts a span's rows and sums their 64-bit row hashes
// (rowHashSQL): equal spans give equal sums; a difference that cancels
// out in the sum takes a 64-bit coincidence.
const sumSQL = "SELECT count(*), coalesce(sum(%s), 0)::text FROM %s"

// sums has both PostgreSQL servers count and checksum a span. For a table
// without a key the result is final: it says whether the rows differ,
// which is all the streamed comparison could say too.
func (w *worker) sums(ctx context.Context, t *table, s span) (res *spanResult, same bool, err error) {
	src, err := w.source(ctx)
	if err != nil {
		return nil, false, err
	}
	tgt, err := w.target(ctx)
	if err != nil {
		return nil, false, err
	}
	query := func(cols, keys []string, from string) (string, [][]byte) {
		q := fmt.Sprintf(sumSQL, t.rowHashSQL(cols), from)
		if t.key == nil {
			return q, nil
		}
		cond, args := pgSpan(keys, s, 1)
		return q + " WHERE " + cond, args
	}
	// Both servers sum at once: the source's result is read while the
	// target works on its own.
	res = &spanResult{}
	var srcSum, tgtSum string
	q, args := query(t.srcHash, t.srcKey, t.srcFrom())
	srcRR := src.PgConn().ExecParams(ctx, q, args, nil, nil, nil)
	q, args = query(t.tgtHash, t.tgtKey, t.tgtFrom(false))
	tgtRR := tgt.PgConn().ExecParams(ctx, q, args, nil, nil, nil)
	serr := scanSum(srcRR, &res.SourceRows, &srcSum)
	terr := scanSum(tgtRR, &res.TargetRows, &tgtSum)
	switch {
	case serr != nil:
		return nil, false, fmt.Errorf("checksum source table %s: %w", t.def.Name, serr)
	case terr != nil:
		return nil, false, fmt.Errorf("checksum target table %s: %w", t.target, pg.Describe(terr))
	}
	res.sourceHash[0], res.targetHash[0] = hash64([]byte(srcSum)), hash64([]byte(tgtSum))
	t.sums.tried()
	return res, !res.differs(), nil
}

// scanSum reads a span's count and sum, and always closes rr.
func scanSum(rr *pgconn.ResultReader, count *int64, sum *string) error {
	var err error
	for rr.NextRow() {
		v := rr.Values()
		if err == nil {
			*count, err = strconv.ParseInt(string(v[0]), 10, 64)
			*sum = string(v[1])
		}
	}
	if _, cerr := rr.Close(); cerr != nil {
		return cerr
	}
	return err
}
