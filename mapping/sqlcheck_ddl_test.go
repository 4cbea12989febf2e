package mapping

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/decant/decant/source"
)

// evil marks the hostile part of a definition: no step may carry it.
const evil = "DROP TABLE victim"

// refusedChange runs SchemaChange and checks that it refused the hostile
// text through the unsupported-DDL path (an *UnsupportedDDL wrapping an
// *UnsafeSQLError that names the table and what) and that no step
// carries it.
func refusedChange(t *testing.T, d Dialect, prev, next *source.TableDef, what string) []SchemaStep {
	t.Helper()
	target := ddPGOrders
	if d == DialectMySQL {
		target = ddMyOrders
	}
	steps, _, err := SchemaChange(d, prev, next, target, target, ColumnRules{})
	checkRefusal(t, err, what)
	for _, s := range steps {
		if strings.Contains(s.SQL, evil) {
			t.Errorf("%s: step %q carries the hostile text", d, s.SQL)
		}
	}
	return steps
}

func checkRefusal(t *testing.T, err error, what string) {
	t.Helper()
	var u *UnsupportedDDL
	var unsafe *UnsafeSQLError
	if !errors.As(err, &u) || !errors.As(err, &unsafe) {
		t.Fatalf("error %v, want an *UnsupportedDDL wrapping an *UnsafeSQLError", err)
	}
	if unsafe.What != what || unsafe.Table != ddPGOrders {
		t.Errorf("refusal names %q on %s, want %q on %s", unsafe.What, unsafe.Table, what, ddPGOrders)
	}
	if strings.Contains(err.Error(), evil) {
		t.Errorf("error %q repeats the text", err)
	}
}

// noteNotNull is a harmless change that comes with the hostile one: it
// must still be made.
func noteNotNull(d *source.TableDef) {
	ddColumn(d, "note", func(c *source.ColumnDef) { c.NotNull = true })
}

func TestSchemaChangeRefusesUnsafeDefault(t *testing.T) {
	next := ddEdit(ddOrders(), func(d *source.TableDef) {
		noteNotNull(d)
		ddColumn(d, "created", func(c *source.ColumnDef) { c.Default = "now()); " + evil + "; --" })
		d.Columns = append(d.Columns, source.ColumnDef{Attnum: 6, Name: "flag", Type: oidInt4, TypeMod: -1, SQLType: "integer", Default: "1, evil int"})
	})
	steps := refusedChange(t, DialectPostgres, ddOrders(), next, "column created default")
	if want := ddPG(pgOrders + `ALTER COLUMN "note" SET NOT NULL`); !slices.Equal(steps, want) {
		t.Errorf("postgres steps:\n%s\nwant:\n%s", ddFormat(steps), ddFormat(want))
	}
	steps = refusedChange(t, DialectMySQL, ddOrders(), next, "column created default")
	if want := []SchemaStep{ddMy(myOrders+"MODIFY COLUMN `note` LONGTEXT NOT NULL", PreNone, "")}; !slices.Equal(steps, want) {
		t.Errorf("mysql steps:\n%s\nwant:\n%s", ddFormat(steps), ddFormat(want))
	}
}

func TestSchemaChangeRefusesUnsafeType(t *testing.T) {
	next := ddEdit(ddOrders(), func(d *source.TableDef) {
		noteNotNull(d)
		ddColumn(d, "customer", func(c *source.ColumnDef) { c.Type, c.SQLType = oidInt8, "bigint; "+evil })
	})
	steps := refusedChange(t, DialectPostgres, ddOrders(), next, "column customer type")
	if want := ddPG(pgOrders + `ALTER COLUMN "note" SET NOT NULL`); !slices.Equal(steps, want) {
		t.Errorf("steps:\n%s\nwant:\n%s", ddFormat(steps), ddFormat(want))
	}
	added := ddEdit(ddOrders(), func(d *source.TableDef) {
		d.Columns = append(d.Columns, source.ColumnDef{Attnum: 6, Name: "x", Type: oidInt4, TypeMod: -1, SQLType: "integer DEFAULT 1"})
	})
	if steps := refusedChange(t, DialectPostgres, ddOrders(), added, "column x type"); len(steps) != 0 {
		t.Errorf("steps:\n%s\nwant none", ddFormat(steps))
	}
}

