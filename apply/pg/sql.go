package pg

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
)

// This file renders SQL from a mapping.Plan. It is pure; every statement
// takes its values as text-format parameters whose types the server infers
// from the columns, so user-defined types (enums, domains, composites) need
// no OID bookkeeping and values reach the target exactly as the source
// printed them.

func quoteTable(t source.TableName) string { return pgx.Identifier{t.Schema, t.Name}.Sanitize() }

func quoteIdent(s string) string { return pgx.Identifier{s}.Sanitize() }

// columnList is "(a, b, c)" for the relation's columns.
func columnList(rel *source.Relation) string {
	var b strings.Builder
	b.WriteByte('(')
	for i, c := range rel.Columns {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(quoteIdent(c.Name))
	}
	b.WriteByte(')')
	return b.String()
}

func renderInsert(p *mapping.Plan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "INSERT INTO %s %s ", quoteTable(p.Target), columnList(p.Rel))
	if len(p.Fixed) > 0 {
		b.WriteString("OVERRIDING SYSTEM VALUE ") // COPY does this by itself
	}
	b.WriteString("VALUES (")
	for i := range p.Rel.Columns {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("$" + strconv.Itoa(i+1))
	}
	b.WriteByte(')')
	return b.String()
}

func renderCopy(p *mapping.Plan) string {
	return fmt.Sprintf("COPY %s %s FROM STDIN", quoteTable(p.Target), columnList(p.Rel))
}

// renderUpdate sets the columns marked in set (unchanged TOAST values and
// Fixed columns are left out, so the target keeps its own) and finds the row
// by where. Parameters: the set values in column order, then the where
// values, then the new values of the Fixed columns.
func renderUpdate(p *mapping.Plan, set []bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "UPDATE %s SET ", quoteTable(p.Target))
	n := 0
	for i, c := range p.Rel.Columns {
		if !set[i] {
			continue
		}
		if n > 0 {
			b.WriteString(", ")
		}
		n++
		fmt.Fprintf(&b, "%s = $%d", quoteIdent(c.Name), n)
	}
	if n == 0 {
		// Every value is unchanged TOAST or Fixed: assign an unchanged
		// column to itself, so the statement is valid and still must find
		// its row.
		for i, c := range p.Rel.Columns {
			if !slices.Contains(p.Fixed, i) {
				fmt.Fprintf(&b, "%s = %[1]s", quoteIdent(c.Name))
				break
			}
		}
	}
	b.WriteString(" WHERE ")
	b.WriteString(renderWhere(p, n+1))
	n += len(whereColumns(p))
	for i, col := range p.Fixed {
		fmt.Fprintf(&b, " AND %s = $%d", quoteIdent(p.Rel.Columns[col].Name), n+1+i)
	}
	return b.String()
}

func renderDelete(p *mapping.Plan) string {
	return fmt.Sprintf("DELETE FROM %s WHERE %s", quoteTable(p.Target), renderWhere(p, 1))
}

// whereColumns lists the source columns whose old values find the row.
func whereColumns(p *mapping.Plan) []int {
	if !p.WholeRow {
		return p.Key
	}
	all := make([]int, len(p.Rel.Columns))
	for i := range all {
		all[i] = i
	}
	return all
}

// renderWhere finds a row by key, or, without a key, picks one row whose
// every column equals the old value (NULL-safe). The whole-row match
// compares text forms, which works for every type (json and point have no
// equality operator) and is exact: both sides print with the same settings.
// Selecting one physical row by ctid makes UPDATE and DELETE change exactly
// one of several identical duplicates, as they did on the source.
func renderWhere(p *mapping.Plan, first int) string {
	var b strings.Builder
	cols := whereColumns(p)
	if !p.WholeRow {
		for i, col := range cols {
			if i > 0 {
				b.WriteString(" AND ")
			}
			fmt.Fprintf(&b, "%s = $%d", quoteIdent(p.Rel.Columns[col].Name), first+i)
		}
		return b.String()
	}
	id := "ctid"
	if p.Partitioned {
		id = "(tableoid, ctid)" // ctid repeats across partitions
	}
	fmt.Fprintf(&b, "%s = (SELECT %s FROM %s WHERE ", id, strings.Trim(id, "()"), quoteTable(p.Target))
	for i, col := range cols {
		if i > 0 {
			b.WriteString(" AND ")
		}
		fmt.Fprintf(&b, "%s::text IS NOT DISTINCT FROM $%d", quoteIdent(p.Rel.Columns[col].Name), first+i)
	}
	b.WriteString(" LIMIT 1)")
	return b.String()
}

// renderTruncate truncates the tables together, like the source did.
// ONLY keeps target-side inheritance children out of it; partitioned tables
// do not accept ONLY. CASCADE is not passed on: on the target it could
// empty tables outside the replication (PostgreSQL's apply worker does not
// cascade either).
func renderTruncate(tables []source.TableName, partitioned []bool, restartIdentity bool) string {
	var b strings.Builder
	b.WriteString("TRUNCATE ")
	for i, t := range tables {
		if i > 0 {
			b.WriteString(", ")
		}
		if !partitioned[i] {
			b.WriteString("ONLY ")
		}
		b.WriteString(quoteTable(t))
	}
	if restartIdentity {
		b.WriteString(" RESTART IDENTITY")
	}
	return b.String()
}

// appendCopyText appends v escaped for COPY's text format: pgoutput's text
// values are the types' output, which COPY's input accepts once backslash,
// newline, carriage return and tab are escaped.
func appendCopyText(buf, v []byte) []byte {
	start := 0
	for i, c := range v {
		var esc string
		switch c {
		case '\\':
			esc = `\\`
		case '\n':
			esc = `\n`
		case '\r':
			esc = `\r`
		case '\t':
			esc = `\t`
		default:
			continue
		}
		buf = append(buf, v[start:i]...)
		buf = append(buf, esc...)
		start = i + 1
	}
	return append(buf, v[start:]...)
}
