package migrate

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/decant/decant/apply/verify"
	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source"
)

// VerifyOptions are verify's choices beyond Config.
type VerifyOptions struct {
	Jobs     int   // spans compared at once
	SpanRows int64 // source rows per span of a table's key
	MaxKeys  int   // keys listed per table and kind
	// RecheckWait bounds the wait for the target to catch up before
	// differing spans are compared again; 0 compares them again at once.
	RecheckWait time.Duration
}

// DefaultVerifyOptions are verify's defaults, which cutover uses.
func DefaultVerifyOptions() VerifyOptions {
	return VerifyOptions{Jobs: runtime.NumCPU(), SpanRows: 100_000, MaxKeys: 20, RecheckWait: 30 * time.Second}
}

// Verify compares the selected tables of a PostgreSQL source with their
// target tables (apply/verify). Spans that differ are compared again once
// the target has caught up with the source, so it can run while decant
// run applies changes.
func Verify(ctx context.Context, cfg Config, o VerifyOptions) (*verify.Report, error) {
	e, err := newEnv(cfg)
	if err != nil {
		return nil, err
	}
	src, err := e.source(ctx)
	if err != nil {
		return nil, err
	}
	defer src.Close(context.WithoutCancel(ctx))
	return e.verify(ctx, src, o)
}

func (e *env) verify(ctx context.Context, src PGSource, o VerifyOptions) (*verify.Report, error) {
	tables, err := src.SelectTables(ctx, e.cfg.Tables)
	if err != nil {
		return nil, err
	}
	if len(tables) == 0 {
		return nil, fmt.Errorf("no source table matches --tables %q; nothing to verify", e.cfg.Tables)
	}
	defs, err := describeTables(ctx, src, tables)
	if err != nil {
		return nil, err
	}
	// Append-only tables are compared as decant applies them: as
	// multisets of whole rows, by no key, even where a unique index
	// would offer one.
	pubs, err := src.ReadPublications(ctx)
	if err != nil {
		return nil, err
	}
	return verify.Run(ctx, verify.Config{
		Source: e.cfg.Source, Target: e.cfg.Target, MySQL: e.cfg.MySQLTarget(),
		Tables: defs, AppendOnly: pubs.AppendOnly, Router: e.cfg.Router, Columns: e.cfg.Columns, Policy: e.cfg.Policy,
		Jobs: o.Jobs, SpanRows: o.SpanRows, MaxKeys: o.MaxKeys, Logger: e.cfg.Logger,
		Settle: func(ctx context.Context) error { return e.settle(ctx, src, o.RecheckWait) },
	})
}

// settle waits until the target's checkpoint reaches the source's current
// WAL position (after a fence it writes), so that what still differs
// afterwards is not a change in flight. Without a running pipeline (its
// slot unused) there is nothing to wait for; past wait it gives up
// waiting, not verifying.
func (e *env) settle(ctx context.Context, src PGSource, wait time.Duration) error {
	if wait <= 0 {
		return nil
	}
	log := e.cfg.Logger
	slot, err := src.ReadSlot(ctx)
	if err != nil {
		return err
	}
	if !slot.Exists || !slot.Active {
		log.Info("the pipeline's slot is not in use; comparing the differing spans again now", "pipeline", e.cfg.Pipeline)
		return nil
	}
	// The fence (as cutover writes it) passes through the pipeline even
	// when nothing else does, so the checkpoint reaches it; WAL of other
	// databases alone would never move the checkpoint.
	pos, err := src.WriteFence(ctx)
	if err != nil {
		log.Warn("could not write a fence on the source; waiting for its current WAL position instead", "error", err.Error())
		pos = slot.Current
	}
	tgt, err := e.target(ctx)
	if err != nil {
		return err
	}
	defer tgt.Close(context.WithoutCancel(ctx))
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	cp, err := e.waitCheckpoint(wctx, tgt, source.Goal{LSN: pos})
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, checkpoint.ErrNotFound):
		return nil
	case err != nil:
		log.Warn("the target did not catch up within --recheck-wait; comparing the differing spans again anyway",
			"checkpoint", cp.End.String(), "source_wal", pos.String())
	default:
		log.Info("the target has caught up; comparing the differing spans again", "checkpoint", cp.End.String())
	}
	return nil
}
