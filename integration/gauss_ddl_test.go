package integration

import (
	"strings"
	"testing"

	"github.com/decant/decant/integration/gaussstub"
	"github.com/decant/decant/source"
	"github.com/decant/decant/source/gauss"
)

// gaussDDL is one DDL command as GaussDB decodes it: the statement of a
// TDDL record (enable-ddl-json-format=false), normalised as the server
// deparses it, and the document of a JDDL record (=true) in GaussDB's key
// spelling (object_name, schema_name, type_name, column_type; §3.1). They
// are fixtures built from the spec's samples and fmt strings (§3.2, §3.3):
// GaussDB cannot run here.
type gaussDDL struct{ text, json string }

const (
	jAlter   = `"fmt":"ALTER %{objtype}s %{only}s %{identity}D %{subcmds:, }s","only":"","objtype":"TABLE"`
	jItems   = `"identity":{"object_name":"items","schema_name":"public"}`
	jGoods   = `"identity":{"object_name":"goods","schema_name":"public"}`
	jNoColl  = `"collation":{"fmt":"COLLATE %{name}D","present":false}`
	jNoGen   = `"generated_column":{"fmt":"GENERATED ALWAYS AS (%{generation_expr}s) STORED","present":false}`
	jColFmt  = `"fmt":"%{name}I %{column_type}T %{collation}s %{default}s %{not_null}s %{generated_column}s"`
	jAddFmt  = `"fmt":"ADD %{objtype}s %{if_not_exists}s %{definition}s %{cascade}s","type":"add column","cascade":"","objtype":"COLUMN","if_not_exists":""`
	jInt4    = `{"typmod":"","typarray":false,"type_name":"int4","schema_name":"pg_catalog"}`
	jText    = `{"typmod":"","typarray":false,"type_name":"text","schema_name":"pg_catalog"}`
	jNoDeflt = `"default":{"fmt":"DEFAULT %{default}s","present":false}`
)

