package mapping

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/decant/decant/source"
)

// JSON renderings of PostgreSQL values that have no MySQL type of their
// own. Output is compact and deterministic: object keys in field order.
//
//	array       {1,NULL,{2}} or [0:1]={1,2}   → [1,null,[2]] / [1,2]
//	composite   (1,"x y",)                    → {"a":1,"b":"x y","c":null}
//	range       [1,5) / (,) / empty           → {"lower":1,"upper":5,"lower_inc":true,"upper_inc":false} / {"empty":true}
//	multirange  {[1,3),[5,7)}                 → [{...},{...}]
//
// Numbers become JSON numbers (NaN and infinities JSON strings), booleans
// true/false, json and jsonb embedded values, everything else strings.

// maxArrayDims is PostgreSQL's limit on array dimensions (MAXDIM).
const maxArrayDims = 6

// toJSON writes into a JSON column.
func (v valueSource) toJSON(f fit) Converter {
	switch v.class {
	case clJSON:
		return func(text []byte) (any, error) { return string(text), nil }
	case clString, clBpchar:
		return func(text []byte) (any, error) {
			if !json.Valid(text) {
				return f.reject(v.name + " value is not a JSON document")
			}
			return string(text), nil
		}
	}
	return func(text []byte) (any, error) {
		out, err := appendJSON(nil, v.typ, v.typmod, text, 0)
		if err != nil {
			return nil, v.malformed(err)
		}
		return string(out), nil
	}
}

// appendJSON appends the JSON form of one value of type t given as its
// PostgreSQL text.
func appendJSON(buf []byte, t *source.Type, typmod int32, text []byte, depth int) ([]byte, error) {
	if depth > maxTypeDepth {
		return nil, errors.New("values nest too deeply")
	}
	t, typmod, err := underlying(t, typmod)
	if err != nil {
		return nil, err
	}
	if t == nil {
		return appendJSONString(buf, text), nil
	}
	switch t.Kind {
	case source.KindArray:
		return appendArrayJSON(buf, t.Elem, typmod, text, depth+1)
	case source.KindComposite:
		return appendRecordJSON(buf, t, text, depth+1)
	case source.KindRange:
		return appendRangeJSON(buf, t.Elem, text, depth+1)
	case source.KindMultirange:
		return appendMultirangeJSON(buf, t.Elem, text, depth+1)
	case source.KindBase:
		return appendScalarJSON(buf, t.OID, text)
	}
	return appendJSONString(buf, text), nil
}

// appendScalarJSON renders a base type's value.
func appendScalarJSON(buf []byte, oid uint32, text []byte) ([]byte, error) {
	switch oid {
	case oidBool:
		switch string(text) {
		case "t":
			return append(buf, "true"...), nil
		case "f":
			return append(buf, "false"...), nil
		}
		return nil, errors.New("boolean is neither t nor f")
	case oidInt2, oidInt4, oidInt8, oidOID, oidXID, oidCID, oidXID8, oidNumeric, oidFloat4, oidFloat8:
		if isJSONNumber(text) {
			return append(buf, text...), nil
		}
	case oidMoney:
		if m, ok := parseMoney(text); ok && isJSONNumber(m) {
			return append(buf, m...), nil
		}
	case oidJSON, oidJSONB:
		var out bytes.Buffer
		if err := json.Compact(&out, text); err != nil {
			return nil, errors.New("embedded json is not valid JSON")
		}
		return append(buf, out.Bytes()...), nil
	}
	return appendJSONString(buf, text), nil
}

