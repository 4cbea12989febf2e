package gauss

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Type names in GaussDB DDL statements: the built-in types decant knows,
// by their SQL spellings and internal names, with their type modifiers.

// --- types ----------------------------------------------------------------

// typeMod says how a type's modifier is written and what atttypmod it gives.
type typeMod uint8

const (
	modNone      typeMod = iota // none; one written is ignored, as B compatibility does for int(11)
	modLength                   // (n): n+4 (character types)
	modBits                     // (n): n (bit types)
	modNumeric                  // (p[,s]): ((p<<16)|s)+4
	modPrecision                // (p): p, at most 6 (time types)
	modInterval                 // [fields] [(p)]: (range<<16)|p
)

// builtinType is a built-in type: its format_type spelling (by which
// typenames.go knows its OID and its array's) and its modifier.
type builtinType struct {
	sql  string
	mod  typeMod
	bare string // format_type's spelling with typmod -1, when not sql
}

// builtinTypes is keyed by pg_type.typname, as schema-qualified names
// (pg_catalog.int4) and quoted names ("char") give it, and holds the
// GaussDB/openGauss aliases the grammar turns into a type (clob is text).
var builtinTypes = map[string]builtinType{
	"bool": {sql: "boolean"}, "bytea": {sql: "bytea"}, "char": {sql: `"char"`}, "name": {sql: "name"},
	"int8": {sql: "bigint"}, "int2": {sql: "smallint"}, "int4": {sql: "integer"}, "int1": {sql: "tinyint"},
	"int16": {sql: "int16"}, "regproc": {sql: "regproc"}, "text": {sql: "text"}, "clob": {sql: "text"},
	"oid": {sql: "oid"}, "tid": {sql: "tid"}, "xid": {sql: "xid"}, "cid": {sql: "cid"}, "raw": {sql: "raw"},
	"blob": {sql: "blob"}, "json": {sql: "json"}, "jsonb": {sql: "jsonb"}, "xml": {sql: "xml"},
	"point": {sql: "point"}, "lseg": {sql: "lseg"}, "path": {sql: "path"}, "box": {sql: "box"},
	"polygon": {sql: "polygon"}, "line": {sql: "line"}, "circle": {sql: "circle"}, "cidr": {sql: "cidr"},
	"inet": {sql: "inet"}, "macaddr": {sql: "macaddr"}, "money": {sql: "money"},
	"float4": {sql: "real"}, "float8": {sql: "double precision"},
	"abstime": {sql: "abstime"}, "reltime": {sql: "reltime"}, "tinterval": {sql: "tinterval"},
	"bpchar":    {sql: "character", mod: modLength, bare: "bpchar"},
	"varchar":   {sql: "character varying", mod: modLength},
	"nvarchar2": {sql: "nvarchar2", mod: modLength},
	"bit":       {sql: "bit", mod: modBits, bare: `"bit"`},
	"varbit":    {sql: "bit varying", mod: modBits},
	"numeric":   {sql: "numeric", mod: modNumeric},
	"date":      {sql: "date"}, "smalldatetime": {sql: "smalldatetime"},
	"time":        {sql: "time without time zone", mod: modPrecision},
	"timetz":      {sql: "time with time zone", mod: modPrecision},
	"timestamp":   {sql: "timestamp without time zone", mod: modPrecision},
	"timestamptz": {sql: "timestamp with time zone", mod: modPrecision},
	"interval":    {sql: "interval", mod: modInterval},
	"regclass":    {sql: "regclass"}, "regtype": {sql: "regtype"}, "uuid": {sql: "uuid"},
	"tsvector": {sql: "tsvector"}, "tsquery": {sql: "tsquery"}, "int4range": {sql: "int4range"},
	"int8range": {sql: "int8range"}, "numrange": {sql: "numrange"}, "tsrange": {sql: "tsrange"},
	"tstzrange": {sql: "tstzrange"}, "daterange": {sql: "daterange"},
}