// gaussDDLSteps replay ddlSteps' kind of schema evolution on the real
// PostgreSQL source; each command's GaussDB records follow it, in order.
var gaussDDLSteps = []struct {
	name, sql string
	ddl       []gaussDDL
}{
	{"seed rows", `INSERT INTO items VALUES (1, 'one', 'n1'), (2, 'two', NULL); INSERT INTO other VALUES (1);`, nil},
	{"add a column and write it in the same transaction", `BEGIN;
		ALTER TABLE items ADD COLUMN qty integer DEFAULT 0;
		INSERT INTO items VALUES (10, 'ten', 'n10', 5);
		UPDATE items SET qty = 7 WHERE id = 1;
		COMMIT;`, []gaussDDL{{
		`ALTER TABLE public.items ADD COLUMN qty pg_catalog.int4 DEFAULT 0`,
		`{` + jAlter + `,` + jItems + `,"subcmds":[{` + jAddFmt + `,"definition":{` + jColFmt + `,"name":"qty","type":"column","column_type":` + jInt4 + `,` + jNoColl + `,"default":{"fmt":"DEFAULT %{default}s","default":"0"},"not_null":"",` + jNoGen + `}}]}`,
	}}},
	{"drop a column", `ALTER TABLE items DROP COLUMN note; INSERT INTO items (id, name, qty) VALUES (11, 'eleven', 1);`, []gaussDDL{{
		`ALTER TABLE public.items DROP COLUMN note`,
		`{` + jAlter + `,` + jItems + `,"subcmds":[{"fmt":"DROP %{objtype}s %{if_exists}s %{column}I %{cascade}s","type":"drop column","column":"note","objtype":"COLUMN","if_exists":"","cascade":{"fmt":"CASCADE","present":false}}]}`,
	}}},
	{"rename a column", `BEGIN; ALTER TABLE items RENAME COLUMN qty TO quantity; UPDATE items SET quantity = quantity + 1; COMMIT;`, []gaussDDL{{
		`ALTER TABLE public.items RENAME COLUMN qty TO quantity`,
		`{"fmt":"ALTER %{objtype}s %{only}s %{identity}D RENAME COLUMN %{colname}I TO %{newname}I","only":"","objtype":"TABLE","colname":"qty","newname":"quantity",` + jItems + `}`,
	}}},
	{"rename a table", `BEGIN; ALTER TABLE items RENAME TO goods; INSERT INTO goods VALUES (12, 'twelve', 3); COMMIT;`, []gaussDDL{{
		`ALTER TABLE public.items RENAME TO goods`,
		`{"fmt":"ALTER %{objtype}s %{if_exists}s %{identity}D RENAME TO %{newname}I","objtype":"TABLE","if_exists":"","newname":"goods",` + jItems + `}`,
	}}},
	{"change a type", `ALTER TABLE goods ALTER COLUMN quantity TYPE bigint; UPDATE goods SET quantity = quantity * 1000000000;`, []gaussDDL{{
		`ALTER TABLE public.goods ALTER COLUMN quantity SET DATA TYPE pg_catalog.int8`,
		`{` + jAlter + `,` + jGoods + `,"subcmds":[{"fmt":"ALTER %{objtype}s %{column}I SET DATA TYPE %{datatype}T %{collation}s %{using}s","type":"alter column type","column":"quantity","objtype":"COLUMN","datatype":{"typmod":"","typarray":false,"type_name":"int8","schema_name":"pg_catalog"},` + jNoColl + `,"using":{"fmt":"USING %{expression}s","present":false}}]}`,
	}}},
	{"add a NOT NULL column with a default", `ALTER TABLE goods ADD COLUMN status text NOT NULL DEFAULT 'new'; UPDATE goods SET status = 'old' WHERE id < 3;`, []gaussDDL{{
		`ALTER TABLE public.goods ADD COLUMN status pg_catalog.text DEFAULT 'new'::text NOT NULL`,
		`{` + jAlter + `,` + jGoods + `,"subcmds":[{` + jAddFmt + `,"definition":{` + jColFmt + `,"name":"status","type":"column","column_type":` + jText + `,` + jNoColl + `,"default":{"fmt":"DEFAULT %{default}s","default":"'new'::text"},"not_null":"NOT NULL",` + jNoGen + `}}]}`,
	}}},
	{"set NOT NULL and drop a default", `ALTER TABLE goods ALTER COLUMN name SET NOT NULL; ALTER TABLE goods ALTER COLUMN quantity DROP DEFAULT;
		INSERT INTO goods (id, name, quantity) VALUES (13, 'thirteen', 2);`, []gaussDDL{{
		`ALTER TABLE public.goods ALTER COLUMN name SET NOT NULL`,
		`{` + jAlter + `,` + jGoods + `,"subcmds":[{"fmt":"ALTER COLUMN %{column}I SET NOT NULL","type":"set not null","column":"name"}]}`,
	}, {
		`ALTER TABLE public.goods ALTER COLUMN quantity DROP DEFAULT`,
		`{` + jAlter + `,` + jGoods + `,"subcmds":[{"fmt":"ALTER COLUMN %{column}I DROP DEFAULT","type":"drop default","column":"quantity"}]}`,
	}}},
	{"add a unique constraint and an index", `ALTER TABLE goods ADD CONSTRAINT goods_name_key UNIQUE (name); CREATE INDEX goods_status_idx ON goods (status);
		INSERT INTO goods (id, name, quantity) VALUES (14, 'fourteen', 4);`, []gaussDDL{{
		`ALTER TABLE public.goods ADD CONSTRAINT goods_name_key UNIQUE (name)`,
		`{` + jAlter + `,` + jGoods + `,"subcmds":[{"fmt":"ADD CONSTRAINT %{name}I %{definition}s","type":"add constraint","name":"goods_name_key","definition":"UNIQUE (name)"}]}`,
	}, {
		`CREATE  INDEX  goods_status_idx ON public.goods USING btree (status pg_catalog.text_ops)`,
		`{"fmt":"CREATE %{unique}s INDEX %{concurrently}s %{name}I ON %{table}D USING %{index_am}s %{definition}s","name":"goods_status_idx","table":{"object_name":"goods","schema_name":"public"},"unique":"","index_am":"btree","definition":"(status pg_catalog.text_ops)","concurrently":""}`,
	}}},
	{"create a table and fill it in the same transaction", `BEGIN;
		CREATE TABLE fresh (id integer PRIMARY KEY, v text, n numeric(10,2));
		INSERT INTO fresh (id, v, n) SELECT g, 'v' || g, g / 3.0 FROM generate_series(1, 50) g;
		COMMIT;
		UPDATE fresh SET v = 'changed' WHERE id % 5 = 0; DELETE FROM fresh WHERE id > 45;`, []gaussDDL{{
		`CREATE  TABLE  public.fresh (id pg_catalog.int4 NOT NULL, v pg_catalog.text, n pg_catalog.numeric(10,2), CONSTRAINT fresh_pkey PRIMARY KEY (id)) WITH (orientation = 'row', compression = 'no')`,
		`{"fmt":"CREATE %{persistence}s TABLE %{if_not_exists}s %{identity}D %{table_elements}s %{with_clause}s","identity":{"object_name":"fresh","schema_name":"public"},"persistence":"","with_clause":{"fmt":"WITH (%{with:, }s)","with":[{"fmt":"%{label}s = %{value}L","label":{"fmt":"%{label}I","label":"orientation"},"value":"row"},{"fmt":"%{label}s = %{value}L","label":{"fmt":"%{label}I","label":"compression"},"value":"no"}]},"if_not_exists":"","table_elements":{"fmt":"(%{elements:, }s)","elements":[` +
			`{"fmt":"%{name}I %{column_type}T %{not_null}s","name":"id","column_type":` + jInt4 + `,"not_null":"NOT NULL"},` +
			`{"fmt":"%{name}I %{column_type}T","name":"v","column_type":` + jText + `},` +
			`{"fmt":"%{name}I %{column_type}T","name":"n","column_type":{"typmod":"(10,2)","typarray":false,"type_name":"numeric","schema_name":"pg_catalog"}},` +
			`{"fmt":"CONSTRAINT %{name}I %{definition}s","type":"constraint","name":"fresh_pkey","definition":"PRIMARY KEY (id)"}]}}`,
	}}},
	{"drop a table", `DROP TABLE other; INSERT INTO goods (id, name, quantity) VALUES (15, 'fifteen', 5);`, []gaussDDL{{
		`DROP TABLE public.other`,
		`{"fmt":"DROP %{objtype}s %{concurrently}s %{if_exists}s %{objidentity}s %{cascade}s","cascade":"","objtype":"table","if_exists":"","objidentity":"public.other","concurrently":""}`,
	}}},
	{"truncate", `TRUNCATE fresh; INSERT INTO fresh (id, v) VALUES (1, 'again');`, []gaussDDL{{
		`TRUNCATE TABLE public.fresh`,
		`{"fmt":"TRUNCATE %{only}s %{relations:, }D %{cascade}s","only":"","relations":[{"object_name":"fresh","schema_name":"public"}],"cascade":""}`,
	}}},
}

