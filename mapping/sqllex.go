package mapping

import "strings"

// A lexer for the PostgreSQL SQL text a source hands decant to execute
// (pg_get_indexdef, format_type, pg_get_expr, or the GaussDB statement
// parts that stand for them), after the rules of PostgreSQL's scan.l with
// standard_conforming_strings on: '...' with a quote doubled, E'...'
// with backslash escapes too, B'...', X'...', N'...' and U&'...'
// strings, "..." and U&"..." identifiers with "" doubled, $$...$$ and
// $tag$...$tag$ strings, -- and nested /* */ comments. It only tells tokens apart, so that the checks
// in sqlcheck.go see which semicolons, commas and parentheses are SQL and
// which are inside a literal or an identifier.

type sqlKind uint8

const (
	sqlWord    sqlKind = iota + 1 // an unquoted identifier or keyword; val folded to lower case
	sqlQuoted                     // a double-quoted identifier; val unquoted
	sqlString                     // any string literal, dollar-quoted ones included
	sqlNumber                     // a numeric literal or a $n parameter
	sqlOp                         // punctuation ( ) [ ] , ; . :: or an operator
	sqlComment                    // -- or /* */
)

type sqlToken struct {
	kind     sqlKind
	val      string
	pos, end int // the token's bytes in the text
}

// lexSQL splits s into tokens. reason is "" when s lexes; otherwise it
// says what is wrong (an unterminated quote or comment, a stray byte)
// without quoting s, which may hold data.
func lexSQL(s string) (toks []sqlToken, reason string) {
	for i := 0; i < len(s); {
		if isSQLSpace(s[i]) {
			i++
			continue
		}
		t, end, reason := lexSQLToken(s, i)
		if reason != "" {
			return nil, reason
		}
		t.pos, t.end = i, end
		toks = append(toks, t)
		i = end
	}
	return toks, ""
}

func isSQLSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// lexSQLToken reads the token at s[i] (not white space); end is where
// it stops. Every branch moves past at least one byte or fails.
func lexSQLToken(s string, i int) (t sqlToken, end int, reason string) {
	c := s[i]
	switch {
	case strings.HasPrefix(s[i:], "--"):
		end = strings.IndexByte(s[i:], '\n')
		if end < 0 {
			return sqlToken{kind: sqlComment}, len(s), ""
		}
		return sqlToken{kind: sqlComment}, i + end + 1, ""
	case strings.HasPrefix(s[i:], "/*"):
		return lexSQLComment(s, i)
	case c == '\'':
		return lexSQLQuote(s, i, i, '\'', false)
	case c == '"':
		return lexSQLQuote(s, i, i, '"', false)
	case c == '$':
		return lexSQLDollar(s, i)
	case c >= '0' && c <= '9' || c == '.' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
		return lexSQLNumber(s, i)
	case isSQLIdentStart(c):
		return lexSQLWord(s, i)
	case strings.IndexByte("()[],;", c) >= 0:
		return sqlToken{kind: sqlOp, val: s[i : i+1]}, i + 1, ""
	case strings.HasPrefix(s[i:], "::"):
		return sqlToken{kind: sqlOp, val: "::"}, i + 2, ""
	case c == '.' || c == ':':
		return sqlToken{kind: sqlOp, val: s[i : i+1]}, i + 1, ""
	case strings.IndexByte(sqlOpChars, c) >= 0:
		end = i + 1
		for end < len(s) && strings.IndexByte(sqlOpChars, s[end]) >= 0 && !strings.HasPrefix(s[end:], "--") && !strings.HasPrefix(s[end:], "/*") {
			end++
		}
		return sqlToken{kind: sqlOp, val: s[i:end]}, end, ""
	}
	return t, i, "a character SQL does not use outside quotes"
}

// sqlOpChars are the characters of PostgreSQL operators.
const sqlOpChars = "+-*/<>=~!@#%^&|`?"

func isSQLIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= 0x80
}

func isSQLIdentPart(c byte) bool {
	return isSQLIdentStart(c) || c >= '0' && c <= '9' || c == '$'
}

