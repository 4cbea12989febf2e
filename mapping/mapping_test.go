package mapping

import (
	"reflect"
	"slices"
	"testing"

	"github.com/decant/decant/source"
)

// rel builds a relation; a column name ending in '*' is part of the replica
// identity (the '*' is not part of the name).
func rel(identity source.Identity, cols ...string) *source.Relation {
	r := &source.Relation{ID: 16384, Schema: "public", Name: "t", Identity: identity}
	for _, c := range cols {
		key := false
		if n := len(c); n > 0 && c[n-1] == '*' {
			c, key = c[:n-1], true
		}
		r.Columns = append(r.Columns, source.Column{Name: c, Type: 25, TypeMod: -1, Key: key})
	}
	return r
}

// target builds a target table with plain columns.
func target(pk []string, cols ...string) TargetTable {
	t := TargetTable{Name: source.TableName{Schema: "public", Name: "t"}, PrimaryKey: pk}
	for _, c := range cols {
		t.Columns = append(t.Columns, TargetColumn{Name: c})
	}
	return t
}

func with(t TargetTable, col TargetColumn) TargetTable {
	t.Columns = append(t.Columns, col)
	return t
}

func TestNewPlanKeys(t *testing.T) {
	tests := []struct {
		name       string
		rel        *source.Relation
		tgt        TargetTable
		key        []int
		wholeRow   bool
		identifies bool
	}{
		{
			name: "default identity uses flagged column",
			rel:  rel(source.IdentityDefault, "id*", "a", "b"),
			tgt:  target([]string{"id"}, "id", "a", "b"),
			key:  []int{0}, identifies: true,
		},
		{
			name: "default identity ignores the target primary key",
			rel:  rel(source.IdentityDefault, "a", "id*", "b"),
			tgt:  target([]string{"b"}, "id", "a", "b"),
			key:  []int{1}, identifies: true,
		},
		{
			name: "multi-column key in column order",
			rel:  rel(source.IdentityDefault, "a", "k2*", "b", "k1*"),
			tgt:  target(nil, "a", "b", "k1", "k2"),
			key:  []int{1, 3}, identifies: true,
		},
		{
			name: "index identity uses flagged columns",
			rel:  rel(source.IdentityIndex, "id", "email*", "tenant*"),
			tgt:  target([]string{"id"}, "id", "email", "tenant"),
			key:  []int{1, 2}, identifies: true,
		},
		{
			name:     "default identity without flagged columns matches whole rows",
			rel:      rel(source.IdentityDefault, "a", "b"),
			tgt:      target(nil, "a", "b"),
			wholeRow: true, identifies: true,
		},
		{
			// The target's key is known (verify splits by it), but rows are
			// still matched by the whole old row: the key may be deferrable
			// or one the source lacks.
			name: "full identity knows the target primary key and matches whole rows",
			rel:  rel(source.IdentityFull, "a*", "id*", "b*"),
			tgt:  target([]string{"id"}, "a", "b", "id"),
			key:  []int{1}, wholeRow: true, identifies: true,
		},
		{
			name: "full identity follows primary key order",
			rel:  rel(source.IdentityFull, "x", "k1", "y", "k2"),
			tgt:  target([]string{"k2", "k1"}, "x", "y", "k1", "k2"),
			key:  []int{3, 1}, wholeRow: true, identifies: true,
		},
		{
			name:     "full identity without target primary key",
			rel:      rel(source.IdentityFull, "a*", "b*"),
			tgt:      target(nil, "a", "b"),
			wholeRow: true, identifies: true,
		},
		{
			name:     "full identity with primary key column the source lacks",
			rel:      rel(source.IdentityFull, "id", "a"),
			tgt:      target([]string{"id", "extra"}, "id", "a", "extra"),
			wholeRow: true, identifies: true,
		},
		{
			name:     "full identity with primary key whose first column the source lacks",
			rel:      rel(source.IdentityFull, "id", "a"),
			tgt:      target([]string{"extra", "id"}, "id", "a", "extra"),
			wholeRow: true, identifies: true,
		},
		{
			name:     "nothing identity",
			rel:      rel(source.IdentityNothing, "id", "a"),
			tgt:      target([]string{"id"}, "id", "a"),
			wholeRow: true, identifies: false,
		},
		{
			name:     "nothing identity ignores key flags",
			rel:      rel(source.IdentityNothing, "id*", "a"),
			tgt:      target([]string{"id"}, "id", "a"),
			wholeRow: true, identifies: false,
		},
		{
			name: "target may have extra columns",
			rel:  rel(source.IdentityDefault, "id*"),
			tgt:  with(target([]string{"id"}, "id", "note"), TargetColumn{Name: "computed", Generated: true}),
			key:  []int{0}, identifies: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewPlan(tt.rel, tt.tgt, ColumnRules{})
			if err != nil {
				t.Fatalf("NewPlan: %v", err)
			}
			if !reflect.DeepEqual(p.Key, tt.key) {
				t.Errorf("Key = %#v, want %#v", p.Key, tt.key)
			}
			if p.WholeRow != tt.wholeRow {
				t.Errorf("WholeRow = %v, want %v", p.WholeRow, tt.wholeRow)
			}
			if got := p.Identifies(); got != tt.identifies {
				t.Errorf("Identifies() = %v, want %v", got, tt.identifies)
			}
			if p.Rel != tt.rel {
				t.Errorf("Rel is not the relation passed in")
			}
			if p.Target != tt.tgt.Name {
				t.Errorf("Target = %v, want %v", p.Target, tt.tgt.Name)
			}
			if p.Fixed != nil {
				t.Errorf("Fixed = %#v, want none", p.Fixed)
			}
		})
	}
}

