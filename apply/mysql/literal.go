package mysql

import (
	"encoding/json"
	"strconv"
)

// A batch goes to the server as one query text with its values written in
// as SQL literals. The driver would do the same (interpolateParams), but
// into a buffer it grows anew for every query, scanning the whole text
// byte by byte for comments and quotes; profiled on MariaDB's insert
// case that was a fifth of the agent's CPU. decant's statements are its
// own: placeholders are the only '?' outside quoted identifiers and
// string constants, so the scan jumps from one of those to the next, and
// the text is written into a buffer the target keeps from batch to batch.
// The session's character set is always utf8mb4 (ParseDSN), where
// backslash escaping is safe; whether backslashes escape at all comes
// from the session's sql_mode (NO_BACKSLASH_ESCAPES), read at connect.

// literals writes query texts with their arguments in place.
type literals struct {
	noBackslash bool // the session's sql_mode has NO_BACKSLASH_ESCAPES
}

// appendQuery appends query with args in place of its placeholders. It
// reports false, having appended part of it, when an argument is of a
// type it does not write or the numbers of arguments and placeholders
// differ: the driver is then left to do it.
func (l literals) appendQuery(buf []byte, query string, args []any) ([]byte, bool) {
	n := 0
	for len(query) > 0 {
		i := nextSpecial(query)
		if i < 0 {
			break
		}
		if query[i] != '?' {
			end := l.quotedEnd(query, i)
			buf = append(buf, query[:end]...)
			query = query[end:]
			continue
		}
		if n == len(args) {
			return buf, false
		}
		buf = append(buf, query[:i]...)
		var ok bool
		if buf, ok = l.appendValue(buf, args[n]); !ok {
			return buf, false
		}
		n++
		query = query[i+1:]
	}
	return append(buf, query...), n == len(args)
}

// nextSpecial is the index of the next placeholder or opening quote.
func nextSpecial(s string) int {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '?', '`', '\'', '"':
			return i
		}
	}
	return -1
}

// quotedEnd is the index just past the quoted part that opens at i: an
// identifier in backticks (a doubled backtick is one inside it), or a
// string in single or double quotes (a doubled quote, or one after a
// backslash unless the session takes backslashes literally, is inside
// it). An unclosed quote runs to the end.
func (l literals) quotedEnd(s string, i int) int {
	q := s[i]
	for j := i + 1; j < len(s); j++ {
		switch {
		case s[j] == '\\' && q != '`' && !l.noBackslash:
			j++
		case s[j] == q && j+1 < len(s) && s[j+1] == q:
			j++
		case s[j] == q:
			return j + 1
		}
	}
	return len(s)
}

// appendValue appends v as a literal: the types converters and the
// checkpoint give (string, []byte, integers, floats, bool, NULL).
func (l literals) appendValue(buf []byte, v any) ([]byte, bool) {
	switch v := v.(type) {
	case nil:
		return append(buf, "NULL"...), true
	case string:
		return appendEscaped(append(buf, '\''), v, l.noBackslash), true
	case []byte:
		if v == nil {
			return append(buf, "NULL"...), true
		}
		// _binary: bytes, not utf8mb4 text that must be valid.
		return appendEscaped(append(buf, "_binary'"...), v, l.noBackslash), true
	case json.RawMessage:
		if v == nil {
			return append(buf, "NULL"...), true
		}
		return appendEscaped(append(buf, '\''), v, l.noBackslash), true
	case int64:
		return strconv.AppendInt(buf, v, 10), true
	case int:
		return strconv.AppendInt(buf, int64(v), 10), true
	case int32:
		return strconv.AppendInt(buf, int64(v), 10), true
	case uint64:
		return strconv.AppendUint(buf, v, 10), true
	case uint32:
		return strconv.AppendUint(buf, uint64(v), 10), true
	case float64:
		return strconv.AppendFloat(buf, v, 'g', -1, 64), true
	case bool:
		if v {
			return append(buf, '1'), true
		}
		return append(buf, '0'), true
	}
	return buf, false
}

// backslashed is what follows a backslash for each byte that needs one
// inside a quoted string; 0 for the rest.
var backslashed = [256]byte{0: '0', '\n': 'n', '\r': 'r', 0x1a: 'Z', '\'': '\'', '"': '"', '\\': '\\'}

// appendEscaped appends s, escaped, and the closing quote; the opening
// one (with its introducer) is already in buf.
func appendEscaped[S ~string | ~[]byte](buf []byte, s S, noBackslash bool) []byte {
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if noBackslash {
			if c != '\'' {
				continue
			}
			buf = append(append(buf, s[start:i+1]...), '\'')
			start = i + 1
			continue
		}
		e := backslashed[c]
		if e == 0 {
			continue
		}
		buf = append(append(buf, s[start:i]...), '\\', e)
		start = i + 1
	}
	return append(append(buf, s[start:]...), '\'')
}
