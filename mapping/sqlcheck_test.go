package mapping

import (
	"errors"
	"strings"
	"testing"

	"github.com/decant/decant/source"
)

var checkTable = source.TableName{Schema: "public", Name: "t"}

// Index definitions as pg_get_indexdef prints them (PostgreSQL 15), and as
// the GaussDB catalog writes them (indexDefinition).
func TestCheckIndexDefAccepts(t *testing.T) {
	odd := source.TableName{Schema: "My Schema", Name: "T; x"}
	for _, c := range []struct {
		table      source.TableName
		name, text string
	}{
		{checkTable, "t_lower_idx", "CREATE INDEX t_lower_idx ON public.t USING btree (lower(name))"},
		{checkTable, "t_part", "CREATE UNIQUE INDEX t_part ON public.t USING btree (a) WHERE (b > 0)"},
		{checkTable, "t_inc", "CREATE UNIQUE INDEX t_inc ON public.t USING btree (a) INCLUDE (b, c)"},
		{checkTable, "t_ops", "CREATE INDEX t_ops ON public.t USING btree (name text_pattern_ops)"},
		{checkTable, "t_coll", `CREATE INDEX t_coll ON public.t USING btree (name COLLATE "C" DESC NULLS LAST)`},
		{checkTable, "t_gin", "CREATE INDEX t_gin ON public.t USING gin (doc jsonb_path_ops) WITH (fastupdate=off)"},
		{checkTable, "t_nnd", "CREATE UNIQUE INDEX t_nnd ON public.t USING btree (a) NULLS NOT DISTINCT"},
		{checkTable, "t_expr", "CREATE INDEX t_expr ON public.t USING btree (((a + 1)), (b || '; DROP TABLE t'::text))"},
		{checkTable, "t_str", "CREATE INDEX t_str ON public.t USING btree (a) WHERE (s <> 'x; DROP TABLE y'::text)"},
		{checkTable, "t_e", `CREATE INDEX t_e ON public.t USING btree (a) WHERE (s = E'it\'s;'::text)`},
		{checkTable, "t_e2", `CREATE INDEX t_e2 ON public.t USING btree (a) WHERE (s = E'\'); DROP TABLE t; --')`},
		{checkTable, "t_dollar", "CREATE INDEX t_dollar ON public.t USING btree (a) WHERE (s = $q$ x $b$); DROP TABLE t; --$q$)"},
		{checkTable, "t_ine", "CREATE INDEX CONCURRENTLY IF NOT EXISTS t_ine ON ONLY public.t USING hash (a) TABLESPACE pg_default"},
		{checkTable, "Idx", `CREATE INDEX "Idx" ON public.t USING gist (a) WHERE (a IS NOT NULL)`},
		{odd, "Odd; Name", `CREATE INDEX "Odd; Name" ON "My Schema"."T; x" USING btree ("a;b")`},
		{odd, "i", `create index i on "My Schema"."T; x" ("a""b")`},
	} {
		if err := checkIndexDef(c.table, c.name, c.text); err != nil {
			t.Errorf("%s: refused: %v", c.text, err)
		}
	}
}

func TestCheckIndexDefRefuses(t *testing.T) {
	for _, text := range []string{
		"CREATE INDEX i ON public.t (a); DROP TABLE t",
		"CREATE INDEX i ON public.t USING btree (a);",
		"CREATE INDEX i ON public.other USING btree (a)",
		"CREATE INDEX i ON t USING btree (a)",
		"CREATE INDEX i ON other.t USING btree (a)",
		`CREATE INDEX i ON "public"."T" USING btree (a)`,
		"CREATE INDEX other ON public.t USING btree (a)",
		"CREATE INDEX ON public.t USING btree (a)",
		"COPY public.t TO PROGRAM 'rm -rf /'",
		"CREATE TABLE i (a int)",
		"CREATE INDEX i ON public.t USING btree (a) /* DROP TABLE t */",
		"CREATE INDEX i ON public.t USING btree (a) -- ; DROP TABLE t",
		"CREATE INDEX i ON public.t USING btree (a) WHERE (s = 'x)",
		`CREATE INDEX i ON public.t USING btree (a) WHERE (s = E'\\'); DROP TABLE t; --')`,
		`CREATE INDEX i ON public.t USING btree (a) WHERE (s = '\'); DROP TABLE t; --')`,
		"CREATE INDEX i ON public.t USING btree (a) WHERE (s = $q$x)",
		"CREATE INDEX i ON public.t USING btree (a) WHERE (a > 0)), (b",
		"CREATE INDEX i ON public.t USING btree (a) WHERE a > 0, b",
		"CREATE INDEX i ON public.t USING btree (a) WHERE",
		"CREATE INDEX i ON public.t USING btree (a) b",
		"CREATE INDEX i ON public.t USING btree (a",
		"CREATE INDEX i ON public.t USING (a)",
		"CREATE INDEX i ON public.t USING btree",
		"CREATE INDEX IF EXISTS i ON public.t (a)",
		"CREATE INDEX i ON public.t (a) NULLS NOT",
		"CREATE INDEX i ON public.t (a) INCLUDE b",
		"CREATE INDEX i ON public.t (a) WITH fillfactor",
		"CREATE INDEX i ON public.t (a) TABLESPACE",
		"CREATE INDEX i ON public.t (a) INCLUDE (b) evil",
		"CREATE INDEX i ON public.t (a) TABLESPACE (x)",
		"",
	} {
		err := checkIndexDef(checkTable, "i", text)
		var u *UnsafeSQLError
		if !errors.As(err, &u) {
			t.Errorf("%q: accepted (%v)", text, err)
			continue
		}
		if u.Table != checkTable || u.What != "index i" || u.Reason == "" {
			t.Errorf("%q: error %+v does not name the table, index and reason", text, u)
		}
	}
}