// sqlTypeWords are the SQL grammar's type names (unquoted, unqualified),
// longer ones before their prefixes, and the typname each stands for.
var sqlTypeWords = []struct {
	words   []string
	typname string
	length1 bool // CHARACTER and BIT without a length have length 1
	zone    bool // WITH | WITHOUT TIME ZONE may follow
	float   bool // FLOAT(p) is real or double precision by p
	serial  bool
}{
	{words: []string{"national", "character", "varying"}, typname: "varchar"},
	{words: []string{"national", "char", "varying"}, typname: "varchar"},
	{words: []string{"character", "varying"}, typname: "varchar"},
	{words: []string{"char", "varying"}, typname: "varchar"},
	{words: []string{"nchar", "varying"}, typname: "varchar"},
	{words: []string{"national", "character"}, typname: "bpchar", length1: true},
	{words: []string{"national", "char"}, typname: "bpchar", length1: true},
	{words: []string{"character"}, typname: "bpchar", length1: true},
	{words: []string{"char"}, typname: "bpchar", length1: true},
	{words: []string{"nchar"}, typname: "bpchar", length1: true},
	{words: []string{"double", "precision"}, typname: "float8"},
	{words: []string{"bit", "varying"}, typname: "varbit"},
	{words: []string{"bit"}, typname: "bit", length1: true},
	{words: []string{"float"}, typname: "float8", float: true},
	{words: []string{"timestamp"}, typname: "timestamp", zone: true},
	{words: []string{"time"}, typname: "time", zone: true},
	{words: []string{"int"}, typname: "int4"},
	{words: []string{"integer"}, typname: "int4"},
	{words: []string{"smallint"}, typname: "int2"},
	{words: []string{"bigint"}, typname: "int8"},
	{words: []string{"tinyint"}, typname: "int1"},
	{words: []string{"real"}, typname: "float4"},
	{words: []string{"boolean"}, typname: "bool"},
	{words: []string{"decimal"}, typname: "numeric"},
	{words: []string{"dec"}, typname: "numeric"},
	{words: []string{"number"}, typname: "numeric"},
	{words: []string{"binary_integer"}, typname: "int4"},
	{words: []string{"binary_double"}, typname: "float8"},
	{words: []string{"varchar2"}, typname: "varchar"},
	{words: []string{"serial"}, typname: "int4", serial: true},
	{words: []string{"serial4"}, typname: "int4", serial: true},
	{words: []string{"bigserial"}, typname: "int8", serial: true},
	{words: []string{"serial8"}, typname: "int8", serial: true},
	{words: []string{"smallserial"}, typname: "int2", serial: true},
	{words: []string{"serial2"}, typname: "int2", serial: true},
}

// intervalFields are INTERVAL's field restrictions and their range masks
// (datetime.h: MONTH 1, YEAR 2, DAY 3, HOUR 10, MINUTE 11, SECOND 12),
// two-word ones first.
var intervalFields = []struct {
	words []string
	mask  int32
}{
	{[]string{"year", "to", "month"}, 1<<2 | 1<<1},
	{[]string{"day", "to", "hour"}, 1<<3 | 1<<10},
	{[]string{"day", "to", "minute"}, 1<<3 | 1<<10 | 1<<11},
	{[]string{"day", "to", "second"}, 1<<3 | 1<<10 | 1<<11 | 1<<12},
	{[]string{"hour", "to", "minute"}, 1<<10 | 1<<11},
	{[]string{"hour", "to", "second"}, 1<<10 | 1<<11 | 1<<12},
	{[]string{"minute", "to", "second"}, 1<<11 | 1<<12},
	{[]string{"year"}, 1 << 2}, {[]string{"month"}, 1 << 1}, {[]string{"day"}, 1 << 3},
	{[]string{"hour"}, 1 << 10}, {[]string{"minute"}, 1 << 11}, {[]string{"second"}, 1 << 12},
}

const (
	intervalFullRange     = 0x7FFF
	intervalFullPrecision = 0xFFFF
	maxTimePrecision      = 6
	maxCharLength         = 10485760 // PostgreSQL's MaxAttrSize
)

// typeSpec is a column type as a statement writes it.
type typeSpec struct {
	typname string // the builtinTypes key it resolves to
	written string // as written, for messages
	length1 bool
	zone    bool
	float   bool
	serial  bool
	args    []int64 // the modifier
	fields  int32   // interval field mask; 0 for none
	array   bool
}