func TestNewPlanFixedAndPartitioned(t *testing.T) {
	tests := []struct {
		name        string
		rel         *source.Relation
		tgt         TargetTable
		fixed       []int
		key         []int
		partitioned bool
	}{
		{
			name:  "identity always key column",
			rel:   rel(source.IdentityDefault, "id*", "v"),
			tgt:   with(target([]string{"id"}, "v"), TargetColumn{Name: "id", IdentityAlways: true}),
			fixed: []int{0},
			key:   []int{0},
		},
		{
			name: "identity always non-key columns in source column order",
			rel:  rel(source.IdentityDefault, "a", "id*", "seq", "b"),
			tgt: with(with(target([]string{"id"}, "b", "id", "a"),
				TargetColumn{Name: "seq", IdentityAlways: true}), TargetColumn{Name: "a2", IdentityAlways: true}),
			fixed: []int{2},
			key:   []int{1},
		},
		{
			name: "identity always on a whole-row table",
			rel:  rel(source.IdentityFull, "n", "v", "m"),
			tgt: TargetTable{Name: source.TableName{Schema: "s", Name: "t"}, Columns: []TargetColumn{
				{Name: "m", IdentityAlways: true}, {Name: "v"}, {Name: "n", IdentityAlways: true},
			}},
			fixed: []int{0, 2},
		},
		{
			name: "partitioned target",
			rel:  rel(source.IdentityFull, "a", "b"),
			tgt: TargetTable{Name: source.TableName{Schema: "s", Name: "p"}, Partitioned: true,
				Columns: []TargetColumn{{Name: "a"}, {Name: "b"}}},
			partitioned: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewPlan(tt.rel, tt.tgt, ColumnRules{})
			if err != nil {
				t.Fatalf("NewPlan: %v", err)
			}
			if !reflect.DeepEqual(p.Fixed, tt.fixed) {
				t.Errorf("Fixed = %#v, want %#v", p.Fixed, tt.fixed)
			}
			if !reflect.DeepEqual(p.Key, tt.key) {
				t.Errorf("Key = %#v, want %#v", p.Key, tt.key)
			}
			if want := len(tt.key) == 0 || tt.rel.Identity == source.IdentityFull; p.WholeRow != want {
				t.Errorf("WholeRow = %v with key %v and identity %c", p.WholeRow, tt.key, tt.rel.Identity)
			}
			if p.Partitioned != tt.partitioned {
				t.Errorf("Partitioned = %v, want %v", p.Partitioned, tt.partitioned)
			}
			if p.Target != tt.tgt.Name {
				t.Errorf("Target = %v, want %v", p.Target, tt.tgt.Name)
			}
		})
	}
}