// The error names the table and the index and says what to do, and never
// repeats the text (which may hold data).
func TestUnsafeSQLErrorMessage(t *testing.T) {
	err := checkIndexDef(checkTable, "i", "CREATE INDEX i ON public.t (a) WHERE (s = 'secret-value'); DROP TABLE t")
	msg := err.Error()
	for _, want := range []string{"public.t", "index i", "separator", "by hand", "--on-unsupported-ddl skip"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "secret") || strings.Contains(msg, "DROP") {
		t.Errorf("message %q repeats the text", msg)
	}
}

// Types as format_type prints them.
func TestCheckTypeAccepts(t *testing.T) {
	for _, text := range []string{
		"integer", "character varying(255)", "numeric(10,2)", "timestamp(3) with time zone",
		"timestamp without time zone", "time(6) without time zone", "double precision", "bit varying(8)",
		"interval day to second(3)", "interval year to month", "interval(3)", `"char"`, "text[]",
		"integer[][]", "integer[3]", `public."My Type"`, `"my schema".mood[]`, "geometry(Point,4326)",
		"character(1)", "bpchar", `"a;b"`, "public.hstore",
	} {
		if err := checkType(checkTable, "c", text); err != nil {
			t.Errorf("%s: refused: %v", text, err)
		}
	}
}

func TestCheckTypeRefuses(t *testing.T) {
	for _, text := range []string{
		"integer; DROP TABLE t", "integer, evil int", "int DEFAULT 1", `text COLLATE "C"`,
		"numeric(10,2) CHECK (false)", "varchar('x')", "integer /* x */", "integer -- x", `"unterminated`,
		"int[1;]", "int(1)(2)(3)", "int[", "int[]x", "pg_catalog.int4)", "", "int4.", ".int4", "int(-1)",
		"int(a b)", "int(1,)", "int(1 2)", "()", "integer primary key", "int NOT NULL",
	} {
		var u *UnsafeSQLError
		if err := checkType(checkTable, "c", text); !errors.As(err, &u) || u.What != "column c type" {
			t.Errorf("%q: accepted (%v)", text, err)
		}
	}
}

// Defaults and generation expressions as pg_get_expr prints them.
func TestCheckExprAccepts(t *testing.T) {
	for _, text := range []string{
		"nextval('t_id_seq'::regclass)", "'a;b'::text", "now()", "(a * 2)", "$$x;y$$::text",
		"$t$it's; DROP TABLE t$t$::text", `E'it\'s'::text`, `E'\\'::text`, "'{1,2}'::integer[]",
		"CASE WHEN (a > 0) THEN 1 ELSE 0 END", "ARRAY[1, 2]", `("Col; x" + 1)`, "-1", "NULL::integer",
		"'x'::character varying", "lower((name)::text)", "COALESCE(a, b)", "'--'::text", "'/*'::text",
		"0.5e-3", "B'101'::bit(3)", "X'1F'::bit(8)", `U&'d\0061t'::text`, "(a IS NOT NULL)",
	} {
		if err := checkExpr(checkTable, "column c default", text); err != nil {
			t.Errorf("%s: refused: %v", text, err)
		}
	}
}

func TestCheckExprRefuses(t *testing.T) {
	for _, text := range []string{
		"1); DROP TABLE x; --", "1, evil int", "1 /* hide */", "1 -- x", "0 CHECK (false)",
		"0 REFERENCES other(id)", "0 CONSTRAINT c UNIQUE", "'unterminated", "$$ unterminated", "(1", "1)",
		`E'\'; DROP TABLE t; --`, `'\'; DROP TABLE t; --'`, "", "a) STORED, evil int GENERATED ALWAYS AS (1",
		"1 DEFAULT 2", "0 PRIMARY KEY", `""`, "a\\b", "1 {", "$1$x$1$", "/* a /* b */ c",
	} {
		var u *UnsafeSQLError
		if err := checkExpr(checkTable, "column c default", text); !errors.As(err, &u) || u.What != "column c default" {
			t.Errorf("%q: accepted (%v)", text, err)
		}
	}
}

func TestLexSQL(t *testing.T) {
	for _, c := range []struct {
		text  string
		kinds []sqlKind
		vals  []string
	}{
		{`a "B""c" 'x''y' E'\'' $a$ $b$ $a$ 1.5e+3 $2 :: ; /* /* */ */ -- z`,
			[]sqlKind{sqlWord, sqlQuoted, sqlString, sqlString, sqlString, sqlNumber, sqlNumber, sqlOp, sqlOp, sqlComment, sqlComment},
			[]string{"a", `B"c`, "", "", "", "1.5e+3", "$2", "::", ";", "", ""}},
		{"Ab$c.x<>y", []sqlKind{sqlWord, sqlOp, sqlWord, sqlOp, sqlWord}, []string{"ab$c", ".", "x", "<>", "y"}},
		{"a-->b\n+c", []sqlKind{sqlWord, sqlComment, sqlOp, sqlWord}, []string{"a", "", "+", "c"}},
	} {
		toks, reason := lexSQL(c.text)
		if reason != "" || len(toks) != len(c.kinds) {
			t.Errorf("%q: %d tokens (%s), want %d", c.text, len(toks), reason, len(c.kinds))
			continue
		}
		for i, tok := range toks {
			if tok.kind != c.kinds[i] || tok.val != c.vals[i] {
				t.Errorf("%q token %d: %v %q, want %v %q", c.text, i, tok.kind, tok.val, c.kinds[i], c.vals[i])
			}
		}
	}
}
