package pgsource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/decant/decant/integration/harness"
	"github.com/decant/decant/source"
	"github.com/decant/decant/source/pgoutput"
)

// TestCaptureSQL checks the SQL the capture function is built from
// against its Go counterparts, on a server: the table query
// (pgoutput.CaptureTableSQL) against DescribeTable, the table condition
// (pgoutput.CaptureMatchSQL) against TableFilter.Match.
func TestCaptureSQL(t *testing.T) {
	conn, _ := catalogConn(t)
	ctx := t.Context()

	t.Run("the table query reads as DescribeTable", func(t *testing.T) {
		for _, name := range []source.TableName{{Schema: "shop", Name: "orders"}, {Schema: "shop", Name: "dk"}, {Schema: "shop", Name: "tree"}, {Schema: "Odd Schema", Name: "Mixed Case"}} {
			want, err := pgoutput.DescribeTable(ctx, conn, name)
			if err != nil {
				t.Fatal(err)
			}
			for i := range want.Columns {
				want.Columns[i].Info = nil // resolved by the reader, not captured
			}
			var content []byte
			if err := conn.QueryRow(ctx, `SELECT jsonb_build_object('tag', 'CREATE TABLE', 'tables', jsonb_build_array(d))::text
				FROM (`+pgoutput.CaptureTableSQL()+`) x(d)`, want.OID).Scan(&content); err != nil {
				t.Fatal(err)
			}
			ddl, err := pgoutput.ParseDDLMessage(content)
			if err != nil {
				t.Fatal(err)
			}
			if got := ddl.Tables[0]; !reflect.DeepEqual(got, want) {
				t.Errorf("%s:\n got %s\nwant %s", name, renderDef(got), renderDef(want))
			}
		}
	})

	t.Run("the table condition is TableFilter.Match", func(t *testing.T) {
		names := [][2]string{
			{"public", "orders"}, {"public", "order_1"}, {"public", "orderX1"}, {"public", "order_"}, {"public", "Orders"},
			{"shop", "orders"}, {"shop", "100%"}, {"shop", "100x"}, {"shop", "a!b"}, {"shop", "a_b"}, {"shop", `a\b`}, {"shop", "it's"},
			{"Odd Schema", "Mixed Case"}, {"pg_catalog", "pg_class"}, {"information_schema", "tables"}, {"decant", "checkpoint"},
			{"pg_toast", "pg_toast_1"}, {"pg_temp_3", "t"}, {"pg_toastx", "t"}, {"pgXtemp", "t"}, {"decantx", "t"}, {"", ""},
		}
		for _, list := range []string{"", "public.*", "*.*", "public.order_*", "shop.100%,shop.a!b", `shop.a\b,shop.it's`,
			"*.orders", "Odd Schema.Mixed*", "pg_catalog.*,decant.*", "pg*.*", "p*c.or*s"} {
			filter, err := source.ParseTableFilter(list)
			if err != nil {
				t.Fatal(err)
			}
			expr := pgoutput.CaptureMatchSQL(filter, "s", "n")
			for _, name := range names {
				var got bool
				if err := conn.QueryRow(ctx, "SELECT "+expr+" FROM (SELECT $1::text, $2::text) x(s, n)", name[0], name[1]).Scan(&got); err != nil {
					t.Fatalf("filter %q: %s: %v", list, expr, err)
				}
				if want := filter.Match(name[0], name[1]); got != want {
					t.Errorf("filter %q on %s: SQL says %v, Match %v (%s)", list, name, got, want, expr)
				}
			}
		}
	})
}

// captureSource starts a source with database "ddl", schema app with a
// seed table, publication and slot "pipe", and the DDL capture of
// pipeline "pipe" over filter.
// queueDecoder is a decoder of pipeline's schema changes, which reads them
// from the queue table the capture installed, as the reader does.
func queueDecoder(t *testing.T, conn *pgx.Conn, pipeline string) *pgoutput.Decoder {
	t.Helper()
	d := pgoutput.NewDecoder()
	queue, err := pgoutput.QueueOID(t.Context(), conn.PgConn(), pipeline)
	if err != nil || queue == 0 {
		t.Fatalf("queue table of pipeline %s: OID %d, %v", pipeline, queue, err)
	}
	d.Pipeline, d.Queue = pipeline, queue
	return d
}

