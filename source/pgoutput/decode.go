// Package pgoutput reads PostgreSQL logical replication from a pgoutput
// slot (protocol version 1, see "Logical Replication Message Formats" in the
// PostgreSQL manual) and delivers committed transactions as source.Chunks.
//
// Messages are parsed by github.com/jackc/pglogrepl; this package keeps the
// relation cache, checks the order of messages and turns them into decant's
// vocabulary. The replication connection (slot, publication, feedback) is in
// stream.go; setup and status queries in admin.go.
package pgoutput

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/jackc/pglogrepl"

	"github.com/decant/decant/source"
)

// ErrMalformed marks a message that cannot be decoded or arrives out of
// order. It is permanent: retrying would read the same bytes again.
var ErrMalformed = errors.New("malformed pgoutput message")

// EventKind says what a decoded message means for the transaction stream.
type EventKind uint8

const (
	EventNone     EventKind = iota // bookkeeping only (relation, type, origin)
	EventBegin                     // Event.Txn starts
	EventChange                    // Event.Change belongs to the open transaction
	EventCommit                    // the open transaction ends; Event.End is its end position
	EventRelation                  // a table's shape was announced; Event.Rel is the new Relation
)

// Event is one decoded message.
type Event struct {
	Kind   EventKind
	Txn    *source.Txn
	Change source.Change
	End    source.LSN
	Rel    *source.Relation
}

// Decoder turns pgoutput messages into Events. It is a pure state machine:
// no I/O, no goroutines. The zero value is not usable; call NewDecoder.
type Decoder struct {
	// Pipeline, when set, keeps only this pipeline's DDL messages: every
	// slot of the database receives every pipeline's.
	Pipeline string

	rels  map[uint32]*source.Relation
	types map[uint32]string // non-built-in type OID → schema-qualified name
	txn   *source.Txn       // open transaction, nil between COMMIT and BEGIN
}

// NewDecoder returns a decoder with an empty relation cache.
func NewDecoder() *Decoder {
	return &Decoder{rels: map[uint32]*source.Relation{}, types: map[uint32]string{}}
}

// InTxn reports whether a transaction is open (BEGIN seen, COMMIT not yet).
func (d *Decoder) InTxn() bool { return d.txn != nil }

// TypeName returns the name the stream announced for a non-built-in type.
func (d *Decoder) TypeName(oid uint32) (string, bool) {
	n, ok := d.types[oid]
	return n, ok
}

// Decode decodes one pgoutput message (the payload of an XLogData message).
// The returned Change does not alias data.
func (d *Decoder) Decode(data []byte) (ev Event, err error) {
	msg, err := parse(data)
	if err != nil {
		return Event{}, err
	}
	switch m := msg.(type) {
	case *pglogrepl.BeginMessage:
		return d.begin(m)
	case *pglogrepl.CommitMessage:
		return d.commit(m)
	case *pglogrepl.OriginMessage:
		if d.txn == nil {
			return Event{}, fmt.Errorf("%w: origin message outside a transaction", ErrMalformed)
		}
		d.txn.Origin = m.Name
		return Event{}, nil
	case *pglogrepl.RelationMessage:
		return Event{Kind: EventRelation, Rel: d.relation(m)}, nil
	case *pglogrepl.TypeMessage:
		d.types[m.DataType] = m.Namespace + "." + m.Name
		return Event{}, nil
	case *pglogrepl.InsertMessage:
		return d.change(source.OpInsert, m.RelationID, nil, m.Tuple)
	case *pglogrepl.UpdateMessage:
		return d.change(source.OpUpdate, m.RelationID, m.OldTuple, m.NewTuple)
	case *pglogrepl.DeleteMessage:
		return d.change(source.OpDelete, m.RelationID, m.OldTuple, nil)
	case *pglogrepl.TruncateMessage:
		return d.truncate(m)
	case *pglogrepl.LogicalDecodingMessage:
		// Sent with the "messages" option: decant's DDL capture (ddl.go)
		// becomes an OpDDL change; other messages are ignored.
		return d.message(m, len(data))
	}
	return Event{}, fmt.Errorf("%w: unexpected message type %q", ErrMalformed, data[0])
}

