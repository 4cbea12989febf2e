// Package bulk is decant's initial copy: it copies the selected source
// tables, as of a snapshot exported by the source when the replication
// slot was created (CREATE_REPLICATION_SLOT ... SNAPSHOT 'export', see
// PostgreSQL's "Exported Snapshots" and SET TRANSACTION SNAPSHOT), into a
// PostgreSQL or MySQL/MariaDB target, in parallel and resumably. Streaming
// then starts at the slot's consistent point, where the snapshot ends.
//
// Each table is cut into tasks: one for a small table, block (ctid) ranges
// of about Config.SplitBytes for a large one, which PostgreSQL 14 and later
// read with a TID Range Scan. A task's rows and the row marking it done in
// the target's copy state (decant.copy_state, decant_copy_state on MySQL)
// commit in one target transaction, so every task lands exactly once: a
// task interrupted by a crash leaves nothing, and Copy run again with the
// same AsOf copies only the tasks not done. The task list is stored with
// the first run and reused by later ones, so it never changes under a
// resumed copy.
//
// Rows stream from COPY ... TO STDOUT on the source into COPY ... FROM
// STDIN on a PostgreSQL target (binary when every column has the same
// built-in type on both sides and that type, with what its values are
// made of, has binary send and receive functions there; text otherwise,
// as for aclitem), or, for MySQL, through
// mapping's value converters (the ones the streaming writer uses) into
// LOAD DATA LOCAL INFILE, or multi-row INSERTs where the server does not
// allow local_infile. Nothing holds a whole table or task in memory.
//
// A fresh copy (a new AsOf) must start on empty target tables: Copy
// refuses a table none of whose tasks is done while its target table holds
// rows. Target tables are not truncated. Secondary indexes are the
// caller's: create tables without them, copy, then build them.
package bulk

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"time"

	"github.com/decant/decant/apply/mysql"
	"github.com/decant/decant/apply/pg"
	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
	"github.com/decant/decant/source/pgsession"
)

// Config is one copy job.
type Config struct {
	Source string // source DSN (postgres://); workers open plain sessions to it
	// Snapshot is the exported snapshot's name; every source session runs
	// BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY and SET TRANSACTION
	// SNAPSHOT with it. The session that exported it must stay open (and
	// idle) until Copy returns.
	Snapshot string
	// AsOf is the position the snapshot corresponds to (the slot's
	// consistent point). It is stored with the copy state; Copy refuses a
	// target whose stored copy has another AsOf.
	AsOf     source.LSN
	Target   string // postgres:// URL or a MySQL DSN (mysql.IsDSN tells)
	Pipeline string
	// Tables are the source definitions of the tables to copy
	// (pgoutput.DescribeTable). Stored generated columns are not copied,
	// as pgoutput does not publish them.
	Tables  []*source.TableDef
	Router  *mapping.Router                          // source → target table; the dialect's default when nil
	Columns map[source.TableName]mapping.ColumnRules // renames and excludes, by source table
	Policy  mapping.Policy                           // MySQL: values the target cannot hold
	Jobs    int                                      // parallel workers; runtime.NumCPU() when 0
	// SplitBytes: tables larger than this (pg_relation_size) are split into
	// block (ctid) ranges of about this size, copied in parallel; 64 MiB
	// when 0. Sources before PostgreSQL 14 (no TID Range Scan) are not
	// split: every range would read the whole table.
	SplitBytes int64
	Progress   Progress // may be nil
	Logger     *slog.Logger
}

// DefaultSplitBytes is SplitBytes when the config leaves it 0.
const DefaultSplitBytes = 64 << 20

// Validate checks the config without connecting anywhere.
func (c Config) Validate() error {
	if _, err := pgsession.ParseDSN(c.Source); err != nil {
		return fmt.Errorf("copy source: %w", err)
	}
	if c.Snapshot == "" {
		return errors.New("copy: no snapshot name: the copy reads the snapshot exported with the replication slot")
	}
	if c.AsOf == 0 {
		return errors.New("copy: no AsOf position: pass the slot's consistent point")
	}
	if err := checkTargetDSN(c.Target); err != nil {
		return err
	}
	if c.Pipeline == "" {
		return errors.New("copy: no pipeline name")
	}
	if c.Jobs < 0 || c.SplitBytes < 0 {
		return errors.New("copy: Jobs and SplitBytes must not be negative")
	}
	seen := map[source.TableName]bool{}
	for _, def := range c.Tables {
		if seen[def.Name] {
			return fmt.Errorf("copy: table %s listed twice", def.Name)
		}
		seen[def.Name] = true
	}
	return nil
}

