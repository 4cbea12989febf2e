package gauss

import (
	"fmt"
	"strings"
	"testing"

	"github.com/decant/decant/source"
)

// The parser on its own: what statement value it makes of a statement,
// which parts it keeps when it does not understand them, and which
// statements are errors. What the catalog does with them is in
// ddlcatalog_test.go.

// showStmt writes a statement value on one line, for comparing in tests.
// Parts are separated by " | "; "!" introduces what was not understood.
func showStmt(st ddlStmt) string {
	var parts []string
	add := func(format string, args ...any) { parts = append(parts, fmt.Sprintf(format, args...)) }
	addErr := func(err error) {
		if err != nil {
			add("! %v", err)
		}
	}
	switch s := st.(type) {
	case nil:
		return "nil"
	case *createTableStmt:
		add("create table %s", s.name)
		for _, el := range s.elems {
			if el.constraint != nil {
				add("%s", showConstraint(*el.constraint))
			} else {
				add("%s", showColumn(*el.column))
			}
		}
		addErr(s.err)
	case *alterTableStmt:
		add("alter table %s", s.name)
		for _, cmd := range s.cmds {
			add("%q: %s", cmd.text, showAction(cmd.do))
			addErr(cmd.err)
		}
	case *moveTableStmt:
		add("move %s to %s", s.from, s.to)
		addErr(s.err)
	case *renameTablesStmt:
		add("rename tables")
		for _, r := range s.pairs {
			add("%s to %s", r.from, r.to)
		}
		if s.err != nil {
			add("! %v (from %q)", s.err, s.from)
		}
	case *dropTablesStmt:
		add("drop tables %v", s.names)
		addErr(s.err)
	case *truncateStmt:
		add("truncate %v restart=%v cascade=%v", s.tables, s.restart, s.cascade)
		addErr(s.err)
		addErr(s.optErr)
	case *timecapsuleStmt:
		add("timecapsule %s", s.name)
	case *createIndexStmt:
		b := s.body
		add("create index %q unique=%v on %s using %s columns %v names %v keys %q include %q where %q expr=%v",
			s.name, s.unique, s.table, b.method, b.columns, b.names, b.keys, b.include, b.where, b.expr)
		addErr(s.err)
	case *dropIndexesStmt:
		add("drop indexes %v", s.names)
		addErr(s.err)
	case *alterIndexStmt:
		add("rename index %s to %q", s.name, s.to)
		addErr(s.err)
	default:
		return fmt.Sprintf("%T", st)
	}
	return strings.Join(parts, " | ")
}

func showColumn(s columnSpec) string {
	c := s.def
	out := fmt.Sprintf("column %s %s (oid %d typmod %d)", c.Name, c.SQLType, c.Type, c.TypeMod)
	if c.NotNull {
		out += " not null"
	}
	if c.Default != "" {
		out += " default " + c.Default
	}
	if c.Identity != 0 {
		out += " identity " + string(rune(c.Identity))
	}
	if c.Generated != "" {
		out += " generated " + c.Generated
	}
	if s.serial {
		out += " serial"
	}
	for _, con := range s.constraints {
		out += " " + showConstraint(con)
	}
	return out
}

func showConstraint(s constraintSpec) string {
	kind := map[conKind]string{conOther: "other", conPrimary: "primary key", conUnique: "unique"}[s.kind]
	out := strings.TrimSpace(kind + " " + s.name)
	if s.columns != nil {
		out += "(" + strings.Join(s.columns, ",") + ")"
	}
	if s.usingIndex != "" {
		out += " using index " + s.usingIndex
	}
	return out
}

