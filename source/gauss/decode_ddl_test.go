package gauss_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/decant/decant/source/gauss"
	"github.com/decant/decant/source/gauss/gaussenc"
)

// specJDDL is GaussDB's JSON DDL example (§3.1, hw:ddlfmt).
const specJDDL = `{"fmt":"CREATE %{persistence}s TABLE %{if_not_exists}s %{identity}D %{table_elements}s %{with_clause}s %{compression}s","identity":{"object_name":"test_create_table_a","schema_name":"public"},"compression":"NOCOMPRESS","persistence":"","with_clause":{"fmt":"WITH (%{with:, }s)","with":[{"fmt":"%{label}s = %{value}L","label":{"fmt":"%{label}I","label":"orientation"},"value":"row"},{"fmt":"%{label}s = %{value}L","label":{"fmt":"%{label}I","label":"compression"},"value":"no"}]},"if_not_exists":"","table_elements":{"fmt":"(%{elements:, }s)","elements":[{"fmt":"%{name}I %{column_type}T","name":"a","column_type":{"typmod":"","typarray":false,"type_name":"int4","schema_name":"pg_catalog"}}]}}`

// specJDDLSQL is its expansion by the §3.3 rules. Empty parameters leave
// their spaces, and the expansion keeps the trailing %{compression}s,
// which the example's prose leaves out.
const specJDDLSQL = "CREATE  TABLE  public.test_create_table_a (a pg_catalog.int4) WITH (orientation = 'row', compression = 'no') NOCOMPRESS"

// openGauss regression samples (§3.2, og:regress-ddl) and the expansions
// the regression output shows ("->").
var regressDDL = []struct{ json, sql string }{
	{`{"fmt": "CREATE %{persistence}s TABLE %{if_not_exists}s %{identity}D (%{table_elements:, }s) WITH (%{with:, }s)", "with": [{"fmt": "%{label}s = %{value}L", "label": {"fmt": "%{label}I", "label": "orientation"}, "value": "row"}, {"fmt": "%{label}s = %{value}L", "label": {"fmt": "%{label}I", "label": "compression"}, "value": "no"}], "myowner": "<role>", "identity": {"objname": "t4", "schemaname": "ddl_publication"}, "persistence": "", "if_not_exists": "", "table_elements": [{"fmt": "%{name}I %{coltype}T", "name": "a", "type": "column", "coltype": {"typmod": "", "typarray": false, "typename": "int4", "schemaname": "pg_catalog"}}, {"fmt": "%{name}I %{coltype}T COLLATE %{collate}D", "name": "b", "type": "column", "collate": {"objname": "default", "schemaname": "pg_catalog"}, "coltype": {"typmod": "", "typarray": false, "typename": "text", "schemaname": "pg_catalog"}}]}`,
		`CREATE  TABLE  ddl_publication.t4 (a pg_catalog.int4, b pg_catalog.text COLLATE pg_catalog."default") WITH (orientation = 'row', compression = 'no')`},
	{`{"fmt": "CREATE %{unique}s INDEX %{concurrently}s %{name}I ON %{table}D USING %{index_am}s %{definition}s", "name": "idx_t4_1", "table": {"objname": "t4", "schemaname": "ddl_publication"}, "unique": "", "myowner": "<role>", "index_am": "btree", "definition": "(a pg_catalog.int4_ops)", "concurrently": ""}`,
		`CREATE  INDEX  idx_t4_1 ON ddl_publication.t4 USING btree (a pg_catalog.int4_ops)`},
	// The spec prints this one without the trailing space the empty
	// %{cascade}s leaves.
	{`{"fmt": "DROP %{objtype}s %{concurrently}s %{if_exists}s %{objidentity}s %{cascade}s", "cascade": "", "objtype": "table", "if_exists": "", "objidentity": "ddl_publication.t4", "concurrently": ""}`,
		`DROP table   ddl_publication.t4 `},
	// §3.2's constructed ALTER TABLE ADD COLUMN: "present": false objects
	// expand to nothing.
	{`{"fmt": "ALTER %{objtype}s %{only}s %{identity}D %{subcmds:, }s", "only": "", "objtype": "TABLE", "subcmds": [{"fmt": "ADD %{objtype}s %{if_not_exists}s %{definition}s %{cascade}s", "type": "add column", "cascade": "", "objtype": "COLUMN", "definition": {"fmt": "%{name}I %{coltype}T %{collation}s %{default}s %{generated_column}s", "name": "c2", "type": "column", "coltype": {"typmod": "", "typarray": false, "typename": "int4", "schemaname": "pg_catalog"}, "default": {"fmt": "DEFAULT %{default}s", "present": false}, "collation": {"fmt": "COLLATE %{name}D", "present": false}, "generated_column": {"fmt": "GENERATED ALWAYS AS (%{generation_expr}s) STORED", "present": false}}, "if_not_exists": ""}], "identity": {"objname": "t1", "schemaname": "public"}}`,
		`ALTER TABLE  public.t1 ADD COLUMN  c2 pg_catalog.int4    `},
}

