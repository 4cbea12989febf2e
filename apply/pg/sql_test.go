package pg

import (
	"bytes"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
)

// col is a source column and how the target declares it.
type col struct {
	name   string
	key    bool // part of the source replica identity
	always bool // GENERATED ALWAYS AS IDENTITY on the target
	typ    string
	cmp    mapping.Compare
}

// noNulls says that no old value is NULL.
var noNulls = make([]bool, 8)

// match is how the plan's statements find rows when the old row is sent
// and holds no NULL.
func match(p *mapping.Plan) mapping.Match { return mapping.Match{Whole: p.WholeRow, Null: noNulls} }

// table describes one source relation and its target table.
type table struct {
	schema, name string
	identity     source.Identity
	cols         []col
	pk           []string // target primary key
	partitioned  bool
}

func (tb table) plan(t *testing.T) *mapping.Plan {
	t.Helper()
	rel := &source.Relation{ID: 16384, Schema: tb.schema, Name: tb.name, Identity: tb.identity}
	tgt := mapping.TargetTable{
		Name:        source.TableName{Schema: tb.schema, Name: tb.name},
		PrimaryKey:  tb.pk,
		Partitioned: tb.partitioned,
	}
	for _, c := range tb.cols {
		rel.Columns = append(rel.Columns, source.Column{Name: c.name, Type: 25, TypeMod: -1, Key: c.key})
		tgt.Columns = append(tgt.Columns, mapping.TargetColumn{Name: c.name, IdentityAlways: c.always, Type: c.typ, Compare: c.cmp})
	}
	p, err := mapping.NewPlan(rel, tgt, mapping.ColumnRules{})
	if err != nil {
		t.Fatalf("NewPlan: %v", err)
	}
	return p
}

// The tables the renderer tests share.
var (
	orders = table{schema: "public", name: "orders", identity: source.IdentityDefault,
		cols: []col{{name: "id", key: true}, {name: "customer"}, {name: "total"}}, pk: []string{"id"}}
	lines = table{schema: "sales", name: "lines", identity: source.IdentityIndex,
		cols: []col{{name: "qty"}, {name: "order_id", key: true}, {name: "note"}, {name: "line_no", key: true}}}
	fullPK = table{schema: "public", name: "docs", identity: source.IdentityFull,
		cols: []col{{name: "title", key: true}, {name: "id", key: true}, {name: "body", key: true}}, pk: []string{"id"}}
	fullNoPK = table{schema: "public", name: "log", identity: source.IdentityFull,
		cols: []col{{name: "at", key: true}, {name: "msg", key: true}}}
	nothing = table{schema: "public", name: "events", identity: source.IdentityNothing,
		cols: []col{{name: "at"}, {name: "msg"}}}
	partFull = table{schema: "public", name: "measurements", identity: source.IdentityFull, partitioned: true,
		cols: []col{{name: "city"}, {name: "day"}, {name: "temp"}}}
	partKeyed = table{schema: "public", name: "measurements", identity: source.IdentityDefault, partitioned: true,
		cols: []col{{name: "city", key: true}, {name: "day", key: true}, {name: "temp"}}, pk: []string{"city", "day"}}
	alwaysKey = table{schema: "public", name: "solo", identity: source.IdentityDefault,
		cols: []col{{name: "id", key: true, always: true}, {name: "v"}, {name: "w"}}, pk: []string{"id"}}
	alwaysOther = table{schema: "public", name: "tickets", identity: source.IdentityDefault,
		cols: []col{{name: "id", key: true}, {name: "seq", always: true}, {name: "body"}, {name: "note"}, {name: "rev", always: true}}, pk: []string{"id"}}
	alwaysFull = table{schema: "public", name: "bag", identity: source.IdentityFull,
		cols: []col{{name: "n", always: true}, {name: "v"}}}
	quotedNames = table{schema: "Sales Dept", name: `Order"s`, identity: source.IdentityDefault,
		cols: []col{{name: "Id", key: true}, {name: "first name"}, {name: `say "hi"`}, {name: "select"}}, pk: []string{"Id"}}
	quotedFull = table{schema: "MixedCase", name: "my table", identity: source.IdentityFull, partitioned: true,
		cols: []col{{name: `a"b`}, {name: "Col"}}}
)

