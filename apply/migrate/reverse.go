package migrate

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/decant/decant/source"
)

// Fallback replication after a cutover (cutover --reverse): a pipeline in
// the other direction, the old target as its source and the old source as
// its target, with its own slot, publication and checkpoint, so that the
// writes made on the new primary flow back and a switch back loses
// nothing. Its slot is created after the fence and the catch-up: what the
// forward pipeline applied is on both sides, and what the new primary
// commits from then on is in the slot. The forward pipeline's applied
// transactions carry its replication origin and the reverse pipeline's
// the reverse one's, and readers skip decant's origins
// (source.IsDecantOrigin), so neither direction echoes a change back.

// originChecker is a target that can say whether its user may set up
// replication origins (apply/pg.Admin).
type originChecker interface {
	CheckOrigins(ctx context.Context) error
}

// reverseTables names the forward pipeline's target tables, which the
// reverse pipeline replicates back into the source tables of the same
// names. Renamed tables or columns have no way back: refused.
func (e *env) reverseTables(ctx context.Context, src PGSource) (source.TableFilter, error) {
	if len(e.cfg.Columns) > 0 {
		return source.TableFilter{}, &UsageError{errors.New("--reverse: the pipeline renames or leaves out columns, which a pipeline in the other direction could not restore; set fallback replication up by hand (decant init) with the inverse mapping")}
	}
	tables, err := src.SelectTables(ctx, e.cfg.Tables)
	if err != nil {
		return source.TableFilter{}, err
	}
	names := make([]string, 0, len(tables))
	for _, t := range tables {
		if to := e.cfg.Router.Route(t.Name); to != t.Name {
			return source.TableFilter{}, &UsageError{fmt.Errorf("--reverse: the pipeline maps table %s to %s; a pipeline in the other direction supports tables of the same name on both sides only", t.Name, to)}
		}
		if strings.ContainsAny(t.Name.String(), "*,") {
			return source.TableFilter{}, &UsageError{fmt.Errorf("--reverse: table %s has '*' or ',' in its name, which a table list cannot name exactly", t.Name)}
		}
		names = append(names, t.Name.String())
	}
	return source.ParseTableFilter(strings.Join(names, ","))
}

// reverse creates the reverse pipeline rc (its ends already swapped by
// the caller): publication and slot on the new primary, checkpoint row at
// the slot's consistent point on the old source, after checking that its
// apply sessions may set up replication origins there.
func (e *env) reverse(ctx context.Context, src PGSource, rc Config) (string, error) {
	var err error
	if rc.Tables, err = e.reverseTables(ctx, src); err != nil {
		return "", err
	}
	re, err := newEnv(rc)
	if err != nil {
		return "", err
	}
	if err := re.checkOrigins(ctx); err != nil {
		return "", err
	}
	res, err := re.init(ctx, InitOptions{})
	if err != nil {
		return "", fmt.Errorf("set up reverse pipeline %s: %w", rc.Pipeline, err)
	}
	if !res.Changed {
		return "", fmt.Errorf("reverse pipeline %s exists already (checkpoint at %s): drop it (decant drop --yes --pipeline %s, with source and target swapped) or choose another name", rc.Pipeline, res.Checkpoint.End, rc.Pipeline)
	}
	return fmt.Sprintf("pipeline %s: %d tables from the target back to the source, from %s; run it with decant run --pipeline %s and source and target swapped",
		rc.Pipeline, res.Tables, res.Checkpoint.End, rc.Pipeline), nil
}

// checkOrigins refuses a target whose user may not set up replication
// origins, before anything is created.
func (e *env) checkOrigins(ctx context.Context) error {
	tgt, err := e.target(ctx)
	if err != nil {
		return err
	}
	defer tgt.Close(ctx)
	var a any = tgt
	if s, ok := tgt.(targetSession); ok {
		a = s.Admin
	}
	if c, ok := a.(originChecker); ok {
		return c.CheckOrigins(ctx)
	}
	return nil
}