func TestGeneratedTargetColumnsNotWritten(t *testing.T) {
	rel := &source.Relation{Schema: "public", Name: "t", Identity: source.IdentityFull, Columns: []source.Column{{Name: "g1"}, {Name: "id"}, {Name: "g2"}}}
	tgt := TargetTable{Name: source.TableName{Schema: "public", Name: "t"}, Columns: []TargetColumn{{Name: "g1", Generated: true}, {Name: "id"}, {Name: "g2", Generated: true}}}
	p, err := NewPlan(rel, tgt, ColumnRules{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Cols, []int{1}) || !slices.Equal(p.Generated, []string{"g1", "g2"}) || !slices.Equal(p.WhereCols(Match{Whole: p.WholeRow}), []int{1}) {
		t.Errorf("Cols %v Generated %v WhereCols %v: generated columns must be neither written nor matched", p.Cols, p.Generated, p.WhereCols(Match{Whole: p.WholeRow}))
	}
}

func TestNewPlanErrors(t *testing.T) {
	tests := []struct {
		name string
		rel  *source.Relation
		tgt  TargetTable
		want string
	}{
		{
			name: "one missing column",
			rel:  rel(source.IdentityDefault, "id*", "a", "b"),
			tgt:  target(nil, "id", "b"),
			want: "target table public.t lacks column(s) a of source table public.t; add them on the target or exclude them in the config file",
		},
		{
			name: "every missing column listed in source order",
			rel:  rel(source.IdentityDefault, "id*", "zeta", "b", "alpha"),
			tgt:  target(nil, "id", "b"),
			want: "target table public.t lacks column(s) zeta, alpha of source table public.t; add them on the target or exclude them in the config file",
		},
		{
			name: "names compare case sensitively",
			rel:  rel(source.IdentityDefault, "ID*"),
			tgt:  target(nil, "id"),
			want: "target table public.t lacks column(s) ID of source table public.t; add them on the target or exclude them in the config file",
		},
		{
			name: "a generated key column is refused",
			rel:  rel(source.IdentityDefault, "id*", "total"),
			tgt:  with(target(nil, "total"), TargetColumn{Name: "id", Generated: true}),
			want: "column id identifies rows of source table public.t and cannot be excluded or generated on the target",
		},
		{
			name: "missing reported before generated",
			rel:  rel(source.IdentityDefault, "id*", "g", "m"),
			tgt:  with(target(nil, "id"), TargetColumn{Name: "g", Generated: true}),
			want: "target table public.t lacks column(s) m of source table public.t; add them on the target or exclude them in the config file",
		},
		{
			name: "different target name in message",
			rel:  &source.Relation{Schema: "src", Name: "orders", Identity: source.IdentityDefault, Columns: []source.Column{{Name: "id", Key: true}}},
			tgt:  TargetTable{Name: source.TableName{Schema: "dst", Name: "orders_copy"}},
			want: "target table dst.orders_copy lacks column(s) id of source table src.orders; add them on the target or exclude them in the config file",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewPlan(tt.rel, tt.tgt, ColumnRules{})
			if err == nil {
				t.Fatalf("NewPlan = %+v, want an error", p)
			}
			if p != nil {
				t.Errorf("NewPlan returned a plan with its error")
			}
			if err.Error() != tt.want {
				t.Errorf("error:\n got %q\nwant %q", err, tt.want)
			}
		})
	}
}

// TestMatchOf: with FULL identity a change is found by its whole old row;
// only a change without one (a GaussDB UPDATE that kept its key, whose
// relation names no identity) falls back to the target's primary key.
func TestMatchOf(t *testing.T) {
	withPK, err := NewPlan(rel(source.IdentityFull, "id", "a"), target([]string{"id"}, "id", "a"), ColumnRules{})
	if err != nil {
		t.Fatal(err)
	}
	keyless, err := NewPlan(rel(source.IdentityFull, "id", "a"), target(nil, "id", "a"), ColumnRules{})
	if err != nil {
		t.Fatal(err)
	}
	keyed, err := NewPlan(rel(source.IdentityDefault, "id*", "a"), target([]string{"id"}, "id", "a"), ColumnRules{})
	if err != nil {
		t.Fatal(err)
	}
	old := []source.Value{{Kind: source.ValueText}, {Kind: source.ValueNull}}
	for _, tt := range []struct {
		name  string
		p     *Plan
		old   []source.Value
		whole bool
		cols  []int
	}{
		{"full with old row", withPK, old, true, []int{0, 1}},
		{"full without old row uses the target key", withPK, nil, false, []int{0}},
		{"keyless without old row stays whole", keyless, nil, true, []int{0, 1}},
		{"keyed with old key", keyed, old, false, []int{0}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := tt.p.MatchOf(&source.Change{Old: tt.old})
			if m.Whole != tt.whole || !slices.Equal(tt.p.WhereCols(m), tt.cols) {
				t.Errorf("MatchOf = whole %v cols %v, want %v %v", m.Whole, tt.p.WhereCols(m), tt.whole, tt.cols)
			}
		})
	}
}
