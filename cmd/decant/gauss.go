package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source/gauss"
)

// GaussDB and openGauss sources have no publications: the tables come
// from the white-table-list decoding option (from --tables), and the slot
// is created with pg_create_logical_replication_slot.

func gaussReader(c config, log *slog.Logger) (apply.Source, error) {
	warnOptions(c, log)
	return gauss.NewReader(gauss.Config{DSN: c.Source, Slot: c.Pipeline, Options: c.gauss, Logger: log})
}

// warnOptions logs decoding options that are valid but have no effect.
func warnOptions(c config, log *slog.Logger) {
	for _, w := range c.gauss.Warnings() {
		log.Warn(w)
	}
}

func initGauss(ctx context.Context, c config, create bool, log *slog.Logger) error {
	if create {
		return usagef("--create-tables reads the source catalog and is not supported for GaussDB and openGauss sources yet; create the target tables first")
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
