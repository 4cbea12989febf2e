// Package migrate holds decant's workflows around the stream: init (the
// publication, the slot and the checkpoint, with or without the initial
// copy), cutover (fence, catch-up, sequences, verify), verify, status and
// drop, for a PostgreSQL source and, where they apply, GaussDB and
// openGauss ones. Each is a function of an explicit Config and options;
// none parses flags, prints or exits: results come back as values, and
// progress as callbacks.
//
// The steps keep an order that makes the initial copy exact
// (PostgreSQL's "Exported Snapshots" and CREATE_REPLICATION_SLOT ...
// SNAPSHOT 'export'): the slot is created together with a snapshot of the
// moment it became consistent, every table is copied under that snapshot,
// and only then is the checkpoint row written at the slot's consistent
// point. Streaming from there neither misses nor repeats a transaction,
// and a target without the checkpoint row is never streamed into.
package migrate

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/decant/decant/apply/bulk"
	"github.com/decant/decant/apply/mysql"
	"github.com/decant/decant/apply/pg"
	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
)

// Config is what every workflow needs: both ends, the pipeline, and what
// the selected source tables become on the target.
type Config struct {
	// Source is the source DSN: postgres://, or gaussdb:// and
	// opengauss:// for the Gauss functions.
	Source string
	// Target is the target DSN: postgres://, or MySQL (mysql.IsDSN).
	Target string
	// Pipeline names the slot, the publication and the checkpoint row.
	Pipeline string
	// Tables selects the source tables (the empty filter: all of them).
	Tables  source.TableFilter
	Router  *mapping.Router // source → target table; the target dialect's default when nil
	Columns map[source.TableName]mapping.ColumnRules
	Policy  mapping.Policy // values a MySQL target cannot hold
	// OpenSource opens a PostgreSQL source's setup session for the
	// pipeline (source/pgoutput.OpenAdmin); the Gauss functions do not use
	// it.
	OpenSource func(ctx context.Context) (PGSource, error)
	// OpenGauss opens a GaussDB or openGauss source's setup session for
	// the pipeline (source/gauss.OpenAdmin), and Gauss are its decoding
	// options: for the Gauss functions only.
	OpenGauss func(ctx context.Context) (GaussSource, error)
	Gauss     GaussOptions
	Logger    *slog.Logger // nil discards
}