// parse wraps pglogrepl.Parse, which indexes its input without bounds checks:
// a truncated message would panic inside it, so a panic is turned back into
// the error it stands for.
func parse(data []byte) (msg pglogrepl.Message, err error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: empty message", ErrMalformed)
	}
	if err := checkLengths(data); err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			msg, err = nil, fmt.Errorf("%w: message type %q truncated (%d bytes)", ErrMalformed, data[0], len(data))
		}
	}()
	msg, err = pglogrepl.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%w: message type %q: %v", ErrMalformed, data[0], err)
	}
	return msg, nil
}

func (d *Decoder) begin(m *pglogrepl.BeginMessage) (Event, error) {
	if d.txn != nil {
		return Event{}, fmt.Errorf("%w: BEGIN of xid %d inside open xid %d", ErrMalformed, m.Xid, d.txn.Xid)
	}
	d.txn = &source.Txn{Xid: m.Xid, Commit: source.LSN(m.FinalLSN), CommitTime: m.CommitTime}
	return Event{Kind: EventBegin, Txn: d.txn}, nil
}

func (d *Decoder) commit(m *pglogrepl.CommitMessage) (Event, error) {
	txn := d.txn
	if txn == nil {
		return Event{}, fmt.Errorf("%w: COMMIT at %s without BEGIN", ErrMalformed, source.LSN(m.CommitLSN))
	}
	if source.LSN(m.CommitLSN) != txn.Commit {
		return Event{}, fmt.Errorf("%w: COMMIT of xid %d at %s, BEGIN announced %s", ErrMalformed, txn.Xid, source.LSN(m.CommitLSN), txn.Commit)
	}
	if source.LSN(m.TransactionEndLSN) <= txn.Commit {
		return Event{}, fmt.Errorf("%w: COMMIT of xid %d ends at %s, not after its commit %s", ErrMalformed, txn.Xid, source.LSN(m.TransactionEndLSN), txn.Commit)
	}
	d.txn = nil
	return Event{Kind: EventCommit, Txn: txn, End: source.LSN(m.TransactionEndLSN)}, nil
}

func (d *Decoder) relation(m *pglogrepl.RelationMessage) *source.Relation {
	rel := &source.Relation{
		ID:       m.RelationID,
		Schema:   m.Namespace,
		Name:     m.RelationName,
		Identity: source.Identity(m.ReplicaIdentity),
		Columns:  make([]source.Column, len(m.Columns)),
	}
	for i, c := range m.Columns {
		rel.Columns[i] = source.Column{Name: c.Name, Type: c.DataType, TypeMod: c.TypeModifier, Key: c.Flags&1 != 0}
	}
	d.rels[m.RelationID] = rel
	return rel
}

func (d *Decoder) change(op source.Op, relID uint32, old, new *pglogrepl.TupleData) (Event, error) {
	if d.txn == nil {
		return Event{}, fmt.Errorf("%w: %s outside a transaction", ErrMalformed, op)
	}
	rel, ok := d.rels[relID]
	if !ok {
		return Event{}, fmt.Errorf("%w: %s in xid %d for relation %d that was never announced", ErrMalformed, op, d.txn.Xid, relID)
	}
	c := source.Change{Op: op, Rel: rel}
	var err error
	if c.Old, err = row(rel, old); err != nil {
		return Event{}, fmt.Errorf("%s old row of %s in xid %d: %w", op, rel.Table(), d.txn.Xid, err)
	}
	if c.New, err = row(rel, new); err != nil {
		return Event{}, fmt.Errorf("%s new row of %s in xid %d: %w", op, rel.Table(), d.txn.Xid, err)
	}
	if (op != source.OpDelete && c.New == nil) || (op == source.OpDelete && c.Old == nil) {
		return Event{}, fmt.Errorf("%w: %s of %s in xid %d without a row", ErrMalformed, op, rel.Table(), d.txn.Xid)
	}
	return Event{Kind: EventChange, Change: c}, nil
}

