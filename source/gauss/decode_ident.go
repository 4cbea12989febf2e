package gauss

import "strings"

// QuoteIdentifier quotes an identifier as the server's quote_identifier
// does: unchanged when it is lower-case letters, digits and underscores,
// does not start with a digit and is not a keyword outside the unreserved
// category; otherwise in double quotes with embedded quotes doubled.
func QuoteIdentifier(s string) string {
	if safeIdentifier(s) {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

func safeIdentifier(s string) bool {
	if s == "" || !(s[0] >= 'a' && s[0] <= 'z' || s[0] == '_') {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return !quotedKeyword(s)
}

// unquoteIdentifier undoes QuoteIdentifier. A name that is not a
// well-formed quoted identifier is returned as is.
func unquoteIdentifier(s string) string {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return s
	}
	inner := s[1 : len(s)-1]
	if strings.Count(inner, `"`)%2 != 0 {
		return s
	}
	return strings.ReplaceAll(inner, `""`, `"`)
}

// scanIdentifier reads one possibly quoted identifier at s[i:]: a quoted
// one runs to the closing quote that is not doubled, a bare one to the
// first byte in stop. It returns the unquoted name and the index after it.
func scanIdentifier(s string, i int, stop string) (name string, next int, ok bool) {
	if i < len(s) && s[i] == '"' {
		var b strings.Builder
		for j := i + 1; j < len(s); j++ {
			if s[j] != '"' {
				b.WriteByte(s[j])
				continue
			}
			if j+1 < len(s) && s[j+1] == '"' {
				b.WriteByte('"')
				j++
				continue
			}
			return b.String(), j + 1, true
		}
		return "", i, false
	}
	j := i
	for j < len(s) && !strings.ContainsRune(stop, rune(s[j])) {
		j++
	}
	return s[i:j], j, j > i
}

// splitQualifiedName splits quote_qualified_identifier output
// ("public.t1", `"My Schema"."T"`) into its two unquoted parts.
func splitQualifiedName(s string) (schema, table string, ok bool) {
	schema, i, ok := scanIdentifier(s, 0, ".")
	if !ok || i >= len(s) || s[i] != '.' {
		return "", "", false
	}
	table, i, ok = scanIdentifier(s, i+1, ".")
	return schema, table, ok && i == len(s)
}

// quotedKeyword reports whether quote_identifier quotes a keyword: the
// reserved, column-name and type/function-name keywords of openGauss's
// kwlist.h (src/include/parser/kwlist.h, 2025), everything but
// UNRESERVED_KEYWORD.
func quotedKeyword(s string) bool {
	_, ok := keywordSet[s]
	return ok
}

var keywordSet = func() map[string]struct{} {
	m := map[string]struct{}{}
	for _, k := range strings.Fields(quotedKeywords) {
		m[k] = struct{}{}
	}
	return m
}()

const quotedKeywords = `
all analyse analyze and any array as asc asymmetric authid authorization
between bigint binary binary_double binary_double_infinity binary_double_nan
binary_integer bit boolean both bucketcnt buckets byteawithoutorder
byteawithoutorderwithequal case cast char character check coalesce collate
collation column compact concurrently constraint create cross csn
current_catalog current_date current_role current_schema current_time
current_timestamp current_user date dec decimal decode default deferrable
deltamerge desc distinct do else end except excluded exists extract false
fetch float for foreign freeze from full grant greatest group grouping
groupparent having hdfsdirectory ilike imcstored in initially inner inout int
integer intersect interval into is join json_exists leading least left less
like limit localtime localtimestamp minus modify national natural nchar
nocycle none not notnull nth_value null nullif number numeric nvarchar
nvarchar2 nvl offset on only or order out outer overlaps overlay performance
placing position precision primary procedure real recyclebin references
reject returning right row rownum select self session_user setof
share_memory shrink similar smalldatetime smallint some substring symmetric
sysdate table tablesample then time timecapsule timestamp timestampdiff
tinyint to trailing treat trim true unimcstored union unique user using
values varchar varchar2 variadic verbose verify when where window with
xmlattributes xmlconcat xmlelement xmlexists xmlforest xmlparse xmlpi
xmlroot xmlserialize
`
