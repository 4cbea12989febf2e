package mapping

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// textOf is the text a string column receives. char(n) values arrive
// blank-padded; the padding goes, as in PostgreSQL's own cast to text
// (MySQL's CHAR pads and strips blanks itself).
func (v valueSource) textOf(text []byte) []byte {
	if v.class == clBpchar {
		return bytes.TrimRight(text, " ")
	}
	return text
}

// toString writes any value into CHAR, VARCHAR and TEXT columns as its
// PostgreSQL text, checking the length: characters for CHAR and VARCHAR,
// bytes for the TEXT types.
func (v valueSource) toString(tg *targetCol, f fit) Converter {
	return func(text []byte) (any, error) {
		return tg.fitString(string(v.textOf(text)), f)
	}
}

func (tg *targetCol) fitString(s string, f fit) (any, error) {
	if int64(len(s)) <= tg.limit {
		return s, nil
	}
	if tg.kind == tgTextBytes {
		rule := fmt.Sprintf("string of %d bytes is longer than %s", len(s), tg.name)
		return f.clamp(rule, truncateUTF8(s, tg.limit))
	}
	n := utf8.RuneCountInString(s)
	if int64(n) <= tg.limit {
		return s, nil
	}
	rule := fmt.Sprintf("string of %d characters is longer than %s", n, tg.name)
	return f.clamp(rule, truncateRunes(s, tg.limit))
}

// truncateRunes keeps the first n characters of s.
func truncateRunes(s string, n int64) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// truncateUTF8 keeps at most n bytes of s without splitting a character.
func truncateUTF8(s string, n int64) string {
	cut := int(n)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// toBinary writes bytea's bytes into BINARY, VARBINARY and BLOB columns, a
// uuid's 16 bytes into BINARY(16), and anything else as its text.
func (v valueSource) toBinary(tg *targetCol, f fit) Converter {
	decode := func(text []byte) ([]byte, error) { return bytes.Clone(v.textOf(text)), nil }
	switch {
	case v.class == clBytea:
		decode = decodeBytea
	case v.class == clUUID && tg.dataType == "binary" && tg.limit == 16:
		decode = decodeUUID
	}
	return func(text []byte) (any, error) {
		b, err := decode(text)
		if err != nil {
			return nil, v.malformed(err)
		}
		if int64(len(b)) <= tg.limit {
			return b, nil
		}
		return f.clamp(fmt.Sprintf("%s of %d bytes is longer than %s", v.name, len(b), tg.name), b[:tg.limit])
	}
}

// decodeBytea reads bytea text in the hex form (\x0a0b) or the legacy
// escape form (backslash-octal). The result is never nil: a nil []byte
// would be sent as NULL.
func decodeBytea(s []byte) ([]byte, error) {
	if bytes.HasPrefix(s, []byte(`\x`)) {
		out := make([]byte, hex.DecodedLen(len(s)-2))
		_, err := hex.Decode(out, s[2:])
		return out, err
	}
	return unescapeBytea(s)
}

// unescapeBytea reads bytea_output=escape: \\ is a backslash, \ooo an octal
// byte, anything else itself.
func unescapeBytea(s []byte) ([]byte, error) {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] != '\\':
			out = append(out, s[i])
		case i+1 < len(s) && s[i+1] == '\\':
			out = append(out, '\\')
			i++
		case i+3 < len(s) && isOctal(s[i+1]) && s[i+1] <= '3' && isOctal(s[i+2]) && isOctal(s[i+3]):
			out = append(out, (s[i+1]-'0')<<6|(s[i+2]-'0')<<3|(s[i+3]-'0'))
			i += 3
		default:
			return nil, errors.New("invalid escape")
		}
	}
	return out, nil
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// decodeUUID reads a uuid's 32 hex digits (dashes ignored) as 16 bytes.
func decodeUUID(s []byte) ([]byte, error) {
	h := bytes.ReplaceAll(s, []byte("-"), nil)
	if len(h) != 32 {
		return nil, errors.New("not 32 hex digits")
	}
	out := make([]byte, 16)
	_, err := hex.Decode(out, h)
	return out, err
}

// toLabel writes enums and strings into ENUM (one label) and SET (labels
// joined by commas). A value that is not exactly a label has no nearest
// value.
func (v valueSource) toLabel(tg *targetCol, f fit) Converter {
	labels := make([]string, len(tg.labels))
	for i, l := range tg.labels {
		labels[i] = labelKey(l)
	}
	return func(text []byte) (any, error) {
		s := string(v.textOf(text))
		members := []string{s}
		if tg.kind == tgSet {
			members = strings.Split(s, ",")
			if s == "" {
				members = nil
			}
		}
		for _, m := range members {
			if !slices.Contains(labels, labelKey(m)) {
				return f.reject(v.name + " value is not a member of the target " + tg.name)
			}
		}
		return s, nil
	}
}

// labelKey is how labels compare. information_schema is utf8mb3 in MySQL 8
// and MariaDB, so COLUMN_TYPE shows a character outside the Basic
// Multilingual Plane (an emoji) as '?'; such characters compare as '?'.
func labelKey(s string) string {
	return strings.Map(func(r rune) rune {
		if r > 0xFFFF {
			return '?'
		}
		return r
	}, s)
}

// toBit writes bit strings and booleans into BIT(n), as the big-endian
// bytes of the number they spell (a string would be taken as characters).
func (v valueSource) toBit(tg *targetCol, f fit) Converter {
	width := int((tg.limit + 7) / 8)
	switch v.class {
	case clBool:
		return func(text []byte) (any, error) {
			b, err := v.boolOf(text)
			if err != nil {
				return nil, err
			}
			out := make([]byte, width)
			if b {
				out[width-1] = 1
			}
			return out, nil
		}
	case clBit:
		return func(text []byte) (any, error) {
			digits := bytes.TrimLeft(text, "0")
			if len(bytes.Trim(digits, "01")) > 0 {
				return nil, v.malformed(nil)
			}
			if int64(len(digits)) > tg.limit {
				rule := fmt.Sprintf("%s with %d significant bits is longer than %s", v.name, len(digits), tg.name)
				return f.clamp(rule, bitBytes(bytes.Repeat([]byte("1"), int(tg.limit)), width))
			}
			return bitBytes(digits, width), nil
		}
	}
	return nil
}

// bitBytes packs a string of 0s and 1s into width big-endian bytes.
func bitBytes(digits []byte, width int) []byte {
	out := make([]byte, width)
	for i, d := range digits {
		pos := len(digits) - 1 - i // bit number, 0 the least significant
		if d == '1' {
			out[width-1-pos/8] |= 1 << (pos % 8)
		}
	}
	return out
}
