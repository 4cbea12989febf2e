package main

import (
	"context"
	"log/slog"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/apply/migrate"
	"github.com/decant/decant/source"
	"github.com/decant/decant/source/gauss"
)

// gaussReader reads a GaussDB or openGauss source. It has no
// publication: the tables come from the white-table-list decoding option
// (from --tables). Options that are valid but have no effect are logged.
func gaussReader(c config, log *slog.Logger, spill *source.SpillUsage) (apply.Source, error) {
	for _, w := range c.gauss.Warnings() {
		log.Warn(w)
	}
	if c.StreamApply != "spool" {
		return nil, usagef("--stream-apply is for PostgreSQL sources, which stream transactions in progress; GaussDB sends each transaction whole")
	}
	return gauss.NewReader(gauss.Config{DSN: c.Source, Slot: c.Pipeline, Options: c.gauss, Tables: c.filter, Logger: log,
		MaxTxnMemory: c.memory, SpoolDir: c.SpillDir, Timeout: c.sourceTimeout, Spill: spill,
		Schema: func(ctx context.Context) (map[uint32]*source.TableDef, error) {
			tgt, err := migrate.OpenTarget(ctx, c.workflow(nil))
			if err != nil {
				return nil, err
			}
			defer tgt.Close(ctx)
			return tgt.LoadSchema(ctx)
		}})
}
