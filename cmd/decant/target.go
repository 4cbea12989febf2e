package main

import (
	"context"
	"log/slog"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/apply/mysql"
	"github.com/decant/decant/apply/pg"
	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
)

// targetAdmin is what init, status and drop need from a target dialect
// (apply/pg.Admin, apply/mysql.Admin).
type targetAdmin interface {
	Check(ctx context.Context, rels []*source.Relation) (missing []source.TableName, problems, notes []string, err error)
	CheckCreate(defs []*source.TableDef) (problems []string)
	Create(ctx context.Context, defs []*source.TableDef, indexes bool) (notes []string, err error)
	CreateIndexes(ctx context.Context, defs []*source.TableDef) error
	Empty(ctx context.Context, tables []source.TableName) error
	DropUnfinished(ctx context.Context, tables []source.TableName) ([]source.TableName, error)
	EnsureCheckpoint(ctx context.Context, row checkpoint.Row) (checkpoint.Row, bool, error)
	ReadCheckpoint(ctx context.Context, pipeline string) (checkpoint.Row, error)
	DeleteCheckpoint(ctx context.Context, pipeline string) (bool, error)
	RecordSchema(ctx context.Context, defs []*source.TableDef) error
	ForgetSchema(ctx context.Context) error
	LoadSchema(ctx context.Context) (map[uint32]*source.TableDef, error)
	Close(ctx context.Context)
}

var (
	_ targetAdmin = (*pg.Admin)(nil)
	_ targetAdmin = (*mysql.Admin)(nil)
)

// mysqlTarget reports whether the target DSN names MySQL or MariaDB.
func (c *config) mysqlTarget() bool { return mysql.IsDSN(c.Target) }

func (c *config) router() *mapping.Router { return mapping.NewRouter(c.rules, c.mysqlTarget()) }

func (c *config) pgConfig(log *slog.Logger) pg.Config {
	return pg.Config{DSN: c.Target, Pipeline: c.Pipeline, Router: c.router(), Columns: c.columns,
		SkipUnsupportedDDL: c.OnUnsupportedDDL == "skip", Timeout: c.targetTimeout, Plain: !c.compacts(),
		AsyncCommit: c.SynchronousCommit == "off", Logger: log}
}

// compacts reports whether run applies net changes (--compact, on unless
// turned off).
func (c *config) compacts() bool { return c.Compact == nil || *c.Compact }

func (c *config) mysqlConfig(log *slog.Logger) mysql.Config {
	return mysql.Config{DSN: c.Target, Pipeline: c.Pipeline, Router: c.router(), Columns: c.columns, Policy: c.policy,
		SkipUnsupportedDDL: c.OnUnsupportedDDL == "skip", Timeout: c.targetTimeout, Plain: !c.compacts(), Logger: log}
}

// openAdmin connects to the target for setup work.
func openAdmin(ctx context.Context, c config) (targetAdmin, error) {
	if c.mysqlTarget() {
		return mysql.OpenAdmin(ctx, c.mysqlConfig(nil))
	}
	return pg.OpenAdmin(ctx, c.pgConfig(nil))
}

// newTarget returns the writer for the target.
func newTarget(c config, log *slog.Logger) (apply.Target, error) {
	if c.mysqlTarget() {
		return mysql.New(c.mysqlConfig(log))
	}
	return pg.New(c.pgConfig(log))
}
