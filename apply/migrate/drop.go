package migrate

import "context"

// Dropped says what a drop removed; false where there was nothing.
type Dropped struct {
	Slot, Publication, AppendOnlyPublication, DDLCapture, Checkpoint bool
	// Origins is how many replication origins of the pipeline's apply
	// sessions were removed from a PostgreSQL target.
	Origins int
}

// Drop removes a PostgreSQL pipeline: the slot first (refused while a run
// uses it, so nothing below is removed under a running pipeline), the
// publication and the append-only one, the DDL capture, the recorded table definitions, the copy
// state, the replication origins of a PostgreSQL target, and last the
// checkpoint row. On an error it returns what it had
// removed so far.
func Drop(ctx context.Context, cfg Config) (Dropped, error) {
	e, err := newEnv(cfg)
	if err != nil {
		return Dropped{}, err
	}
	src, tgt, err := e.connectBoth(ctx)
	if err != nil {
		return Dropped{}, err
	}
	defer src.Close(ctx)
	defer tgt.Close(ctx)
	return e.drop(ctx, src, tgt)
}

func (e *env) drop(ctx context.Context, src PGSource, tgt target) (Dropped, error) {
	var d Dropped
	var err error
	if d.Slot, err = src.DropSlot(ctx); err != nil {
		return d, err
	}
	if d.Publication, d.AppendOnlyPublication, err = src.DropPublications(ctx); err != nil {
		return d, err
	}
	if d.DDLCapture, err = src.RemoveDDLCapture(ctx); err != nil {
		return d, err
	}
	if err := tgt.ForgetSchema(ctx); err != nil {
		return d, err
	}
	if err := tgt.ForgetCopy(ctx); err != nil {
		return d, err
	}
	if d.Origins, err = dropOrigins(ctx, tgt); err != nil {
		return d, err
	}
	d.Checkpoint, err = tgt.DeleteCheckpoint(ctx, e.cfg.Pipeline)
	return d, err
}

// originDropper is a target whose apply sessions mark their transactions
// with replication origins (apply/pg.Admin).
type originDropper interface {
	DropOrigins(ctx context.Context) (int, error)
}

// dropOrigins removes the pipeline's replication origins where the
// target keeps them.
func dropOrigins(ctx context.Context, tgt target) (int, error) {
	var a any = tgt
	if s, ok := tgt.(targetSession); ok {
		a = s.Admin
	}
	if o, ok := a.(originDropper); ok {
		return o.DropOrigins(ctx)
	}
	return 0, nil
}
