package gauss

import (
	"fmt"

	"github.com/decant/decant/source"
)

// Parallel binary format, decode-style 'b' (§2.3):
//
//	record   := len:u32 lsn:u64 body         ; len counts lsn and body
//	stream   := record ('P' record)* ('F' | 'P' 00000000)   ; batch
//	          | record 'F'                                   ; non-batch
//
// A zero length also ends a batch.
//
// The binary encoding of DDL records (GaussDB enable-ddl-decoding with
// decode-style 'b') is not documented anywhere (§3.1), so a DDL record
// arrives here as an unknown record letter and fails: decant cannot apply
// DDL from this format and says so instead of skipping it silently.

const (
	binNull  = 0xFFFFFFFF // column value length: NULL
	binRowno = 0xFFFFFFFE // column value length: rowno pseudo-column, 8 bytes follow

	// minColumn is the smallest encoded column: name length, type OID and
	// value length. It bounds natt before anything is allocated.
	minColumn = 2 + 4 + 4
)

func decodeBinary(f Format, p []byte) ([]Record, error) {
	c := newCursor(f, p)
	var recs []Record
	for {
		start := c.pos
		n, err := c.u32("record length")
		if err != nil {
			return nil, err
		}
		if n == 0 {
			if !f.Batch {
				return nil, c.failAt(start, "a non-zero record length (a zero length only ends a batch)")
			}
			return recs, endOfPayload(c)
		}
		rec, err := binaryRecord(c, n)
		if err != nil {
			return nil, err
		}
		recs = append(recs, rec)
		more, err := binarySeparator(c, f)
		if err != nil || !more {
			return recs, err
		}
	}
}

// binarySeparator reads the byte after a record: 'P' (more follows, batch
// only) or 'F' (the payload ends).
func binarySeparator(c *cursor, f Format) (more bool, err error) {
	want := "separator 'P' or 'F'"
	if !f.Batch {
		want = "terminator 'F'"
	}
	sep, err := c.u8(want)
	if err != nil {
		return false, err
	}
	switch {
	case sep == 'F':
		return false, endOfPayload(c)
	case sep == 'P' && f.Batch:
		return true, nil
	}
	return false, c.failAt(c.pos-1, want)
}

func endOfPayload(c *cursor) error {
	if c.pos != len(c.buf) {
		return c.fail(fmt.Sprintf("end of payload (%d bytes follow)", len(c.buf)-c.pos))
	}
	return nil
}

// binaryRecord reads the n bytes of one record (after its length field),
// bounding every read by the record's end.
func binaryRecord(c *cursor, n uint32) (Record, error) {
	if uint64(n) > uint64(c.remaining()) {
		return Record{}, c.failAt(c.pos-4, fmt.Sprintf("a record of %d bytes (%d left)", n, c.remaining()))
	}
	outer := c.end
	c.end = c.pos + int(n)
	defer func() { c.end = outer }()

	lsn, err := c.u64("record LSN")
	if err != nil {
		return Record{}, err
	}
	letter, err := c.u8("record type")
	if err != nil {
		return Record{}, err
	}
	rec := Record{LSN: source.LSN(lsn)}
	switch letter {
	case 'B':
		err = binaryBegin(c, &rec)
	case 'C':
		err = binaryCommit(c, &rec)
	case 'I', 'U', 'D':
		err = binaryDML(c, letter, &rec)
	case 'h', 'L':
		rec, err = controlBody(c, letter)
		rec.LSN = source.LSN(lsn)
	default:
		err = c.failAt(c.pos-1, fmt.Sprintf("record type B, C, I, U, D, h or L (unknown record type 0x%02x)", letter))
	}
	if err == nil && !c.atEnd() {
		err = c.fail(fmt.Sprintf("end of record (%d bytes left)", c.remaining()))
	}
	c.pos = c.end
	return rec, err
}