func TestRenderInsert(t *testing.T) {
	tests := []struct {
		name string
		tb   table
		want string
	}{
		{"keyed", orders, `INSERT INTO "public"."orders" ("id", "customer", "total") VALUES ($1, $2, $3)`},
		{"multi-column key", lines, `INSERT INTO "sales"."lines" ("qty", "order_id", "note", "line_no") VALUES ($1, $2, $3, $4)`},
		{"whole row", fullNoPK, `INSERT INTO "public"."log" ("at", "msg") VALUES ($1, $2)`},
		{"partitioned", partFull, `INSERT INTO "public"."measurements" ("city", "day", "temp") VALUES ($1, $2, $3)`},
		{"identity always key", alwaysKey, `INSERT INTO "public"."solo" ("id", "v", "w") OVERRIDING SYSTEM VALUE VALUES ($1, $2, $3)`},
		{"identity always non-key", alwaysOther, `INSERT INTO "public"."tickets" ("id", "seq", "body", "note", "rev") OVERRIDING SYSTEM VALUE VALUES ($1, $2, $3, $4, $5)`},
		{"quoted identifiers", quotedNames, `INSERT INTO "Sales Dept"."Order""s" ("Id", "first name", "say ""hi""", "select") VALUES ($1, $2, $3, $4)`},
		{"single column", table{schema: "s", name: "t", identity: source.IdentityFull, cols: []col{{name: "only"}}},
			`INSERT INTO "s"."t" ("only") VALUES ($1)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := renderInsert(tt.tb.plan(t)); got != tt.want {
				t.Errorf("renderInsert:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestRenderCopy(t *testing.T) {
	tests := []struct {
		name string
		tb   table
		want string
	}{
		{"keyed", orders, `COPY "public"."orders" ("id", "customer", "total") FROM STDIN`},
		// COPY overrides GENERATED ALWAYS by itself: no clause.
		{"identity always", alwaysKey, `COPY "public"."solo" ("id", "v", "w") FROM STDIN`},
		{"partitioned", partFull, `COPY "public"."measurements" ("city", "day", "temp") FROM STDIN`},
		{"quoted identifiers", quotedNames, `COPY "Sales Dept"."Order""s" ("Id", "first name", "say ""hi""", "select") FROM STDIN`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := renderCopy(tt.tb.plan(t)); got != tt.want {
				t.Errorf("renderCopy:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestRenderDelete(t *testing.T) {
	tests := []struct {
		name string
		tb   table
		want string
	}{
		{"keyed", orders, `DELETE FROM ONLY "public"."orders" WHERE "id" = $1`},
		{"multi-column key", lines, `DELETE FROM ONLY "sales"."lines" WHERE "order_id" = $1 AND "line_no" = $2`},
		// A target primary key is no proof of identity under FULL: it may be
		// deferrable, or the source may not have it. The whole row decides.
		{"full identity with target primary key", fullPK,
			`DELETE FROM ONLY "public"."docs" WHERE ctid = (SELECT ctid FROM ONLY "public"."docs" WHERE format('%s', "title") = $1::text AND format('%s', "id") = $2::text AND format('%s', "body") = $3::text LIMIT 1)`},
		{"full identity without primary key", fullNoPK,
			`DELETE FROM ONLY "public"."log" WHERE ctid = (SELECT ctid FROM ONLY "public"."log" WHERE format('%s', "at") = $1::text AND format('%s', "msg") = $2::text LIMIT 1)`},
		{"nothing identity", nothing,
			`DELETE FROM ONLY "public"."events" WHERE ctid = (SELECT ctid FROM ONLY "public"."events" WHERE format('%s', "at") = $1::text AND format('%s', "msg") = $2::text LIMIT 1)`},
		{"partitioned whole row", partFull,
			`DELETE FROM "public"."measurements" WHERE (tableoid, ctid) = (SELECT tableoid, ctid FROM "public"."measurements" WHERE format('%s', "city") = $1::text AND format('%s', "day") = $2::text AND format('%s', "temp") = $3::text LIMIT 1)`},
		{"partitioned keyed", partKeyed, `DELETE FROM "public"."measurements" WHERE "city" = $1 AND "day" = $2`},
		// A DELETE does not need the Fixed columns: the key finds the row.
		{"identity always", alwaysKey, `DELETE FROM ONLY "public"."solo" WHERE "id" = $1`},
		{"identity always whole row", alwaysFull,
			`DELETE FROM ONLY "public"."bag" WHERE ctid = (SELECT ctid FROM ONLY "public"."bag" WHERE format('%s', "n") = $1::text AND format('%s', "v") = $2::text LIMIT 1)`},
		{"quoted identifiers", quotedNames, `DELETE FROM ONLY "Sales Dept"."Order""s" WHERE "Id" = $1`},
		{"quoted whole row partitioned", quotedFull,
			`DELETE FROM "MixedCase"."my table" WHERE (tableoid, ctid) = (SELECT tableoid, ctid FROM "MixedCase"."my table" WHERE format('%s', "a""b") = $1::text AND format('%s', "Col") = $2::text LIMIT 1)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.tb.plan(t)
			if got := renderDelete(p, match(p)); got != tt.want {
				t.Errorf("renderDelete:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestRenderWhere(t *testing.T) {
	tests := []struct {
		name  string
		tb    table
		first int
		want  string
		cols  []int // WhereCols
	}{
		{"key from 1", orders, 1, `"id" = $1`, []int{0}},
		{"key from 7", orders, 7, `"id" = $7`, []int{0}},
		{"multi-column key in column order", lines, 3, `"order_id" = $3 AND "line_no" = $4`, []int{1, 3}},
		{"full identity matches the whole row despite a primary key", fullPK, 2,
			`ctid = (SELECT ctid FROM ONLY "public"."docs" WHERE format('%s', "title") = $2::text AND format('%s', "id") = $3::text AND format('%s', "body") = $4::text LIMIT 1)`,
			[]int{0, 1, 2}},
		{"whole row", fullNoPK, 5,
			`ctid = (SELECT ctid FROM ONLY "public"."log" WHERE format('%s', "at") = $5::text AND format('%s', "msg") = $6::text LIMIT 1)`,
			[]int{0, 1}},
		{"whole row partitioned", partFull, 2,
			`(tableoid, ctid) = (SELECT tableoid, ctid FROM "public"."measurements" WHERE format('%s', "city") = $2::text AND format('%s', "day") = $3::text AND format('%s', "temp") = $4::text LIMIT 1)`,
			[]int{0, 1, 2}},
		{"keyed partitioned needs no ctid", partKeyed, 1, `"city" = $1 AND "day" = $2`, []int{0, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.tb.plan(t)
			if got := renderWhere(p, match(p), tt.first); got != tt.want {
				t.Errorf("renderWhere:\n got %s\nwant %s", got, tt.want)
			}
			if got := p.WhereCols(match(p)); !slices.Equal(got, tt.cols) {
				t.Errorf("WhereCols = %v, want %v", got, tt.cols)
			}
		})
	}
}

func TestRenderUpdate(t *testing.T) {
	tests := []struct {
		name string
		tb   table
		set  []bool
		want string
	}{
		{"keyed, every column", orders, []bool{true, true, true},
			`UPDATE ONLY "public"."orders" SET "id" = $1, "customer" = $2, "total" = $3 WHERE "id" = $4`},
		{"keyed, unchanged TOAST in the middle", orders, []bool{true, false, true},
			`UPDATE ONLY "public"."orders" SET "id" = $1, "total" = $2 WHERE "id" = $3`},
		{"keyed, only the key", orders, []bool{true, false, false},
			`UPDATE ONLY "public"."orders" SET "id" = $1 WHERE "id" = $2`},
		{"keyed, key unchanged TOAST", orders, []bool{false, true, true},
			`UPDATE ONLY "public"."orders" SET "customer" = $1, "total" = $2 WHERE "id" = $3`},
		{"multi-column key", lines, []bool{true, true, false, true},
			`UPDATE ONLY "sales"."lines" SET "qty" = $1, "order_id" = $2, "line_no" = $3 WHERE "order_id" = $4 AND "line_no" = $5`},
		{"full identity with primary key", fullPK, []bool{true, true, false},
			`UPDATE ONLY "public"."docs" SET "title" = $1, "id" = $2 WHERE ctid = (SELECT ctid FROM ONLY "public"."docs" WHERE format('%s', "title") = $3::text AND format('%s', "id") = $4::text AND format('%s', "body") = $5::text LIMIT 1)`},
		{"whole row", fullNoPK, []bool{true, true},
			`UPDATE ONLY "public"."log" SET "at" = $1, "msg" = $2 WHERE ctid = (SELECT ctid FROM ONLY "public"."log" WHERE format('%s', "at") = $3::text AND format('%s', "msg") = $4::text LIMIT 1)`},
		{"whole row, unchanged TOAST", fullNoPK, []bool{false, true},
			`UPDATE ONLY "public"."log" SET "msg" = $1 WHERE ctid = (SELECT ctid FROM ONLY "public"."log" WHERE format('%s', "at") = $2::text AND format('%s', "msg") = $3::text LIMIT 1)`},
		{"partitioned whole row, unchanged TOAST", partFull, []bool{true, false, true},
			`UPDATE "public"."measurements" SET "city" = $1, "temp" = $2 WHERE (tableoid, ctid) = (SELECT tableoid, ctid FROM "public"."measurements" WHERE format('%s', "city") = $3::text AND format('%s', "day") = $4::text AND format('%s', "temp") = $5::text LIMIT 1)`},
		{"partitioned keyed", partKeyed, []bool{true, true, true},
			`UPDATE "public"."measurements" SET "city" = $1, "day" = $2, "temp" = $3 WHERE "city" = $4 AND "day" = $5`},
		{"identity always key", alwaysKey, []bool{false, true, true},
			`UPDATE ONLY "public"."solo" SET "v" = $1, "w" = $2 WHERE "id" = $3 AND "id" = $4`},
		{"identity always key, unchanged TOAST", alwaysKey, []bool{false, false, true},
			`UPDATE ONLY "public"."solo" SET "w" = $1 WHERE "id" = $2 AND "id" = $3`},
		{"identity always non-key columns", alwaysOther, []bool{true, false, true, true, false},
			`UPDATE ONLY "public"."tickets" SET "id" = $1, "body" = $2, "note" = $3 WHERE "id" = $4 AND "seq" = $5 AND "rev" = $6`},
		{"identity always non-key columns, unchanged TOAST", alwaysOther, []bool{true, false, false, true, false},
			`UPDATE ONLY "public"."tickets" SET "id" = $1, "note" = $2 WHERE "id" = $3 AND "seq" = $4 AND "rev" = $5`},
		{"identity always whole row", alwaysFull, []bool{false, true},
			`UPDATE ONLY "public"."bag" SET "v" = $1 WHERE ctid = (SELECT ctid FROM ONLY "public"."bag" WHERE format('%s', "n") = $2::text AND format('%s', "v") = $3::text LIMIT 1) AND "n" = $4`},
		// Nothing to set (every value unchanged TOAST or Fixed): an unchanged
		// column is assigned to itself, which keeps the statement valid and
		// still requires the row to exist.
		{"nothing to set, identity always key", alwaysKey, []bool{false, false, false},
			`UPDATE ONLY "public"."solo" SET "v" = "v" WHERE "id" = $1 AND "id" = $2`},
		{"nothing to set, keyed", orders, []bool{false, false, false},
			`UPDATE ONLY "public"."orders" SET "id" = "id" WHERE "id" = $1`},
		{"nothing to set, whole row", fullNoPK, []bool{false, false},
			`UPDATE ONLY "public"."log" SET "at" = "at" WHERE ctid = (SELECT ctid FROM ONLY "public"."log" WHERE format('%s', "at") = $1::text AND format('%s', "msg") = $2::text LIMIT 1)`},
		{"nothing to set, identity always whole row", alwaysFull, []bool{false, false},
			`UPDATE ONLY "public"."bag" SET "v" = "v" WHERE ctid = (SELECT ctid FROM ONLY "public"."bag" WHERE format('%s', "n") = $1::text AND format('%s', "v") = $2::text LIMIT 1) AND "n" = $3`},
		{"nothing to set, several fixed columns", alwaysOther, []bool{false, false, false, false, false},
			`UPDATE ONLY "public"."tickets" SET "id" = "id" WHERE "id" = $1 AND "seq" = $2 AND "rev" = $3`},
		{"quoted identifiers", quotedNames, []bool{true, false, true, true},
			`UPDATE ONLY "Sales Dept"."Order""s" SET "Id" = $1, "say ""hi""" = $2, "select" = $3 WHERE "Id" = $4`},
		{"quoted whole row partitioned", quotedFull, []bool{true, true},
			`UPDATE "MixedCase"."my table" SET "a""b" = $1, "Col" = $2 WHERE (tableoid, ctid) = (SELECT tableoid, ctid FROM "MixedCase"."my table" WHERE format('%s', "a""b") = $3::text AND format('%s', "Col") = $4::text LIMIT 1)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.tb.plan(t)
			got := renderUpdate(p, tt.set, match(p))
			if got != tt.want {
				t.Errorf("renderUpdate:\n got %s\nwant %s", got, tt.want)
			}
			// The parameters are dense, $1..$n, and n is the number of
			// arguments Target.update sends: the set values, the where
			// values and the new values of the Fixed columns.
			n := 0
			for _, s := range tt.set {
				if s {
					n++
				}
			}
			n += len(p.WhereCols(match(p))) + len(p.Fixed)
			checkDense(t, got, n)
		})
	}
}

// checkDense checks that sql uses exactly the parameters $1..$n, each once.
func checkDense(t *testing.T, sql string, n int) {
	t.Helper()
	var got []int
	for _, m := range regexp.MustCompile(`\$(\d+)`).FindAllStringSubmatch(sql, -1) {
		k, _ := strconv.Atoi(m[1])
		got = append(got, k)
	}
	want := make([]int, n)
	for i := range want {
		want[i] = i + 1
	}
	if !slices.Equal(got, want) {
		t.Errorf("parameters %v, want %v in order", got, want)
	}
}

// TestRenderWhereCompare: a whole-row match compares each column in its
// own type where equality means identity (an index can serve it), adds
// the output text where equal values can differ, compares output text
// alone where the type has no equality, and says IS NULL for NULL old
// values, which take no parameter.
func TestRenderWhereCompare(t *testing.T) {
	typed := table{schema: "public", name: "k", identity: source.IdentityFull, cols: []col{
		{name: "b", typ: "boolean", cmp: mapping.CompareEqual},
		{name: "n", typ: "numeric(12,2)", cmp: mapping.CompareEqualText},
		{name: "p", typ: "point", cmp: mapping.CompareText},
		{name: "c", typ: "character(5)", cmp: mapping.CompareEqual},
		{name: "u", cmp: mapping.CompareEqual}, // no type known: text
	}}
	tests := []struct {
		name string
		null []bool
		want string
	}{
		{"no NULLs", noNulls,
			`ctid = (SELECT ctid FROM ONLY "public"."k" WHERE "b" = $1::boolean AND "n" = $2::text::numeric(12,2) AND format('%s', "n") = $2::text AND format('%s', "p") = $3::text AND "c" = $4::character(5) AND format('%s', "u") = $5::text LIMIT 1)`},
		{"NULLs", []bool{true, false, true, false, true},
			`ctid = (SELECT ctid FROM ONLY "public"."k" WHERE "b" IS NULL AND "n" = $1::text::numeric(12,2) AND format('%s', "n") = $1::text AND "p" IS NULL AND "c" = $2::character(5) AND "u" IS NULL LIMIT 1)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := typed.plan(t)
			m := mapping.Match{Whole: true, Null: tt.null}
			if got := renderWhere(p, m, 1); got != tt.want {
				t.Errorf("renderWhere:\n got %s\nwant %s", got, tt.want)
			}
			if got, want := renderDelete(p, m), "DELETE FROM ONLY \"public\".\"k\" WHERE "+tt.want; got != want {
				t.Errorf("renderDelete:\n got %s\nwant %s", got, want)
			}
		})
	}
}

// TestShapes follows UPDATEs and DELETEs through mapping.Shapes and
// appendWhere: unchanged TOAST values and Fixed columns are left out of
// SET, NULL old values of a whole-row match become IS NULL and send no
// parameter, the parameters are exactly the arguments sent, and each shape
// is rendered once.
func TestShapes(t *testing.T) {
	text := func(s string) source.Value { return source.Value{Kind: source.ValueText, Data: []byte(s)} }
	null := source.Value{Kind: source.ValueNull}
	toast := source.Value{Kind: source.ValueUnchanged}
	tests := []struct {
		name     string
		tb       table
		old, new []source.Value
		set      []bool
		update   string
		delete   string
	}{
		{"every value sent", orders, nil, []source.Value{text("1"), text("ann"), null},
			[]bool{true, true, true},
			`UPDATE ONLY "public"."orders" SET "id" = $1, "customer" = $2, "total" = $3 WHERE "id" = $4`,
			`DELETE FROM ONLY "public"."orders" WHERE "id" = $1`},
		{"unchanged TOAST left out", orders, nil, []source.Value{text("1"), toast, text("")},
			[]bool{true, false, true},
			`UPDATE ONLY "public"."orders" SET "id" = $1, "total" = $2 WHERE "id" = $3`, ""},
		{"only fixed and unchanged TOAST", alwaysKey, nil, []source.Value{text("1"), toast, toast},
			[]bool{false, false, false},
			`UPDATE ONLY "public"."solo" SET "v" = "v" WHERE "id" = $1 AND "id" = $2`, ""},
		{"fixed and unchanged TOAST left out", alwaysOther, nil, []source.Value{text("1"), text("7"), toast, null, text("3")},
			[]bool{true, false, false, true, false},
			`UPDATE ONLY "public"."tickets" SET "id" = $1, "note" = $2 WHERE "id" = $3 AND "seq" = $4 AND "rev" = $5`, ""},
		{"whole row with a NULL old value", fullNoPK, []source.Value{null, text("m")}, []source.Value{text("a"), text("m")},
			[]bool{true, true},
			`UPDATE ONLY "public"."log" SET "at" = $1, "msg" = $2 WHERE ctid = (SELECT ctid FROM ONLY "public"."log" WHERE "at" IS NULL AND format('%s', "msg") = $3::text LIMIT 1)`,
			`DELETE FROM ONLY "public"."log" WHERE ctid = (SELECT ctid FROM ONLY "public"."log" WHERE "at" IS NULL AND format('%s', "msg") = $1::text LIMIT 1)`},
		{"whole row, old values all NULL", fullNoPK, []source.Value{null, null}, []source.Value{text("a"), null},
			[]bool{true, true},
			`UPDATE ONLY "public"."log" SET "at" = $1, "msg" = $2 WHERE ctid = (SELECT ctid FROM ONLY "public"."log" WHERE "at" IS NULL AND "msg" IS NULL LIMIT 1)`,
			`DELETE FROM ONLY "public"."log" WHERE ctid = (SELECT ctid FROM ONLY "public"."log" WHERE "at" IS NULL AND "msg" IS NULL LIMIT 1)`},
		{"whole row, fixed column", alwaysFull, []source.Value{text("1"), null}, []source.Value{text("1"), text("v")},
			[]bool{false, true},
			`UPDATE ONLY "public"."bag" SET "v" = $1 WHERE ctid = (SELECT ctid FROM ONLY "public"."bag" WHERE format('%s', "n") = $2::text AND "v" IS NULL LIMIT 1) AND "n" = $3`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mp := tt.tb.plan(t)
			p := &plan{Plan: mp}
			renders := 0
			shapes := mp.NewShapes(mapping.ShapeRenderers{
				Update: func(set []bool, m mapping.Match) string { renders++; return renderUpdate(mp, set, m) },
				Delete: func(m mapping.Match) string { renders++; return renderDelete(mp, m) },
				Nulls:  true,
			})
			c := &source.Change{Op: source.OpUpdate, Rel: mp.Rel, Old: tt.old, New: tt.new}
			got, set, m := shapes.Update(c)
			if !slices.Equal(set, tt.set) {
				t.Fatalf("set = %v, want %v", set, tt.set)
			}
			if got != tt.update {
				t.Errorf("UPDATE:\n got %s\nwant %s", got, tt.update)
			}
			args, err := p.appendWhere(nil, c, m)
			if err != nil {
				t.Fatal(err)
			}
			n := len(args) + len(mp.Fixed)
			for _, s := range set {
				if s {
					n++
				}
			}
			checkDense(t, got, n)
			// The same shape again is served from the cache.
			if again, _, _ := shapes.Update(c); again != tt.update || renders != 1 {
				t.Errorf("second call rendered again (%d renders)", renders)
			}
			if tt.delete == "" {
				return
			}
			c.Op = source.OpDelete
			if c.Old == nil {
				c.Old, c.New = c.New, nil
			}
			del, m := shapes.Delete(c)
			if del != tt.delete {
				t.Errorf("DELETE:\n got %s\nwant %s", del, tt.delete)
			}
			if args, err = p.appendWhere(nil, c, m); err != nil {
				t.Fatal(err)
			}
			checkDense(t, del, len(args))
		})
	}
}

func TestRenderTruncate(t *testing.T) {
	tn := func(schema, name string) source.TableName { return source.TableName{Schema: schema, Name: name} }
	tests := []struct {
		name        string
		tables      []source.TableName
		partitioned []bool
		restart     bool
		want        string
	}{
		{"one table", []source.TableName{tn("public", "a")}, []bool{false}, false,
			`TRUNCATE ONLY "public"."a"`},
		{"one partitioned table", []source.TableName{tn("public", "p")}, []bool{true}, false,
			`TRUNCATE "public"."p"`},
		{"restart identity", []source.TableName{tn("public", "a")}, []bool{false}, true,
			`TRUNCATE ONLY "public"."a" RESTART IDENTITY`},
		{"several tables", []source.TableName{tn("public", "a"), tn("sales", "b"), tn("s", "c")}, []bool{false, false, false}, false,
			`TRUNCATE ONLY "public"."a", ONLY "sales"."b", ONLY "s"."c"`},
		{"several with partitioned, restart identity",
			[]source.TableName{tn("public", "a"), tn("public", "p"), tn("sales", "b")}, []bool{false, true, false}, true,
			`TRUNCATE ONLY "public"."a", "public"."p", ONLY "sales"."b" RESTART IDENTITY`},
		{"quoted identifiers",
			[]source.TableName{tn("Sales Dept", `Order"s`), tn("MixedCase", "my table")}, []bool{true, false}, false,
			`TRUNCATE "Sales Dept"."Order""s", ONLY "MixedCase"."my table"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := renderTruncate(tt.tables, tt.partitioned, tt.restart); got != tt.want {
				t.Errorf("renderTruncate:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestAppendCopyText(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"empty", "", ""},
		{"plain", "hello world", "hello world"},
		{"backslash", `a\b`, `a\\b`},
		{"only backslash", `\`, `\\`},
		{"two backslashes", `\\`, `\\\\`},
		{"tab", "a\tb", `a\tb`},
		{"newline", "a\nb", `a\nb`},
		{"carriage return", "a\rb", `a\rb`},
		{"crlf", "line\r\n", `line\r\n`},
		{"looks like NULL", `\N`, `\\N`},
		{"end-of-data marker", `\.`, `\\.`},
		{"escape-like text", `\t\n`, `\\t\\n`},
		{"specials only", "\\\t\n\r", `\\\t\n\r`},
		{"specials at both ends", "\tx\n", `\tx\n`},
		{"other control characters pass", "\v\f\b\x01", "\v\f\b\x01"},
		{"UTF-8", "naïve 日本語 😀", "naïve 日本語 😀"},
		{"UTF-8 around specials", "é\tü\\ß\n😀", `é\tü\\ß\n😀`},
		{"json", `{"a": "x\"y", "b": "c\\d"}`, `{"a": "x\\"y", "b": "c\\\\d"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := []byte(tt.in)
			if got := string(appendCopyText(nil, in)); got != tt.want {
				t.Errorf("appendCopyText(%q) = %q, want %q", tt.in, got, tt.want)
			}
			// Appending keeps what the buffer held.
			prefix := []byte("1\t")
			if got := string(appendCopyText(prefix, in)); got != "1\t"+tt.want {
				t.Errorf("appendCopyText to %q = %q, want %q", prefix, got, "1\t"+tt.want)
			}
			if string(in) != tt.in {
				t.Errorf("input changed to %q", in)
			}
			if back := unescapeCopyText(t, tt.want); back != tt.in {
				t.Errorf("COPY reads %q back as %q, want %q", tt.want, back, tt.in)
			}
		})
	}
}

// TestAppendCopyTextEveryByte checks every byte value: the output never
// holds a raw field or row separator and COPY reads the input back.
func TestAppendCopyTextEveryByte(t *testing.T) {
	var in []byte
	for c := 1; c < 256; c++ { // text values never hold NUL
		in = append(in, byte(c), 'x', byte(c))
	}
	out := string(appendCopyText(nil, in))
	if strings.ContainsAny(out, "\t\n\r") {
		t.Errorf("output holds a raw tab, newline or carriage return")
	}
	if back := unescapeCopyText(t, out); back != string(in) {
		t.Errorf("round trip differs")
	}
	if out == `\N` {
		t.Errorf("output reads as NULL")
	}
}

// unescapeCopyText reads one field as COPY's text format does (the subset
// of escapes appendCopyText writes, and no other).
func unescapeCopyText(t *testing.T, s string) string {
	t.Helper()
	if s == `\N` {
		t.Fatalf("field %q is NULL", s)
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\t', '\n', '\r':
			t.Fatalf("raw separator %q at %d in %q", c, i, s)
		case '\\':
			i++
			if i == len(s) {
				t.Fatalf("trailing backslash in %q", s)
			}
			switch s[i] {
			case '\\':
				b.WriteByte('\\')
			case 't':
				b.WriteByte('\t')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			default:
				t.Fatalf("unexpected escape \\%c in %q", s[i], s)
			}
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// TestPlainPrefix compares the word-at-a-time scan with a byte loop for
// every byte value at every position of values up to three words long,
// in a background of bytes that are neighbours of the ones it looks for.
func TestPlainPrefix(t *testing.T) {
	naive := func(v []byte) int {
		for i, c := range v {
			if c == '\\' || c == '\n' || c == '\r' || c == '\t' {
				return i
			}
		}
		return len(v)
	}
	for _, fill := range []byte{'a', 0x20, 0x1f, 0x5b, 0x5d, 0xdc, 0xff, 0x80, 0x0b} {
		for n := 0; n <= 24; n++ {
			for pos := 0; pos < n; pos++ {
				for c := 0; c < 256; c++ {
					v := bytes.Repeat([]byte{fill}, n)
					v[pos] = byte(c)
					if got, want := plainPrefix(v), naive(v); got != want {
						t.Fatalf("plainPrefix(%q) = %d, want %d", v, got, want)
					}
				}
			}
		}
	}
}

// BenchmarkAppendCopyText renders the values of a row like the CPU
// workload's: int, bigint, 40 bytes of text, numeric, timestamptz, jsonb.
func BenchmarkAppendCopyText(b *testing.B) {
	row := [][]byte{[]byte("123456"), []byte("123456370368"), []byte("e10adc3949ba59abbe56e057f20f883eabcdefgh"),
		[]byte("17636.5714"), []byte("2026-01-02 10:17:36+00"), []byte(`{"k": 123456, "v": "x123456"}`)}
	n := 0
	for _, v := range row {
		n += len(v)
	}
	b.SetBytes(int64(n))
	b.ReportAllocs()
	buf := make([]byte, 0, 4096)
	for b.Loop() {
		buf = buf[:0]
		for _, v := range row {
			buf = appendCopyText(buf, v)
		}
	}
}
