package apply

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
)

// netRel is a table (k key, a, b) and its plan in mode m.
func netPlan(t *testing.T, m mapping.NetMode) *mapping.Plan {
	t.Helper()
	rel := &source.Relation{Schema: "public", Name: "t", Identity: source.IdentityDefault,
		Columns: []source.Column{{Name: "k", Key: true}, {Name: "a"}, {Name: "b"}}}
	tt := mapping.TargetTable{Name: rel.Table(), PrimaryKey: []string{"k"}, Unique: [][]string{{"k"}}}
	for _, c := range rel.Columns {
		tt.Columns = append(tt.Columns, mapping.TargetColumn{Name: c.Name, Type: "text", Compare: mapping.CompareEqual})
	}
	switch m {
	case mapping.NetAppend:
		tt.OtherUnique = true
	case mapping.NetPlain:
		tt.Triggers = true
	}
	p, err := mapping.NewPlan(rel, tt, mapping.ColumnRules{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Net != m {
		t.Fatalf("plan mode %d, want %d", p.Net, m)
	}
	return p
}

// row spells a row image: "1,x,y"; "-" is an unchanged TOAST value, "~" NULL.
func row(s string) []source.Value {
	var r []source.Value
	for _, f := range strings.Split(s, ",") {
		switch f {
		case "-":
			r = append(r, source.Value{Kind: source.ValueUnchanged})
		case "~":
			r = append(r, source.Value{Kind: source.ValueNull})
		default:
			r = append(r, source.Value{Kind: source.ValueText, Data: []byte(f)})
		}
	}
	return r
}

// change spells a change: "I 1,x,y", "U 1,x,-", "U 1,~,~>2,x,y" (key
// change: old key, then new row), "D 1,~,~".
func change(p *mapping.Plan, s string) *source.Change {
	op, img, _ := strings.Cut(s, " ")
	c := &source.Change{Rel: p.Rel}
	switch op {
	case "I":
		c.Op, c.New = source.OpInsert, row(img)
	case "U":
		c.Op = source.OpUpdate
		if o, n, ok := strings.Cut(img, ">"); ok {
			c.Old, c.New = row(o), row(n)
		} else {
			c.New = row(img)
		}
	case "D":
		c.Op, c.Old = source.OpDelete, row(img)
	}
	return c
}

// show spells a window: one "kind key row" per net row, "|"-separated.
func show(n *Net[string]) string {
	var out []string
	for _, tb := range n.Tables() {
		for _, r := range tb.Rows {
			s := [...]string{"none", "insert", "update", "delete", "replace"}[r.Kind]
			if r.Key != nil {
				s += " @" + string(r.Key[0].Data)
			}
			if r.Row != nil {
				s += " " + spell(r.Row)
			}
			out = append(out, s)
		}
	}
	return strings.Join(out, " | ")
}

func spell(r []source.Value) string {
	var f []string
	for _, v := range r {
		switch v.Kind {
		case source.ValueUnchanged:
			f = append(f, "-")
		case source.ValueNull:
			f = append(f, "~")
		default:
			f = append(f, string(v.Data))
		}
	}
	return strings.Join(f, ",")
}

func TestNetFolds(t *testing.T) {
	p := netPlan(t, mapping.NetCompact)
	for _, tc := range []struct {
		changes []string
		want    string
		refused int // index of the first change Add refuses; -1 none
	}{
		{[]string{"I 1,x,y"}, "insert 1,x,y", -1},
		{[]string{"U 1,x,y"}, "update @1 1,x,y", -1},
		{[]string{"D 1,~,~"}, "delete @1", -1},
		{[]string{"I 1,x,y", "U 1,z,-"}, "insert 1,z,y", -1},
		{[]string{"I 1,x,y", "D 1,~,~"}, "none", -1},
		{[]string{"I 1,x,y", "D 1,~,~", "I 1,p,q"}, "insert 1,p,q", -1},
		{[]string{"U 1,x,-", "U 1,-,y"}, "update @1 1,x,y", -1},
		{[]string{"U 1,x,-", "U 1,z,-"}, "update @1 1,z,-", -1},
		{[]string{"U 1,x,y", "D 1,~,~"}, "delete @1", -1},
		{[]string{"D 1,~,~", "I 1,x,y"}, "replace @1 1,x,y", -1},
		{[]string{"D 1,~,~", "I 1,x,y", "U 1,-,z"}, "replace @1 1,x,z", -1},
		{[]string{"D 1,~,~", "I 1,x,y", "D 1,~,~"}, "delete @1", -1},
		{[]string{"U 1,x,y", "D 1,~,~", "I 1,p,q"}, "replace @1 1,p,q", -1},
		// Keys apart, in the order of their first change.
		{[]string{"U 2,x,y", "I 1,a,b", "U 2,z,-"}, "update @2 2,z,y | insert 1,a,b", -1},
		// A key change: delete the old key, insert the new row.
		{[]string{"U 1,~,~>2,x,y"}, "delete @1 | insert 2,x,y", -1},
		{[]string{"I 1,x,y", "U 1,~,~>2,x,y"}, "none | insert 2,x,y", -1},
		{[]string{"U 1,~,~>2,x,y", "U 2,~,~>1,p,q"}, "replace @1 1,p,q | none", -1},
		// A new key whose row keeps an unchanged TOAST value cannot be
		// inserted from the window.
		{[]string{"U 1,~,~>2,x,-"}, "", 0},
		// Sequences no consistent source sends.
		{[]string{"I 1,x,y", "I 1,x,y"}, "insert 1,x,y", 1},
		{[]string{"D 1,~,~", "D 1,~,~"}, "delete @1", 1},
		{[]string{"D 1,~,~", "U 1,x,y"}, "delete @1", 1},
		{[]string{"I 1,x,y", "D 1,~,~", "U 1,x,y"}, "none", 2},
		{[]string{"U 1,x,y", "U 1,~,~>3,x,y", "U 3,~,~>4,x,y", "I 3,a,b", "U 1,~,~>9,p,q"}, "delete @1 | insert 3,a,b | insert 4,x,y", 4},
		// A key value that is no plain text cannot be told.
		{[]string{"U -,x,y"}, "", 0},
	} {
		t.Run(strings.Join(tc.changes, "; "), func(t *testing.T) {
			var n Net[string]
			txn := &source.Txn{Xid: 1}
			refused := -1
			for i, s := range tc.changes {
				before := show(&n)
				if !n.Add("t", p, txn, change(p, s)) {
					refused = i
					if after := show(&n); after != before {
						t.Errorf("a refused change altered the window: %q became %q", before, after)
					}
					break
				}
			}
			if refused != tc.refused {
				t.Errorf("refused change %d, want %d", refused, tc.refused)
			}
			if got := show(&n); got != tc.want {
				t.Errorf("window %q, want %q", got, tc.want)
			}
		})
	}
}

// TestNetLeavesChangesAlone: merging copies the row once; the changes
// the window was given keep their values.
func TestNetLeavesChangesAlone(t *testing.T) {
	p := netPlan(t, mapping.NetCompact)
	var n Net[string]
	ins, upd := change(p, "I 1,x,y"), change(p, "U 1,z,-")
	n.Add("t", p, &source.Txn{}, ins)
	n.Add("t", p, &source.Txn{}, upd)
	if spell(ins.New) != "1,x,y" || spell(upd.New) != "1,z,-" {
		t.Errorf("changes altered: %s, %s", spell(ins.New), spell(upd.New))
	}
}

func TestNetModes(t *testing.T) {
	app := netPlan(t, mapping.NetAppend)
	var n Net[string]
	for _, s := range []string{"I 1,x,y", "I 1,x,y", "I 2,a,b"} {
		if !n.Add("a", app, &source.Txn{}, change(app, s)) {
			t.Fatalf("an append table refused insert %s", s)
		}
	}
	if got, want := show(&n), "insert 1,x,y | insert 1,x,y | insert 2,a,b"; got != want {
		t.Errorf("window %q, want %q", got, want)
	}
	for _, s := range []string{"U 1,z,-", "D 1,~,~"} {
		if n.Add("a", app, &source.Txn{}, change(app, s)) {
			t.Errorf("an append table took %s", s)
		}
	}
	plain := netPlan(t, mapping.NetPlain)
	for _, s := range []string{"I 1,x,y", "U 1,z,-", "D 1,~,~"} {
		if n.Add("p", plain, &source.Txn{}, change(plain, s)) {
			t.Errorf("a plain table took %s", s)
		}
	}
}

func TestNetModeRules(t *testing.T) {
	rel := &source.Relation{Schema: "public", Name: "t", Identity: source.IdentityDefault,
		Columns: []source.Column{{Name: "k", Key: true}, {Name: "a"}}}
	base := func() mapping.TargetTable {
		return mapping.TargetTable{Name: rel.Table(), PrimaryKey: []string{"k"}, Unique: [][]string{{"k"}},
			Columns: []mapping.TargetColumn{{Name: "k", Type: "integer", Compare: mapping.CompareEqual}, {Name: "a", Type: "text"}}}
	}
	for _, tc := range []struct {
		name string
		edit func(*mapping.TargetTable, *source.Relation)
		want mapping.NetMode
	}{
		{"key is the only unique constraint", func(*mapping.TargetTable, *source.Relation) {}, mapping.NetCompact},
		{"trigger", func(tt *mapping.TargetTable, _ *source.Relation) { tt.Triggers = true }, mapping.NetPlain},
		{"second unique index", func(tt *mapping.TargetTable, _ *source.Relation) { tt.Unique = append(tt.Unique, []string{"a"}) }, mapping.NetAppend},
		{"deferrable or partial unique", func(tt *mapping.TargetTable, _ *source.Relation) { tt.OtherUnique = true }, mapping.NetAppend},
		{"no unique constraint on the target", func(tt *mapping.TargetTable, _ *source.Relation) { tt.Unique = nil }, mapping.NetAppend},
		{"target key on other columns", func(tt *mapping.TargetTable, _ *source.Relation) { tt.Unique = [][]string{{"a"}} }, mapping.NetAppend},
		{"key type whose equal values differ", func(tt *mapping.TargetTable, _ *source.Relation) { tt.Columns[0].Compare = mapping.CompareEqualText }, mapping.NetAppend},
		{"partitioned", func(tt *mapping.TargetTable, _ *source.Relation) { tt.Partitioned = true }, mapping.NetAppend},
		{"identity always", func(tt *mapping.TargetTable, _ *source.Relation) { tt.Columns[1].IdentityAlways = true }, mapping.NetAppend},
		{"keyless (FULL)", func(_ *mapping.TargetTable, r *source.Relation) { r.Identity = source.IdentityFull }, mapping.NetAppend},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := *rel
			tt := base()
			tc.edit(&tt, &r)
			p, err := mapping.NewPlan(&r, tt, mapping.ColumnRules{})
			if err != nil {
				t.Fatal(err)
			}
			if p.Net != tc.want {
				t.Errorf("mode %d, want %d", p.Net, tc.want)
			}
		})
	}
}