// lexSQLWord reads an identifier or keyword, or the prefix of a string
// or identifier that starts with one (E'...', B'...', X'...', N'...', U&'...', U&"...").
func lexSQLWord(s string, i int) (sqlToken, int, string) {
	if i+1 < len(s) && s[i+1] == '\'' {
		switch s[i] {
		case 'e', 'E':
			return lexSQLQuote(s, i, i+1, '\'', true)
		case 'b', 'B', 'x', 'X', 'n', 'N':
			return lexSQLQuote(s, i, i+1, '\'', false)
		}
	}
	if (s[i] == 'u' || s[i] == 'U') && i+2 < len(s) && s[i+1] == '&' && (s[i+2] == '\'' || s[i+2] == '"') {
		return lexSQLQuote(s, i, i+2, s[i+2], false)
	}
	end := i + 1
	for end < len(s) && isSQLIdentPart(s[end]) {
		end++
	}
	return sqlToken{kind: sqlWord, val: asciiLower(s[i:end])}, end, ""
}

// asciiLower folds ASCII letters only, as PostgreSQL folds an unquoted
// identifier.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// lexSQLQuote reads a quoted string or identifier whose opening quote is
// at s[q] (after a prefix when q > i). A doubled quote stands for one;
// with backslash set (E'...'), a backslash escapes the next byte.
func lexSQLQuote(s string, i, q int, quote byte, backslash bool) (sqlToken, int, string) {
	var val strings.Builder
	for j := q + 1; j < len(s); j++ {
		switch {
		case backslash && s[j] == '\\' && j+1 < len(s):
			val.WriteByte(s[j+1])
			j++
		case s[j] != quote:
			val.WriteByte(s[j])
		case j+1 < len(s) && s[j+1] == quote:
			val.WriteByte(quote)
			j++
		case quote == '"' && val.Len() == 0:
			return sqlToken{}, i, "an empty quoted identifier"
		case quote == '"':
			return sqlToken{kind: sqlQuoted, val: val.String()}, j + 1, ""
		default:
			return sqlToken{kind: sqlString}, j + 1, ""
		}
	}
	if quote == '"' {
		return sqlToken{}, i, "an unterminated quoted identifier"
	}
	return sqlToken{}, i, "an unterminated string literal"
}

// lexSQLDollar reads a $n parameter or a dollar-quoted string.
func lexSQLDollar(s string, i int) (sqlToken, int, string) {
	j := i + 1
	if j < len(s) && s[j] >= '0' && s[j] <= '9' {
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		return sqlToken{kind: sqlNumber, val: s[i:j]}, j, ""
	}
	for j < len(s) && s[j] != '$' && isSQLIdentPart(s[j]) {
		j++
	}
	if j >= len(s) || s[j] != '$' || j > i+1 && !isSQLIdentStart(s[i+1]) {
		return sqlToken{}, i, "a stray '$'"
	}
	tag := s[i : j+1]
	k := strings.Index(s[j+1:], tag)
	if k < 0 {
		return sqlToken{}, i, "an unterminated dollar-quoted string"
	}
	return sqlToken{kind: sqlString}, j + 1 + k + len(tag), ""
}

// lexSQLNumber reads a numeric literal: digits, a point, an exponent
// with its sign, and the letters and underscores PostgreSQL 16 allows in
// 0x1F and 1_000 (a number run into letters is one token, as it is an
// error to PostgreSQL too).
func lexSQLNumber(s string, i int) (sqlToken, int, string) {
	j := i
	for j < len(s) {
		c := s[j]
		switch {
		case c >= '0' && c <= '9', c == '.', c == '_', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			j++
		case (c == '+' || c == '-') && (s[j-1] == 'e' || s[j-1] == 'E'):
			j++
		default:
			return sqlToken{kind: sqlNumber, val: s[i:j]}, j, ""
		}
	}
	return sqlToken{kind: sqlNumber, val: s[i:j]}, j, ""
}

// lexSQLComment reads a /* */ comment, which may nest.
func lexSQLComment(s string, i int) (sqlToken, int, string) {
	depth := 0
	for j := i; j+1 < len(s); {
		switch {
		case s[j] == '/' && s[j+1] == '*':
			depth++
			j += 2
		case s[j] == '*' && s[j+1] == '/':
			depth--
			j += 2
			if depth == 0 {
				return sqlToken{kind: sqlComment}, j, ""
			}
		default:
			j++
		}
	}
	return sqlToken{}, i, "an unterminated comment"
}
