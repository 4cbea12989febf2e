package main

import (
	"context"
	"log/slog"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/apply/migrate"
	"github.com/decant/decant/apply/mysql"
	"github.com/decant/decant/apply/pg"
	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source/gauss"
	"github.com/decant/decant/source/pgoutput"
)

// mysqlTarget reports whether the target DSN names MySQL or MariaDB.
func (c *config) mysqlTarget() bool { return mysql.IsDSN(c.Target) }

// targetHasSlot looks for a slot on a PostgreSQL target, for the
// reader's loop prevention; nil for a MySQL target, which is never a
// decant source.
func (c *config) targetHasSlot() func(context.Context, string) (bool, error) {
	if c.mysqlTarget() {
		return nil
	}
	return func(ctx context.Context, slot string) (bool, error) { return pg.HasSlot(ctx, c.Target, slot) }
}

func (c *config) router() *mapping.Router { return mapping.NewRouter(c.rules, c.mysqlTarget()) }

// workflow is the configuration of apply/migrate's workflows, with the
// source's setup sessions wired in.
func (c *config) workflow(log *slog.Logger) migrate.Config {
	return migrate.Config{Source: c.Source, Target: c.Target, Pipeline: c.Pipeline, Tables: c.filter,
		Router: c.router(), Columns: c.columns, Policy: c.policy, Gauss: c.gauss, Logger: log,
		OpenSource: c.openPGSource, OpenGauss: c.openGaussSource}
}

var (
	_ migrate.PGSource     = (*pgoutput.Admin)(nil)
	_ migrate.GaussSource  = (*gauss.Admin)(nil)
	_ migrate.GaussOptions = gauss.Options{}
)

// openPGSource opens the pipeline's setup session on a PostgreSQL source.
func (c *config) openPGSource(ctx context.Context) (migrate.PGSource, error) {
	a, err := pgoutput.OpenAdmin(ctx, c.Source, c.Pipeline)
	if err != nil {
		return nil, err // not a nil *Admin in a non-nil interface
	}
	return a, nil
}

// openGaussSource opens the pipeline's setup session on a GaussDB or
// openGauss source.
func (c *config) openGaussSource(ctx context.Context) (migrate.GaussSource, error) {
	a, err := gauss.OpenAdmin(ctx, c.Source, c.Pipeline, c.gauss)
	if err != nil {
		return nil, err
	}
	return a, nil
}

func (c *config) pgConfig(log *slog.Logger) pg.Config {
	return pg.Config{DSN: c.Target, Pipeline: c.Pipeline, Router: c.router(), Columns: c.columns,
		SkipUnsupportedDDL: c.OnUnsupportedDDL == "skip", Timeout: c.targetTimeout, Plain: !c.compacts(),
		AsyncCommit: c.SynchronousCommit == "off", Conflicts: c.conflicts, Logger: log}
}

// compacts reports whether run applies net changes (--compact, on unless
// turned off).
func (c *config) compacts() bool { return c.Compact }

func (c *config) mysqlConfig(log *slog.Logger) mysql.Config {
	return mysql.Config{DSN: c.Target, Pipeline: c.Pipeline, Router: c.router(), Columns: c.columns, Policy: c.policy,
		SkipUnsupportedDDL: c.OnUnsupportedDDL == "skip", Timeout: c.targetTimeout, Plain: !c.compacts(), Conflicts: c.conflicts, Logger: log}
}

// newTarget returns the writer for the target.
func newTarget(c config, log *slog.Logger) (apply.Target, error) {
	if c.mysqlTarget() {
		return mysql.New(c.mysqlConfig(log))
	}
	return pg.New(c.pgConfig(log))
}