func TestNetLimits(t *testing.T) {
	p := netPlan(t, mapping.NetCompact)
	var n Net[string]
	for i := 0; !n.Full(); i++ {
		if i > NetRows {
			t.Fatalf("not full after %d rows", i)
		}
		n.Add("t", p, &source.Txn{}, change(p, fmt.Sprintf("I %d,x,y", i)))
	}
	n.Reset()
	if !n.Empty() || len(n.Tables()) != 0 {
		t.Error("Reset left rows")
	}
	big := change(p, "I 1,x,y")
	big.New[2].Data = make([]byte, NetBytes)
	n.Add("t", p, &source.Txn{}, big)
	if !n.Full() {
		t.Error("a window holding NetBytes of values is not full")
	}
}

func TestReplay(t *testing.T) {
	var r Replay
	t1, t2, t3 := &source.Txn{Xid: 1}, &source.Txn{Xid: 2}, &source.Txn{Xid: 3}
	if !r.Gather(t1) || !r.Gather(t1) || !r.Gather(t2) {
		t.Fatal("gathers nothing before a failure")
	}
	conn := Transient(&pgconn.PgError{Code: "08006"})
	if !conn {
		t.Fatal("08006 is not transient")
	}
	if err := r.Fail(&pgconn.PgError{Code: "08006"}); errors.As(err, new(*ReplayError)) {
		t.Error("a lost connection asks for a replay")
	}
	err := r.Fail(errors.New("no target row matches"))
	var replay *ReplayError
	if !errors.As(err, &replay) || !Transient(err) {
		t.Fatalf("Fail = %v, want a retryable ReplayError", err)
	}
	if again := r.Fail(err); again != err {
		t.Error("a ReplayError is wrapped again")
	}
	// The next session: the two transactions of the failed target
	// transaction are applied one by one, then gathering resumes.
	n1, n2 := &source.Txn{Xid: 1}, &source.Txn{Xid: 2}
	if r.Gather(n1) || r.Gather(n1) || r.Gather(n2) {
		t.Error("gathers during the replay")
	}
	if !r.Gather(t3) {
		t.Error("does not gather after the replay")
	}
	r.Committed()
	if r.Gather(&source.Txn{Xid: 4, Streamed: true}) {
		t.Error("gathers a streamed transaction")
	}
}

