package source

import (
	"context"
	"testing"
)

// A table's UPDATEs and DELETEs can be published with a replica identity
// of every column or an index, or by default with a primary key.
func TestTableReplicable(t *testing.T) {
	for _, c := range []struct {
		table Table
		want  bool
	}{
		{Table{Identity: IdentityDefault, HasPK: true}, true},
		{Table{Identity: IdentityDefault}, false},
		{Table{Identity: IdentityFull}, true},
		{Table{Identity: IdentityIndex}, true},
		{Table{Identity: IdentityNothing, HasPK: true}, false},
		{Table{}, false},
	} {
		if got := c.table.Replicable(); got != c.want {
			t.Errorf("identity %q, primary key %v: Replicable() = %v, want %v", c.table.Identity, c.table.HasPK, got, c.want)
		}
	}
}

// Closing an exported slot ends its session once per Close; one made
// without a session closes nothing.
func TestExportedSlotClose(t *testing.T) {
	ended := 0
	e := NewExportedSlot(0x10, "snap", func(context.Context) { ended++ })
	e.Close(context.Background())
	if ended != 1 || e.Consistent != 0x10 || e.Snapshot != "snap" {
		t.Fatalf("ended %d, slot %+v", ended, e)
	}
	NewExportedSlot(0x10, "snap", nil).Close(context.Background())
}