func showAction(do alterAction) string {
	switch a := do.(type) {
	case nil:
		return "-"
	case addColumnsCmd:
		cols := make([]string, len(a.cols))
		for i, c := range a.cols {
			cols[i] = showColumn(c)
		}
		return "add [" + strings.Join(cols, ", ") + "]"
	case addConstraintCmd:
		return "add " + showConstraint(a.spec)
	case dropColumnCmd:
		return "drop column " + a.name
	case dropConstraintCmd:
		return "drop constraint " + a.name
	case dropKeyCmd:
		return "drop primary key"
	case alterColumnCmd:
		op := map[colOp]string{setType: "set type", setDefault: "set default", dropDefault: "drop default", setNotNull: "set not null",
			dropNotNull: "drop not null", addIdentity: "add identity", setIdentity: "set identity", dropIdentity: "drop identity",
			dropExpression: "drop expression"}[a.op]
		out := "alter " + a.name + " " + op
		switch a.op {
		case setType:
			out += fmt.Sprintf(" %s (oid %d typmod %d)", a.typ.sql, a.typ.oid, a.typ.typmod)
		case setDefault:
			out += fmt.Sprintf(" %q", a.expr)
		case addIdentity, setIdentity:
			out += fmt.Sprintf(" %q", rune(a.identity))
		}
		return out
	case renameColumnCmd:
		return "rename column " + a.from + " to " + a.to
	case renameConstraintCmd:
		return "rename constraint " + a.from + " to " + a.to
	}
	return fmt.Sprintf("%T", do)
}