func BenchmarkNetAddInsert(b *testing.B) {
	rel := &source.Relation{Schema: "public", Name: "t", Identity: source.IdentityDefault,
		Columns: []source.Column{{Name: "k", Key: true}, {Name: "a"}, {Name: "b"}}}
	tt := mapping.TargetTable{Name: rel.Table(), Unique: [][]string{{"k"}}}
	for _, c := range rel.Columns {
		tt.Columns = append(tt.Columns, mapping.TargetColumn{Name: c.Name, Type: "text", Compare: mapping.CompareEqual})
	}
	p, err := mapping.NewPlan(rel, tt, mapping.ColumnRules{})
	if err != nil {
		b.Fatal(err)
	}
	changes := make([]source.Change, NetRows)
	for i := range changes {
		changes[i] = source.Change{Op: source.OpInsert, Rel: rel, New: row(fmt.Sprintf("%d,some text,more", i))}
	}
	txn := &source.Txn{}
	var n Net[string]
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if n.Full() {
			n.Reset()
		}
		n.Add("t", p, txn, &changes[i%NetRows])
	}
}

// TestNetSent: one table's part leaves the window, the others stay.
func TestNetSent(t *testing.T) {
	a, b := netPlan(t, mapping.NetCompact), netPlan(t, mapping.NetCompact)
	b.Target.Name = "u"
	var n Net[string]
	n.Add("a", a, &source.Txn{}, change(a, "I 1,x,y"))
	n.Add("b", b, &source.Txn{}, change(b, "I 2,x,y"))
	n.Add("a", a, &source.Txn{}, change(a, "U 3,x,y"))
	if n.TableOf(source.TableName{Schema: "public", Name: "c"}) != nil {
		t.Error("a table without changes has a part")
	}
	n.sent(n.TableOf(a.Target))
	if got := show(&n); got != "insert 2,x,y" {
		t.Errorf("window after sending a: %q", got)
	}
	if n.TableOf(a.Target) != nil || n.Empty() || n.TableOf(b.Target) == nil {
		t.Error("a is still in the window, or b is not")
	}
	n.Add("a", a, &source.Txn{}, change(a, "I 1,x,y"))
	n.sent(n.TableOf(b.Target))
	n.sent(n.TableOf(a.Target))
	if !n.Empty() || len(n.Tables()) != 0 {
		t.Errorf("window not empty after sending every part: %q", show(&n))
	}
}

// TestNetOnePlanPerTable: a table described by a second relation (GaussDB
// records of other columns) is refused while the first has a part, so
// that its part goes first.
func TestNetOnePlanPerTable(t *testing.T) {
	a, a2 := netPlan(t, mapping.NetCompact), netPlan(t, mapping.NetCompact)
	var n Net[string]
	n.Add("a", a, &source.Txn{}, change(a, "U 1,x,-"))
	if n.Add("a2", a2, &source.Txn{}, change(a2, "U 1,y,-")) {
		t.Fatal("took a change of the same table under another relation")
	}
	n.sent(n.TableOf(a.Target))
	if !n.Add("a2", a2, &source.Txn{}, change(a2, "U 1,y,-")) {
		t.Error("refused the other relation once the first's part was sent")
	}
}