func TestJDDLSpecExample(t *testing.T) {
	payload := `{"JDDL":` + specJDDL + `}`
	want := gauss.Record{Kind: gauss.KindDDL, DDL: specJDDLSQL, DDLJSON: []byte(specJDDL)}
	for _, f := range []gauss.Format{jsnB, txtB, mpp} {
		sameRecords(t, f.String(), decode(t, f, []byte(payload), 0), []gauss.Record{want})
	}
	batched := gaussenc.Transaction(jsnP, []gauss.Record{want}, 0)[0].Data
	want.LSN = 0
	sameRecords(t, "batch", decode(t, jsnP, batched, 0), []gauss.Record{want})
	if enc := gaussenc.Transaction(mpp, []gauss.Record{want}, 0); string(enc[0].Data) != payload {
		t.Errorf("encode: %s", enc[0].Data)
	}
}

func TestTDDL(t *testing.T) {
	payload := `{"TDDL":"ALTER TABLE public.orders ADD COLUMN note pg_catalog.varchar(32)"}`
	want := gauss.Record{Kind: gauss.KindDDL, DDL: "ALTER TABLE public.orders ADD COLUMN note pg_catalog.varchar(32)"}
	for _, f := range []gauss.Format{jsnB, txtB, mpp} {
		sameRecords(t, f.String(), decode(t, f, []byte(payload), 0), []gauss.Record{want})
	}
	if enc := gaussenc.Transaction(txtB, []gauss.Record{want}, 0); string(enc[0].Data) != payload {
		t.Errorf("encode: %s", enc[0].Data)
	}
}

func TestRegressionExpansions(t *testing.T) {
	for _, tc := range regressDDL {
		got := decode(t, jsnB, []byte(`{"JDDL": `+tc.json+`}`), 0)
		if got[0].DDL != tc.sql {
			t.Errorf("expansion\n got  %q\n want %q", got[0].DDL, tc.sql)
		}
	}
}

// TestDeparseDDL is openGauss mppdb_decoding's DDL message (§3.2).
func TestDeparseDDL(t *testing.T) {
	create := regressDDL[0]
	line := "prefix: deparse, lsn: 218064000, relid 16390, cmdtype: Simple, size: " + strconv.Itoa(len(create.json)+1) +
		", content: " + create.json + "\ndecode to: " + create.sql + ", [owner alice]"
	want := gauss.Record{Kind: gauss.KindDDL, LSN: 218064000, DDL: create.sql, DDLJSON: []byte(create.json)}
	sameRecords(t, "create", decode(t, mpp, []byte(line), 0), []gauss.Record{want})

	start := "prefix: deparse, lsn: 218064100, relid 16390, cmdtype: Drop Table, size: 25, content: Drop table command start"
	sameRecords(t, "drop start", decode(t, mpp, []byte(start), 0), []gauss.Record{{Kind: gauss.KindDDL, LSN: 218064100}})

	end := "prefix: deparse, lsn: 218064200, relid 16390, cmdtype: Drop Table End, size: 200, content: " + regressDDL[2].json +
		"\ndecode to: " + regressDDL[2].sql + ", [owner none]"
	got := decode(t, mpp, []byte(end), 0)
	if got[0].DDL != regressDDL[2].sql {
		t.Errorf("drop end: %q", got[0].DDL)
	}
}

