package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source"
	"github.com/decant/decant/source/gauss"
)

// GaussDB and openGauss sources have no publications: the tables come
// from the white-table-list decoding option (from --tables), and the slot
// is created with pg_create_logical_replication_slot.

func gaussReader(c config, log *slog.Logger) (apply.Source, error) {
	warnOptions(c, log)
	if c.StreamApply != "spool" {
		return nil, usagef("--stream-apply is for PostgreSQL sources, which stream transactions in progress; GaussDB sends each transaction whole")
	}
	return gauss.NewReader(gauss.Config{DSN: c.Source, Slot: c.Pipeline, Options: c.gauss, Tables: c.filter, Logger: log,
		MaxTxnMemory: c.memory, SpoolDir: c.SpillDir, Timeout: c.sourceTimeout,
		Schema: func(ctx context.Context) (map[uint32]*source.TableDef, error) {
			tgt, err := openAdmin(ctx, c)
			if err != nil {
				return nil, err
			}
			defer tgt.Close(ctx)
			return tgt.LoadSchema(ctx)
		}})
}

// warnOptions logs decoding options that are valid but have no effect.
func warnOptions(c config, log *slog.Logger) {
	for _, w := range c.gauss.Warnings() {
		log.Warn(w)
	}
}

func initGauss(ctx context.Context, c config, o initOptions, log *slog.Logger) error {
	if o.ddl && !c.gauss.DDL() {
		return usagef("--ddl needs the decoding option enable-ddl-decoding=true (--source-option enable-ddl-decoding=true), or the source does not send DDL")
	}
	warnOptions(c, log)
	src, err := gauss.OpenAdmin(ctx, c.Source)
	if err != nil {
		return err
	}
	defer src.Close(ctx)
	tgt, err := openAdmin(ctx, c)
	if err != nil {
		return err
	}
	defer tgt.Close(ctx)

	stored, err := tgt.ReadCheckpoint(ctx, c.Pipeline)
	hasRow := err == nil
	if err != nil && !errors.Is(err, checkpoint.ErrNotFound) {
		return err
	}
	slot, err := src.Slot(ctx, c.Pipeline)
	if err != nil {
		return err
	}
	if hasRow && !slot.Exists {
		return fmt.Errorf("the target holds a checkpoint for pipeline %s but slot %s is missing on the source, so changes after it are lost: run decant drop --yes, then init again and recopy the tables", c.Pipeline, c.Pipeline)
	}
	if hasRow && stored.SystemID != slot.SystemID {
		return fmt.Errorf("the target holds pipeline %s from source system %s, but this source is %s: use another --pipeline or run decant drop --yes for it", c.Pipeline, stored.SystemID, slot.SystemID)
	}
	if o.create || o.ddl {
		if err := gaussTables(ctx, c, tgt, o, log); err != nil {
			return err
		}
	}
	slot, created, err := src.EnsureSlot(ctx, c.Pipeline, c.gauss.CSNOrder())
	if err != nil {
		return err
	}
	row, rowCreated, err := tgt.EnsureCheckpoint(ctx, checkpoint.Row{
		Pipeline: c.Pipeline, SystemID: slot.SystemID, Commit: slot.Confirmed, End: slot.Confirmed, CSN: slot.ConfirmedCSN,
	})
	if err != nil {
		return err
	}
	if created {
		log.Info("slot created", "slot", c.Pipeline, "plugin", gauss.Plugin, "position", slot.Confirmed.String(), "csn", slot.ConfirmedCSN)
	}
	if !created && !rowCreated {
		fmt.Printf("pipeline %s is already initialized (checkpoint %s); nothing to do\n", c.Pipeline, positionText(row))
		return nil
	}
	fmt.Printf("pipeline %s initialized: slot and checkpoint at %s\n", c.Pipeline, positionText(row))
	return nil
}

// gaussTables reads the selected tables from the source catalog, creates
// the missing ones on the target (--create-tables) and records their
// definitions for schema changes to start from (--ddl).
func gaussTables(ctx context.Context, c config, tgt targetAdmin, o initOptions, log *slog.Logger) error {
	defs, err := gauss.DescribeTables(ctx, c.Source, c.filter, c.gauss.Rowno())
	if err != nil {
		return err
	}
	if len(defs) == 0 {
		return fmt.Errorf("no source table matches --tables %q; nothing to replicate", c.filter)
	}
	if o.create {
		rels := make([]*source.Relation, len(defs))
		for i, d := range defs {
			rels[i] = d.Relation()
		}
		missing, _, _, err := tgt.Check(ctx, rels)
		if err != nil {
			return err
		}
		router := c.router()
		var create []*source.TableDef
		for _, d := range defs {
			if slices.Contains(missing, router.Route(d.Name)) {
				create = append(create, d)
			}
		}
		if err := createDefs(ctx, c, tgt, create, true, log); err != nil {
			return err
		}
	}
	if o.ddl {
		if err := tgt.RecordSchema(ctx, defs); err != nil {
			return err
		}
		log.Info("table definitions recorded for schema changes", "pipeline", c.Pipeline, "tables", len(defs))
	}
	return nil
}

func positionText(r checkpoint.Row) string {
	if r.CSN != 0 {
		return fmt.Sprintf("%s (CSN %d)", r.End, r.CSN)
	}
	return r.End.String()
}

func statusGauss(ctx context.Context, c config) (status, error) {
	st := status{Pipeline: c.Pipeline}
	src, err := gauss.OpenAdmin(ctx, c.Source)
	if err != nil {
		return st, err
	}
	defer src.Close(ctx)
	tgt, err := openAdmin(ctx, c)
	if err != nil {
		return st, err
	}
	defer tgt.Close(ctx)
	s, err := src.Slot(ctx, c.Pipeline)
	if err != nil {
		return st, err
	}
	st.SourceLSN = s.Current.String()
	st.Slot = slotStatus{Exists: s.Exists, Active: s.Active}
	if s.Exists {
		st.Slot.Confirmed = s.Confirmed.String()
		st.Slot.ConfirmedCSN = s.ConfirmedCSN
	}
	cp, err := tgt.ReadCheckpoint(ctx, c.Pipeline)
	if errors.Is(err, checkpoint.ErrNotFound) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	st.fillCheckpoint(cp, s.Current)
	if !s.Active && st.LagBytes > 0 {
		st.LagSeconds = time.Since(cp.AppliedTime).Seconds()
	}
	return st, nil
}

func dropGauss(ctx context.Context, c config) (slot, row bool, err error) {
	src, err := gauss.OpenAdmin(ctx, c.Source)
	if err != nil {
		return false, false, err
	}
	defer src.Close(ctx)
	tgt, err := openAdmin(ctx, c)
	if err != nil {
		return false, false, err
	}
	defer tgt.Close(ctx)
	if slot, err = src.DropSlot(ctx, c.Pipeline); err != nil {
		return false, false, err
	}
	if err := tgt.ForgetSchema(ctx); err != nil {
		return false, false, err
	}
	row, err = tgt.DeleteCheckpoint(ctx, c.Pipeline)
	return slot, row, err
}