// isJSONNumber reports whether s is a number in JSON's grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func isJSONNumber(s []byte) bool {
	i := 0
	digits := func() int {
		n := 0
		for i < len(s) && isDigit(s[i]) {
			i, n = i+1, n+1
		}
		return n
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	start := i
	if n := digits(); n == 0 || (n > 1 && s[start] == '0') {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// appendJSONString appends s as a JSON string. Invalid UTF-8 becomes
// U+FFFD, as encoding/json does.
func appendJSONString(buf, s []byte) []byte {
	const hexDigits = "0123456789abcdef"
	buf = append(buf, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && size == 1 {
				buf = append(buf, `\ufffd`...)
			} else {
				buf = append(buf, s[i:i+size]...)
			}
			i += size
			continue
		}
		switch {
		case c == '"' || c == '\\':
			buf = append(buf, '\\', c)
		case c == '\n':
			buf = append(buf, `\n`...)
		case c == '\r':
			buf = append(buf, `\r`...)
		case c == '\t':
			buf = append(buf, `\t`...)
		case c < 0x20:
			buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		default:
			buf = append(buf, c)
		}
		i++
	}
	return append(buf, '"')
}

// arrayParser reads PostgreSQL array text: elements between braces,
// separated by the element type's delimiter (',' for all but box, whose
// delimiter is ';'); an element is NULL, a run of characters, or a
// double-quoted string in which a backslash escapes the next character.
type arrayParser struct {
	s      []byte
	i      int
	delim  byte
	elem   *source.Type
	typmod int32
	depth  int
}

// appendArrayJSON renders an array; a dimension decoration such as
// [0:1]={1,2} is dropped and only the elements kept.
func appendArrayJSON(buf []byte, elem *source.Type, typmod int32, text []byte, depth int) ([]byte, error) {
	s, err := skipArrayBounds(text)
	if err != nil {
		return nil, err
	}
	p := arrayParser{s: s, delim: arrayDelimiter(elem), elem: elem, typmod: typmod, depth: depth}
	buf, err = p.array(buf, 1)
	if err != nil {
		return nil, err
	}
	if p.skipSpace(); p.i != len(p.s) {
		return nil, errors.New("array text goes on past its closing brace")
	}
	return buf, nil
}

// skipArrayBounds drops a leading "[lo:hi][lo:hi]=" decoration.
func skipArrayBounds(s []byte) ([]byte, error) {
	if len(s) == 0 || s[0] != '[' {
		return s, nil
	}
	eq := bytes.IndexByte(s, '=')
	if eq < 0 || len(bytes.Trim(s[:eq], "[]:-0123456789")) > 0 {
		return nil, errors.New("malformed array dimensions")
	}
	return s[eq+1:], nil
}

func arrayDelimiter(elem *source.Type) byte {
	if t, _, err := underlying(elem, -1); err == nil && t != nil && t.Kind == source.KindBase && t.OID == oidBox {
		return ';'
	}
	return ','
}

// array reads one brace-enclosed dimension.
func (p *arrayParser) array(buf []byte, dim int) ([]byte, error) {
	if dim > maxArrayDims {
		return nil, fmt.Errorf("array has more than %d dimensions", maxArrayDims)
	}
	if !p.take('{') {
		return nil, errors.New("array does not start with a brace")
	}
	buf = append(buf, '[')
	if p.skipSpace(); p.take('}') {
		return append(buf, ']'), nil
	}
	for n := 0; ; n++ {
		if n > 0 {
			buf = append(buf, ',')
		}
		var err error
		if p.skipSpace(); p.i < len(p.s) && p.s[p.i] == '{' {
			buf, err = p.array(buf, dim+1)
		} else {
			buf, err = p.element(buf)
		}
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		switch {
		case p.take('}'):
			return append(buf, ']'), nil
		case !p.take(p.delim):
			return nil, errors.New("array elements are not separated by the delimiter")
		}
	}
}

func (p *arrayParser) element(buf []byte) ([]byte, error) {
	val, quoted, err := p.item()
	if err != nil {
		return nil, err
	}
	if !quoted && bytes.EqualFold(val, []byte("NULL")) {
		return append(buf, "null"...), nil
	}
	return appendJSON(buf, p.elem, p.typmod, val, p.depth)
}

// item reads one element's text, unescaped; quoted tells a quoted "NULL"
// (a string) from NULL.
func (p *arrayParser) item() (val []byte, quoted bool, err error) {
	val = []byte{}
	if p.take('"') {
		for p.i < len(p.s) {
			c := p.s[p.i]
			p.i++
			switch {
			case c == '"':
				return val, true, nil
			case c == '\\' && p.i < len(p.s):
				c = p.s[p.i]
				p.i++
			}
			val = append(val, c)
		}
		return nil, false, errors.New("unterminated quoted array element")
	}
	for p.i < len(p.s) && p.s[p.i] != p.delim && p.s[p.i] != '}' {
		c := p.s[p.i]
		switch {
		case c == '"' || c == '{':
			return nil, false, errors.New("unexpected character in array element")
		case c == '\\' && p.i+1 < len(p.s):
			p.i++
			c = p.s[p.i]
		}
		val = append(val, c)
		p.i++
	}
	val = bytes.TrimRight(val, " \t\n\r\v\f")
	if len(val) == 0 {
		return nil, false, errors.New("empty array element")
	}
	return val, false, nil
}

func (p *arrayParser) take(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *arrayParser) skipSpace() { p.i = skipSpace(p.s, p.i) }

func skipSpace(s []byte, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r' || s[i] == '\v' || s[i] == '\f') {
		i++
	}
	return i
}

