package gauss

import (
	"errors"
	"strings"
	"testing"

	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
)

// TestUserSQLReachesTargetChecked: the text a user's own DDL statement
// puts into a table definition (index clauses, defaults, generation
// expressions) reaches mapping, whose checks refuse it when it would
// carry another statement; the catalog itself passes such text through.
// A clean definition still goes through.
func TestUserSQLReachesTargetChecked(t *testing.T) {
	for _, tc := range []struct{ stmt, what string }{
		{`CREATE INDEX t4_w ON public.t4 (a) WHERE a > 0; DROP TABLE victim`, "index t4_w"},
		{"CREATE INDEX t4_c ON public.t4 (lower(b)) WHERE a > 0 -- ; DROP TABLE victim\n AND b <> ''", "index t4_c"},
		{`ALTER TABLE public.t4 ALTER COLUMN a SET DEFAULT 1; DROP TABLE victim`, "column a default"},
		{`CREATE INDEX t4_ok ON public.t4 (lower(b)) WHERE b <> ';'`, ""},
		{`ALTER TABLE public.t4 ADD COLUMN g pg_catalog.int4 GENERATED ALWAYS AS (a /* ) STORED, x int */) STORED`, "column g generation expression"},
	} {
		c := NewCatalog(nil, source.TableFilter{})
		mustApply(t, c, setupT4)
		prev := c.Def(source.TableName{Schema: "public", Name: "t4"})
		ch, ok, err := c.Apply(tc.stmt)
		if err != nil || !ok || ch.DDL == nil || len(ch.DDL.Tables) != 1 {
			t.Errorf("%s: ok=%v err=%v change %+v", tc.stmt, ok, err, ch.DDL)
			continue
		}
		steps, _, err := mapping.SchemaChange(mapping.DialectPostgres, prev, ch.DDL.Tables[0], prev.Name, prev.Name, mapping.ColumnRules{})
		var unsafe *mapping.UnsafeSQLError
		if tc.what == "" && (err != nil || len(steps) != 1) {
			t.Errorf("%s: error %v, steps %v, want the index created", tc.stmt, err, steps)
		}
		if tc.what != "" && (!errors.As(err, &unsafe) || unsafe.What != tc.what) {
			t.Errorf("%s: error %v, want a refusal of %s", tc.stmt, err, tc.what)
		}
		for _, s := range steps {
			if strings.Contains(s.SQL, "victim") || strings.Contains(s.SQL, "CHECK") {
				t.Errorf("%s: step %q carries the user's text", tc.stmt, s.SQL)
			}
		}
	}
}
