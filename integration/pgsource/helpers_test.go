// Package pgsource tests the PostgreSQL source reader (source/pgoutput)
// against real PostgreSQL 15 servers that the harness starts: the catalog
// readers, the DDL capture installed on a source, and what a walsender
// streams with protocol 3. The decoders' server-free tests stay beside
// them in source/pgoutput.
package pgsource

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/decant/decant/source"
)

// itemsMessage is a DDL message as the capture function emits it; the
// unit tests of source/pgoutput pin what ParseDDLMessage makes of it.
const itemsMessage = `{"pipeline": "orders", "tag": "ALTER TABLE", "statement": "ALTER TABLE app.items ADD note text", "search_path": "\"$user\", public",
 "tables": [{"oid": 16390, "schema": "app", "name": "items",
   "columns": [
     {"attnum": 1, "name": "id", "type_oid": 23, "typmod": -1, "sql_type": "integer", "not_null": true, "default": "", "identity": "d", "generated": ""},
     {"attnum": 3, "name": "mood", "type_oid": 16400, "typmod": -1, "sql_type": "app.mood", "not_null": false, "default": "'ok'::app.mood", "identity": "", "generated": ""},
     {"attnum": 4, "name": "code", "type_oid": 1043, "typmod": 24, "sql_type": "character varying(20)", "not_null": false, "default": "", "identity": "a", "generated": ""},
     {"attnum": 5, "name": "total", "type_oid": 1700, "typmod": -1, "sql_type": "numeric", "not_null": false, "default": "", "identity": "", "generated": "(id * 2)", "future": 1}],
   "primary_key": ["id"],
   "uniques": [{"name": "items_code_key", "columns": ["code"], "expr": ""},
               {"name": "items_lower_idx", "columns": [], "expr": "CREATE UNIQUE INDEX items_lower_idx ON app.items USING btree (lower(code))"}],
   "indexes": []}],
 "dropped": [{"oid": 16500, "schema": "app", "name": "old"}]}`

// execer is a *pgx.Conn or a pgx.Tx.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// querier is a *pgx.Conn or a pgx.Tx.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func exec(t *testing.T, conn execer, sql string) {
	t.Helper()
	if _, err := conn.Exec(t.Context(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// renderDefs and renderDef spell table definitions out for failure messages.
func renderDefs(defs []*source.TableDef) string {
	parts := make([]string, len(defs))
	for i, d := range defs {
		parts[i] = renderDef(d)
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

func renderDef(d *source.TableDef) string {
	if d == nil {
		return "<nil>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s (", d.OID, d.Name)
	for i, c := range d.Columns {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%+v", c)
	}
	fmt.Fprintf(&b, ") pk %q uniques %+v indexes %+v", d.PrimaryKey, d.Uniques, d.Indexes)
	return b.String()
}
