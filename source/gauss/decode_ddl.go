package gauss

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/decant/decant/source"
)

// DDL records (§3):
//
//	GaussDB     {"TDDL":"<sql>"}            enable-ddl-json-format=false
//	            {"JDDL":{"fmt":...}}        enable-ddl-json-format=true
//	openGauss   prefix: deparse, lsn: <n>, relid <oid>, cmdtype: <t>, size: <n>, content: <json>
//	            decode to: <sql>, [owner <role>]     (mppdb_decoding; absent for drop-start messages)
//
// A JDDL document is expanded to SQL by the deparser's rules (§3.3,
// ddljson.cpp): every object has a "fmt" whose %{name}X conversions
// expand member name with X = s (string, or object expanded in turn and
// empty when "present" is false), I (identifier), D (dotted name),
// T (type name), L (literal) or n (number); %{name:sep}X expands an array.
// GaussDB's key names schema_name, object_name and type_name are accepted
// beside openGauss's schemaname, objname and typename.

func textDDL(f Format, v *jsonValue) (Record, error) {
	if v.kind != jsonString {
		return Record{}, &DecodeError{Offset: v.start, Expected: "a string after \"TDDL\"", Format: f}
	}
	return Record{Kind: KindDDL, DDL: v.str}, nil
}

func jsonDDL(f Format, p []byte, v *jsonValue) (Record, error) {
	if v.kind != jsonObject {
		return Record{}, &DecodeError{Offset: v.start, Expected: "an object after \"JDDL\"", Format: f}
	}
	sql, err := expandDDL(f, v)
	if err != nil {
		return Record{}, err
	}
	return Record{Kind: KindDDL, DDL: sql, DDLJSON: append([]byte(nil), p[v.start:v.end]...)}, nil
}

// deparseDDL decodes mppdb_decoding's DDL message (openGauss).
func deparseDDL(f Format, p []byte) (Record, error) {
	s := string(p)
	rec := Record{Kind: KindDDL}
	fail := func(off int, expected string) error { return &DecodeError{Offset: off, Expected: expected, Format: f} }
	at := strings.Index(s, ", content: ")
	if at < 0 {
		return rec, fail(0, "prefix: ..., content: <json>")
	}
	if i := strings.Index(s[:at], ", lsn: "); i >= 0 {
		num, _, _ := strings.Cut(s[i+len(", lsn: "):at], ",")
		lsn, err := strconv.ParseUint(num, 10, 64)
		if err != nil {
			return rec, fail(i+len(", lsn: "), "a decimal LSN")
		}
		rec.LSN = source.LSN(lsn)
	}
	content, decoded, hasSQL := strings.Cut(s[at+len(", content: "):], "\ndecode to: ")
	start := at + len(", content: ")
	if strings.HasPrefix(content, "{") {
		if _, err := parseJSON(f, p, start, start+len(content)); err != nil {
			return rec, err
		}
		rec.DDLJSON = []byte(content)
	}
	if hasSQL {
		i := strings.LastIndex(decoded, ", [owner ")
		if i < 0 || !strings.HasSuffix(decoded, "]") {
			return rec, fail(len(s), "', [owner <role>]' ending the decode to: line")
		}
		rec.DDL = decoded[:i]
	}
	return rec, nil
}

// maxExpansion bounds the text a DDL document may expand to: a fmt string
// can name the same member many times, so a small hostile document could
// otherwise expand exponentially.
func maxExpansion(doc *jsonValue) int { return max(1<<20, 64*(doc.end-doc.start)) }

type ddlExpander struct {
	f     Format
	total int // bytes produced at every level, bounded by limit
	limit int
}

func expandDDL(f Format, doc *jsonValue) (string, error) {
	x := &ddlExpander{f: f, limit: maxExpansion(doc)}
	return x.expand(doc)
}

func (x *ddlExpander) fail(v *jsonValue, expected string) error {
	return &DecodeError{Offset: v.start, Expected: expected, Format: x.f}
}

func (x *ddlExpander) add(b *strings.Builder, s string) error {
	x.total += len(s)
	if x.total > x.limit {
		return &DecodeError{Expected: fmt.Sprintf("a DDL expansion of at most %d bytes", x.limit), Format: x.f}
	}
	b.WriteString(s)
	return nil
}

// expand expands obj's "fmt".
func (x *ddlExpander) expand(obj *jsonValue) (string, error) {
	fv := obj.get("fmt")
	if fv == nil || fv.kind != jsonString {
		return "", x.fail(obj, `a string member "fmt"`)
	}
	var b strings.Builder
	s := fv.str
	for i := 0; i < len(s); i++ {
		j := strings.IndexByte(s[i:], '%')
		if j < 0 {
			if err := x.add(&b, s[i:]); err != nil {
				return "", err
			}
			break
		}
		if err := x.add(&b, s[i:i+j]); err != nil {
			return "", err
		}
		i += j + 1
		if i < len(s) && s[i] == '%' {
			if err := x.add(&b, "%"); err != nil {
				return "", err
			}
			continue
		}
		out, next, err := x.conversion(obj, fv, s, i)
		if err != nil {
			return "", err
		}
		if err := x.add(&b, out); err != nil {
			return "", err
		}
		i = next
	}
	return b.String(), nil
}

