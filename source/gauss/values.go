package gauss

import "strings"

// Values reach decant in the PostgreSQL output-function text form, the
// form a pgoutput stream carries, so they map exactly as PostgreSQL values
// do. The binary format sends that form as is. The text and JSON formats
// pass it through PrintLiteral (§2.0):
//
//	integers, oid, float4/8, numeric   bare             1, -2.5, NaN
//	bool                               true / false     → t / f
//	bit, varbit                        B'0101'          → 0101
//	everything else                    '...', ' doubled → the text inside
//	NULL                               null
//
// and the text format (and mppdb's JSON) print unchanged-toast-datum for an
// unchanged TOASTed value.

const unchangedToast = "unchanged-toast-datum"

// literalValue sets col's value from one PrintLiteral rendering; false
// means lit is not a well-formed literal.
func literalValue(lit string, col *Column) bool {
	switch {
	case lit == "null":
		col.Null = true
	case lit == unchangedToast:
		col.Unchanged = true
	case lit == "true":
		col.Value = []byte("t")
	case lit == "false":
		col.Value = []byte("f")
	case strings.HasPrefix(lit, "B'"):
		inner, ok := unquoteLiteral(lit[1:])
		if !ok || strings.Contains(inner, "'") {
			return false
		}
		col.Value = []byte(inner)
	case strings.HasPrefix(lit, "'"):
		inner, ok := unquoteLiteral(lit)
		if !ok {
			return false
		}
		col.Value = []byte(inner)
	default:
		if lit == "" || strings.ContainsAny(lit, "' ") {
			return false
		}
		col.Value = []byte(lit)
	}
	return true
}

// unquoteLiteral strips the single quotes around s and undoubles the
// quotes inside; false unless s is exactly one quoted literal.
func unquoteLiteral(s string) (string, bool) {
	end, ok := scanQuoted(s, 0)
	if !ok || end != len(s) {
		return "", false
	}
	return strings.ReplaceAll(s[1:len(s)-1], "''", "'"), true
}

// scanQuoted finds the end of the quoted literal that starts at s[i]
// (a quote): the index after the closing quote that is not doubled.
func scanQuoted(s string, i int) (end int, ok bool) {
	for j := i + 1; j < len(s); j++ {
		if s[j] != '\'' {
			continue
		}
		if j+1 < len(s) && s[j+1] == '\'' {
			j++
			continue
		}
		return j + 1, true
	}
	return i, false
}

// scanLiteral finds the end of the literal that starts at s[i] in a text
// DML record: a quoted literal (also B'...') runs to its closing quote,
// anything else to the next space.
func scanLiteral(s string, i int) (end int, ok bool) {
	switch {
	case strings.HasPrefix(s[i:], "'"):
		return scanQuoted(s, i)
	case strings.HasPrefix(s[i:], "B'"):
		return scanQuoted(s, i+1)
	}
	end = i
	for end < len(s) && s[end] != ' ' {
		end++
	}
	return end, end > i
}