// scanField reads one field of a composite's text, or one range bound,
// starting at s[i] and ending before an unquoted byte of stops. Double
// quotes group (inside them "" is a quote) and a backslash escapes the
// next byte. null reports an empty field without quotes: a NULL field, or
// an unbounded range end.
func scanField(s []byte, i int, stops string) (val []byte, null bool, next int, err error) {
	val = []byte{}
	quoted, inQuotes := false, false
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			if i++; i == len(s) {
				return nil, false, 0, errors.New("backslash at the end of the text")
			}
			val = append(val, s[i])
		case c == '"' && inQuotes && i+1 < len(s) && s[i+1] == '"':
			val = append(val, '"')
			i++
		case c == '"':
			inQuotes, quoted = !inQuotes, true
		case !inQuotes && bytes.IndexByte([]byte(stops), c) >= 0:
			return val, !quoted && len(val) == 0, i, nil
		default:
			val = append(val, c)
		}
	}
	return nil, false, 0, errors.New("unterminated field")
}

// recordField is one field of a composite value's text.
type recordField struct {
	val  []byte
	null bool
}

// splitRecord reads composite text: (1,"x y",) has fields 1, x y and NULL.
func splitRecord(s []byte) ([]recordField, error) {
	if len(s) == 0 || s[0] != '(' {
		return nil, errors.New("composite does not start with a parenthesis")
	}
	var fields []recordField
	for i := 1; ; i++ {
		val, null, next, err := scanField(s, i, ",)")
		if err != nil {
			return nil, err
		}
		fields = append(fields, recordField{val: val, null: null})
		if i = next; s[i] == ')' {
			if skipSpace(s, i+1) != len(s) {
				return nil, errors.New("composite text goes on past its closing parenthesis")
			}
			return fields, nil
		}
	}
}

// appendRecordJSON renders a composite as an object keyed by field name.
func appendRecordJSON(buf []byte, t *source.Type, text []byte, depth int) ([]byte, error) {
	fields, err := splitRecord(text)
	if err != nil {
		return nil, err
	}
	if len(t.Fields) == 0 && len(fields) == 1 && fields[0].null {
		return append(buf, "{}"...), nil // "()" is also a type without fields
	}
	if len(fields) != len(t.Fields) {
		return nil, fmt.Errorf("composite text has %d fields, type %s has %d", len(fields), t.Name, len(t.Fields))
	}
	buf = append(buf, '{')
	for i, fd := range t.Fields {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(appendJSONString(buf, []byte(fd.Name)), ':')
		if fields[i].null {
			buf = append(buf, "null"...)
			continue
		}
		if buf, err = appendJSON(buf, fd.Type, fd.TypeMod, fields[i].val, depth); err != nil {
			return nil, err
		}
	}
	return append(buf, '}'), nil
}

// rangeText is a range value's text taken apart; a nil bound is unbounded.
type rangeText struct {
	empty              bool
	lower, upper       []byte
	lowerInc, upperInc bool
}