const gaussDDLSchema = `
CREATE TABLE items (id integer PRIMARY KEY, name text, note text);
CREATE TABLE other (id integer PRIMARY KEY);
CREATE TABLE marker (id integer PRIMARY KEY, xid text);
`

// TestGaussDDL replicates GaussDB schema changes, as TDDL text and as JDDL
// documents, in the serial and parallel formats, through the stand-in
// into both targets: decant init --ddl --create-tables reads the starting
// definitions from the stand-in's catalog, every DDL record becomes a
// schema change on the target, and the target ends equal to the
// PostgreSQL database the same statements ran on.
func TestGaussDDL(t *testing.T) {
	p := newPair(t)
	psql(t, p.src, gaussDDLSchema)
	tables := standInTables(t, p.src, "items", "other", "marker")
	var fixtures []gaussDDL
	for _, s := range gaussDDLSteps {
		fixtures = append(fixtures, s.ddl...)
	}
	// The PostgreSQL capture reports each DDL command; its place in the
	// stream is where the GaussDB record goes.
	var used int
	records := func(c *source.Change) []gauss.Record {
		if used == len(fixtures) {
			t.Fatalf("the source reported more DDL than the steps list (%s)", c.Op)
		}
		used++
		return []gauss.Record{{Kind: gauss.KindDDL, DDL: fixtures[used-1].text}}
	}
	textWork := capture(t, p, "items, other, marker", func() {
		for _, s := range gaussDDLSteps {
			psql(t, p.src, s.sql)
		}
		finalMarker(t, p.src)
	}, records)
	if used != len(fixtures) {
		t.Fatalf("the source reported %d DDL commands, the steps list %d", used, len(fixtures))
	}
	// The same stream with JDDL records instead of TDDL.
	jsonWork := captured{end: textWork.end}
	used = 0
	for _, txn := range textWork.txns {
		out := txn
		out.Records = nil
		for _, r := range txn.Records {
			if r.Kind == gauss.KindDDL {
				r = gauss.Record{Kind: gauss.KindDDL, DDLJSON: []byte(fixtures[used].json)}
				used++
			}
			out.Records = append(out.Records, r)
		}
		jsonWork.txns = append(jsonWork.txns, out)
	}

	ddlOptions := func(format []string, json bool) []string {
		o := append([]string{"enable-ddl-decoding=true"}, format...)
		if json {
			o = append(o, "enable-ddl-json-format=true")
		}
		return o
	}
	runs := []struct {
		name   string
		mysql  bool
		format []string
		json   bool
	}{
		{"mppdb-serial/text/postgres", false, nil, false},
		{"text/text/postgres", false, gaussFormats[3].options, false},
		{"json-batch/json/postgres", false, gaussFormats[6].options, true},
		{"text-batch/json/postgres", false, gaussFormats[4].options, true},
		{"json/json/mariadb", true, gaussFormats[5].options, true},
		{"mppdb-serial/text/mariadb", true, nil, false},
	}
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			q := newTargetPair(t, r.mysql)
			q.src = p.src // compare against the PostgreSQL source
			work := textWork
			if r.json {
				work = jsonWork
			}
			runGauss(t, q, work, "gaussdb", ddlOptions(r.format, r.json), func(srv *gaussstub.Server) {
				srv.SetTables(tables...)
			}, "--ddl", "--create-tables")
			if q.targetHasTable("other") {
				t.Error("table other was dropped on the source but not on the target")
			}
			if q.targetHasTable("items") || !q.targetHasTable("goods") {
				t.Error("table items was not renamed to goods on the target")
			}
		})
	}
}

