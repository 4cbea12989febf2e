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
