package mysql

import (
	"strings"

	"github.com/decant/decant/mapping"
)

// This file renders SQL for MySQL and MariaDB from a mapping.Plan. It is
// pure. Values are always placeholders: a batch writes them in as
// literals (literals.go, the driver's escaping rules for the session's
// sql_mode and utf8mb4), so that it is one round trip, and no value is
// ever concatenated into SQL anywhere else.

var (
	quoteIdent = mapping.QuoteMySQL
	quoteTable = mapping.QuoteMySQLTable
)

// insertHead is "INSERT INTO t (`a`, `b`) VALUES " and rowMarks "(?, ?)".
func insertHead(p *mapping.Plan) (head, rowMarks string) {
	var b strings.Builder
	b.WriteString("INSERT INTO " + quoteTable(p.Target) + " (")
	marks := make([]string, len(p.Cols))
	for n, i := range p.Cols {
		if n > 0 {
			b.WriteString(", ")
		}
		b.WriteString(quoteIdent(p.Targets[i].Name))
		marks[n] = "?"
	}
	b.WriteString(") VALUES ")
	return b.String(), "(" + strings.Join(marks, ", ") + ")"
}

// comparer renders the comparison of one column with a placeholder. FLOAT
// columns compare in single precision and MySQL's JSON columns as JSON,
// or a value read back would not equal the one written.
type comparer func(col string, nullSafe bool) string

func compareWith(tgt mapping.MySQLColumn, maria bool) comparer {
	arg := "?"
	switch {
	case tgt.DataType == "float":
		arg = "CAST(? AS FLOAT)"
	case tgt.DataType == "json" && !maria:
		arg = "CAST(? AS JSON)"
	}
	return func(col string, nullSafe bool) string {
		if nullSafe {
			return quoteIdent(col) + " <=> " + arg
		}
		return quoteIdent(col) + " = " + arg
	}
}

// renderWhere finds a row by its key, or without one by all its written
// columns, NULL-safe (<=>), one row at a time (LIMIT 1) so that identical
// duplicates are changed one by one as on the source.
func renderWhere(p *mapping.Plan, m mapping.Match, cmp []comparer) string {
	var b strings.Builder
	for n, i := range p.WhereCols(m) {
		if n > 0 {
			b.WriteString(" AND ")
		}
		b.WriteString(cmp[i](p.Targets[i].Name, m.Whole))
	}
	if m.Whole {
		b.WriteString(" LIMIT 1")
	}
	return b.String()
}

// renderUpdate sets the columns marked in set (unchanged TOAST values are
// left out: the target keeps its own). Parameters: the set values in column
// order, then the where values. With nothing to set, a column is set to
// itself so the statement still has to find its row.
func renderUpdate(p *mapping.Plan, set []bool, m mapping.Match, cmp []comparer) string {
	var b strings.Builder
	b.WriteString("UPDATE " + quoteTable(p.Target) + " SET ")
	n := 0
	for _, i := range p.Cols {
		if !set[i] {
			continue
		}
		if n > 0 {
			b.WriteString(", ")
		}
		n++
		b.WriteString(quoteIdent(p.Targets[i].Name) + " = ?")
	}
	if n == 0 {
		name := quoteIdent(p.Targets[p.Cols[0]].Name)
		b.WriteString(name + " = " + name)
	}
	b.WriteString(" WHERE " + renderWhere(p, m, cmp))
	return b.String()
}

// renderDelete deletes one row found by renderWhere.
func renderDelete(p *mapping.Plan, m mapping.Match, cmp []comparer) string {
	return "DELETE FROM " + quoteTable(p.Target) + " WHERE " + renderWhere(p, m, cmp)
}

// deleteInHead is "DELETE FROM t WHERE (`k1`, `k2`) IN (" and keyMarks
// "(?, ?)", the tuple form even for a one-column key: consecutive deletes
// by key go as one statement.
func deleteInHead(p *mapping.Plan) (head, keyMarks string) {
	return tupleInHead(quoteTable(p.Target), quotedKey(p))
}

// tupleInHead is deleteInHead for table and key columns cols, quoted.
func tupleInHead(table string, cols []string) (head, keyMarks string) {
	return "DELETE FROM " + table + " WHERE (" + strings.Join(cols, ", ") + ") IN (",
		"(" + strings.Repeat("?, ", len(cols)-1) + "?)"
}

// quotedKey is p's target key columns, quoted.
func quotedKey(p *mapping.Plan) []string {
	cols := make([]string, len(p.Key))
	for n, i := range p.Key {
		cols[n] = quoteIdent(p.Targets[i].Name)
	}
	return cols
}