// colType is a resolved column type.
type colType struct {
	oid    uint32
	typmod int32
	sql    string // format_type(oid, typmod)
}

func (p *ddlParser) typeSpec() (typeSpec, error) {
	var ts typeSpec
	start := p.i
	if err := p.typeWords(&ts); err != nil {
		return ts, err
	}
	if ts.typname == "interval" {
		ts.fields = p.intervalFields()
	}
	if p.isOp("(") {
		args, err := p.typeArgs()
		if err != nil {
			return ts, err
		}
		ts.args = args
	}
	if ts.zone {
		if p.acceptKw("with", "time", "zone") {
			ts.typname += "tz"
		} else {
			p.acceptKw("without", "time", "zone")
		}
	}
	for p.acceptOp("[") { // the dimensions of an array are not enforced
		if p.peek().kind == tNumber {
			p.next()
		}
		if err := p.expectOp("]"); err != nil {
			return ts, err
		}
		ts.array = true
	}
	if p.acceptKw("array") {
		ts.array = true
		if p.acceptOp("[") {
			if p.peek().kind == tNumber {
				p.next()
			}
			if err := p.expectOp("]"); err != nil {
				return ts, err
			}
		}
	}
	ts.written = p.span(start, p.i)
	return ts, nil
}

// typeWords reads a type's name: a catalog name (schema-qualified or
// quoted, as the deparser writes most types) or the SQL grammar's.
func (p *ddlParser) typeWords(ts *typeSpec) error {
	t := p.peek()
	if next := p.peekN(1); t.kind == tQuoted || next.kind == tOp && next.val == "." {
		start := p.i
		parts, err := p.qualifiedName()
		if err != nil {
			return err
		}
		written := p.span(start, p.i)
		if len(parts) > 2 || len(parts) == 2 && parts[0] != "pg_catalog" {
			return fmt.Errorf("type %s is not a built-in type decant knows", written)
		}
		return ts.catalogName(parts[len(parts)-1], written)
	}
	if t.kind != tIdent {
		return p.expected("a type")
	}
	for _, w := range sqlTypeWords {
		if p.acceptKw(w.words...) {
			ts.typname, ts.length1, ts.zone, ts.float, ts.serial = w.typname, w.length1, w.zone, w.float, w.serial
			return nil
		}
	}
	p.next()
	return ts.catalogName(t.val, p.src[t.pos:t.end])
}

// catalogName resolves a pg_type name; "_int4" is int4's array type.
func (ts *typeSpec) catalogName(name, written string) error {
	if _, ok := builtinTypes[name]; ok {
		ts.typname = name
		return nil
	}
	if elem, ok := strings.CutPrefix(name, "_"); ok {
		if _, ok := builtinTypes[elem]; ok {
			ts.typname, ts.array = elem, true
			return nil
		}
	}
	return fmt.Errorf("type %s is not a built-in type decant knows", written)
}

func (p *ddlParser) intervalFields() int32 {
	for _, f := range intervalFields {
		if p.acceptKw(f.words...) {
			return f.mask
		}
	}
	return 0
}

// typeArgs reads a type modifier: (n[, n]).
func (p *ddlParser) typeArgs() ([]int64, error) {
	p.next()
	var args []int64
	for {
		neg := p.acceptOp("-")
		if !neg {
			p.acceptOp("+")
		}
		t := p.peek()
		n, err := strconv.ParseInt(t.val, 10, 32)
		if t.kind != tNumber || err != nil || len(args) == 2 {
			return nil, p.expected("an integer type modifier")
		}
		p.next()
		if neg {
			n = -n
		}
		args = append(args, n)
		if !p.acceptOp(",") {
			return args, p.expectOp(")")
		}
	}
}

