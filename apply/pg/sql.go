package pg

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
)

// This file renders SQL from a mapping.Plan. It is pure; every statement
// takes its values as text-format parameters whose types the server infers
// from the columns, so user-defined types (enums, domains, composites) need
// no OID bookkeeping and values reach the target exactly as the source
// printed them.

var (
	quoteIdent = mapping.QuotePG
	quoteTable = mapping.QuotePGTable
)

// columnList is "(a, b, c)" for the plan's written columns.
func columnList(p *mapping.Plan) string {
	var b strings.Builder
	b.WriteByte('(')
	for n, i := range p.Cols {
		if n > 0 {
			b.WriteString(", ")
		}
		b.WriteString(quoteIdent(p.Targets[i].Name))
	}
	b.WriteByte(')')
	return b.String()
}

func renderInsert(p *mapping.Plan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "INSERT INTO %s %s ", quoteTable(p.Target), columnList(p))
	if len(p.Fixed) > 0 {
		b.WriteString("OVERRIDING SYSTEM VALUE ") // COPY does this by itself
	}
	b.WriteString("VALUES (")
	for n := range p.Cols {
		if n > 0 {
			b.WriteString(", ")
		}
		b.WriteString("$" + strconv.Itoa(n+1))
	}
	b.WriteByte(')')
	return b.String()
}

func renderCopy(p *mapping.Plan) string {
	return fmt.Sprintf("COPY %s %s FROM STDIN", quoteTable(p.Target), columnList(p))
}

// renderUpdate sets the written columns marked in set (unchanged TOAST
// values and Fixed columns are not, so the target keeps its own) and finds
// the row as renderWhere does. Parameters: the set values in column order,
// then the where values (but NULL ones), then the new values of the Fixed
// columns. When nothing
// is left to set, a column is set to itself: the statement must still find
// exactly one row.
func renderUpdate(p *mapping.Plan, set []bool, m mapping.Match) string {
	var b strings.Builder
	fmt.Fprintf(&b, "UPDATE %s SET ", tableRef(p))
	n := 0
	for _, i := range p.Cols {
		if !set[i] {
			continue
		}
		if n > 0 {
			b.WriteString(", ")
		}
		n++
		fmt.Fprintf(&b, "%s = $%d", quoteIdent(p.Targets[i].Name), n)
	}
	if n == 0 {
		for _, i := range p.Cols {
			if !slices.Contains(p.Fixed, i) {
				name := quoteIdent(p.Targets[i].Name)
				fmt.Fprintf(&b, "%s = %s", name, name)
				break
			}
		}
	}
	b.WriteString(" WHERE ")
	b.WriteString(renderWhere(p, m, n+1))
	n += whereParams(p, m)
	for k, i := range p.Fixed {
		fmt.Fprintf(&b, " AND %s = $%d", quoteIdent(p.Targets[i].Name), n+1+k)
	}
	return b.String()
}

func renderDelete(p *mapping.Plan, m mapping.Match) string {
	return fmt.Sprintf("DELETE FROM %s WHERE %s", tableRef(p), renderWhere(p, m, 1))
}

// tableRef names the target table in UPDATE and DELETE: ONLY the table
// itself, so that a row of an inheritance child never matches a change of
// its parent, except for a partitioned table, whose rows live in its
// partitions and reach them through it.
func tableRef(p *mapping.Plan) string {
	if p.Partitioned {
		return quoteTable(p.Target)
	}
	return "ONLY " + quoteTable(p.Target)
}

// whereParams is how many parameters renderWhere takes.
func whereParams(p *mapping.Plan, m mapping.Match) int {
	n := 0
	for _, i := range p.WhereCols(m) {
		if !m.Whole || !m.Null[i] {
			n++
		}
	}
	return n
}

// renderWhere finds a row by key, or, with a whole-row match, picks one row
// whose every written column equals its old value: IS NULL where m.Null
// says the old value is NULL, else compared as the column's Compare says (see
// compareExpr), so an index on any of the columns can find the candidates.
// Selecting one physical row by ctid makes UPDATE and DELETE change exactly
// one of several identical duplicates, as they did on the source.
func renderWhere(p *mapping.Plan, m mapping.Match, first int) string {
	var b strings.Builder
	cols := p.WhereCols(m)
	if !m.Whole {
		for k, i := range cols {
			if k > 0 {
				b.WriteString(" AND ")
			}
			fmt.Fprintf(&b, "%s = $%d", quoteIdent(p.Targets[i].Name), first+k)
		}
		return b.String()
	}
	id := "ctid"
	if p.Partitioned {
		id = "(tableoid, ctid)" // ctid repeats across partitions
	}
	fmt.Fprintf(&b, "%s = (SELECT %s FROM %s WHERE ", id, strings.Trim(id, "()"), tableRef(p))
	n := first
	for k, i := range cols {
		if k > 0 {
			b.WriteString(" AND ")
		}
		col := quoteIdent(p.Targets[i].Name)
		if m.Null[i] {
			b.WriteString(col + " IS NULL")
			continue
		}
		b.WriteString(compareExpr(col, p.Targets[i].Type, p.Targets[i].Compare, "$"+strconv.Itoa(n)))
		n++
	}
	b.WriteString(" LIMIT 1)")
	return b.String()
}

// compareExpr compares column col of type typ with parameter param, the
// old value's output text as the source sent it. The text side calls the
// type's output function (format's %s does), not a cast to text: some
// casts print otherwise (true::text is "true", inet's drops no "/32",
// char(n)'s trims the padding).
func compareExpr(col, typ string, cmp mapping.Compare, param string) string {
	if typ == "" {
		cmp = mapping.CompareText
	}
	text := "format('%s', " + col + ") = " + param + "::text"
	switch cmp {
	case mapping.CompareEqual:
		return col + " = " + param + "::" + typ
	case mapping.CompareEqualText:
		return col + " = " + param + "::text::" + typ + " AND " + text
	}
	return text
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
// newline, carriage return and tab are escaped. Most values have none of
// them (numbers, timestamps, most text): those are found eight bytes at a
// time and appended in one copy.
func appendCopyText(buf, v []byte) []byte {
	first := plainPrefix(v)
	if first == len(v) {
		return append(buf, v...)
	}
	start := 0 // of what is not appended yet
	for i := first; i < len(v); i++ {
		var esc string
		switch v[i] {
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

// plainPrefix returns the length of the longest prefix of v that COPY's
// text format takes as it is. Words of eight bytes are tested at once for
// a byte below 0x20 (tab, newline and carriage return are, with the other
// control characters, which are rare in text) or a backslash; the byte
// loop goes on from the first word that may hold one.
func plainPrefix(v []byte) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; len(v)-i >= 8; i += 8 {
		x := binary.LittleEndian.Uint64(v[i:])
		// A byte of x below 0x20 sets its high bit in the first term
		// (bytes from 0x80 up are kept out by &^x), a backslash does in
		// the second; which bit is set is not exact, whether one is.
		y := x ^ ones*'\\'
		if ((x-ones*0x20)&^x|(y-ones)&^y)&highs != 0 {
			break
		}
	}
	for ; i < len(v); i++ {
		switch v[i] {
		case '\\', '\n', '\r', '\t':
			return i
		}
	}
	return i
}
