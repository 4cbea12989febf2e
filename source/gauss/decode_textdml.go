package gauss

import (
	"strings"
)

// Text DML records (decode-style 't', §2.4):
//
//	dml  := "table " schema " " table " " op
//	op   := "INSERT:" tuple | "DELETE:" tuple
//	      | "UPDATE:" [" old-key:" cols " new-tuple:"] tuple
//	tuple:= cols | " (no-tuple-data)"
//	cols := { " " name "[" typename "]:" literal }
//
// Names are quote_identifier-ed, type names may contain spaces and "[]",
// and literals are PrintLiteral-quoted, so a quoted literal may contain
// spaces, "]:" and doubled quotes. Schema and table are printed raw: a
// schema name containing a space cannot be told apart from the table name
// (prefer the binary format for such names).

const noTupleData = " (no-tuple-data)"

type textScanner struct {
	f    Format
	s    string
	pos  int
	base int // payload offset of s
}

func (t *textScanner) fail(expected string) error {
	return &DecodeError{Offset: t.base + t.pos, Expected: expected, Format: t.f}
}

func (t *textScanner) consume(prefix string) bool {
	if strings.HasPrefix(t.s[t.pos:], prefix) {
		t.pos += len(prefix)
		return true
	}
	return false
}

func textDML(f Format, s string, base int) (Record, error) {
	t := &textScanner{f: f, s: s, pos: len("table "), base: base}
	rec := Record{}
	op, at := -1, -1
	for i, marker := range []string{" INSERT:", " UPDATE:", " DELETE:"} {
		if j := strings.Index(s[t.pos:], marker); j >= 0 && (at < 0 || j < at) {
			op, at = i, j
		}
	}
	if op < 0 {
		return rec, t.fail("schema, table and INSERT:, UPDATE: or DELETE:")
	}
	names := s[t.pos : t.pos+at]
	sp := strings.IndexByte(names, ' ')
	if sp <= 0 || sp == len(names)-1 {
		return rec, t.fail("a schema and a table name separated by a space")
	}
	rec.Schema, rec.Table = names[:sp], names[sp+1:]
	t.pos += at + len(" INSERT:")
	var err error
	switch op {
	case 0:
		rec.Kind = KindInsert
		rec.New, err = t.tuple()
	case 1:
		rec.Kind = KindUpdate
		rec.Old, rec.New, err = t.update()
	case 2:
		rec.Kind = KindDelete
		rec.Old, err = t.tuple()
	}
	return rec, err
}

func (t *textScanner) update() (old, cur []Column, err error) {
	if t.consume(" old-key:") {
		if old, err = t.columns(true); err != nil {
			return nil, nil, err
		}
		if !t.consume(" new-tuple:") {
			return nil, nil, t.fail("' new-tuple:' after the old key")
		}
	}
	cur, err = t.tuple()
	return old, cur, err
}

// tuple reads the rest of the record as a tuple: nil for (no-tuple-data).
func (t *textScanner) tuple() ([]Column, error) {
	if t.s[t.pos:] == noTupleData {
		t.pos = len(t.s)
		return nil, nil
	}
	return t.columns(false)
}

// columns reads columns to the end of the record, or, for an old key, to
// " new-tuple:". The result is non-nil even when there are none.
func (t *textScanner) columns(oldKey bool) ([]Column, error) {
	cols := []Column{}
	for t.pos < len(t.s) {
		if oldKey && strings.HasPrefix(t.s[t.pos:], " new-tuple:") {
			break
		}
		col, err := t.column()
		if err != nil {
			return nil, err
		}
		cols = append(cols, col)
	}
	return cols, nil
}

// column reads ` name[type]:literal`.
func (t *textScanner) column() (Column, error) {
	var col Column
	if !t.consume(" ") {
		return col, t.fail("' ' before a column")
	}
	name, next, ok := scanIdentifier(t.s, t.pos, "[ ")
	if !ok || next >= len(t.s) || t.s[next] != '[' {
		return col, t.fail("a column name followed by '['")
	}
	col.Name, t.pos = name, next+1
	j := strings.Index(t.s[t.pos:], "]:")
	if j < 0 {
		return col, t.fail("a type name followed by ']:'")
	}
	col.TypeName = t.s[t.pos : t.pos+j]
	col.Type, _ = TypeOID(col.TypeName)
	t.pos += j + 2
	end, ok := scanLiteral(t.s, t.pos)
	if !ok || !literalValue(t.s[t.pos:end], &col) {
		return col, t.fail("a value: null, a number, true, false, B'bits' or a quoted literal")
	}
	t.pos = end
	return col, nil
}
