// Package pgsource tests the PostgreSQL source reader (source/pgoutput)
// against real PostgreSQL 15 servers that the harness starts: the catalog
// readers, the DDL capture installed on a source, and what a walsender
// streams with protocol 3. The decoders' server-free tests stay beside
// them in source/pgoutput.
package pgsource

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/decant/decant/source"
)

// itemsMessage is a DDL message as the capture function emits it, the
// one the unit tests of source/pgoutput pin what ParseDDLMessage makes of.
var itemsMessage = func() string {
	b, err := os.ReadFile("../../source/pgoutput/testdata/ddl_items.json")
	if err != nil {
		panic(err)
	}
	return string(b)
}()

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