func captureSource(t *testing.T, filter string) (*harness.Postgres, *pgx.Conn) {
	t.Helper()
	ctx := t.Context()
	pg := harness.PostgresT(t, harness.PostgresOptions{})
	if err := pg.CreateDatabase(ctx, "ddl"); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, pg.DSN("ddl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	exec(t, conn, `CREATE SCHEMA app;
		CREATE TABLE app.seed (id int PRIMARY KEY);
		CREATE PUBLICATION pipe FOR TABLE app.seed WITH (publish_via_partition_root = true)`)
	exec(t, conn, `SELECT pg_create_logical_replication_slot('pipe', 'pgoutput')`)
	f, err := source.ParseTableFilter(filter)
	if err != nil {
		t.Fatal(err)
	}
	if err := pgoutput.InstallDDLCapture(ctx, conn, "pipe", "pipe", f); err != nil {
		t.Fatal(err)
	}
	return pg, conn
}

func TestDDLCaptureInstall(t *testing.T) {
	pg, conn := captureSource(t, "app.*")
	ctx := t.Context()
	filter, _ := source.ParseTableFilter("app.*")
	if err := pgoutput.InstallDDLCapture(ctx, conn, "pipe", "pipe", filter); err != nil {
		t.Fatalf("second install: %v", err)
	}
	installed := func() string {
		t.Helper()
		var got string
		err := conn.QueryRow(ctx, `SELECT coalesce(string_agg(format('%s %s %s %s', evtname, evtevent, evtenabled, evtfoid::regproc), ', ' ORDER BY evtname), '')
			|| CASE WHEN to_regprocedure('decant.ddl_pipe()') IS NULL THEN '' ELSE '; function' END
			|| CASE WHEN to_regprocedure('decant.ddl_pipe_publish(oid)') IS NULL THEN '' ELSE '; publish function' END
			FROM pg_event_trigger`).Scan(&got)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	want := "decant_ddl_pipe ddl_command_end O decant.ddl_pipe, decant_drop_pipe sql_drop O decant.ddl_pipe, decant_pre_pipe ddl_command_start O decant.ddl_pipe; function; publish function"
	if got := installed(); got != want {
		t.Errorf("installed:\n got %s\nwant %s", got, want)
	}
	for i, wantRemoved := range []bool{true, false} {
		removed, err := pgoutput.RemoveDDLCapture(ctx, conn, "pipe")
		if err != nil || removed != wantRemoved {
			t.Errorf("remove #%d = %v, %v; want %v", i+1, removed, err, wantRemoved)
		}
		if got := installed(); got != "" {
			t.Errorf("after remove #%d: %s", i+1, got)
		}
	}

	for _, tt := range []struct{ what, pipeline, publication, want string }{
		{"missing publication", "pipe", "nopub", "publication nopub does not exist"},
		{"long pipeline name", strings.Repeat("p", 52), "pipe", "at most 51 lowercase letters"},
		{"bad pipeline name", "Pipe", "pipe", "at most 51 lowercase letters"},
	} {
		err := pgoutput.InstallDDLCapture(ctx, conn, tt.pipeline, tt.publication, filter)
		if !errors.Is(err, pgoutput.ErrSetup) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want ErrSetup saying %q", tt.what, err, tt.want)
		}
	}
	if _, err := pgoutput.RemoveDDLCapture(ctx, conn, "Pipe"); !errors.Is(err, pgoutput.ErrSetup) {
		t.Errorf("remove with a bad pipeline name: %v, want ErrSetup", err)
	}

	exec(t, conn, "CREATE ROLE plain LOGIN")
	plain, err := pgx.Connect(ctx, strings.Replace(pg.DSN("ddl"), "postgres@", "plain@", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close(context.Background())
	err = pgoutput.InstallDDLCapture(ctx, plain, "pipe", "pipe", filter)
	if !errors.Is(err, pgoutput.ErrSetup) || !strings.Contains(err.Error(), "SUPERUSER") || !strings.Contains(err.Error(), `"plain"`) {
		t.Errorf("install as a plain user: %v, want ErrSetup naming SUPERUSER and the user", err)
	}
	if got := installed(); got != "" {
		t.Errorf("after failed installs: %s", got)
	}
}

// slotReader decodes what pgoutput sends from slot "pipe", consuming it.
type slotReader struct {
	conn *pgx.Conn
	dec  *pgoutput.Decoder
}

// read decodes the slot's pending changes for publication pub into a
// trace ("begin", "insert app.items", "ddl ALTER TABLE", "commit"; relation
// announcements left out) and the DDL changes. It stops at the first
// decoding error and returns it.
func (r *slotReader) read(t *testing.T, pub string) (trace []string, ddls []*source.DDL, err error) {
	t.Helper()
	rows, err := r.conn.Query(t.Context(), `SELECT data FROM pg_logical_slot_get_binary_changes('pipe', NULL, NULL,
		'proto_version', '1', 'publication_names', $1, 'messages', 'true')`, pub)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		t.Fatal(err)
	}
	for _, data := range msgs {
		ev, err := r.dec.Decode(data)
		if err != nil {
			return trace, ddls, err
		}
		switch {
		case ev.Kind == pgoutput.EventBegin:
			trace = append(trace, "begin")
		case ev.Kind == pgoutput.EventCommit:
			trace = append(trace, "commit")
		case ev.Kind == pgoutput.EventChange && ev.Change.Op == source.OpDDL:
			trace = append(trace, "ddl "+ev.Change.DDL.Tag)
			ddls = append(ddls, ev.Change.DDL)
		case ev.Kind == pgoutput.EventChange:
			trace = append(trace, fmt.Sprintf("%s %s", ev.Change.Op, ev.Change.Rel.Table()))
		}
	}
	return trace, ddls, nil
}

// wantDDL is an expected DDL change.
type wantDDL struct {
	tag, statement string
	tables         []*source.TableDef
	dropped        []source.DroppedTable
}

func checkDDLs(t *testing.T, got []*source.DDL, want []wantDDL, searchPath string) {
	t.Helper()
	for i := range max(len(got), len(want)) {
		if i >= len(got) || i >= len(want) {
			t.Errorf("DDL %d: got %d DDL changes, want %d", i, len(got), len(want))
			return
		}
		g, w := got[i], want[i]
		if g.Tag != w.tag || g.Statement != w.statement || g.SearchPath != searchPath {
			t.Errorf("DDL %d: tag %q statement %q search_path %q, want %q %q %q", i, g.Tag, g.Statement, g.SearchPath, w.tag, w.statement, searchPath)
		}
		if !reflect.DeepEqual(g.Tables, w.tables) {
			t.Errorf("DDL %d (%s) tables:\n got %s\nwant %s", i, w.statement, renderDefs(g.Tables), renderDefs(w.tables))
		}
		if !reflect.DeepEqual(g.Dropped, w.dropped) {
			t.Errorf("DDL %d (%s) dropped: got %+v, want %+v", i, w.statement, g.Dropped, w.dropped)
		}
		var raw struct{ Pipeline string }
		if err := json.Unmarshal(g.JSON, &raw); err != nil || raw.Pipeline != "pipe" {
			t.Errorf("DDL %d: JSON names pipeline %q (%v), want pipe", i, raw.Pipeline, err)
		}
	}
}

func checkTrace(t *testing.T, got, want []string) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("stream:\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(want, "\n     "))
	}
}

func TestDDLCapture(t *testing.T) {
	pg, conn := captureSource(t, "app.*,public.orders*,tmp.*")
	ctx := t.Context()
	r := &slotReader{conn: conn, dec: queueDecoder(t, conn, "pipe")}
	oidOf := func(q querier, name string) uint32 {
		t.Helper()
		var oid uint32
		if err := q.QueryRow(ctx, `SELECT $1::regclass::oid`, name).Scan(&oid); err != nil {
			t.Fatal(err)
		}
		return oid
	}
	published := func() string {
		t.Helper()
		var got string
		if err := conn.QueryRow(ctx, `SELECT string_agg(schemaname || '.' || tablename, ' ' ORDER BY schemaname, tablename) FROM pg_publication_tables WHERE pubname = 'pipe'`).Scan(&got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	col := func(attnum int16, name string, typ uint32, mod int32, sqlType string) source.ColumnDef {
		return source.ColumnDef{Attnum: attnum, Name: name, Type: typ, TypeMod: mod, SQLType: sqlType}
	}
	with := func(c source.ColumnDef, f func(*source.ColumnDef)) source.ColumnDef { f(&c); return c }
	def := func(oid uint32, schema, name string, cols []source.ColumnDef, pk []string, uniques, indexes []source.IndexDef) *source.TableDef {
		return &source.TableDef{OID: oid, Name: source.TableName{Schema: schema, Name: name}, Columns: cols, PrimaryKey: pk, Uniques: uniques, Indexes: indexes}
	}
	defs := func(d ...*source.TableDef) []*source.TableDef { return d }

	t.Run("one transaction", func(t *testing.T) {
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(context.Background())
		var items, logs, serials uint32
		stmts := []string{
			"CREATE TABLE app.items (id int NOT NULL, name text, qty int DEFAULT 1)",
			"INSERT INTO app.items VALUES (1, 'a', 2), (2, 'b', 3)",
			"ALTER TABLE app.items ADD COLUMN note varchar(20) DEFAULT 'n/a'",
			"ALTER TABLE app.items RENAME COLUMN name TO title",
			"ALTER TABLE app.items ALTER COLUMN qty TYPE bigint",
			"ALTER TABLE app.items ALTER COLUMN title SET NOT NULL",
			"ALTER TABLE app.items ADD PRIMARY KEY (id)",
			"CREATE UNIQUE INDEX items_title_uidx ON app.items (title)",
			"ALTER TABLE app.items RENAME TO goods",
			"CREATE INDEX goods_lower_idx ON app.goods (lower(title))",
			"DROP INDEX app.goods_lower_idx",
			"ALTER INDEX app.items_title_uidx RENAME TO goods_title_uidx",
			"INSERT INTO app.goods VALUES (3, 'c', 4, 'x')",
			"CREATE SCHEMA other",
			"CREATE TABLE other.skip (id int)",
			"CREATE TABLE app.logs (at timestamptz DEFAULT now(), msg text)",
			"INSERT INTO app.logs (msg) VALUES ('hi')",
			"CREATE TABLE app.serials (id serial PRIMARY KEY, ext bigint GENERATED ALWAYS AS IDENTITY, total numeric GENERATED ALWAYS AS (id * 2) STORED)",
			"DROP TABLE app.goods",
		}
		for _, s := range stmts {
			exec(t, tx, s)
			switch {
			case strings.HasPrefix(s, "CREATE TABLE app.items"):
				items = oidOf(tx, "app.items")
			case strings.HasPrefix(s, "CREATE TABLE app.logs"):
				logs = oidOf(tx, "app.logs")
			case strings.HasPrefix(s, "CREATE TABLE app.serials"):
				serials = oidOf(tx, "app.serials")
			}
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}

		trace, ddls, err := r.read(t, "pipe")
		if err != nil {
			t.Fatal(err)
		}
		checkTrace(t, trace, []string{"begin",
			"ddl CREATE TABLE", "insert app.items", "insert app.items",
			"ddl ALTER TABLE", "ddl ALTER TABLE", "ddl ALTER TABLE", "ddl ALTER TABLE", "ddl ALTER TABLE",
			"ddl CREATE INDEX", "ddl ALTER TABLE", "ddl CREATE INDEX", "ddl DROP INDEX", "ddl ALTER INDEX",
			"insert app.goods",
			"ddl CREATE TABLE", "insert app.logs",
			"ddl CREATE TABLE",
			"ddl DROP TABLE",
			"commit"})

		id := with(col(1, "id", 23, -1, "integer"), func(c *source.ColumnDef) { c.NotNull = true })
		name := col(2, "name", 25, -1, "text")
		title := with(name, func(c *source.ColumnDef) { c.Name = "title" })
		titleNN := with(title, func(c *source.ColumnDef) { c.NotNull = true })
		qty := with(col(3, "qty", 23, -1, "integer"), func(c *source.ColumnDef) { c.Default = "1" })
		qty8 := with(qty, func(c *source.ColumnDef) { c.Type, c.SQLType = 20, "bigint" })
		note := with(col(4, "note", 1043, 24, "character varying(20)"), func(c *source.ColumnDef) { c.Default = "'n/a'::character varying" })
		pk := []string{"id"}
		titleUnique := []source.IndexDef{{Name: "items_title_uidx", Columns: []string{"title"}}}
		final := []source.ColumnDef{id, titleNN, qty8, note}
		checkDDLs(t, ddls, []wantDDL{
			{"CREATE TABLE", stmts[0], defs(def(items, "app", "items", []source.ColumnDef{id, name, qty}, nil, nil, nil)), nil},
			{"ALTER TABLE", stmts[2], defs(def(items, "app", "items", []source.ColumnDef{id, name, qty, note}, nil, nil, nil)), nil},
			{"ALTER TABLE", stmts[3], defs(def(items, "app", "items", []source.ColumnDef{id, title, qty, note}, nil, nil, nil)), nil},
			{"ALTER TABLE", stmts[4], defs(def(items, "app", "items", []source.ColumnDef{id, title, qty8, note}, nil, nil, nil)), nil},
			{"ALTER TABLE", stmts[5], defs(def(items, "app", "items", final, nil, nil, nil)), nil},
			{"ALTER TABLE", stmts[6], defs(def(items, "app", "items", final, pk, nil, nil)), nil},
			{"CREATE INDEX", stmts[7], defs(def(items, "app", "items", final, pk, titleUnique, nil)), nil},
			{"ALTER TABLE", stmts[8], defs(def(items, "app", "goods", final, pk, titleUnique, nil)), nil},
			{"CREATE INDEX", stmts[9], defs(def(items, "app", "goods", final, pk, titleUnique, []source.IndexDef{
				{Name: "goods_lower_idx", Expr: "CREATE INDEX goods_lower_idx ON app.goods USING btree (lower(title))"}})), nil},
			{"DROP INDEX", stmts[10], defs(def(items, "app", "goods", final, pk, titleUnique, nil)), nil},
			{"ALTER INDEX", stmts[11], defs(def(items, "app", "goods", final, pk,
				[]source.IndexDef{{Name: "goods_title_uidx", Columns: []string{"title"}}}, nil)), nil},
			{"CREATE TABLE", stmts[15], defs(def(logs, "app", "logs", []source.ColumnDef{
				with(col(1, "at", 1184, -1, "timestamp with time zone"), func(c *source.ColumnDef) { c.Default = "now()" }),
				col(2, "msg", 25, -1, "text"),
			}, nil, nil, nil)), nil},
			{"CREATE TABLE", stmts[17], defs(def(serials, "app", "serials", []source.ColumnDef{
				with(id, func(c *source.ColumnDef) { c.Identity = 'd' }),
				with(col(2, "ext", 20, -1, "bigint"), func(c *source.ColumnDef) { c.NotNull, c.Identity = true, 'a' }),
				with(col(3, "total", 1700, -1, "numeric"), func(c *source.ColumnDef) { c.Generated = "(id * 2)" }),
			}, pk, nil, nil)), nil},
			{"DROP TABLE", stmts[18], nil, []source.DroppedTable{{OID: items, Name: source.TableName{Schema: "app", Name: "goods"}}}},
		}, "")

		if got, want := published(), "app.logs app.seed app.serials decant.ddl_events_pipe"; got != want {
			t.Errorf("publication holds %s, want %s", got, want)
		}
		if got, want := identities(t, conn, "app.logs", "app.serials", "other.skip"), "app.logs=f app.serials=d other.skip=d"; got != want {
			t.Errorf("replica identities %s, want %s", got, want)
		}
	})

	t.Run("search_path, renames out of the patterns, CREATE SCHEMA, CREATE TABLE AS, DROP SCHEMA", func(t *testing.T) {
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(context.Background())
		exec(t, tx, "SET LOCAL search_path = public, app")
		var orders, t1, t2, copy, par, kid uint32
		stmts := []string{
			"CREATE TABLE orders_2024 (id int PRIMARY KEY)",
			"ALTER TABLE orders_2024 RENAME TO archive_2024",
			"INSERT INTO archive_2024 VALUES (1)",
			"DROP TABLE archive_2024",
			"CREATE SCHEMA tmp CREATE TABLE t1 (id int PRIMARY KEY) CREATE TABLE t2 (id int)",
			"CREATE UNLOGGED TABLE app.scratch (id int)",
			"CREATE TABLE app.copy AS SELECT 1 AS n",
			"INSERT INTO app.copy VALUES (2)",
			"CREATE TABLE app.par (a int PRIMARY KEY)",
			"CREATE TABLE app.kid (b int) INHERITS (app.par)",
			"ALTER TABLE app.par ADD COLUMN c text",
			"ALTER SCHEMA tmp RENAME TO tmp2",
			"DROP SCHEMA tmp2 CASCADE",
		}
		for _, s := range stmts {
			exec(t, tx, s)
			var path string
			if err := tx.QueryRow(ctx, "SHOW search_path").Scan(&path); err != nil || path != "public, app" {
				t.Errorf("after %s: search_path %q (%v), want the session's", s, path, err)
			}
			switch {
			case strings.HasPrefix(s, "CREATE TABLE orders"):
				orders = oidOf(tx, "public.orders_2024")
			case strings.HasPrefix(s, "CREATE SCHEMA tmp"):
				t1, t2 = oidOf(tx, "tmp.t1"), oidOf(tx, "tmp.t2")
				if got, want := identities(t, tx, "tmp.t1", "tmp.t2"), "tmp.t1=d tmp.t2=f"; got != want {
					t.Errorf("replica identities %s, want %s", got, want)
				}
			case strings.HasPrefix(s, "CREATE TABLE app.copy"):
				copy = oidOf(tx, "app.copy")
			case strings.HasPrefix(s, "CREATE TABLE app.par"):
				par = oidOf(tx, "app.par")
			case strings.HasPrefix(s, "CREATE TABLE app.kid"):
				kid = oidOf(tx, "app.kid")
			}
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		trace, ddls, err := r.read(t, "pipe")
		if err != nil {
			t.Fatal(err)
		}
		// CREATE TABLE AS wrote its row before the table joined the
		// publication: only the later INSERT is published.
		checkTrace(t, trace, []string{"begin",
			"ddl CREATE TABLE", "ddl ALTER TABLE", "insert public.archive_2024", "ddl DROP TABLE",
			"ddl CREATE SCHEMA", "ddl CREATE TABLE AS", "insert app.copy",
			"ddl CREATE TABLE", "ddl CREATE TABLE", "ddl ALTER TABLE", "ddl ALTER SCHEMA", "ddl DROP SCHEMA",
			"commit"})
		id := source.ColumnDef{Attnum: 1, Name: "id", Type: 23, TypeMod: -1, SQLType: "integer", NotNull: true}
		idNull := with(id, func(c *source.ColumnDef) { c.NotNull = false })
		a := with(id, func(c *source.ColumnDef) { c.Name = "a" })
		b := col(2, "b", 23, -1, "integer")
		checkDDLs(t, ddls, []wantDDL{
			{"CREATE TABLE", stmts[0], defs(def(orders, "public", "orders_2024", []source.ColumnDef{id}, []string{"id"}, nil, nil)), nil},
			// Out of the patterns but in the publication: still replicated, still described.
			{"ALTER TABLE", stmts[1], defs(def(orders, "public", "archive_2024", []source.ColumnDef{id}, []string{"id"}, nil, nil)), nil},
			{"DROP TABLE", stmts[3], nil, []source.DroppedTable{{OID: orders, Name: source.TableName{Schema: "public", Name: "archive_2024"}}}},
			{"CREATE SCHEMA", stmts[4], defs(
				def(t1, "tmp", "t1", []source.ColumnDef{id}, []string{"id"}, nil, nil),
				def(t2, "tmp", "t2", []source.ColumnDef{idNull}, nil, nil, nil)), nil},
			{"CREATE TABLE AS", stmts[6], defs(def(copy, "app", "copy", []source.ColumnDef{col(1, "n", 23, -1, "integer")}, nil, nil, nil)), nil},
			{"CREATE TABLE", stmts[8], defs(def(par, "app", "par", []source.ColumnDef{a}, []string{"a"}, nil, nil)), nil},
			{"CREATE TABLE", stmts[9], defs(def(kid, "app", "kid", []source.ColumnDef{a, b}, nil, nil, nil)), nil},
			// The child table changes with its parent.
			{"ALTER TABLE", stmts[10], defs(
				def(par, "app", "par", []source.ColumnDef{a, col(2, "c", 25, -1, "text")}, []string{"a"}, nil, nil),
				def(kid, "app", "kid", []source.ColumnDef{a, b, col(3, "c", 25, -1, "text")}, nil, nil, nil)), nil},
			// Out of the patterns but in the publication.
			{"ALTER SCHEMA", stmts[11], defs(
				def(t1, "tmp2", "t1", []source.ColumnDef{id}, []string{"id"}, nil, nil),
				def(t2, "tmp2", "t2", []source.ColumnDef{idNull}, nil, nil, nil)), nil},
			{"DROP SCHEMA", stmts[12], nil, []source.DroppedTable{
				{OID: t1, Name: source.TableName{Schema: "tmp2", Name: "t1"}}, {OID: t2, Name: source.TableName{Schema: "tmp2", Name: "t2"}}}},
		}, "")
		if got, want := identities(t, conn, "app.par", "app.kid"), "app.par=d app.kid=f"; got != want {
			t.Errorf("replica identities %s, want %s", got, want)
		}
		var path string
		if err := conn.QueryRow(ctx, "SHOW search_path").Scan(&path); err != nil || path != `"$user", public` {
			t.Errorf("search_path after the transaction %q (%v)", path, err)
		}
	})

	t.Run("concurrent index commands", func(t *testing.T) {
		serials := oidOf(conn, "app.serials")
		stmts := []string{
			"CREATE INDEX CONCURRENTLY serials_ext_idx ON app.serials (ext)",
			"DROP INDEX CONCURRENTLY app.serials_ext_idx",
		}
		for _, s := range stmts {
			exec(t, conn, s)
		}
		trace, ddls, err := r.read(t, "pipe")
		if err != nil {
			t.Fatal(err)
		}
		checkTrace(t, trace, []string{"begin", "ddl CREATE INDEX", "commit", "begin", "ddl DROP INDEX", "commit"})
		cols := []source.ColumnDef{
			{Attnum: 1, Name: "id", Type: 23, TypeMod: -1, SQLType: "integer", NotNull: true, Identity: 'd'},
			{Attnum: 2, Name: "ext", Type: 20, TypeMod: -1, SQLType: "bigint", NotNull: true, Identity: 'a'},
			{Attnum: 3, Name: "total", Type: 1700, TypeMod: -1, SQLType: "numeric", Generated: "(id * 2)"},
		}
		checkDDLs(t, ddls, []wantDDL{
			{"CREATE INDEX", stmts[0], defs(def(serials, "app", "serials", cols, []string{"id"}, nil,
				[]source.IndexDef{{Name: "serials_ext_idx", Columns: []string{"ext"}}})), nil},
			{"DROP INDEX", stmts[1], defs(def(serials, "app", "serials", cols, []string{"id"}, nil, nil)), nil},
		}, "")
	})

	t.Run("DDL by a user who owns neither the publication nor the capture", func(t *testing.T) {
		exec(t, conn, "CREATE ROLE appuser LOGIN; GRANT USAGE, CREATE ON SCHEMA app TO appuser")
		user, err := pgx.Connect(ctx, strings.Replace(pg.DSN("ddl"), "postgres@", "appuser@", 1))
		if err != nil {
			t.Fatal(err)
		}
		defer user.Close(context.Background())
		exec(t, user, "BEGIN")
		exec(t, user, "CREATE TABLE app.mine (id int PRIMARY KEY)")
		exec(t, user, "INSERT INTO app.mine VALUES (1)")
		exec(t, user, "COMMIT")
		mine := oidOf(conn, "app.mine")
		trace, ddls, err := r.read(t, "pipe")
		if err != nil {
			t.Fatal(err)
		}
		checkTrace(t, trace, []string{"begin", "ddl CREATE TABLE", "insert app.mine", "commit"})
		checkDDLs(t, ddls, []wantDDL{{"CREATE TABLE", "CREATE TABLE app.mine (id int PRIMARY KEY)", defs(def(mine, "app", "mine",
			[]source.ColumnDef{{Attnum: 1, Name: "id", Type: 23, TypeMod: -1, SQLType: "integer", NotNull: true}}, []string{"id"}, nil, nil)), nil}},
			"")
		// The publish function, callable by anyone, only publishes what the
		// pipeline selects.
		exec(t, conn, "CREATE TABLE other.theirs (id int PRIMARY KEY)")
		_, err = user.Exec(ctx, "SELECT decant.ddl_pipe_publish($1)", oidOf(conn, "other.theirs"))
		if err == nil || !strings.Contains(err.Error(), "is not a table the pipeline replicates") {
			t.Errorf("publishing an unselected table: %v", err)
		}
	})

	t.Run("a failing capture reports and lets the command through", func(t *testing.T) {
		// Without its publication the capture cannot publish a new table.
		exec(t, conn, "DROP PUBLICATION pipe")
		exec(t, conn, "CREATE PUBLICATION reader FOR TABLE app.seed, decant.ddl_events_pipe")
		exec(t, conn, "BEGIN")
		exec(t, conn, "CREATE TABLE app.broken (id int PRIMARY KEY)")
		exec(t, conn, "INSERT INTO app.broken VALUES (1)")
		exec(t, conn, "ALTER TABLE app.serials ADD COLUMN extra int")
		exec(t, conn, "COMMIT")
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM app.broken").Scan(&n); err != nil || n != 1 {
			t.Fatalf("app.broken holds %d rows (%v), want the committed one", n, err)
		}
		var inTrigger *string
		if err := conn.QueryRow(ctx, "SELECT current_setting('decant.in_trigger', true)").Scan(&inTrigger); err != nil || (inTrigger != nil && *inTrigger == "on") {
			t.Errorf("decant.in_trigger left %v (%v)", inTrigger, err)
		}
		r := &slotReader{conn: conn, dec: queueDecoder(t, conn, "pipe")}
		trace, _, err := r.read(t, "reader")
		var ce *pgoutput.CaptureError
		if !errors.As(err, &ce) || ce.Pipeline != "pipe" || ce.Tag != "CREATE TABLE" || ce.Message != `publication "pipe" does not exist` {
			t.Fatalf("decode error %v, want a CaptureError for CREATE TABLE naming the missing publication", err)
		}
		checkTrace(t, trace, []string{"begin"})
	})

	t.Run("removed capture emits nothing", func(t *testing.T) {
		if removed, err := pgoutput.RemoveDDLCapture(ctx, conn, "pipe"); err != nil || !removed {
			t.Fatalf("remove = %v, %v", removed, err)
		}
		exec(t, conn, "CREATE TABLE app.after (id int PRIMARY KEY)")
		exec(t, conn, "INSERT INTO app.seed VALUES (1)")
		d := pgoutput.NewDecoder()
		d.Pipeline = "pipe" // its queue is gone: a row of one would be untrusted
		trace, _, err := (&slotReader{conn: conn, dec: d}).read(t, "reader")
		if err != nil {
			t.Fatal(err)
		}
		checkTrace(t, trace, []string{"begin", "insert app.seed", "commit"})
	})
}

// identities lists tables' replica identities as "name=identity".
func identities(t *testing.T, q querier, tables ...string) string {
	t.Helper()
	var got string
	if err := q.QueryRow(t.Context(), `SELECT string_agg(t || '=' || (SELECT relreplident::text FROM pg_class WHERE oid = t::regclass), ' ' ORDER BY o)
		FROM unnest($1::text[]) WITH ORDINALITY u(t, o)`, tables).Scan(&got); err != nil {
		t.Fatal(err)
	}
	return got
}