func TestSchemaChangeIndexDefinitions(t *testing.T) {
	withIndex := func(name, expr string) *source.TableDef {
		return ddEdit(ddOrders(), func(d *source.TableDef) {
			noteNotNull(d)
			d.Indexes = append(d.Indexes, source.IndexDef{Name: name, Expr: expr})
		})
	}
	good := `CREATE INDEX orders_lower ON public.orders USING btree (lower(note)) WHERE (note <> ';'::text)`
	steps, _, err := SchemaChange(DialectPostgres, ddOrders(), withIndex("orders_lower", good), ddPGOrders, ddPGOrders, ColumnRules{})
	if want := ddPG(pgOrders+`ALTER COLUMN "note" SET NOT NULL`, good); err != nil || !slices.Equal(steps, want) {
		t.Errorf("error %v, steps:\n%s\nwant:\n%s", err, ddFormat(steps), ddFormat(want))
	}
	for _, expr := range []string{
		"CREATE INDEX orders_evil ON public.orders USING btree (customer); " + evil,
		"CREATE INDEX orders_evil ON public.victim USING btree (customer)",
		"COPY public.orders TO PROGRAM '" + evil + "'",
		"CREATE INDEX orders_evil ON public.orders USING btree (customer) /* ; " + evil + " */",
	} {
		steps := refusedChange(t, DialectPostgres, ddOrders(), withIndex("orders_evil", expr), "index orders_evil")
		if want := ddPG(pgOrders + `ALTER COLUMN "note" SET NOT NULL`); !slices.Equal(steps, want) {
			t.Errorf("%s: steps:\n%s\nwant:\n%s", expr, ddFormat(steps), ddFormat(want))
		}
	}
}

// A new table: a refused column refuses the table, a refused index only
// that index.
func TestCreateRefusesUnsafeSQL(t *testing.T) {
	gen := ddEdit(ddOrders(), func(d *source.TableDef) {
		d.Columns = append(d.Columns, source.ColumnDef{Attnum: 6, Name: "total", Type: oidInt4, TypeMod: -1, SQLType: "integer",
			Generated: "customer) STORED, evil int GENERATED ALWAYS AS (1"})
	})
	ddl, err := CreatePG(gen, ddPGOrders, ColumnRules{})
	checkRefusal(t, err, "column total generation expression")
	if len(ddl.Table)+len(ddl.Indexes) != 0 {
		t.Errorf("statements %q for a refused table", append(ddl.Table, ddl.Indexes...))
	}
	badDefault := ddEdit(ddOrders(), func(d *source.TableDef) {
		ddColumn(d, "created", func(c *source.ColumnDef) { c.Default = "now() CHECK (false)" })
	})
	for _, d := range []Dialect{DialectPostgres, DialectMySQL} {
		if steps := refusedChange(t, d, nil, badDefault, "column created default"); len(steps) != 0 {
			t.Errorf("%s: steps:\n%s\nwant none", d, ddFormat(steps))
		}
	}
	badIndex := ddEdit(ddOrders(), func(d *source.TableDef) {
		d.Indexes = append(d.Indexes, source.IndexDef{Name: "orders_evil", Expr: "CREATE INDEX orders_evil ON public.victim USING btree (id)"})
	})
	steps := refusedChange(t, DialectPostgres, nil, badIndex, "index orders_evil")
	want, _, err := SchemaChange(DialectPostgres, nil, ddOrders(), ddPGOrders, ddPGOrders, ColumnRules{})
	if err != nil || !slices.Equal(steps, want) {
		t.Errorf("error %v, steps:\n%s\nwant those of the table without the index:\n%s", err, ddFormat(steps), ddFormat(want))
	}
}
