package migrate

import "context"

// Dropped says what a drop removed; false where there was nothing.
type Dropped struct {
	Slot, Publication, AppendOnlyPublication, DDLCapture, Checkpoint bool
}

// Drop removes a PostgreSQL pipeline: the slot first (refused while a run
// uses it, so nothing below is removed under a running pipeline), the
// publication and the append-only one, the DDL capture, the recorded table definitions, the copy
// state, and last the checkpoint row. On an error it returns what it had
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
	d.Checkpoint, err = tgt.DeleteCheckpoint(ctx, e.cfg.Pipeline)
	return d, err
}