func TestParseStatements(t *testing.T) {
	for _, tc := range []struct{ stmt, want string }{
		// CREATE TABLE: the elements read, and what stopped the reading.
		{setupT1, `create table public.t1 | column id integer (oid 23 typmod -1) not null | column name character varying(32) (oid 1043 typmod 36) | primary key t1_pkey(id)`},
		{`CREATE TABLE IF NOT EXISTS "S"."T" (a int DEFAULT NULL, b serial PRIMARY KEY, c int GENERATED ALWAYS AS (a + 1) STORED, UNIQUE (a, c), CHECK (a > 0))`,
			`create table S.T | column a integer (oid 23 typmod -1) default NULL | column b integer (oid 23 typmod -1) serial primary key | column c integer (oid 23 typmod -1) generated a + 1 | unique(a,c) | other`},
		{`CREATE TABLE public.u (a int, b public.mood, c int)`,
			`create table public.u | column a integer (oid 23 typmod -1) | ! column b: type public.mood is not a built-in type decant knows`},
		{`CREATE TABLE public.u (a int) INHERITS (public.t1)`,
			`create table public.u | column a integer (oid 23 typmod -1) | ! INHERITS adds the parent's columns, which the statement does not list`},
		{`CREATE TABLE public.u AS SELECT 1`, `create table public.u | ! the statement does not list the columns (CREATE TABLE ... AS, OF, PARTITION OF or LIKE)`},
		{`CREATE TABLE public.u (PRIMARY KEY (b), b int)`, `create table public.u | primary key(b) | column b integer (oid 23 typmod -1)`},

		// ALTER TABLE: each subcommand with its text; one not understood
		// keeps what was read of it.
		{`ALTER TABLE ONLY public.t1 * ADD COLUMN IF NOT EXISTS a int4, DROP name CASCADE, ALTER id TYPE bigint USING id::bigint, RENAME CONSTRAINT t1_pkey TO t1_pk`,
			`alter table public.t1 | "ADD COLUMN IF NOT EXISTS a int4": add [column a integer (oid 23 typmod -1)] | "DROP name CASCADE": drop column name` +
				` | "ALTER id TYPE bigint USING id::bigint": alter id set type bigint (oid 20 typmod -1) | "RENAME CONSTRAINT t1_pkey TO t1_pk": rename constraint t1_pkey to t1_pk`},
		{`ALTER TABLE t ADD (c int, d FROB, e int), ALTER c SET NOT NULL junk, SET (fillfactor = 70), FROB`,
			`alter table public.t | "ADD (c int, d FROB, e int)": add [column c integer (oid 23 typmod -1)] | ! column d: type FROB is not a built-in type decant knows` +
				` | "ALTER c SET NOT NULL junk": alter c set not null | ! expected a comma or the end of the statement, found "junk" at byte 63` +
				` | "SET (fillfactor = 70)": - | "FROB": - | ! expected an ALTER TABLE subcommand, found "FROB" at byte 92`},
		{`ALTER TABLE t ALTER a SET DEFAULT 'x, ADD b int`,
			`alter table public.t | "ALTER a SET DEFAULT 'x, ADD b int": alter a set default "" | ! expected the rest of the expression, found an unterminated string at byte 34`},
		{`ALTER TABLE t ALTER a ADD GENERATED SOMEHOW, ALTER b ADD GENERATED BY DEFAULT AS IDENTITY (START WITH 5), ALTER c SET GENERATED ALWAYS SET INCREMENT BY 2`,
			`alter table public.t | "ALTER a ADD GENERATED SOMEHOW": alter a add identity '\x00' | ! expected ALWAYS AS IDENTITY, BY DEFAULT AS IDENTITY or ALWAYS AS (expression), found "SOMEHOW" at byte 36` +
				` | "ALTER b ADD GENERATED BY DEFAULT AS IDENTITY (START WITH 5)": alter b add identity 'd' | "ALTER c SET GENERATED ALWAYS SET INCREMENT BY 2": alter c set identity 'a'`},
		{`ALTER TABLE t DROP CONSTRAINT IF EXISTS k RESTRICT, DROP PRIMARY KEY, ALTER COLUMN a DROP DEFAULT, TRUNCATE PARTITION p1, MODIFY a text`,
			`alter table public.t | "DROP CONSTRAINT IF EXISTS k RESTRICT": drop constraint k | "DROP PRIMARY KEY": drop primary key | "ALTER COLUMN a DROP DEFAULT": alter a drop default` +
				` | "TRUNCATE PARTITION p1": - | ! it changes rows the stream does not carry | "MODIFY a text": - | ! MODIFY and CHANGE redefine a column by rules that depend on the database's compatibility mode`},
		{`ALTER TABLE t ADD CONSTRAINT t_pk PRIMARY KEY USING INDEX t_a DEFERRABLE, ADD UNIQUE NULLS NOT DISTINCT (a, b) WITH (fillfactor = 9)`,
			`alter table public.t | "ADD CONSTRAINT t_pk PRIMARY KEY USING INDEX t_a DEFERRABLE": add primary key t_pk using index t_a | "ADD UNIQUE NULLS NOT DISTINCT (a, b) WITH (fillfactor = 9)": add unique(a,b)`},
		{`ALTER TABLE t`, `alter table public.t | "": - | ! expected an ALTER TABLE subcommand at the end of the statement`},
		{`ALTER TABLE app.t RENAME TO u`, `move app.t to app.u`},
		{`ALTER TABLE t SET SCHEMA app`, `move public.t to app.t`},
		{`ALTER TABLE t RENAME TO u CASCADE`, `move public.t to public.u | ! expected the end of the statement, found "CASCADE" at byte 26`},

		// Lists of tables and indexes.
		{`RENAME TABLE a TO b, app.c TO d`, `rename tables | public.a to public.b | app.c to public.d`},
		{`RENAME TABLE a TO b, c`, `rename tables | public.a to public.b | ! expected TO at the end of the statement (from "public.c")`},
		{`RENAME TABLE a TO b junk`, `rename tables | public.a to public.b | ! expected a comma or the end of the statement, found "junk" at byte 20 (from "")`},
		{`DROP TABLE IF EXISTS a, app.b CASCADE PURGE`, `drop tables [public.a app.b]`},
		{`DROP TABLE a, 1`, `drop tables [public.a] | ! expected a name, found a number at byte 14`},
		{`TRUNCATE TABLE ONLY a, b * RESTART IDENTITY CONTINUE IDENTITY CASCADE;`, `truncate [public.a public.b] restart=false cascade=true`},
		{`TRUNCATE a, 2`, `truncate [public.a] restart=false cascade=false | ! expected a name, found a number at byte 12`},
		{`TRUNCATE a PARTITION (p)`, `truncate [public.a] restart=false cascade=false | ! expected RESTART IDENTITY, CONTINUE IDENTITY, CASCADE or RESTRICT, found "PARTITION" at byte 11`},
		{`TIMECAPSULE TABLE app.t TO BEFORE DROP`, `timecapsule app.t`},

		// Indexes.
		{`CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS app.i ON ONLY t USING ubtree (a DESC NULLS LAST, b COLLATE "C" text_pattern_ops) INCLUDE (c) WITH (fillfactor=80) TABLESPACE ts`,
			`create index "i" unique=true on public.t using btree columns [a b] names [a b] keys "(a DESC NULLS LAST, b COLLATE \"C\" text_pattern_ops)" include "INCLUDE (c)" where "" expr=false`},
		{`CREATE INDEX ON t USING gin ((a + 1), b) WHERE (b > 0)`,
			`create index "" unique=false on public.t using gin columns [b] names [expr b] keys "((a + 1), b)" include "" where "(b > 0)" expr=true`},
		{`CREATE INDEX i ON t (a) WHERE`,
			`create index "i" unique=false on public.t using btree columns [a] names [a] keys "(a)" include "" where "" expr=false | ! expected a predicate at the end of the statement`},
		{`DROP INDEX CONCURRENTLY IF EXISTS a, app.b CASCADE`, `drop indexes [public.a app.b]`},
		{`ALTER INDEX IF EXISTS app.i RENAME TO j`, `rename index app.i to "j"`},
		{`ALTER INDEX i RENAME TO j k`, `rename index public.i to "j" | ! expected the end of the statement, found "k" at byte 26`},

		// Statements about nothing the catalog follows.
		{``, `nil`},
		{` ; ; `, `nil`},
		{`CREATE TEMPORARY TABLE t (a int)`, `nil`},
		{`CREATE OR REPLACE VIEW v AS SELECT 1`, `nil`},
		{`ALTER INDEX i SET TABLESPACE ts`, `nil`},
		{`COMMENT ON TABLE t IS 'x'`, `nil`},
	} {
		st, err := parseDDL(tc.stmt)
		if err != nil {
			t.Errorf("%s: %v", tc.stmt, err)
			continue
		}
		if got := showStmt(st); got != tc.want {
			t.Errorf("%s:\n got  %s\n want %s", tc.stmt, got, tc.want)
		}
	}
}

