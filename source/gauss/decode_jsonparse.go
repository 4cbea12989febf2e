package gauss

import (
	"fmt"
	"unicode/utf8"
)

// A small JSON reader for the documents the decoders send: cJSON DML
// objects and DDL documents. encoding/json is not used because it replaces
// bytes that are not UTF-8 with U+FFFD, and the server sends values in the
// database encoding (GBK and SQL_ASCII databases exist): string contents
// are kept byte for byte, only escapes are decoded. Object members keep
// their order; lookups take the last member of a name, as jsonb does.

type jsonKind uint8

const (
	jsonNull jsonKind = iota
	jsonBool
	jsonNumber
	jsonString
	jsonArray
	jsonObject
)

var jsonKindNames = [...]string{"null", "boolean", "number", "string", "array", "object"}

func (k jsonKind) String() string { return jsonKindNames[k] }

type jsonValue struct {
	kind  jsonKind
	str   string // string contents, or a number's text
	truth bool
	arr   []jsonValue
	obj   []jsonMember
	start int // offset of the value in the payload
	end   int // offset just past it
}

type jsonMember struct {
	key string
	val jsonValue
}

// get returns the member named key, or nil.
func (v *jsonValue) get(key string) *jsonValue {
	for i := len(v.obj) - 1; i >= 0; i-- {
		if v.obj[i].key == key {
			return &v.obj[i].val
		}
	}
	return nil
}

// maxJSONDepth bounds nesting, so a hostile payload cannot exhaust the stack.
const maxJSONDepth = 256

type jsonParser struct {
	src   []byte // the whole payload, for offsets
	pos   int
	end   int
	f     Format
	depth int
}

// parseJSON parses the single JSON value that fills p[start:end].
func parseJSON(f Format, p []byte, start, end int) (jsonValue, error) {
	jp := &jsonParser{src: p, pos: start, end: end, f: f}
	v, err := jp.value()
	if err != nil {
		return jsonValue{}, err
	}
	jp.space()
	if jp.pos != jp.end {
		return jsonValue{}, jp.fail("the end of the JSON document")
	}
	return v, nil
}

func (jp *jsonParser) fail(expected string) error {
	return &DecodeError{Offset: jp.pos, Expected: expected, Format: jp.f}
}

func (jp *jsonParser) space() {
	for jp.pos < jp.end {
		switch jp.src[jp.pos] {
		case ' ', '\t', '\n', '\r':
			jp.pos++
		default:
			return
		}
	}
}

func (jp *jsonParser) peek() byte {
	if jp.pos < jp.end {
		return jp.src[jp.pos]
	}
	return 0
}

func (jp *jsonParser) value() (jsonValue, error) {
	jp.space()
	start := jp.pos
	var v jsonValue
	var err error
	switch b := jp.peek(); {
	case b == '{':
		v, err = jp.object()
	case b == '[':
		v, err = jp.array()
	case b == '"':
		v.kind = jsonString
		v.str, err = jp.string()
	case b == '-' || b >= '0' && b <= '9':
		v.kind = jsonNumber
		v.str, err = jp.number()
	case b == 't' || b == 'f' || b == 'n':
		v, err = jp.literal()
	default:
		return v, jp.fail("a JSON value")
	}
	v.start, v.end = start, jp.pos
	return v, err
}

func (jp *jsonParser) enter() error {
	jp.depth++
	if jp.depth > maxJSONDepth {
		return jp.fail(fmt.Sprintf("JSON nested at most %d deep", maxJSONDepth))
	}
	return nil
}

func (jp *jsonParser) object() (jsonValue, error) {
	v := jsonValue{kind: jsonObject}
	if err := jp.enter(); err != nil {
		return v, err
	}
	defer func() { jp.depth-- }()
	jp.pos++ // '{'
	jp.space()
	if jp.peek() == '}' {
		jp.pos++
		return v, nil
	}
	for {
		jp.space()
		if jp.peek() != '"' {
			return v, jp.fail("a JSON object key")
		}
		key, err := jp.string()
		if err != nil {
			return v, err
		}
		jp.space()
		if jp.peek() != ':' {
			return v, jp.fail("':' after a JSON object key")
		}
		jp.pos++
		val, err := jp.value()
		if err != nil {
			return v, err
		}
		v.obj = append(v.obj, jsonMember{key: key, val: val})
		if done, err := jp.next('}'); done || err != nil {
			return v, err
		}
	}
}

func (jp *jsonParser) array() (jsonValue, error) {
	v := jsonValue{kind: jsonArray}
	if err := jp.enter(); err != nil {
		return v, err
	}
	defer func() { jp.depth-- }()
	jp.pos++ // '['
	jp.space()
	if jp.peek() == ']' {
		jp.pos++
		return v, nil
	}
	for {
		el, err := jp.value()
		if err != nil {
			return v, err
		}
		v.arr = append(v.arr, el)
		if done, err := jp.next(']'); done || err != nil {
			return v, err
		}
	}
}