// conversion expands the %{name[:sep]}X starting at s[i] (after the '%')
// and returns the index of X.
func (x *ddlExpander) conversion(obj, fv *jsonValue, s string, i int) (string, int, error) {
	if i >= len(s) || s[i] != '{' {
		return "", 0, x.fail(fv, "a %{name}X conversion in fmt")
	}
	closing := strings.IndexByte(s[i:], '}')
	if closing < 0 || i+closing+1 >= len(s) {
		return "", 0, x.fail(fv, "a terminated %{name}X conversion in fmt")
	}
	name, sep, isArray := strings.Cut(s[i+1:i+closing], ":")
	conv := s[i+closing+1]
	v := obj.get(name)
	if v == nil {
		return "", 0, x.fail(obj, fmt.Sprintf("member %q named in fmt", name))
	}
	var out string
	var err error
	if isArray {
		out, err = x.array(v, sep, conv)
	} else {
		out, _, err = x.one(v, conv)
	}
	return out, i + closing + 1, err
}

// array expands the elements and joins them with sep; an element with
// "present": false adds nothing, not even a separator.
func (x *ddlExpander) array(v *jsonValue, sep string, conv byte) (string, error) {
	if v.kind != jsonArray {
		return "", x.fail(v, "a JSON array for %{name:sep}")
	}
	var b strings.Builder
	first := true
	for i := range v.arr {
		out, ok, err := x.one(&v.arr[i], conv)
		if err != nil {
			return "", err
		}
		if !ok {
			continue
		}
		if !first {
			if err := x.add(&b, sep); err != nil {
				return "", err
			}
		}
		if err := x.add(&b, out); err != nil {
			return "", err
		}
		first = false
	}
	return b.String(), nil
}

// one expands a single value; false when it expanded to nothing because
// of "present": false.
func (x *ddlExpander) one(v *jsonValue, conv byte) (string, bool, error) {
	var out string
	var err error
	switch conv {
	case 's':
		return x.str(v)
	case 'I':
		if v.kind != jsonString {
			return "", false, x.fail(v, "a string for %I")
		}
		out = QuoteIdentifier(v.str)
	case 'D':
		out, err = x.dotted(v)
	case 'T':
		out, err = x.typeName(v)
	case 'L':
		if v.kind != jsonString {
			return "", false, x.fail(v, "a string for %L")
		}
		out = quoteDDLLiteral(v.str)
	case 'n':
		if v.kind != jsonNumber {
			return "", false, x.fail(v, "a number for %n")
		}
		out = v.str
	default:
		return "", false, x.fail(v, fmt.Sprintf("a conversion s, I, D, T, L or n, not %q", conv))
	}
	return out, err == nil, err
}

func (x *ddlExpander) str(v *jsonValue) (string, bool, error) {
	switch v.kind {
	case jsonString:
		return v.str, true, nil
	case jsonObject:
		if p := v.get("present"); p != nil {
			if p.kind != jsonBool {
				return "", false, x.fail(p, `a boolean "present"`)
			}
			if !p.truth {
				return "", false, nil
			}
		}
		out, err := x.expand(v)
		return out, err == nil, err
	}
	return "", false, x.fail(v, "a string or an object for %s")
}

// member returns the first of the synonymous string members that exists.
func (x *ddlExpander) member(obj *jsonValue, keys ...string) (string, bool, error) {
	for _, k := range keys {
		if v := obj.get(k); v != nil {
			if v.kind != jsonString {
				return "", false, x.fail(v, fmt.Sprintf("a string %q", k))
			}
			return v.str, true, nil
		}
	}
	return "", false, nil
}

// dotted expands %D: [schema.]object[.attribute], each part quoted.
func (x *ddlExpander) dotted(v *jsonValue) (string, error) {
	if v.kind != jsonObject {
		return "", x.fail(v, "an object for %D")
	}
	schema, hasSchema, err := x.member(v, "schemaname", "schema_name")
	if err != nil {
		return "", err
	}
	obj, hasObj, err := x.member(v, "objname", "object_name")
	if err != nil || !hasObj {
		return "", firstErr(err, x.fail(v, `"objname" or "object_name" for %D`))
	}
	attr, hasAttr, err := x.member(v, "attrname", "attr_name")
	if err != nil {
		return "", err
	}
	out := QuoteIdentifier(obj)
	if hasSchema {
		out = QuoteIdentifier(schema) + "." + out
	}
	if hasAttr {
		out += "." + QuoteIdentifier(attr)
	}
	return out, nil
}

// typeName expands %T: an absent schema quotes the type name, an empty
// one leaves it as is (types with special typmod syntax).
func (x *ddlExpander) typeName(v *jsonValue) (string, error) {
	if v.kind != jsonObject {
		return "", x.fail(v, "an object for %T")
	}
	schema, hasSchema, err := x.member(v, "schemaname", "schema_name")
	if err != nil {
		return "", err
	}
	name, hasName, err := x.member(v, "typename", "type_name")
	if err != nil || !hasName {
		return "", firstErr(err, x.fail(v, `"typename" or "type_name" for %T`))
	}
	typmod, _, err := x.member(v, "typmod")
	if err != nil {
		return "", err
	}
	arr := v.get("typarray")
	if arr == nil || arr.kind != jsonBool {
		return "", x.fail(v, `a boolean "typarray" for %T`)
	}
	out := QuoteIdentifier(name)
	switch {
	case hasSchema && schema == "":
		out = name
	case hasSchema:
		out = QuoteIdentifier(schema) + "." + out
	}
	out += typmod
	if arr.truth {
		out += "[]"
	}
	return out, nil
}

func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// quoteDDLLiteral quotes s in single quotes, or, if it holds a quote or a
// backslash, between the first dollar tag of $, $_, $_X, ... (suffixes
// from "_XYZZYX_") that s does not contain, closed with '$'.
func quoteDDLLiteral(s string) string {
	if !strings.ContainsAny(s, `'\`) {
		return "'" + s + "'"
	}
	const suffixes = "_XYZZYX_"
	tag := "$"
	for i := 0; strings.Contains(s, tag); i = (i + 1) % len(suffixes) {
		tag += suffixes[i : i+1]
	}
	tag += "$"
	return tag + s + tag
}