// row converts a tuple. pglogrepl has already copied each value out of the
// message buffer, so the Values may be kept after the next receive.
func row(rel *source.Relation, t *pglogrepl.TupleData) ([]source.Value, error) {
	if t == nil {
		return nil, nil
	}
	if len(t.Columns) != len(rel.Columns) {
		return nil, fmt.Errorf("%w: %d values for %d columns", ErrMalformed, len(t.Columns), len(rel.Columns))
	}
	vals := make([]source.Value, len(t.Columns))
	for i, c := range t.Columns {
		switch c.DataType {
		case pglogrepl.TupleDataTypeNull:
			vals[i] = source.Value{Kind: source.ValueNull}
		case pglogrepl.TupleDataTypeToast:
			vals[i] = source.Value{Kind: source.ValueUnchanged}
		case pglogrepl.TupleDataTypeText:
			vals[i] = source.Value{Kind: source.ValueText, Data: c.Data}
		case pglogrepl.TupleDataTypeBinary:
			vals[i] = source.Value{Kind: source.ValueBinary, Data: c.Data}
		default:
			return nil, fmt.Errorf("%w: column %q has value kind %q", ErrMalformed, rel.Columns[i].Name, c.DataType)
		}
	}
	return vals, nil
}

func (d *Decoder) truncate(m *pglogrepl.TruncateMessage) (Event, error) {
	if d.txn == nil {
		return Event{}, fmt.Errorf("%w: truncate outside a transaction", ErrMalformed)
	}
	c := source.Change{
		Op:              source.OpTruncate,
		Cascade:         m.Option&pglogrepl.TruncateOptionCascade != 0,
		RestartIdentity: m.Option&pglogrepl.TruncateOptionRestartIdentity != 0,
	}
	for _, id := range m.RelationIDs {
		rel, ok := d.rels[id]
		if !ok {
			return Event{}, fmt.Errorf("%w: truncate in xid %d of relation %d that was never announced", ErrMalformed, d.txn.Xid, id)
		}
		c.Truncated = append(c.Truncated, rel)
	}
	if len(c.Truncated) == 0 {
		return Event{}, fmt.Errorf("%w: truncate in xid %d names no relation", ErrMalformed, d.txn.Xid)
	}
	c.Rel = c.Truncated[0]
	return Event{Kind: EventChange, Change: c}, nil
}

// checkLengths walks the length-prefixed parts of the messages whose sizes
// come from the wire (tuple values, truncate relation lists) and refuses a
// message whose lengths point past its end, before pglogrepl allocates
// buffers of those sizes.
func checkLengths(data []byte) error {
	bad := func(what string) error {
		return fmt.Errorf("%w: message type %q: %s runs past the end of the message (%d bytes)", ErrMalformed, data[0], what, len(data))
	}
	switch data[0] {
	case 'I':
		return checkTuples(data, 1+4, 1, bad)
	case 'U':
		tuples := 1
		if len(data) > 5 && (data[5] == 'K' || data[5] == 'O') {
			tuples = 2
		}
		return checkTuples(data, 1+4, tuples, bad)
	case 'D':
		return checkTuples(data, 1+4, 1, bad)
	case 'T':
		if len(data) < 1+4+1 {
			return bad("truncate header")
		}
		n := uint64(binary.BigEndian.Uint32(data[1:]))
		if uint64(len(data)) < 1+4+1+4*n {
			return bad("truncate relation list")
		}
	}
	return nil
}

// checkTuples checks count tuples starting at off, each preceded by its
// one-byte kind ('N', 'K' or 'O').
func checkTuples(data []byte, off, count int, bad func(string) error) error {
	for t := 0; t < count; t++ {
		if off+1+2 > len(data) {
			return bad("tuple header")
		}
		off++ // tuple kind
		cols := int(binary.BigEndian.Uint16(data[off:]))
		off += 2
		for i := 0; i < cols; i++ {
			if off >= len(data) {
				return bad("column kind")
			}
			kind := data[off]
			off++
			if kind != 't' && kind != 'b' {
				continue
			}
			if off+4 > len(data) {
				return bad("column length")
			}
			n := uint64(binary.BigEndian.Uint32(data[off:]))
			off += 4
			if uint64(off)+n > uint64(len(data)) {
				return bad("column value")
			}
			off += int(n)
		}
	}
	return nil
}