// Validate fills in defaults and checks what is required.
func (c *Config) Validate() error {
	switch {
	case c.Source == "":
		return errors.New("migrate: no source DSN")
	case c.Target == "":
		return errors.New("migrate: no target DSN")
	case c.Pipeline == "":
		return errors.New("migrate: no pipeline name")
	}
	if c.Router == nil {
		c.Router = mapping.NewRouter(nil, c.MySQLTarget())
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// MySQLTarget reports whether the target is MySQL or MariaDB.
func (c *Config) MySQLTarget() bool { return mysql.IsDSN(c.Target) }

// UsageError is a request a workflow refuses as it was asked, found only
// once it looked at the servers: the caller changes how it calls decant
// (decant exits 2 for it, as for a bad flag).
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Admin is a target dialect's setup session (apply/pg.Admin,
// apply/mysql.Admin).
type Admin interface {
	Check(ctx context.Context, rels []*source.Relation) (missing []source.TableName, problems, notes []string, err error)
	CheckCreate(defs []*source.TableDef) (problems []string)
	Create(ctx context.Context, defs []*source.TableDef, indexes bool) (notes []string, err error)
	CreateIndexes(ctx context.Context, defs []*source.TableDef) error
	Empty(ctx context.Context, tables []source.TableName) error
	DropUnfinished(ctx context.Context, tables []source.TableName) ([]source.TableName, error)
	EnsureCheckpoint(ctx context.Context, row checkpoint.Row) (checkpoint.Row, bool, error)
	ReadCheckpoint(ctx context.Context, pipeline string) (checkpoint.Row, error)
	DeleteCheckpoint(ctx context.Context, pipeline string) (bool, error)
	ResetCheckpoint(ctx context.Context, row checkpoint.Row) error
	RecordSchema(ctx context.Context, defs []*source.TableDef) error
	ForgetSchema(ctx context.Context) error
	LoadSchema(ctx context.Context) (map[uint32]*source.TableDef, error)
	SyncSequence(ctx context.Context, s source.Sequence) (string, error)
	// ReadSkips, RequestSkip and CancelSkip keep decant.skipped
	// (checkpoint.Skip): ReadSkips returns the rows not yet skipped, then
	// the last n skipped.
	ReadSkips(ctx context.Context, n int) ([]checkpoint.Skip, error)
	RequestSkip(ctx context.Context, s checkpoint.Skip) error
	CancelSkip(ctx context.Context) (bool, error)
	Close(ctx context.Context)
}

var (
	_ Admin = (*pg.Admin)(nil)
	_ Admin = (*mysql.Admin)(nil)
)

// OpenTarget opens a setup session on the target.
func OpenTarget(ctx context.Context, cfg Config) (Admin, error) {
	if cfg.MySQLTarget() {
		return mysql.OpenAdmin(ctx, mysql.Config{DSN: cfg.Target, Pipeline: cfg.Pipeline, Router: cfg.Router, Columns: cfg.Columns, Policy: cfg.Policy})
	}
	return pg.OpenAdmin(ctx, pg.Config{DSN: cfg.Target, Pipeline: cfg.Pipeline, Router: cfg.Router, Columns: cfg.Columns})
}

// target is the target as the workflows use it: the setup session, and
// the initial copy's state there.
type target interface {
	Admin
	CopyPending(ctx context.Context) (asOf source.LSN, remaining []source.TableName, err error)
	// ForgetCopy forgets the initial copy's state, and add-tables' too.
	ForgetCopy(ctx context.Context) error
	// ReadSyncs and SetSyncs keep the states of the tables add-tables
	// brings in (decant.table_sync); ForgetAddCopy forgets the copy state
	// of an add-tables copy.
	ReadSyncs(ctx context.Context) ([]checkpoint.TableSync, error)
	SetSyncs(ctx context.Context, syncs []checkpoint.TableSync) error
	ForgetAddCopy(ctx context.Context) error
}

// targetSession reads the copy state through apply/bulk, which keeps it.
type targetSession struct {
	Admin
	dsn, pipeline string
}

var _ target = targetSession{}

func (t targetSession) CopyPending(ctx context.Context) (source.LSN, []source.TableName, error) {
	return bulk.Pending(ctx, t.dsn, t.pipeline)
}

func (t targetSession) ForgetCopy(ctx context.Context) error {
	if err := bulk.Forget(ctx, t.dsn, t.pipeline); err != nil {
		return err
	}
	if err := t.ForgetAddCopy(ctx); err != nil {
		return err
	}
	return bulk.ForgetSyncs(ctx, t.dsn, t.pipeline)
}

func (t targetSession) ReadSyncs(ctx context.Context) ([]checkpoint.TableSync, error) {
	return bulk.ReadSyncs(ctx, t.dsn, t.pipeline)
}

func (t targetSession) SetSyncs(ctx context.Context, syncs []checkpoint.TableSync) error {
	return bulk.SetSyncs(ctx, t.dsn, t.pipeline, syncs)
}

func (t targetSession) ForgetAddCopy(ctx context.Context) error {
	return bulk.Forget(ctx, t.dsn, SyncPipeline(t.pipeline))
}

// env is what a workflow connects to; tests give fakes.
type env struct {
	cfg    Config
	source func(ctx context.Context) (PGSource, error)
	target func(ctx context.Context) (target, error)
	copy   func(ctx context.Context, cfg bulk.Config) (bulk.Result, error)
	// backoff is the first wait before a copy resumes, and poll how often
	// a wait for the checkpoint reads it.
	backoff, poll time.Duration
}

// newEnv validates cfg and connects to the real servers.
func newEnv(cfg Config) (*env, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &env{
		cfg:    cfg,
		source: cfg.openSource,
		target: func(ctx context.Context) (target, error) {
			a, err := OpenTarget(ctx, cfg)
			if err != nil {
				return nil, err
			}
			return targetSession{Admin: a, dsn: cfg.Target, pipeline: cfg.Pipeline}, nil
		},
		copy:    bulk.Copy,
		backoff: time.Second,
		poll:    200 * time.Millisecond,
	}, nil
}

// connectBoth opens the source session, then the target session.
func (e *env) connectBoth(ctx context.Context) (PGSource, target, error) {
	src, err := e.source(ctx)
	if err != nil {
		return nil, nil, err
	}
	tgt, err := e.target(ctx)
	if err != nil {
		src.Close(ctx)
		return nil, nil, err
	}
	return src, tgt, nil
}