// TestGaussUnsupportedDDL: a statement decant cannot interpret stops the
// pipeline with its command tag, table, xid and commit position in one
// line (never the statement, which may quote values) and
// nothing past it applied (--on-unsupported-ddl stop, the default); with
// skip it is logged and recorded, and the rows go on. DDL on a table
// outside --tables is ignored either way.
func TestGaussUnsupportedDDL(t *testing.T) {
	for _, kind := range []string{"postgres", "mariadb"} {
		t.Run(kind, func(t *testing.T) {
			p := newTargetPair(t, kind == "mariadb")
			srv := startStandIn(t, "")
			srv.SetTables(gaussstub.Table{Def: &source.TableDef{OID: 16500, Name: source.TableName{Schema: "public", Name: "t"},
				Columns: []source.ColumnDef{
					{Attnum: 1, Name: "id", Type: 23, TypeMod: -1, SQLType: "integer", NotNull: true},
					{Attnum: 2, Name: "v", Type: 25, TypeMod: -1, SQLType: "text"},
				}, PrimaryKey: []string{"id"}}})
			g := gaussPair(t, p, srv, []string{"enable-ddl-decoding=true"})
			g.extra = append(g.extra, "--tables", "public.*")
			g.mustDecant("init", "--ddl", "--create-tables")

			row := func(id string) gauss.Record {
				return gauss.Record{Kind: gauss.KindInsert, Schema: "public", Table: "t",
					New: []gauss.Column{{Name: "id", Type: 23, Value: []byte(id)}, {Name: "v", Type: 25, Value: []byte("v" + id)}}}
			}
			ddl := func(sql string) gauss.Record { return gauss.Record{Kind: gauss.KindDDL, DDL: sql} }
			const unsupported = "ALTER TABLE public.t MODIFY v pg_catalog.varchar(20)"
			txns := []gaussstub.Txn{
				serialTxn(901, 0x3000000, row("1")),
				serialTxn(902, 0x3001000, ddl("CREATE TABLE other.x (id pg_catalog.int4)"), row("2")),
				serialTxn(903, 0x3002000, ddl(unsupported), row("3")),
				serialTxn(904, 0x3003000, row("4")),
			}
			srv.Append(txns...)

			_, stderr, code := g.decant("run", "--catch-up")
			if code != 3 {
				t.Fatalf("decant applied an untranslatable statement (exit %d, want 3):\n%s", code, stderr)
			}
			oneLineError(t, "unsupported DDL", stderr, "xid 903", "commit 0/3002", "ALTER TABLE", "public.t", "--on-unsupported-ddl skip")
			if strings.Contains(stderr, "varchar(20)") {
				t.Errorf("the error quotes the source's statement (it may hold values):\n%s", stderr)
			}
			// Nothing from the statement's transaction on (transactions
			// before it may or may not have committed with it).
			if got := g.checkpointXid(); got == "903" || got == "904" {
				t.Errorf("checkpoint at xid %s after the stop, past the statement", got)
			}
			if rows := targetIDs(p, "t"); strings.Contains(rows, "3") || strings.Contains(rows, "4") {
				t.Errorf("target holds rows %s after the stop, past the statement", rows)
			}

			if log := g.mustDecant("run", "--catch-up", "--on-unsupported-ddl", "skip"); strings.Contains(log, "varchar(20)") || !strings.Contains(log, "ALTER TABLE") {
				t.Errorf("the skip's warning quotes the statement, or names no command:\n%s", log)
			}
			if got := g.checkpointXid(); got != "904" {
				t.Errorf("checkpoint at xid %s, want 904", got)
			}
			var skipped string
			if kind == "mariadb" {
				skipped = p.myValue(`SELECT CONCAT(xid, ' ', statement) FROM decant_skipped_ddl`)
			} else {
				skipped = queryValue(t, p.tgt, `SELECT xid || ' ' || statement FROM decant.skipped_ddl`)
			}
			if rows := targetIDs(p, "t"); rows != "1,2,3,4" {
				t.Errorf("target rows %s, want 1,2,3,4", rows)
			}
			if skipped != "903 "+unsupported {
				t.Errorf("recorded skipped DDL %q", skipped)
			}
		})
	}
}

// targetIDs lists the target table's ids, comma-separated.
func targetIDs(p *pair, table string) string {
	if p.mysql {
		return p.myValue(`SELECT GROUP_CONCAT(id ORDER BY id) FROM ` + table)
	}
	return queryValue(p.t, p.tgt, `SELECT coalesce(string_agg(id::text, ',' ORDER BY id), '') FROM `+table)
}

// serialTxn is a scripted transaction in the default (serial mppdb)
// format.
func serialTxn(xid uint64, lsn source.LSN, changes ...gauss.Record) gaussstub.Txn {
	recs := append([]gauss.Record{{Kind: gauss.KindBegin, LSN: lsn, FirstLSN: lsn}}, changes...)
	recs = append(recs, gauss.Record{Kind: gauss.KindCommit, LSN: lsn + 0x100, Xid: xid, HasXid: true, CSN: xid + 100})
	return gaussstub.Txn{Xid: xid, CSN: xid + 100, FirstLSN: lsn, CommitStart: lsn + 0x80, CommitEnd: lsn + 0x100, Records: recs}
}