// resolve gives a type's OID, atttypmod and format_type spelling.
func (ts typeSpec) resolve() (colType, error) {
	if ts.float { // FLOAT(p): real up to 24 bits of precision
		switch {
		case len(ts.args) == 0:
		case len(ts.args) == 1 && ts.args[0] >= 1 && ts.args[0] <= 24:
			ts.typname = "float4"
		case len(ts.args) == 1 && ts.args[0] >= 25 && ts.args[0] <= 53:
		default:
			return colType{}, fmt.Errorf("type %s: precision out of range 1..53", ts.written)
		}
		ts.args = nil
	}
	b := builtinTypes[ts.typname]
	typmod, err := b.typmod(ts)
	if err != nil {
		return colType{}, fmt.Errorf("type %s: %w", ts.written, err)
	}
	t := colType{typmod: typmod, sql: b.format(typmod)}
	name := b.sql
	if ts.array {
		name += "[]"
		t.sql += "[]"
	}
	oid, ok := TypeOID(name)
	if !ok {
		return colType{}, fmt.Errorf("type %s is not a type decant knows", ts.written)
	}
	t.oid = oid
	return t, nil
}

// typmod computes atttypmod as the type's typmodin does.
func (b builtinType) typmod(ts typeSpec) (int32, error) {
	args := ts.args
	if b.mod == modNone {
		return -1, nil
	}
	if len(args) > 1 && b.mod != modNumeric {
		return 0, errors.New("takes one modifier")
	}
	switch b.mod {
	case modLength, modBits:
		n, limit := int64(1), int64(maxCharLength)
		if b.mod == modBits {
			limit *= 8
		}
		switch {
		case len(args) == 1:
			n = args[0]
		case !ts.length1:
			return -1, nil
		}
		if n < 1 || n > limit {
			return 0, fmt.Errorf("length %d out of range 1..%d", n, limit)
		}
		if b.mod == modLength {
			n += 4
		}
		return int32(n), nil
	case modNumeric:
		if len(args) == 0 {
			return -1, nil
		}
		prec, scale := args[0], int64(0)
		if len(args) == 2 {
			scale = args[1]
		}
		if prec < 1 || prec > 1000 || scale < 0 || scale > prec {
			return 0, fmt.Errorf("precision %d and scale %d out of range", prec, scale)
		}
		return int32(prec<<16|scale) + 4, nil
	case modPrecision:
		if len(args) == 0 {
			return -1, nil
		}
		return timePrecision(args[0])
	case modInterval:
		if len(args) == 0 && ts.fields == 0 {
			return -1, nil
		}
		rng, prec := int32(intervalFullRange), int32(intervalFullPrecision)
		if ts.fields != 0 {
			rng = ts.fields
		}
		if len(args) == 1 {
			var err error
			if prec, err = timePrecision(args[0]); err != nil {
				return 0, err
			}
		}
		return rng<<16 | prec, nil
	}
	return -1, nil
}

// timePrecision checks fractional seconds; above 6 the server warns and
// uses 6.
func timePrecision(p int64) (int32, error) {
	if p < 0 {
		return 0, fmt.Errorf("precision %d must not be negative", p)
	}
	return int32(min(p, maxTimePrecision)), nil
}

// format spells the type as format_type(oid, typmod) does.
func (b builtinType) format(typmod int32) string {
	if typmod < 0 {
		if b.bare != "" {
			return b.bare
		}
		return b.sql
	}
	switch b.mod {
	case modLength:
		return fmt.Sprintf("%s(%d)", b.sql, typmod-4)
	case modBits:
		return fmt.Sprintf("%s(%d)", b.sql, typmod)
	case modNumeric:
		v := typmod - 4
		return fmt.Sprintf("numeric(%d,%d)", v>>16&0xFFFF, v&0xFFFF)
	case modPrecision:
		head, tail, _ := strings.Cut(b.sql, " ")
		return fmt.Sprintf("%s(%d) %s", head, typmod, tail)
	case modInterval:
		s := "interval"
		for _, f := range intervalFields {
			if f.mask == typmod>>16&intervalFullRange {
				s += " " + strings.Join(f.words, " ")
			}
		}
		if prec := typmod & intervalFullPrecision; prec != intervalFullPrecision {
			s += fmt.Sprintf("(%d)", prec)
		}
		return s
	}
	return b.sql
}