// TestParseErrors: only statements that are not SQL, or that name no table
// (or index), are errors.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ stmt, want string }{
		{`}{`, "not SQL: it does not start with a keyword"},
		{`'unterminated`, "not SQL: it does not start with a keyword"},
		{`CREATE TABLE (a int)`, `CREATE TABLE names no table: expected a name, found "(" at byte 13`},
		{`CREATE TABLE`, "CREATE TABLE names no table: expected a name at the end of the statement"},
		{`ALTER TABLE`, "ALTER TABLE names no table: expected a name at the end of the statement"},
		{`ALTER TABLE a.b.c.d ADD x int`, `ALTER TABLE names no table: expected a name of at most three parts, found "." at byte 17`},
		{`DROP TABLE 1`, `DROP TABLE names no table: expected a name, found a number at byte 11`},
		{`DROP TABLE 'hunter2'`, `DROP TABLE names no table: expected a name, found a string literal at byte 11`},
		{`DROP INDEX`, "DROP INDEX names no index: expected a name at the end of the statement"},
		{`ALTER INDEX "`, "ALTER INDEX names no index: expected a name, found an unterminated quoted identifier at byte 12"},
		{`TRUNCATE`, "TRUNCATE names no table: expected a name at the end of the statement"},
		{`CREATE INDEX ON`, "CREATE INDEX names no table: expected a name at the end of the statement"},
		{`CREATE INDEX "" ON t (a)`, "CREATE INDEX names no index: expected a name, found an empty quoted identifier at byte 13"},
		{`CREATE INDEX i (a)`, `CREATE INDEX names no table: expected ON, found "(" at byte 15`},
		{`RENAME TABLE`, "RENAME TABLE names no table: expected a name at the end of the statement"},
		{`TIMECAPSULE TABLE`, "TIMECAPSULE TABLE names no table: expected a name at the end of the statement"},
	} {
		st, err := parseDDL(tc.stmt)
		if err == nil || st != nil || err.Error() != tc.want {
			t.Errorf("%s: %s, %v\n want %s", tc.stmt, showStmt(st), err, tc.want)
		}
	}
}