// next consumes ',' (more members follow) or the closing byte.
func (jp *jsonParser) next(closing byte) (done bool, err error) {
	jp.space()
	switch jp.peek() {
	case ',':
		jp.pos++
		return false, nil
	case closing:
		jp.pos++
		return true, nil
	}
	return true, jp.fail(fmt.Sprintf("',' or '%c'", closing))
}

func (jp *jsonParser) literal() (jsonValue, error) {
	for _, l := range [...]struct {
		text string
		v    jsonValue
	}{{"true", jsonValue{kind: jsonBool, truth: true}}, {"false", jsonValue{kind: jsonBool}}, {"null", jsonValue{kind: jsonNull}}} {
		if jp.end-jp.pos >= len(l.text) && string(jp.src[jp.pos:jp.pos+len(l.text)]) == l.text {
			jp.pos += len(l.text)
			return l.v, nil
		}
	}
	return jsonValue{}, jp.fail("a JSON value")
}

func (jp *jsonParser) number() (string, error) {
	start := jp.pos
	if jp.peek() == '-' {
		jp.pos++
	}
	if jp.peek() == '0' {
		jp.pos++
	} else if !jp.digits() {
		return "", jp.fail("a digit")
	}
	if jp.peek() == '.' {
		jp.pos++
		if !jp.digits() {
			return "", jp.fail("a digit after '.'")
		}
	}
	if b := jp.peek(); b == 'e' || b == 'E' {
		jp.pos++
		if b := jp.peek(); b == '+' || b == '-' {
			jp.pos++
		}
		if !jp.digits() {
			return "", jp.fail("an exponent")
		}
	}
	return string(jp.src[start:jp.pos]), nil
}

func (jp *jsonParser) digits() bool {
	start := jp.pos
	for b := jp.peek(); b >= '0' && b <= '9'; b = jp.peek() {
		jp.pos++
	}
	return jp.pos > start
}

// string reads a JSON string, decoding escapes and keeping every other byte.
func (jp *jsonParser) string() (string, error) {
	jp.pos++ // opening quote
	start := jp.pos
	for jp.pos < jp.end {
		switch b := jp.src[jp.pos]; {
		case b == '"':
			jp.pos++
			return string(jp.src[start : jp.pos-1]), nil
		case b == '\\':
			return jp.escapedString(start)
		case b < 0x20:
			return "", jp.fail("no control character inside a JSON string")
		default:
			jp.pos++
		}
	}
	return "", jp.fail("the closing '\"' of a JSON string")
}

// escapedString continues string from the first backslash.
func (jp *jsonParser) escapedString(start int) (string, error) {
	out := append([]byte(nil), jp.src[start:jp.pos]...)
	for jp.pos < jp.end {
		b := jp.src[jp.pos]
		switch {
		case b == '"':
			jp.pos++
			return string(out), nil
		case b == '\\':
			var err error
			if out, err = jp.escape(out); err != nil {
				return "", err
			}
		case b < 0x20:
			return "", jp.fail("no control character inside a JSON string")
		default:
			out = append(out, b)
			jp.pos++
		}
	}
	return "", jp.fail("the closing '\"' of a JSON string")
}

func (jp *jsonParser) escape(out []byte) ([]byte, error) {
	if jp.end-jp.pos < 2 {
		return nil, jp.fail("a JSON escape")
	}
	c := jp.src[jp.pos+1]
	if r := simpleEscape(c); r != 0 {
		jp.pos += 2
		return append(out, r), nil
	}
	if c != 'u' {
		return nil, jp.fail("a JSON escape")
	}
	r, err := jp.hex4(jp.pos + 2)
	if err != nil {
		return nil, err
	}
	jp.pos += 6
	if r >= 0xD800 && r < 0xDC00 && jp.end-jp.pos >= 6 && jp.src[jp.pos] == '\\' && jp.src[jp.pos+1] == 'u' {
		if lo, err := jp.hex4(jp.pos + 2); err == nil && lo >= 0xDC00 && lo < 0xE000 {
			r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
			jp.pos += 6
		}
	}
	return utf8.AppendRune(out, r), nil
}

// simpleEscape is the byte a one-letter JSON escape stands for, or 0.
func simpleEscape(c byte) byte {
	switch c {
	case '"', '\\', '/':
		return c
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	}
	return 0
}

func (jp *jsonParser) hex4(at int) (rune, error) {
	if jp.end-at < 4 {
		return 0, &DecodeError{Offset: at, Expected: "four hex digits", Format: jp.f}
	}
	var r rune
	for _, b := range jp.src[at : at+4] {
		var d byte
		switch {
		case b >= '0' && b <= '9':
			d = b - '0'
		case b >= 'a' && b <= 'f':
			d = b - 'a' + 10
		case b >= 'A' && b <= 'F':
			d = b - 'A' + 10
		default:
			return 0, &DecodeError{Offset: at, Expected: "four hex digits", Format: jp.f}
		}
		r = r<<4 | rune(d)
	}
	return r, nil
}
