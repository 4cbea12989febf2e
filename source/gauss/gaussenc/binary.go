package gaussenc

import (
	"encoding/binary"
	"fmt"

	"github.com/decant/decant/source/gauss"
)

// binaryRecord appends len:u32 lsn:u64 body (§2.3.1), without separator.
func (e encoder) binaryRecord(b []byte, r gauss.Record) []byte {
	start := len(b)
	b = binary.BigEndian.AppendUint32(b, 0) // patched below
	b = binary.BigEndian.AppendUint64(b, uint64(r.LSN))
	switch r.Kind {
	case gauss.KindBegin:
		b = binaryBegin(b, r)
	case gauss.KindCommit:
		b = append(b, 'C')
		if r.HasXid {
			b = append(b, 'X')
			b = binary.BigEndian.AppendUint64(b, r.Xid)
		}
		b = appendTag32(b, 'T', r.Time)
	case gauss.KindInsert, gauss.KindUpdate, gauss.KindDelete:
		b = binaryDML(b, r)
	default:
		panic(fmt.Sprintf("gaussenc: a %s record has no known binary encoding", r.Kind))
	}
	binary.BigEndian.PutUint32(b[start:], uint32(len(b)-start-4))
	return b
}

// binaryBegin writes 'B' csn first_lsn and the tags in the order X, T, N,
// O (openGauss writes X T O, GaussDB T N).
func binaryBegin(b []byte, r gauss.Record) []byte {
	b = append(b, 'B')
	b = binary.BigEndian.AppendUint64(b, r.CSN)
	b = binary.BigEndian.AppendUint64(b, uint64(r.FirstLSN))
	if r.HasXid {
		b = append(b, 'X')
		b = binary.BigEndian.AppendUint64(b, r.Xid)
	}
	b = appendTag32(b, 'T', r.Time)
	b = appendTag32(b, 'N', r.User)
	if r.HasOrigin {
		b = append(b, 'O')
		b = binary.BigEndian.AppendUint32(b, r.Origin)
	}
	return b
}

// appendTag32 writes tag, a u32 length and s, when s is not empty.
func appendTag32(b []byte, tag byte, s string) []byte {
	if s == "" {
		return b
	}
	b = append(b, tag)
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

func binaryDML(b []byte, r gauss.Record) []byte {
	b = append(b, opName(r.Kind)[0]) // 'I', 'U' or 'D'
	b = appendStr16(b, r.Schema)
	b = appendStr16(b, r.Table)
	if r.New != nil {
		b = binaryTuple(append(b, 'N'), r.New)
	}
	if r.Old != nil {
		b = binaryTuple(append(b, 'O'), r.Old)
	}
	return b
}

func appendStr16(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

func binaryTuple(b []byte, cols []gauss.Column) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(cols)))
	for _, c := range cols {
		b = appendStr16(b, gauss.QuoteIdentifier(c.Name))
		b = binary.BigEndian.AppendUint32(b, c.Type)
		switch {
		case c.Null:
			b = binary.BigEndian.AppendUint32(b, 0xFFFFFFFF)
		case c.Rowno:
			b = binary.BigEndian.AppendUint32(b, 0xFFFFFFFE)
			b = binary.BigEndian.AppendUint64(b, c.RowNo)
		case c.Unchanged:
			panic("gaussenc: the binary format has no unchanged-TOAST marker")
		default:
			b = binary.BigEndian.AppendUint32(b, uint32(len(c.Value)))
			b = append(b, c.Value...)
		}
	}
	return b
}