func checkTargetDSN(dsn string) error {
	var err error
	if mysql.IsDSN(dsn) {
		_, err = mysql.ParseDSN(dsn)
	} else {
		_, err = pgsession.ParseDSN(dsn)
	}
	if err != nil {
		return fmt.Errorf("copy target: %w", err)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.Jobs == 0 {
		c.Jobs = runtime.NumCPU()
	}
	if c.SplitBytes == 0 {
		c.SplitBytes = DefaultSplitBytes
	}
	if c.Router == nil {
		c.Router = mapping.NewRouter(nil, mysql.IsDSN(c.Target))
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Progress receives what the copy does, for progress bars and log lines.
// Calls are serialised: an implementation need not lock.
type Progress interface {
	// Planned gives a table's estimates before copying: rows from
	// reltuples (0 when the table was never analysed) and bytes from
	// pg_relation_size (its size on disk, which is not what Copied
	// counts: use rows, or Done, for a percentage).
	Planned(table source.TableName, rows, bytes int64)
	// Copied adds rows and bytes of COPY data read from the source, at
	// least every 64 KiB or every second of a task. A resumed table first
	// gets the totals of its tasks done before. A task that fails has
	// reported its rows although they were rolled back; Copy then fails.
	Copied(table source.TableName, rows, bytes int64)
	// Done says every task of the table has finished.
	Done(table source.TableName)
}

// Result totals what one Copy call did.
type Result struct {
	Tables  int   // tables finished by this call
	Tasks   int   // tasks copied by this call
	Skipped int   // tasks found done (by an earlier call) and not copied again
	Rows    int64 // rows copied by this call
	Bytes   int64 // COPY data read from the source by this call
	Elapsed time.Duration
}

var (
	// ErrSnapshotGone means the exported snapshot no longer exists on the
	// source (the session that exported it has ended or moved on), so the
	// remaining tasks cannot be copied as of AsOf. The copy must start over
	// from a new slot and snapshot, on emptied target tables.
	ErrSnapshotGone = errors.New("the exported snapshot no longer exists on the source")
	// ErrDifferentAsOf means the target holds the copy state of another
	// copy of the pipeline (another AsOf).
	ErrDifferentAsOf = errors.New("the target holds another copy of this pipeline")
	// ErrNotEmpty means a table with no task done has rows on the target.
	ErrNotEmpty = errors.New("target table is not empty")
)

// Copy copies every task of cfg.Tables not yet recorded as done for the
// pipeline and AsOf, returning totals. It is safe to call again after a
// failure or crash with the same AsOf (and snapshot, which must still
// exist when tasks remain): done tasks are skipped. A first call for an
// AsOf requires empty target tables.
func Copy(ctx context.Context, cfg Config) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	start := time.Now()
	c := &copier{cfg: cfg.withDefaults(), prog: &progress{p: cfg.Progress}}
	c.log = c.cfg.Logger
	res, err := c.run(ctx)
	res.Elapsed = time.Since(start)
	// The sessions' server errors that no statement described say
	// whether the caller may retry, as the writers' do.
	return res, pg.Classify(err)
}

// Pending reports the pipeline's copy on the target: its AsOf (0 when the
// target holds no copy state) and the source tables with tasks not done
// (none when the copy finished).
func Pending(ctx context.Context, target, pipeline string) (asOf source.LSN, remaining []source.TableName, err error) {
	if err := checkTargetDSN(target); err != nil {
		return 0, nil, err
	}
	t, err := openTarget(ctx, target)
	if err != nil {
		return 0, nil, err
	}
	defer t.close(ctx)
	tasks, err := t.loadState(ctx, pipeline)
	if err != nil {
		return 0, nil, err
	}
	seen := map[source.TableName]bool{}
	for _, ts := range tasks {
		asOf = ts.AsOf
		if !ts.Done && !seen[ts.Table] {
			seen[ts.Table] = true
			remaining = append(remaining, ts.Table)
		}
	}
	return asOf, remaining, nil
}

// Forget removes the pipeline's copy state from the target (decant drop).
// The copied rows stay.
func Forget(ctx context.Context, target, pipeline string) error {
	if err := checkTargetDSN(target); err != nil {
		return err
	}
	t, err := openTarget(ctx, target)
	if err != nil {
		return err
	}
	defer t.close(ctx)
	return t.forget(ctx, pipeline)
}
