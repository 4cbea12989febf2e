// Package gauss reads GaussDB and openGauss logical decoding: the output of
// the mppdb_decoding plugin in serial mode and of the parallel decoders
// (decode-style 'b', 't' and 'j', with or without sending-batch), streamed
// over the replication protocol. The formats are described in
// docs/gaussdb-decoding.md (sections 1.8, 1.9, 2 and 3); section numbers in
// comments refer to that document.
//
// Decode is pure: it turns one XLogData payload into Records, with no I/O,
// no goroutines and no logging. The replication connection, the relation
// cache and the transaction bookkeeping live in reader.go and stream.go.
package gauss

import (
	"fmt"

	"github.com/decant/decant/source"
)

// Kind of a decoded record.
type Kind uint8

const (
	KindBegin Kind = iota + 1
	KindCommit
	KindInsert
	KindUpdate
	KindDelete
	KindTruncate
	KindDDL
	KindHeartbeat
	KindPosition
)

var kindNames = [...]string{
	KindBegin: "begin", KindCommit: "commit", KindInsert: "insert", KindUpdate: "update",
	KindDelete: "delete", KindTruncate: "truncate", KindDDL: "ddl", KindHeartbeat: "heartbeat",
	KindPosition: "position",
}

func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Column is one column value of a DML record.
type Column struct {
	Name     string // unquoted: quote_identifier's double quotes stripped, "" undoubled
	Type     uint32 // type OID: from the binary format, or TypeOID(TypeName); 0 if unknown
	TypeName string // the type name as the text and JSON formats print it ("" in binary)
	Null     bool
	// Unchanged marks an unchanged out-of-line TOAST value the server did
	// not send (text and mppdb JSON print "unchanged-toast-datum"): the
	// target keeps the column as it is.
	Unchanged bool
	Rowno     bool // the GaussDB rowno pseudo-column (binary vlen 0xFFFFFFFE + 8 bytes)
	RowNo     uint64
	// Value is the PostgreSQL output-function text of the value, the form a
	// pgoutput stream carries; nil when Null, Unchanged or Rowno, and
	// non-nil (possibly empty) otherwise.
	Value []byte
}

// Record is one decoded logical-decoding record.
type Record struct {
	Kind Kind
	// LSN is the position the format gives the record: in binary and in
	// text/JSON batches BEGIN carries first_lsn, DML the change's LSN and
	// COMMIT the end of the commit record. Formats without per-record LSNs
	// give COMMIT the XLogData dataStart and every other record 0, except
	// openGauss DDL messages, which carry their own LSN.
	LSN       source.LSN
	CSN       uint64     // BEGIN (binary, text, JSON); COMMIT (mppdb serial)
	FirstLSN  source.LSN // BEGIN (parallel formats)
	Xid       uint64
	HasXid    bool
	Time      string // commit timestamp text as sent ("" when absent)
	User      string // BEGIN user (GaussDB include-user, binary only)
	Origin    uint32
	HasOrigin bool

	Schema, Table string
	New, Old      []Column // nil when the record has no such tuple

	Truncated   []source.TableName // TRUNCATE (mppdb serial)
	Cascade     bool
	RestartSeqs bool

	DDL     string // DDL: the SQL text
	DDLJSON []byte // DDL: the JSON document when the record carried one

	// Heartbeat ('h'): LSNs in LSN order, CSNs in CSN order; raw timestamp.
	HeartbeatRead, HeartbeatFlush uint64
	HeartbeatTime                 int64

	// Position ('L').
	PositionCSN, PositionLSN uint64
	PositionTime             uint32
}

// Format is how a stream is encoded.
type Format struct {
	Style byte // 'b' parallel binary, 'j' parallel JSON, 't' parallel text, 'm' serial mppdb_decoding
	Batch bool // sending-batch=1 (parallel styles only)
}

// ParseFormat parses "gauss-b", "gauss-j", "gauss-t" or "mppdb"; batch is
// sending-batch=1, which only the parallel styles have.
func ParseFormat(name string, batch bool) (Format, error) {
	var f Format
	switch name {
	case "gauss-b":
		f.Style = 'b'
	case "gauss-j":
		f.Style = 'j'
	case "gauss-t":
		f.Style = 't'
	case "mppdb":
		if batch {
			return Format{}, fmt.Errorf("format %q has no batch mode (sending-batch is a parallel decoding option)", name)
		}
		f.Style = 'm'
	default:
		return Format{}, fmt.Errorf("unknown format %q: want gauss-b, gauss-j, gauss-t or mppdb", name)
	}
	f.Batch = batch
	return f, nil
}

// String gives the format's name as ParseFormat takes it, with "+batch"
// when batched.
func (f Format) String() string {
	var s string
	switch f.Style {
	case 'b', 'j', 't':
		s = "gauss-" + string(f.Style)
	case 'm':
		s = "mppdb"
	default:
		s = fmt.Sprintf("format(%q)", f.Style)
	}
	if f.Batch {
		s += "+batch"
	}
	return s
}

// DecodeError is a malformed payload: the byte offset within the payload
// and what was expected there. It never quotes payload bytes, which may be
// row values.
type DecodeError struct {
	Offset   int
	Expected string
	Format   Format
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("%s payload: at byte %d: expected %s", e.Format, e.Offset, e.Expected)
}

// Decode decodes one XLogData payload (the bytes after the 25-byte XLogData
// header) into its records. dataStart is the header's dataStart: formats
// whose records carry no LSN (parallel text and JSON without batching,
// serial mppdb) give it to COMMIT as Record.LSN. In serial mode it is the
// end of the commit record; in parallel non-batch mode the commit record's
// start; the caller knows which (§1.4, §5.3).
//
// Heartbeat 'h' and decode-position 'L' messages are recognised in every
// format by their first byte (§1.9), bare or length-prefixed (§2.6).
//
// The records do not alias payload.
func Decode(f Format, payload []byte, dataStart source.LSN) ([]Record, error) {
	if len(payload) > 0 && (payload[0] == 'h' || payload[0] == 'L') {
		rec, err := decodeBareControl(f, payload)
		if err != nil {
			return nil, err
		}
		return []Record{rec}, nil
	}
	switch f.Style {
	case 'b':
		return decodeBinary(f, payload)
	case 't', 'j':
		if f.Batch {
			return decodeTextBatch(f, payload)
		}
		return decodeTextSingle(f, payload, dataStart)
	case 'm':
		if f.Batch {
			return nil, &DecodeError{Format: f, Expected: "a non-batch format (mppdb has no batch mode)"}
		}
		return decodeMppdb(f, payload, dataStart)
	}
	return nil, &DecodeError{Format: f, Expected: "a known format style ('b', 't', 'j' or 'm')"}
}
