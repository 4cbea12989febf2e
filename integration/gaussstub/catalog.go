package gaussstub

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/decant/decant/source"
)

// Table is a source table whose catalog rows the stand-in serves to the
// queries decant's describe code runs (source/gauss/describe.go), as
// openGauss would print them.
type Table struct {
	Def    *source.TableDef // OID, name, columns (Attnum > 0), keys, indexes
	Ustore bool             // storage_type=ustore in reloptions
}

var (
	reTables  = regexp.MustCompile(`(?s)^\s*/\* decant:tables \*/`)
	reColumns = regexp.MustCompile(`(?s)^\s*/\* decant:columns \*/.*\bIN \(([0-9, ]+)\)`)
	reIndexes = regexp.MustCompile(`(?s)^\s*/\* decant:indexes \*/.*\bIN \(([0-9, ]+)\)`)
)

// SetTables replaces the tables the catalog queries see.
func (s *Server) SetTables(tables ...Table) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tables = tables
}

// catalogQuery answers a describe query; false if q is not one.
func (c *session) catalogQuery(q string) (bool, error) {
	c.srv.mu.Lock()
	tables := c.srv.tables
	c.srv.mu.Unlock()
	switch {
	case reTables.MatchString(q):
		var rows [][]string
		for _, t := range tables {
			opts := "orientation=row,compression=no"
			if t.Ustore {
				opts = "orientation=row,storage_type=ustore,compression=no"
			}
			rows = append(rows, []string{oidText(t.Def.OID), t.Def.Name.Schema, t.Def.Name.Name, opts})
		}
		return true, c.rows("", []string{"oid", "nspname", "relname", "coalesce"}, rows...)
	case reColumns.MatchString(q):
		var rows [][]string
		for _, t := range selected(tables, reColumns.FindStringSubmatch(q)[1]) {
			for _, col := range t.Def.Columns {
				if col.Attnum <= 0 {
					continue
				}
				expr, gen := col.Default, ""
				switch {
				case col.Generated != "":
					expr, gen = col.Generated, "s"
				case col.Identity != 0:
					expr = "nextval('" + t.Def.Name.Schema + "." + t.Def.Name.Name + "_" + col.Name + "_seq'::regclass)"
				}
				rows = append(rows, []string{oidText(t.Def.OID), strconv.Itoa(int(col.Attnum)), col.Name, oidText(col.Type),
					strconv.Itoa(int(col.TypeMod)), col.SQLType, boolText(col.NotNull), expr, gen})
			}
		}
		return true, c.rows("", []string{"attrelid", "attnum", "attname", "atttypid", "atttypmod", "format_type", "attnotnull", "coalesce", "coalesce"}, rows...)
	case reIndexes.MatchString(q):
		var rows [][]string
		for _, t := range selected(tables, reIndexes.FindStringSubmatch(q)[1]) {
			d := t.Def
			if len(d.PrimaryKey) > 0 {
				name := d.PrimaryKeyName
				if name == "" {
					name = d.Name.Name + "_pkey"
				}
				rows = append(rows, indexRow(d, source.IndexDef{Name: name, Columns: d.PrimaryKey}, true, true))
			}
			for _, ix := range d.Uniques {
				rows = append(rows, indexRow(d, ix, false, true))
			}
			for _, ix := range d.Indexes {
				rows = append(rows, indexRow(d, ix, false, false))
			}
		}
		return true, c.rows("", []string{"indrelid", "relname", "indisprimary", "indisunique", "indkey", "?column?", "pg_get_indexdef"}, rows...)
	}
	return false, nil
}

func selected(tables []Table, in string) []Table {
	var out []Table
	for _, t := range tables {
		for _, f := range strings.Split(in, ",") {
			if strings.TrimSpace(f) == oidText(t.Def.OID) {
				out = append(out, t)
			}
		}
	}
	return out
}

func indexRow(d *source.TableDef, ix source.IndexDef, primary, unique bool) []string {
	if ix.Expr != "" {
		return []string{oidText(d.OID), ix.Name, boolText(primary), boolText(unique), "0", "t", ix.Expr}
	}
	var keys []string
	for _, name := range ix.Columns {
		for _, c := range d.Columns {
			if c.Name == name {
				keys = append(keys, strconv.Itoa(int(c.Attnum)))
			}
		}
	}
	create := "CREATE INDEX "
	if unique {
		create = "CREATE UNIQUE INDEX "
	}
	def := create + ix.Name + " ON " + d.Name.String() + " USING btree (" + strings.Join(ix.Columns, ", ") + ") TABLESPACE pg_default"
	return []string{oidText(d.OID), ix.Name, boolText(primary), boolText(unique), strings.Join(keys, " "), "f", def}
}

func oidText(oid uint32) string { return strconv.FormatUint(uint64(oid), 10) }

func boolText(b bool) string {
	if b {
		return "t"
	}
	return "f"
}
