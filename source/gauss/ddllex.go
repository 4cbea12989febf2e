package gauss

import "strings"

// The tokenizer of the DDL parser (ddlparse.go): PostgreSQL's lexical
// rules, the tokens' kinds and where each lies in the statement.

// --- tokens ---------------------------------------------------------------

type ddlTokKind uint8

const (
	tEOF    ddlTokKind = iota
	tIdent             // a bare word: identifier or keyword; val folded to lower case
	tQuoted            // a double-quoted identifier; val unquoted
	tString            // '...', E'...', N'...', B'...', X'...' or $tag$...$tag$; val the content
	tNumber
	tOp  // punctuation or an operator: ( ) , ; . [ ] :: + <> ...
	tBad // an unterminated literal, identifier or comment; val says which
)

// ddlToken is one token of a statement; pos and end delimit its bytes.
type ddlToken struct {
	kind     ddlTokKind
	val      string
	pos, end int
}

func isWord(t ddlToken, w string) bool { return t.kind == tIdent && t.val == w }

// lexDDL splits a statement into tokens by PostgreSQL's lexical rules
// (scan.l) with standard_conforming_strings on, skipping white space and
// comments. It always ends with a tEOF token and never fails: what cannot
// be read becomes a tBad token that runs to the end. It takes time linear
// in the statement's length.
func lexDDL(s string) []ddlToken {
	var toks []ddlToken
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
			continue
		case strings.HasPrefix(s[i:], "--"):
			if j := strings.IndexByte(s[i:], '\n'); j >= 0 {
				i += j + 1
			} else {
				i = len(s)
			}
			continue
		case strings.HasPrefix(s[i:], "/*"):
			if j, ok := skipBlockComment(s, i); ok {
				i = j
				continue
			}
			toks = append(toks, ddlToken{kind: tBad, val: "an unterminated comment", pos: i, end: len(s)})
			i = len(s)
			continue
		}
		t := lexToken(s, i)
		toks = append(toks, t)
		i = t.end
	}
	return append(toks, ddlToken{kind: tEOF, pos: len(s), end: len(s)})
}

// skipBlockComment skips a /* */ comment, which may nest.
func skipBlockComment(s string, i int) (int, bool) {
	depth := 0
	for i < len(s)-1 {
		switch {
		case s[i] == '/' && s[i+1] == '*':
			depth++
			i += 2
		case s[i] == '*' && s[i+1] == '/':
			depth--
			i += 2
			if depth == 0 {
				return i, true
			}
		default:
			i++
		}
	}
	return i, false
}

// lexToken reads the token at s[i], which is not white space; it always
// consumes at least one byte.
func lexToken(s string, i int) ddlToken {
	c := s[i]
	next := byte(0)
	if i+1 < len(s) {
		next = s[i+1]
	}
	switch {
	case next == '\'' && strings.IndexByte("eEnNbBxX", c) >= 0:
		return lexQuoted(s, i, i+1, c == 'e' || c == 'E')
	case isIdentStart(c):
		j := i + 1
		for j < len(s) && (isIdentStart(s[j]) || s[j] >= '0' && s[j] <= '9' || s[j] == '$') {
			j++
		}
		return ddlToken{kind: tIdent, val: asciiLower(s[i:j]), pos: i, end: j}
	case c == '"' || c == '\'':
		return lexQuoted(s, i, i, false)
	case c == '$':
		return lexDollar(s, i)
	case c >= '0' && c <= '9' || c == '.' && next >= '0' && next <= '9':
		return lexNumber(s, i)
	case c == ':' && next == ':':
		return ddlToken{kind: tOp, val: "::", pos: i, end: i + 2}
	case strings.IndexByte(opChars, c) >= 0:
		j := i + 1
		for j < len(s) && strings.IndexByte(opChars, s[j]) >= 0 && !strings.HasPrefix(s[j:], "--") && !strings.HasPrefix(s[j:], "/*") {
			j++
		}
		return ddlToken{kind: tOp, val: s[i:j], pos: i, end: j}
	}
	return ddlToken{kind: tOp, val: s[i : i+1], pos: i, end: i + 1}
}

const opChars = "+-*/<>=~!@#%^&|`?"

func isIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= 0x80
}

// asciiLower folds an unquoted identifier as the server does: ASCII
// letters only.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= 'A' && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// lexQuoted reads a quoted identifier or string whose opening quote is at
// s[q] (after a one-letter prefix when q > i); a doubled quote stands for
// itself, and with backslash a backslash escapes the next byte.
func lexQuoted(s string, i, q int, backslash bool) ddlToken {
	quote := s[q]
	kind, what := tString, "an unterminated string"
	if quote == '"' {
		kind, what = tQuoted, "an unterminated quoted identifier"
	}
	var b strings.Builder
	for j := q + 1; j < len(s); j++ {
		switch {
		case backslash && s[j] == '\\' && j+1 < len(s):
			b.WriteByte(s[j+1])
			j++
		case s[j] != quote:
			b.WriteByte(s[j])
		case j+1 < len(s) && s[j+1] == quote:
			b.WriteByte(quote)
			j++
		case kind == tQuoted && b.Len() == 0:
			return ddlToken{kind: tBad, val: "an empty quoted identifier", pos: i, end: len(s)}
		default:
			return ddlToken{kind: kind, val: b.String(), pos: i, end: j + 1}
		}
	}
	return ddlToken{kind: tBad, val: what, pos: i, end: len(s)}
}

// lexDollar reads a dollar-quoted string ($$...$$, $tag$...$tag$), a
// parameter ($1) or a lone '$'.
func lexDollar(s string, i int) ddlToken {
	j := i + 1
	if j < len(s) && s[j] >= '0' && s[j] <= '9' {
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		return ddlToken{kind: tOp, val: s[i:j], pos: i, end: j}
	}
	for j < len(s) && (isIdentStart(s[j]) || s[j] >= '0' && s[j] <= '9') {
		j++
	}
	if j >= len(s) || s[j] != '$' {
		return ddlToken{kind: tOp, val: "$", pos: i, end: i + 1}
	}
	delim := s[i : j+1]
	k := strings.Index(s[j+1:], delim)
	if k < 0 {
		return ddlToken{kind: tBad, val: "an unterminated dollar-quoted string", pos: i, end: len(s)}
	}
	return ddlToken{kind: tString, val: s[j+1 : j+1+k], pos: i, end: j + 1 + k + len(delim)}
}

func lexNumber(s string, i int) ddlToken {
	j := i
	digits := func() {
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
	}
	digits()
	if j < len(s) && s[j] == '.' && !strings.HasPrefix(s[j:], "..") {
		j++
		digits()
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		k := j + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if k < len(s) && s[k] >= '0' && s[k] <= '9' {
			j = k
			digits()
		}
	}
	return ddlToken{kind: tNumber, val: s[i:j], pos: i, end: j}
}
