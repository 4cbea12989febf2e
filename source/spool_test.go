package source

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestSpoolSpillsAndReplaysInOrder(t *testing.T) {
	dir := t.TempDir()
	a := &Relation{Schema: "s", Name: "a"}
	b := &Relation{Schema: "s", Name: "b"}
	s := &Spool{Dir: dir, Prefix: "p-", Limit: 1000}
	var want []Change
	for i := 0; i < 300; i++ {
		c := Change{Op: OpInsert, Rel: a, New: []Value{{Kind: ValueText, Data: []byte(fmt.Sprint(i))}, {Kind: ValueNull}, {Kind: ValueText, Data: []byte{}}}}
		switch i % 3 {
		case 1:
			c = Change{Op: OpUpdate, Rel: b, Old: []Value{{Kind: ValueText, Data: []byte("k")}}, New: []Value{{Kind: ValueUnchanged}}}
		case 2:
			c = Change{Op: OpTruncate, Rel: a, Truncated: []*Relation{a, b}, Cascade: true, RestartIdentity: true}
		}
		want = append(want, c)
		if err := s.Add(c); err != nil {
			t.Fatal(err)
		}
	}
	if !s.Spilled() || s.Len() != 300 {
		t.Fatalf("spilled %v, len %d", s.Spilled(), s.Len())
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "p-*.spill")); len(files) != 1 {
		t.Fatalf("spill files: %v", files)
	}
	var got []Change
	chunks := 0
	if err := s.Replay(64, func(cs []Change) error {
		chunks++
		if len(cs) > 64 {
			t.Errorf("chunk of %d", len(cs))
		}
		got = append(got, cs...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("replayed changes differ")
	}
	if got[1].Rel != b || got[2].Truncated[1] != b {
		t.Error("relations are not the same pointers after a spill")
	}
	if err := s.Reset(); err != nil {
		t.Fatal(err)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "p-*.spill")); len(files) != 0 || s.Len() != 0 {
		t.Errorf("after Reset: %v, len %d", files, s.Len())
	}
}

func TestRemoveSpills(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "mine-1.spill"), nil, 0o600)
	os.WriteFile(filepath.Join(dir, "other-1.spill"), nil, 0o600)
	if err := RemoveSpills(dir, "mine-"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "mine-1.spill")); !os.IsNotExist(err) {
		t.Error("leftover not removed")
	}
	if _, err := os.Stat(filepath.Join(dir, "other-1.spill")); err != nil {
		t.Error("another pipeline's file was removed")
	}
}

func TestSpoolBudgetDropSubAndDDL(t *testing.T) {
	dir := t.TempDir()
	rel := &Relation{Schema: "s", Name: "a"}
	budget := &Budget{Limit: 4000}
	a := &Spool{Dir: dir, Prefix: "p-", Budget: budget}
	b := &Spool{Dir: dir, Prefix: "p-", Budget: budget}
	row := func(i int, sub uint64) Change {
		return Change{Op: OpInsert, Rel: rel, Sub: sub, New: []Value{{Kind: ValueText, Data: []byte(fmt.Sprint(i))}}}
	}
	ddl := Change{Op: OpDDL, Sub: 7, DDL: &DDL{Tag: "ALTER TABLE", Statement: "ALTER TABLE a ADD c int",
		Tables: []*TableDef{{OID: 5, Name: TableName{Schema: "s", Name: "a"}, Columns: []ColumnDef{{Attnum: 1, Name: "c", Type: 23, TypeMod: -1}}}}}}
	var wantA, wantB []Change
	for i := 0; i < 100; i++ {
		sub := uint64(7)
		if i%10 == 3 {
			sub = 9 // a subtransaction rolled back below
		}
		c := row(i, sub)
		if i == 50 {
			c = ddl
		}
		if err := a.Add(c); err != nil {
			t.Fatal(err)
		}
		if sub != 9 {
			wantA = append(wantA, c)
		}
		if err := b.Add(row(i, 0)); err != nil {
			t.Fatal(err)
		}
		wantB = append(wantB, row(i, 0))
		if budget.Used() > budget.Limit {
			t.Fatalf("spools hold %d bytes in memory, budget %d", budget.Used(), budget.Limit)
		}
	}
	if !a.Spilled() || !b.Spilled() {
		t.Fatalf("the shared budget did not make both spill: %v %v", a.Spilled(), b.Spilled())
	}
	a.DropSub(9)
	if a.Len() != len(wantA) {
		t.Fatalf("len %d after dropping a subtransaction, want %d", a.Len(), len(wantA))
	}
	for _, tc := range []struct {
		s    *Spool
		want []Change
	}{{a, wantA}, {b, wantB}} {
		var got []Change
		if err := tc.s.Replay(16, func(cs []Change) error { got = append(got, cs...); return nil }); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Fatalf("replayed %d changes, want %d (or they differ)", len(got), len(tc.want))
		}
		if err := tc.s.Reset(); err != nil {
			t.Fatal(err)
		}
	}
	if budget.Used() != 0 {
		t.Errorf("budget holds %d bytes after both spools were reset", budget.Used())
	}
	// In memory only: dropping frees the budget at once.
	c := &Spool{Budget: &Budget{Limit: 1 << 20}}
	for i := 0; i < 10; i++ {
		c.Add(row(i, uint64(i%2+1)))
	}
	before := c.Budget.Used()
	c.DropSub(2)
	if c.Len() != 5 || c.Budget.Used() >= before {
		t.Errorf("after dropping in memory: len %d, used %d (was %d)", c.Len(), c.Budget.Used(), before)
	}
}

// TestSpillUsage: spools sharing a SpillUsage count their files in use
// and the bytes written to them, until each is reset.
func TestSpillUsage(t *testing.T) {
	dir := t.TempDir()
	var u SpillUsage
	rel := &Relation{Schema: "s", Name: "a"}
	a := &Spool{Dir: dir, Prefix: "p-", Limit: 100, Usage: &u}
	b := &Spool{Dir: dir, Prefix: "p-", Limit: 100, Usage: &u}
	for _, s := range []*Spool{a, b} {
		for i := 0; i < 50; i++ {
			if err := s.Add(Change{Op: OpInsert, Rel: rel, New: []Value{{Kind: ValueText, Data: []byte("some row text")}}}); err != nil {
				t.Fatal(err)
			}
		}
		// Replay flushes what the file's buffer holds.
		if err := s.Replay(64, func([]Change) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if u.Files() != 2 || u.Bytes() != a.written+b.written || u.Bytes() == 0 {
		t.Errorf("usage %d files %d bytes, want 2 files and %d bytes", u.Files(), u.Bytes(), a.written+b.written)
	}
	if err := a.Reset(); err != nil {
		t.Fatal(err)
	}
	if u.Files() != 1 || u.Bytes() != b.written {
		t.Errorf("after one reset: %d files %d bytes, want 1 file and %d bytes", u.Files(), u.Bytes(), b.written)
	}
	if err := b.Reset(); err != nil {
		t.Fatal(err)
	}
	if u.Files() != 0 || u.Bytes() != 0 {
		t.Errorf("after both resets: %d files %d bytes, want none", u.Files(), u.Bytes())
	}
}