// TestParseSemicolons: semicolons that end a statement are not part of it.
func TestParseSemicolons(t *testing.T) {
	if p := newDDLParser("DROP TABLE t ; ;"); len(p.toks) != 4 {
		t.Errorf("final semicolons kept: %v", p.toks)
	}
	st, err := parseDDL("RENAME TABLE a TO b;;")
	if got := showStmt(st); err != nil || got != "rename tables | public.a to public.b" {
		t.Errorf("got %s, %v", got, err)
	}
}

// FuzzParse: parseDDL never panics; it gives a statement or an error (on
// one line), never both; every table a statement names has a schema and
// a name, and every column it defines a name and a known type; and the
// same input gives the same statement. Seeds: ddlSeeds.
func FuzzParse(f *testing.F) {
	for _, s := range ddlSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		st, err := parseDDL(src)
		if err != nil {
			if st != nil || strings.ContainsAny(err.Error(), "\r\n") {
				t.Fatalf("%q: %s and error %q", src, showStmt(st), err)
			}
			return
		}
		for _, name := range stmtTables(t, st) {
			if name.Schema == "" || name.Name == "" {
				t.Fatalf("%q: %s names table %q", src, showStmt(st), name)
			}
		}
		for _, col := range stmtColumns(st) {
			if col.def.Name == "" || col.def.Type == 0 || col.def.SQLType == "" {
				t.Fatalf("%q: %s defines column %+v", src, showStmt(st), col.def)
			}
		}
		again, _ := parseDDL(src)
		if a, b := showStmt(st), showStmt(again); a != b {
			t.Fatalf("%q: parsed twice:\n %s\n %s", src, a, b)
		}
	})
}

// stmtTables is every table (or index) a statement names; of a move, the
// new name only when it was read.
func stmtTables(t *testing.T, st ddlStmt) []source.TableName {
	switch s := st.(type) {
	case nil:
		return nil
	case *createTableStmt:
		return []source.TableName{s.name}
	case *alterTableStmt:
		return []source.TableName{s.name}
	case *moveTableStmt:
		if s.err != nil {
			return []source.TableName{s.from}
		}
		return []source.TableName{s.from, s.to}
	case *renameTablesStmt:
		var out []source.TableName
		for _, r := range s.pairs {
			out = append(out, r.from, r.to)
		}
		return out
	case *dropTablesStmt:
		return s.names
	case *truncateStmt:
		return s.tables
	case *timecapsuleStmt:
		return []source.TableName{s.name}
	case *createIndexStmt:
		return []source.TableName{s.table}
	case *dropIndexesStmt:
		return s.names
	case *alterIndexStmt:
		return []source.TableName{s.name}
	}
	t.Fatalf("stmtTables does not know a %T", st)
	return nil
}

// stmtColumns is every column a statement defines.
func stmtColumns(st ddlStmt) []columnSpec {
	var out []columnSpec
	switch s := st.(type) {
	case *createTableStmt:
		for _, el := range s.elems {
			if el.column != nil {
				out = append(out, *el.column)
			}
		}
	case *alterTableStmt:
		for _, cmd := range s.cmds {
			if a, ok := cmd.do.(addColumnsCmd); ok {
				out = append(out, a.cols...)
			}
		}
	}
	return out
}

// ddlSeeds are the statements the tests use, for the fuzz targets' seed
// corpus: the catalog's cases and setups, the fuzz seeds of
// FuzzCatalogApply, and the SQL the decoders make of the documented JDDL
// samples.
func ddlSeeds(tb testing.TB) []string {
	seeds := []string{setupT1, setupK, setupT4}
	for _, tc := range catalogCases {
		seeds = append(append(seeds, tc.setup...), tc.stmt)
	}
	seeds = append(seeds, fuzzSeedStatements()...)
	for _, s := range jddlSamples {
		recs, err := Decode(Format{Style: 'j'}, []byte(`{"JDDL":`+s.json+`}`), 0)
		if err != nil || len(recs) != 1 {
			tb.Fatalf("decode %s: %v", s.json, err)
		}
		seeds = append(seeds, recs[0].DDL)
	}
	return seeds
}
