package pgoutput

import (
	"context"
	"fmt"
	"strings"

	"github.com/decant/decant/source"
)

// Loop prevention. A decant pipeline's PostgreSQL apply sessions mark
// what they write with the replication origin decant_<pipeline>
// (apply/pg.OriginName; decant_<pipeline>.N for its extra sessions). Such
// a transaction came from that pipeline's source. Sending it on to this
// pipeline's target sends it back where it came from when that target is
// the other pipeline's source (a pipeline and its reverse, cutover
// --reverse), and only then: through a chain of pipelines (A to B, B to
// C) every change must go on. A pipeline's slot, named as the pipeline,
// lives on its source; so the reader skips a transaction a decant
// pipeline applied exactly when this pipeline's target holds a slot of
// that name (Config.TargetHasSlot). Cluster system identifiers would not
// tell: a server made from another's base backup shares its identifier.

// echoes judges the origins of transactions, remembering each pipeline's
// verdict; one session reads at a time.
type echoes struct {
	targetHasSlot func(ctx context.Context, slot string) (bool, error) // nil: nothing is an echo
	known         map[string]bool                                      // by pipeline: its transactions are echoes
}

// echo reports whether a transaction with this origin goes back to where
// it came from.
func (e *echoes) echo(ctx context.Context, origin string) (bool, error) {
	if e.targetHasSlot == nil || !source.IsDecantOrigin(origin) {
		return false, nil
	}
	pipeline := strings.TrimPrefix(origin, source.DecantOriginPrefix)
	if i := strings.IndexByte(pipeline, '.'); i >= 0 {
		pipeline = pipeline[:i]
	}
	if v, ok := e.known[pipeline]; ok {
		return v, nil
	}
	loop, err := e.targetHasSlot(ctx, pipeline)
	if err != nil {
		return false, fmt.Errorf("look for slot %s on the target, to tell whether transactions of origin %s would go back to it: %w", pipeline, origin, err)
	}
	if e.known == nil {
		e.known = map[string]bool{}
	}
	e.known[pipeline] = loop
	return loop, nil
}