func TestDDLConversions(t *testing.T) {
	for _, tc := range []struct{ doc, sql string }{
		{`{"fmt":"%%{x}s 100%% %{n}n","n":-1.5e3}`, "%{x}s 100% -1.5e3"},
		{`{"fmt":"%{v}L","v":"it's"}`, "$$it's$$"},
		{`{"fmt":"%{v}L","v":"a$$b\\"}`, `$_$a$$b\$_$`},
		{`{"fmt":"%{v}L","v":"$_'"}`, "$_X$$_'$_X$"},
		{`{"fmt":"%{v}L","v":"plain"}`, "'plain'"},
		{`{"fmt":"%{i}I %{j}I %{k}I","i":"Mixed","j":"select","k":"ok_1"}`, `"Mixed" "select" ok_1`},
		{`{"fmt":"%{d}D","d":{"schema_name":"S","object_name":"t","attrname":"c"}}`, `"S".t.c`},
		{`{"fmt":"%{d}D","d":{"objname":"t"}}`, `t`},
		{`{"fmt":"%{t}T","t":{"typename":"timestamp(3) with time zone","schemaname":"","typmod":"","typarray":true}}`, `timestamp(3) with time zone[]`},
		{`{"fmt":"%{t}T","t":{"type_name":"My Type","typmod":"(5)","typarray":false}}`, `"My Type"(5)`},
		{`{"fmt":"(%{a:, }s)","a":["x",{"fmt":"y","present":false},{"fmt":"z","present":true},"w"]}`, "(x, z, w)"},
		{`{"fmt":"[%{a:}I]","a":[]}`, "[]"},
	} {
		got := decode(t, jsnB, []byte(`{"JDDL":`+tc.doc+`}`), 0)
		if got[0].DDL != tc.sql {
			t.Errorf("%s:\n got  %q\n want %q", tc.doc, got[0].DDL, tc.sql)
		}
	}
}

func TestDDLErrors(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{`{"nofmt":1}`, `string member "fmt"`},
		{`{"fmt":"%{x}s"}`, `member "x" named in fmt`},
		{`{"fmt":"%{x}q","x":"a"}`, "conversion s, I, D, T, L or n"},
		{`{"fmt":"%x"}`, "%{name}X conversion"},
		{`{"fmt":"%{x}"}`, "terminated"},
		{`{"fmt":"%{t}T","t":{"typename":"int4"}}`, "typarray"},
		{`{"fmt":"%{d}D","d":{"schemaname":"s"}}`, "objname"},
		{`{"fmt":"%{a:, }s","a":"no array"}`, "JSON array"},
		{`{"fmt":"%{n}n","n":"1"}`, "number for %n"},
		{`{"fmt":"%{o}s","o":{"fmt":"x","present":"no"}}`, `boolean "present"`},
		{`{"fmt":"%{a}s%{a}s%{a}s%{a}s%{a}s%{a}s%{a}s%{a}s","a":{"fmt":"%{b}s%{b}s%{b}s%{b}s%{b}s%{b}s%{b}s%{b}s","b":{"fmt":"%{c}s%{c}s%{c}s%{c}s%{c}s%{c}s%{c}s%{c}s","c":{"fmt":"%{d}s%{d}s%{d}s%{d}s%{d}s%{d}s%{d}s%{d}s","d":{"fmt":"%{e}s%{e}s%{e}s%{e}s%{e}s%{e}s%{e}s%{e}s","e":{"fmt":"%{f}s%{f}s%{f}s%{f}s%{f}s%{f}s%{f}s%{f}s","f":{"fmt":"%{g}s%{g}s%{g}s%{g}s%{g}s%{g}s%{g}s%{g}s","g":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}}}}}}}`, "DDL expansion of at most"},
	} {
		_, err := gauss.Decode(jsnB, []byte(`{"JDDL":`+tc.doc+`}`), 0)
		var de *gauss.DecodeError
		if !errors.As(err, &de) || !strings.Contains(de.Expected, tc.want) {
			t.Errorf("%.60s: %v, want %q", tc.doc, err, tc.want)
		}
	}
}