// parseRange reads one range starting at s[i]: "empty", or [lower,upper)
// with either bracket, bounds quoted like composite fields and empty when
// unbounded. It returns the index just past the range.
func parseRange(s []byte, i int) (rangeText, int, error) {
	var r rangeText
	i = skipSpace(s, i)
	if len(s)-i >= 5 && bytes.EqualFold(s[i:i+5], []byte("empty")) {
		return rangeText{empty: true}, i + 5, nil
	}
	if i == len(s) || (s[i] != '[' && s[i] != '(') {
		return r, 0, errors.New("range does not start with a bracket")
	}
	r.lowerInc = s[i] == '['
	lower, null, i, err := scanField(s, i+1, ",")
	if err != nil {
		return r, 0, err
	}
	if !null {
		r.lower = lower
	}
	upper, null, i, err := scanField(s, i+1, "])")
	if err != nil {
		return r, 0, err
	}
	if !null {
		r.upper = upper
	}
	r.upperInc = s[i] == ']'
	return r, i + 1, nil
}

// appendRangeJSON renders a range as {"lower","upper","lower_inc","upper_inc"}
// with null for an unbounded end, or {"empty":true}.
func appendRangeJSON(buf []byte, sub *source.Type, text []byte, depth int) ([]byte, error) {
	r, next, err := parseRange(text, 0)
	if err != nil {
		return nil, err
	}
	if skipSpace(text, next) != len(text) {
		return nil, errors.New("range text goes on past its closing bracket")
	}
	return appendRangeObject(buf, sub, r, depth)
}

func appendRangeObject(buf []byte, sub *source.Type, r rangeText, depth int) ([]byte, error) {
	if r.empty {
		return append(buf, `{"empty":true}`...), nil
	}
	buf, err := appendBound(append(buf, `{"lower":`...), sub, r.lower, depth)
	if err != nil {
		return nil, err
	}
	if buf, err = appendBound(append(buf, `,"upper":`...), sub, r.upper, depth); err != nil {
		return nil, err
	}
	buf = appendBool(append(buf, `,"lower_inc":`...), r.lowerInc)
	buf = appendBool(append(buf, `,"upper_inc":`...), r.upperInc)
	return append(buf, '}'), nil
}

func appendBound(buf []byte, sub *source.Type, bound []byte, depth int) ([]byte, error) {
	if bound == nil {
		return append(buf, "null"...), nil
	}
	return appendJSON(buf, sub, -1, bound, depth)
}

func appendBool(buf []byte, b bool) []byte {
	if b {
		return append(buf, "true"...)
	}
	return append(buf, "false"...)
}

// appendMultirangeJSON renders {[1,3),[5,7)} as an array of range objects.
// Empty ranges are dropped, as PostgreSQL drops them from a multirange.
func appendMultirangeJSON(buf []byte, sub *source.Type, text []byte, depth int) ([]byte, error) {
	i := skipSpace(text, 0)
	if i == len(text) || text[i] != '{' {
		return nil, errors.New("multirange does not start with a brace")
	}
	buf = append(buf, '[')
	i = skipSpace(text, i+1)
	for n := 0; i < len(text) && text[i] != '}'; {
		r, next, err := parseRange(text, i)
		if err != nil {
			return nil, err
		}
		if !r.empty {
			if n++; n > 1 {
				buf = append(buf, ',')
			}
			if buf, err = appendRangeObject(buf, sub, r, depth); err != nil {
				return nil, err
			}
		}
		i = skipSpace(text, next)
		switch {
		case i < len(text) && text[i] == ',':
			if i = skipSpace(text, i+1); i < len(text) && text[i] == '}' {
				return nil, errors.New("multirange has a comma before its closing brace")
			}
		case i < len(text) && text[i] != '}':
			return nil, errors.New("multirange ranges are not separated by commas")
		}
	}
	if i == len(text) || skipSpace(text, i+1) != len(text) {
		return nil, errors.New("multirange does not end with its closing brace")
	}
	return append(buf, ']'), nil
}
