package verify

import (
	"strconv"
	"strings"
)

// span is a half-open range of keys [lo, hi) in key order: the rows whose
// key is at or after lo and before hi. A nil bound is open, so the spans
// made from a list of boundaries cover every key, including keys only the
// target has. Bounds are source key values as the source prints them.
type span struct {
	lo, hi []string
}

// spansOf cuts the key space at each boundary (in ascending order):
// n boundaries give n+1 spans.
func spansOf(bounds [][]string) []span {
	out := make([]span, 0, len(bounds)+1)
	var lo []string
	for _, b := range bounds {
		out = append(out, span{lo: lo, hi: b})
		lo = b
	}
	return append(out, span{lo: lo})
}

// pgSpan renders the condition selecting a span on PostgreSQL, with
// parameters numbered from $first: row comparisons, which a btree on the
// key serves as one index range. Parameters are text; the server infers
// their types from the key columns.
func pgSpan(keys []string, s span, first int) (string, [][]byte) {
	var conds []string
	var args [][]byte
	bound := func(op string, vals []string) {
		marks := make([]string, len(vals))
		for i, v := range vals {
			marks[i] = "$" + strconv.Itoa(first+len(args))
			args = append(args, []byte(v))
		}
		conds = append(conds, pgTuple(keys)+" "+op+" "+pgTuple(marks))
	}
	if s.lo != nil {
		bound(">=", s.lo)
	}
	if s.hi != nil {
		bound("<", s.hi)
	}
	if len(conds) == 0 {
		return "true", nil
	}
	return strings.Join(conds, " AND "), args
}

func pgTuple(items []string) string {
	if len(items) == 1 {
		return items[0]
	}
	return "(" + strings.Join(items, ", ") + ")"
}

// mysqlSpan renders the condition selecting a span on MySQL. Row
// comparisons are spelled out lexicographically, (k1 > ? OR (k1 = ? AND
// k2 >= ?)), after a bound on the first column alone that gives the
// optimizer its index range. lo and hi are the bounds as target values.
func mysqlSpan(keys []string, lo, hi []any) (string, []any) {
	var conds []string
	var args []any
	if lo != nil {
		c, a := mysqlBound(keys, lo, ">", ">=")
		conds, args = append(conds, c), append(args, a...)
	}
	if hi != nil {
		c, a := mysqlBound(keys, hi, "<", "<")
		conds, args = append(conds, c), append(args, a...)
	}
	if len(conds) == 0 {
		return "1=1", nil
	}
	return strings.Join(conds, " AND "), args
}

// mysqlBound renders keys op vals for a lexicographic order: strict is
// the operator on all but the last column, last the one on the last.
func mysqlBound(keys []string, vals []any, strict, last string) (string, []any) {
	if len(keys) == 1 {
		return keys[0] + " " + last + " ?", vals[:1]
	}
	first := last
	if first == "<" {
		first = "<="
	}
	args := []any{vals[0]}
	terms := make([]string, len(keys))
	for i := range keys {
		var b strings.Builder
		for j := 0; j < i; j++ {
			b.WriteString(keys[j] + " = ? AND ")
			args = append(args, vals[j])
		}
		op := strict
		if i == len(keys)-1 {
			op = last
		}
		b.WriteString(keys[i] + " " + op + " ?")
		args = append(args, vals[i])
		terms[i] = "(" + b.String() + ")"
	}
	return keys[0] + " " + first + " ? AND (" + strings.Join(terms, " OR ") + ")", args
}