// binaryBegin reads csn, first_lsn and the optional tags, which may come in
// any order; an unknown tag ends the record (its length is not known).
func binaryBegin(c *cursor, rec *Record) error {
	rec.Kind = KindBegin
	csn, err := c.u64("BEGIN CSN")
	if err != nil {
		return err
	}
	first, err := c.u64("BEGIN first_lsn")
	if err != nil {
		return err
	}
	rec.CSN, rec.FirstLSN = csn, source.LSN(first)
	for !c.atEnd() {
		tag, _ := c.u8("BEGIN tag")
		switch tag {
		case 'X':
			rec.Xid, err = c.u64("BEGIN xid")
			rec.HasXid = err == nil
		case 'T':
			rec.Time, err = c.str32("BEGIN commit timestamp")
		case 'N':
			rec.User, err = c.str32("BEGIN user name")
		case 'O':
			rec.Origin, err = c.u32("BEGIN origin id")
			rec.HasOrigin = err == nil
		default:
			c.pos = c.end
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// binaryCommit reads the optional xid and timestamp tags.
func binaryCommit(c *cursor, rec *Record) error {
	rec.Kind = KindCommit
	var err error
	for !c.atEnd() {
		tag, _ := c.u8("COMMIT tag")
		switch tag {
		case 'X':
			rec.Xid, err = c.u64("COMMIT xid")
			rec.HasXid = err == nil
		case 'T':
			rec.Time, err = c.str32("COMMIT timestamp")
		default:
			c.pos = c.end
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// binaryDML reads schema, table and the optional new ('N') and old ('O')
// tuples, new first.
func binaryDML(c *cursor, letter byte, rec *Record) error {
	rec.Kind = KindInsert
	if letter == 'U' {
		rec.Kind = KindUpdate
	} else if letter == 'D' {
		rec.Kind = KindDelete
	}
	var err error
	if rec.Schema, err = c.str16("schema name"); err != nil {
		return err
	}
	if rec.Table, err = c.str16("table name"); err != nil {
		return err
	}
	for !c.atEnd() {
		tag, _ := c.u8("tuple marker")
		switch {
		case tag == 'N' && rec.New == nil && rec.Old == nil:
			rec.New, err = binaryTuple(c)
		case tag == 'O' && rec.Old == nil:
			rec.Old, err = binaryTuple(c)
		default:
			return c.failAt(c.pos-1, "tuple marker 'N' (before 'O') or 'O', or the end of the record")
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// binaryTuple reads natt and the columns. The result is non-nil even when
// natt is 0 (the server sends 0 for a compressed heap tuple).
func binaryTuple(c *cursor) ([]Column, error) {
	natt, err := c.u16("column count")
	if err != nil {
		return nil, err
	}
	if int(natt)*minColumn > c.remaining() {
		return nil, c.failAt(c.pos-2, fmt.Sprintf("at most %d columns in the %d bytes left, not %d", c.remaining()/minColumn, c.remaining(), natt))
	}
	cols := make([]Column, natt)
	for i := range cols {
		if err := binaryColumn(c, &cols[i]); err != nil {
			return nil, err
		}
	}
	return cols, nil
}

func binaryColumn(c *cursor, col *Column) error {
	name, err := c.str16("column name")
	if err != nil {
		return err
	}
	col.Name = unquoteIdentifier(name)
	if col.Type, err = c.u32("column type OID"); err != nil {
		return err
	}
	vlen, err := c.u32("column value length")
	if err != nil {
		return err
	}
	switch vlen {
	case binNull:
		col.Null = true
	case binRowno:
		col.Rowno = true
		col.RowNo, err = c.u64("rowno value")
	default:
		if uint64(vlen) > uint64(c.remaining()) {
			return c.failAt(c.pos-4, fmt.Sprintf("a column value of %d bytes (%d left)", vlen, c.remaining()))
		}
		col.Value, err = c.bytes(int(vlen), "column value")
	}
	return err
}
