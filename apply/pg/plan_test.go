package pg

import (
	"context"
	"testing"

	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
)

// TestPlanForgetsOlderShapes: a table announced again (a schema change, a
// reconnect) gets a plan of its own, and the plans of its older shapes
// go, so a run of days keeps one plan per table.
func TestPlanForgetsOlderShapes(t *testing.T) {
	tgt, err := New(Config{DSN: "postgres://localhost/db"})
	if err != nil {
		t.Fatal(err)
	}
	name := func(n string) source.TableName { return source.TableName{Schema: "public", Name: n} }
	tgt.tables = map[source.TableName]*mapping.TargetTable{}
	tgt.plans = map[source.TableName]*plan{}
	for _, n := range []string{"a", "b"} {
		tgt.tables[name(n)] = &mapping.TargetTable{Name: name(n), PrimaryKey: []string{"id"},
			Columns: []mapping.TargetColumn{{Name: "id"}, {Name: "v"}}}
	}
	rel := func(n string) *source.Relation {
		return &source.Relation{Schema: "public", Name: n, Identity: source.IdentityDefault,
			Columns: []source.Column{{Name: "id", Type: 23, TypeMod: -1, Key: true}, {Name: "v", Type: 25, TypeMod: -1}}}
	}
	ctx := context.Background()
	a1, b, a2 := rel("a"), rel("b"), rel("a")
	for _, r := range []*source.Relation{a1, b, a1, a2} {
		if _, err := tgt.plan(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if len(tgt.plans) != 2 || tgt.plans[name("a")].Rel != a2 || tgt.plans[name("b")].Rel != b {
		t.Errorf("plans of %d relations, want a's newest and b's", len(tgt.plans))
	}
	// The older shape, met again, gets a plan of its own, not a2's.
	if p, err := tgt.plan(ctx, a1); err != nil || p.Rel != a1 {
		t.Errorf("a's older shape got the plan of %v (%v)", p.Rel, err)
	}
}
