package source

import (
	"slices"
	"testing"
)

// TestRelationIdentity: the replica identity Relation announces is the
// primary key, else the first unique index over NOT NULL columns, else
// FULL; deferrable keys are never the identity.
func TestRelationIdentity(t *testing.T) {
	cols := []ColumnDef{{Name: "id", NotNull: true}, {Name: "u", NotNull: true}, {Name: "n"}, {Name: "v"}}
	for _, tc := range []struct {
		name     string
		def      TableDef
		identity Identity
		key      []string
	}{
		{"primary key", TableDef{PrimaryKey: []string{"id"}, Uniques: []IndexDef{{Name: "u", Columns: []string{"u"}}}}, IdentityIndex, []string{"id"}},
		{"unique over not null", TableDef{Uniques: []IndexDef{{Name: "n", Columns: []string{"n"}}, {Name: "u", Columns: []string{"u"}}}}, IdentityIndex, []string{"u"}},
		{"nothing", TableDef{Uniques: []IndexDef{{Name: "n", Columns: []string{"n"}}}}, IdentityFull, nil},
		{"deferrable primary key", TableDef{PrimaryKey: []string{"id"}, PrimaryKeyDeferral: DeferrableImmediate}, IdentityFull, nil},
		{"deferrable primary key, immediate unique", TableDef{PrimaryKey: []string{"id"}, PrimaryKeyDeferral: DeferrableDeferred,
			Uniques: []IndexDef{{Name: "u", Columns: []string{"u"}}}}, IdentityIndex, []string{"u"}},
		{"deferrable unique", TableDef{Uniques: []IndexDef{{Name: "u", Columns: []string{"u"}, Deferral: DeferrableDeferred},
			{Name: "id", Columns: []string{"id"}, Deferral: DeferrableImmediate}}}, IdentityFull, nil},
	} {
		tc.def.Columns = cols
		rel := tc.def.Relation()
		var key []string
		for _, c := range rel.Columns {
			if c.Key {
				key = append(key, c.Name)
			}
		}
		if rel.Identity != tc.identity || !slices.Equal(key, tc.key) {
			t.Errorf("%s: identity %c key %v, want %c %v", tc.name, rel.Identity, key, tc.identity, tc.key)
		}
	}
}
