package gauss

import (
	"fmt"
	"strings"

	"github.com/decant/decant/source"
)

// A row change can arrive without its columns. The openGauss decoders
// print nothing of a heap tuple that is stored compressed
// (HEAP_TUPLE_IS_COMPRESSED) or has more attributes than the table's
// descriptor: the binary format writes a column count of 0
// (parallel_decode.cpp AppendInvalidations, called by AppendTuple), the
// text format nothing after "INSERT:" / "old-key:" (parallel_decode.cpp
// tuple_to_stringinfo) and the JSON formats empty arrays
// (parallel_decode.cpp and mppdb_decoding.cpp TupleToJsoninfo). Row
// compression stores rows so when a table created or altered with
// COMPRESS is filled by a bulk load (COPY, INSERT ... SELECT: copy.cpp,
// nodeModifyTable.cpp build a PageCompress for RowRelationIsCompressed).
// decant cannot apply such a change: it stops before the transaction.

// UnavailableRowError says that the source sent a row change of Table
// without the columns of one of its rows.
type UnavailableRowError struct {
	Table source.TableName
	Kind  Kind
	Old   bool       // the old row is the one missing (DELETE, UPDATE's old key)
	LSN   source.LSN // the change's position (the payload's when the format gives none)
	Xid   uint64     // 0 when the stream does not say
	// NoKey: the format cannot tell a compressed old row from none logged
	// (a JSON DELETE of a table without a replica identity key).
	NoKey    bool
	Pipeline string // for the advice (the slot's name, as the reader knows it)
}

func (e *UnavailableRowError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s of %s at %s", strings.ToUpper(e.Kind.String()), e.Table, e.LSN)
	if e.Xid != 0 {
		fmt.Fprintf(&b, " in xid %d", e.Xid)
	}
	row := "new row"
	if e.Old {
		row = "old row"
	}
	fmt.Fprintf(&b, ": the source sent the %s without its columns", row)
	if e.NoKey {
		b.WriteString(" (the table has no replica identity key, or the row is stored compressed)")
	}
	fmt.Fprintf(&b, "; logical decoding cannot read rows stored compressed (row compression: a COMPRESS table filled by COPY or INSERT ... SELECT), so decant stopped before this transaction: on the source run ALTER TABLE %s SET NOCOMPRESS", e.Table)
	if e.NoKey {
		b.WriteString(" (and give the table a primary key or REPLICA IDENTITY FULL)")
	}
	// decant resync takes PostgreSQL sources only: start over.
	fmt.Fprintf(&b, ", then start the pipeline over: decant drop --pipeline %s --yes, decant init, and copy the tables to the target again", e.Pipeline)
	return b.String()
}

// NeedsPerson: the rows stay compressed in the source's log.
func (e *UnavailableRowError) NeedsPerson() bool { return true }

// Retryable: the source sends the same change again.
func (e *UnavailableRowError) Retryable() bool { return false }

// unavailableRow reports a DML record whose row came without columns:
// a tuple present with no column (nil means the record had no such tuple),
// or in the JSON formats a DELETE with an empty old key.
func unavailableRow(f Format, r *Record) *UnavailableRowError {
	e := &UnavailableRowError{Table: source.TableName{Schema: r.Schema, Name: r.Table}, Kind: r.Kind, LSN: r.LSN}
	switch {
	case r.New != nil && len(r.New) == 0:
		return e
	case r.Old != nil && len(r.Old) == 0:
		e.Old = true
		e.NoKey = r.Kind == KindDelete && (f.Style == 'j' || f.Style == 'm')
		return e
	}
	return nil
}
