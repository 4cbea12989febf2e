// Package pgoutput reads PostgreSQL logical replication from a pgoutput
// slot (see "Logical Replication Message Formats" in the PostgreSQL manual)
// and delivers committed transactions as source.Chunks.
//
// The decoder reads protocol versions 1 to 4: version 2 (PostgreSQL 14)
// adds the streaming of in-progress transactions, 3 (PostgreSQL 15) the
// decoding of prepared transactions at PREPARE TRANSACTION, 4 (PostgreSQL
// 16) the abort position of a streamed transaction for parallel apply.
//
// Row changes (Insert, Update, Delete) are read by tuple.go without an
// allocation per row; the other data messages are parsed by
// github.com/jackc/pglogrepl; the fixed-layout streaming and two-phase
// control messages by the readers at the end of this file. This package keeps the relation cache, checks the order of
// messages and turns them into decant's vocabulary. The replication
// connection (slot, publication, feedback) is in stream.go; setup and
// status queries in admin.go.
package pgoutput

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

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
	EventChange                    // Event.Change belongs to the open transaction, or in a stream block to streamed transaction Event.Xid
	EventCommit                    // the open transaction ends; Event.End is its end position
	EventRelation                  // a table's shape was announced; Event.Rel is the new Relation

	// Protocol 2: streamed (in-progress) transactions. Their changes come
	// in blocks between Stream Start and Stream Stop, blocks of several
	// transactions interleave, and the transaction ends with a Stream
	// Commit or Stream Abort outside any block.
	EventStreamStart  // a block of a streamed transaction starts: Event.Xid (top-level xid), Event.First (first block of this xid)
	EventStreamStop   // the block ends
	EventStreamCommit // streamed transaction Event.Txn committed (Txn.Xid, Txn.Commit = commit LSN, Txn.CommitTime); Event.End = end LSN
	EventStreamAbort  // Event.Xid (top-level) aborted, or only its subtransaction Event.Sub when Sub != Xid

	// Protocol 3: two-phase transactions, decoded at PREPARE TRANSACTION
	// and finished later by COMMIT PREPARED or ROLLBACK PREPARED.
	EventBeginPrepare     // a prepared transaction starts (like Begin): Event.Txn (Xid, Commit = the prepare LSN, CommitTime = prepare time), Event.GID
	EventPrepare          // it was prepared: Event.Txn (the same *Txn as its Begin Prepare), Event.End (end LSN), Event.GID
	EventCommitPrepared   // Event.Xid, Event.GID committed: Event.Txn is a NEW *Txn{Xid, Commit: commit LSN, CommitTime}, Event.End = end LSN of the commit
	EventRollbackPrepared // Event.Xid, Event.GID rolled back; Event.End = the rollback's end LSN
	EventStreamPrepare    // streamed transaction Event.Xid prepared: Event.Txn (Xid, Commit = prepare LSN, CommitTime = prepare time), Event.End, Event.GID
)

// Event is one decoded message.
type Event struct {
	Kind   EventKind
	Txn    *source.Txn
	Change source.Change
	End    source.LSN
	Rel    *source.Relation

	// Xid is the top-level transaction a streaming or two-phase event is
	// about, and for a change inside a stream block the streamed
	// transaction it belongs to (Change.Sub then holds the subtransaction
	// xid the change carried). 0 for protocol 1's events.
	Xid uint64
	// Sub is the transaction a Stream Abort rolls back: Xid itself, or one
	// of its subtransactions (ROLLBACK TO SAVEPOINT).
	Sub uint64
	// First marks a Stream Start that opens the first block of Xid.
	First bool
	// GID is the transaction identifier given to PREPARE TRANSACTION.
	GID string
}

// Decoder turns pgoutput messages into Events. It is a pure state machine:
// no I/O, no goroutines. The zero value is not usable; call NewDecoder.
type Decoder struct {
	// Pipeline, when set, names the pipeline whose DDL queue table
	// (QueueTable) the decoder reads schema changes from; a "decant.ddl"
	// message claiming another pipeline is ignored (every slot of the
	// database receives every message).
	Pipeline string
	// Queue is the OID of the pipeline's queue table as QueueOID vouched
	// for it; 0 when none could be, and every queue row is then untrusted.
	Queue uint32

	protocol int // negotiated protocol version; 0 reads as 1
	rels     map[uint32]*source.Relation
	types    map[uint32]string // non-built-in type OID → schema-qualified name
	txn      *source.Txn       // open BEGIN'd or Begin Prepare'd transaction, nil between them
	gid      string            // GID of txn when Begin Prepare opened it
	prepared bool              // Begin Prepare opened txn: Prepare ends it, not Commit

	// A stream block is open between Stream Start and Stream Stop; stream
	// is its top-level xid. Nothing else is kept about streamed
	// transactions but the origin their first block announced, by xid,
	// until they commit, prepare or abort: which xids are in progress is
	// the consumer's business, and a decoder started mid-way through a
	// streamed transaction must accept its later blocks.
	inStream bool
	stream   uint64
	origins  map[uint64]string

	arena arena // where decoded rows live
}

// NewDecoder returns a decoder with an empty relation cache, reading
// protocol version 1.
func NewDecoder() *Decoder {
	return &Decoder{rels: map[uint32]*source.Relation{}, types: map[uint32]string{}}
}

// SetProtocol tells the decoder the protocol version negotiated with
// START_REPLICATION (proto_version): 1 to 4, where 0 means 1. Messages a
// version does not define are malformed. With any other value every
// Decode fails.
func (d *Decoder) SetProtocol(v int) { d.protocol = v }

// version is the protocol version in force.
func (d *Decoder) version() int { return max(d.protocol, 1) }

// InTxn reports whether a transaction is open: BEGIN or Begin Prepare
// seen, COMMIT or Prepare not yet.
func (d *Decoder) InTxn() bool { return d.txn != nil }

// InStream reports whether a block of a streamed transaction is open:
// Stream Start seen, Stream Stop not yet.
func (d *Decoder) InStream() bool { return d.inStream }

// TypeName returns the name the stream announced for a non-built-in type.
func (d *Decoder) TypeName(oid uint32) (string, bool) {
	n, ok := d.types[oid]
	return n, ok
}

// Decode decodes one pgoutput message (the payload of an XLogData message).
// The returned Change does not alias data: its values live in memory of
// the decoder's that is never written again (see arena).
func (d *Decoder) Decode(data []byte) (ev Event, err error) {
	if d.protocol < 0 || d.protocol > 4 {
		return Event{}, fmt.Errorf("pgoutput protocol version %d is not supported (1 to 4)", d.protocol)
	}
	if len(data) == 0 {
		return Event{}, fmt.Errorf("%w: empty message", ErrMalformed)
	}
	if decode, since := control(data[0]); decode != nil {
		if d.version() < since {
			return Event{}, fmt.Errorf("%w: message type %q is defined from protocol version %d, not in version %d", ErrMalformed, data[0], since, d.version())
		}
		return decode(d, data)
	}
	if k := data[0]; k == 'I' || k == 'U' || k == 'D' {
		ev, xid, err := d.rowChange(data)
		if err != nil {
			return Event{}, err
		}
		if d.inStream {
			ev.Xid, ev.Change.Sub = d.stream, xid
		}
		return ev, nil
	}
	msg, xid, err := parse(data, d.inStream)
	if err != nil {
		return Event{}, err
	}
	size := len(data)
	if d.inStream {
		size -= 4 // the xid
	}
	ev, err = d.data(msg, data[0], size)
	if err != nil {
		return Event{}, err
	}
	if d.inStream && ev.Kind == EventChange {
		ev.Xid, ev.Change.Sub = d.stream, xid
	}
	return ev, nil
}

// control returns the decoding function of a streaming or two-phase control
// message and the protocol version that introduced it; nil for the others.
func control(kind byte) (decode func(*Decoder, []byte) (Event, error), since int) {
	switch kind {
	case 'S':
		return (*Decoder).streamStart, 2
	case 'E':
		return (*Decoder).streamStop, 2
	case 'c':
		return (*Decoder).streamCommit, 2
	case 'A':
		return (*Decoder).streamAbort, 2
	case 'b':
		return (*Decoder).beginPrepare, 3
	case 'P':
		return (*Decoder).prepare, 3
	case 'K':
		return (*Decoder).commitPrepared, 3
	case 'r':
		return (*Decoder).rollbackPrepared, 3
	case 'p':
		return (*Decoder).streamPrepare, 3
	}
	return nil, 0
}

// data handles the messages pglogrepl parses: all but the row changes
// (tuple.go) and the control messages of protocols 2 and 3. size is the message's length
// without a stream block's xid.
func (d *Decoder) data(msg pglogrepl.Message, kind byte, size int) (Event, error) {
	switch m := msg.(type) {
	case *pglogrepl.BeginMessage:
		return d.begin(m)
	case *pglogrepl.CommitMessage:
		return d.commit(m)
	case *pglogrepl.OriginMessage:
		return d.origin(m)
	case *pglogrepl.RelationMessage:
		rel := d.relation(m)
		if rel == nil {
			return Event{}, nil // the shape it had: nothing to announce
		}
		return Event{Kind: EventRelation, Rel: rel}, nil
	case *pglogrepl.TypeMessage:
		d.types[m.DataType] = m.Namespace + "." + m.Name
		return Event{}, nil
	case *pglogrepl.TruncateMessage:
		return d.truncate(m)
	case *pglogrepl.LogicalDecodingMessage:
		// Sent with the "messages" option: decant's DDL capture (ddl.go)
		// becomes an OpDDL change; other messages are ignored.
		if d.inStream {
			return d.streamMessage(m, size)
		}
		return d.message(m, size)
	}
	return Event{}, fmt.Errorf("%w: unexpected message type %q", ErrMalformed, kind)
}

// parse wraps pglogrepl.Parse, which indexes its input without bounds checks:
// a truncated message would panic inside it, so a panic is turned back into
// the error it stands for. Inside a stream block the data messages carry
// the xid of their (sub)transaction after the type byte; pglogrepl.ParseV2
// reads it, and parse returns it as xid.
func parse(data []byte, inStream bool) (msg pglogrepl.Message, xid uint64, err error) {
	if err := checkLengths(data, inStream); err != nil {
		return nil, 0, err
	}
	defer func() {
		if r := recover(); r != nil {
			msg, xid, err = nil, 0, fmt.Errorf("%w: message type %q truncated (%d bytes)", ErrMalformed, data[0], len(data))
		}
	}()
	if inStream {
		msg, err = pglogrepl.ParseV2(data, true)
	} else {
		msg, err = pglogrepl.Parse(data)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("%w: message type %q: %v", ErrMalformed, data[0], err)
	}
	msg, xid = unwrapV2(msg)
	return msg, xid, nil
}

// unwrapV2 returns the protocol 1 message inside one of ParseV2's, and the
// xid it carried.
func unwrapV2(msg pglogrepl.Message) (pglogrepl.Message, uint64) {
	switch m := msg.(type) {
	case *pglogrepl.RelationMessageV2:
		return &m.RelationMessage, uint64(m.Xid)
	case *pglogrepl.TypeMessageV2:
		return &m.TypeMessage, uint64(m.Xid)
	case *pglogrepl.TruncateMessageV2:
		return &m.TruncateMessage, uint64(m.Xid)
	case *pglogrepl.LogicalDecodingMessageV2:
		return &m.LogicalDecodingMessage, uint64(m.Xid)
	}
	return msg, 0
}

func (d *Decoder) begin(m *pglogrepl.BeginMessage) (Event, error) {
	if err := d.idle("BEGIN", uint64(m.Xid)); err != nil {
		return Event{}, err
	}
	d.txn = &source.Txn{Xid: uint64(m.Xid), Commit: source.LSN(m.FinalLSN), CommitTime: m.CommitTime}
	return Event{Kind: EventBegin, Txn: d.txn}, nil
}

// idle checks that what opens a transaction or a stream block, or ends a
// streamed or prepared one, arrives between transactions and blocks.
func (d *Decoder) idle(what string, xid uint64) error {
	if d.txn != nil {
		return fmt.Errorf("%w: %s of xid %d inside open xid %d", ErrMalformed, what, xid, d.txn.Xid)
	}
	if d.inStream {
		return fmt.Errorf("%w: %s of xid %d inside a stream block of xid %d", ErrMalformed, what, xid, d.stream)
	}
	return nil
}

func (d *Decoder) commit(m *pglogrepl.CommitMessage) (Event, error) {
	txn := d.txn
	if txn == nil {
		return Event{}, fmt.Errorf("%w: COMMIT at %s without BEGIN", ErrMalformed, source.LSN(m.CommitLSN))
	}
	if d.prepared {
		return Event{}, fmt.Errorf("%w: COMMIT at %s inside prepared xid %d", ErrMalformed, source.LSN(m.CommitLSN), txn.Xid)
	}
	if source.LSN(m.CommitLSN) != txn.Commit {
		return Event{}, fmt.Errorf("%w: COMMIT of xid %d at %s, BEGIN announced %s", ErrMalformed, txn.Xid, source.LSN(m.CommitLSN), txn.Commit)
	}
	if err := endsAfter("COMMIT", txn.Xid, source.LSN(m.TransactionEndLSN), txn.Commit); err != nil {
		return Event{}, err
	}
	d.txn = nil
	return Event{Kind: EventCommit, Txn: txn, End: source.LSN(m.TransactionEndLSN)}, nil
}

// endsAfter checks that a transaction's end position lies past its commit
// (or prepare) record.
func endsAfter(what string, xid uint64, end, commit source.LSN) error {
	if end <= commit {
		return fmt.Errorf("%w: %s of xid %d ends at %s, not after its commit %s", ErrMalformed, what, xid, end, commit)
	}
	return nil
}

// Origin is the replication origin of the transaction the next change
// belongs to: the open one, or in a stream block the streamed one; "" for
// none.
func (d *Decoder) Origin() string {
	if d.inStream {
		return d.origins[d.stream]
	}
	if d.txn != nil {
		return d.txn.Origin
	}
	return ""
}

// origin records the replication origin of the open transaction, or in a
// stream block of the streamed one (sent in its first block only).
func (d *Decoder) origin(m *pglogrepl.OriginMessage) (Event, error) {
	switch {
	case d.inStream:
		if d.origins == nil {
			d.origins = map[uint64]string{}
		}
		d.origins[d.stream] = m.Name
	case d.txn != nil:
		d.txn.Origin = m.Name
	default:
		return Event{}, fmt.Errorf("%w: origin message outside a transaction", ErrMalformed)
	}
	return Event{}, nil
}

// relation caches the shape m announces and returns it, or nil when m
// repeats the cached shape of a table whose columns are all of built-in
// types. pgoutput sends a table's Relation again after any invalidation
// of its cache entry (an ANALYZE, autovacuum's included, is one), and
// targets keep a plan per *Relation: a new one would cost each re-send a
// new plan and split the window of net changes (apply.Net) it arrived in.
// A table with a user-defined type gets a new Relation every time, so
// that its types are read again (an ALTER TYPE invalidates it too).
func (d *Decoder) relation(m *pglogrepl.RelationMessage) *source.Relation {
	if old := d.rels[m.RelationID]; old != nil && sameShape(old, m) {
		return nil
	}
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

// sameShape reports whether m announces exactly old's shape, with no
// column of a user-defined type.
func sameShape(old *source.Relation, m *pglogrepl.RelationMessage) bool {
	if old.Schema != m.Namespace || old.Name != m.RelationName || old.Identity != source.Identity(m.ReplicaIdentity) || len(old.Columns) != len(m.Columns) {
		return false
	}
	for i, c := range m.Columns {
		o := old.Columns[i]
		if c.DataType >= firstNormalOID || o.Name != c.Name || o.Type != c.DataType || o.TypeMod != c.TypeModifier || o.Key != (c.Flags&1 != 0) {
			return false
		}
	}
	return true
}

// current returns the transaction a data message belongs to: the top-level
// xid of the stream block, else the open transaction's.
func (d *Decoder) current() (xid uint64, ok bool) {
	switch {
	case d.inStream:
		return d.stream, true
	case d.txn != nil:
		return d.txn.Xid, true
	}
	return 0, false
}

func (d *Decoder) truncate(m *pglogrepl.TruncateMessage) (Event, error) {
	xid, ok := d.current()
	if !ok {
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
			return Event{}, fmt.Errorf("%w: truncate in xid %d of relation %d that was never announced", ErrMalformed, xid, id)
		}
		c.Truncated = append(c.Truncated, rel)
	}
	if len(c.Truncated) == 0 {
		return Event{}, fmt.Errorf("%w: truncate in xid %d names no relation", ErrMalformed, xid)
	}
	c.Rel = c.Truncated[0]
	return Event{Kind: EventChange, Change: c}, nil
}

// streamMessage decodes a logical decoding message inside a stream block.
// message (ddl.go) reads the open transaction for its checks and errors; a
// streamed transaction has no Txn until it commits, so one carrying its xid
// stands in while message runs. No transaction is open in a stream block,
// so none is displaced.
func (d *Decoder) streamMessage(m *pglogrepl.LogicalDecodingMessage, size int) (Event, error) {
	d.txn = &source.Txn{Xid: d.stream}
	defer func() { d.txn = nil }()
	return d.message(m, size)
}

// Streaming (protocol 2).

func (d *Decoder) streamStart(data []byte) (Event, error) {
	m, err := parseStreamStart(data)
	if err != nil {
		return Event{}, err
	}
	if err := d.idle("Stream Start", m.xid); err != nil {
		return Event{}, err
	}
	d.inStream, d.stream = true, m.xid
	return Event{Kind: EventStreamStart, Xid: m.xid, First: m.first}, nil
}

func (d *Decoder) streamStop(data []byte) (Event, error) {
	if err := parseStreamStop(data); err != nil {
		return Event{}, err
	}
	if !d.inStream {
		return Event{}, fmt.Errorf("%w: Stream Stop outside a stream block", ErrMalformed)
	}
	d.inStream = false
	return Event{Kind: EventStreamStop, Xid: d.stream}, nil
}

func (d *Decoder) streamCommit(data []byte) (Event, error) {
	m, err := parseStreamCommit(data)
	if err != nil {
		return Event{}, err
	}
	if err := d.idle("Stream Commit", m.xid); err != nil {
		return Event{}, err
	}
	if err := endsAfter("Stream Commit", m.xid, m.end, m.commit); err != nil {
		return Event{}, err
	}
	txn := &source.Txn{Xid: m.xid, Commit: m.commit, CommitTime: m.at, Origin: d.origins[m.xid]}
	delete(d.origins, m.xid)
	return Event{Kind: EventStreamCommit, Txn: txn, End: m.end, Xid: m.xid}, nil
}

func (d *Decoder) streamAbort(data []byte) (Event, error) {
	m, err := parseStreamAbort(data, d.version() >= 4)
	if err != nil {
		return Event{}, err
	}
	if err := d.idle("Stream Abort", m.xid); err != nil {
		return Event{}, err
	}
	if m.sub == m.xid {
		delete(d.origins, m.xid)
	}
	return Event{Kind: EventStreamAbort, Xid: m.xid, Sub: m.sub}, nil
}

// Two-phase transactions (protocol 3).

func (d *Decoder) beginPrepare(data []byte) (Event, error) {
	m, err := parseTxnRecord(data, false)
	if err != nil {
		return Event{}, err
	}
	if err := d.idle("Begin Prepare", m.xid); err != nil {
		return Event{}, err
	}
	if err := endsAfter("Begin Prepare", m.xid, m.end, m.lsn); err != nil {
		return Event{}, err
	}
	d.txn = &source.Txn{Xid: m.xid, Commit: m.lsn, CommitTime: m.at}
	d.gid, d.prepared = m.gid, true
	return Event{Kind: EventBeginPrepare, Txn: d.txn, Xid: m.xid, GID: m.gid}, nil
}

func (d *Decoder) prepare(data []byte) (Event, error) {
	m, err := parseTxnRecord(data, true)
	if err != nil {
		return Event{}, err
	}
	txn := d.txn
	switch {
	case txn == nil || !d.prepared:
		return Event{}, fmt.Errorf("%w: Prepare of xid %d at %s without Begin Prepare", ErrMalformed, m.xid, m.lsn)
	case m.xid != txn.Xid || m.lsn != txn.Commit:
		return Event{}, fmt.Errorf("%w: Prepare of xid %d at %s, Begin Prepare announced xid %d at %s", ErrMalformed, m.xid, m.lsn, txn.Xid, txn.Commit)
	case m.gid != d.gid:
		return Event{}, fmt.Errorf("%w: Prepare of xid %d names GID %q, Begin Prepare %q", ErrMalformed, m.xid, m.gid, d.gid)
	}
	if err := endsAfter("Prepare", m.xid, m.end, m.lsn); err != nil {
		return Event{}, err
	}
	d.txn, d.gid, d.prepared = nil, "", false
	return Event{Kind: EventPrepare, Txn: txn, End: m.end, Xid: m.xid, GID: m.gid}, nil
}

func (d *Decoder) commitPrepared(data []byte) (Event, error) {
	m, err := parseTxnRecord(data, true)
	if err != nil {
		return Event{}, err
	}
	if err := d.idle("Commit Prepared", m.xid); err != nil {
		return Event{}, err
	}
	if err := endsAfter("Commit Prepared", m.xid, m.end, m.lsn); err != nil {
		return Event{}, err
	}
	txn := &source.Txn{Xid: m.xid, Commit: m.lsn, CommitTime: m.at}
	return Event{Kind: EventCommitPrepared, Txn: txn, End: m.end, Xid: m.xid, GID: m.gid}, nil
}

func (d *Decoder) rollbackPrepared(data []byte) (Event, error) {
	m, err := parseRollbackPrepared(data)
	if err != nil {
		return Event{}, err
	}
	if err := d.idle("Rollback Prepared", m.xid); err != nil {
		return Event{}, err
	}
	return Event{Kind: EventRollbackPrepared, End: m.end, Xid: m.xid, GID: m.gid}, nil
}

func (d *Decoder) streamPrepare(data []byte) (Event, error) {
	m, err := parseTxnRecord(data, true)
	if err != nil {
		return Event{}, err
	}
	if err := d.idle("Stream Prepare", m.xid); err != nil {
		return Event{}, err
	}
	if err := endsAfter("Stream Prepare", m.xid, m.end, m.lsn); err != nil {
		return Event{}, err
	}
	txn := &source.Txn{Xid: m.xid, Commit: m.lsn, CommitTime: m.at, Origin: d.origins[m.xid]}
	delete(d.origins, m.xid)
	return Event{Kind: EventStreamPrepare, Txn: txn, End: m.end, Xid: m.xid, GID: m.gid}, nil
}

// checkLengths walks the length-prefixed parts of the messages pglogrepl
// parses whose sizes come from the wire (truncate relation lists) and
// refuses a message whose lengths point past its end, before pglogrepl
// allocates buffers of those sizes. Inside a stream block these messages
// carry a 4-byte xid after the type byte. (Row changes, whose tuples carry
// such lengths, are read by rowChange, which checks them as it goes.)
func checkLengths(data []byte, inStream bool) error {
	off := 1 // past the type byte and, in a stream block, the xid
	if inStream {
		off += 4
	}
	if data[0] == 'T' {
		if len(data) < off+4+1 {
			return pastEnd(data[0], "truncate header", len(data))
		}
		n := uint64(binary.BigEndian.Uint32(data[off:]))
		if uint64(len(data)) < uint64(off)+4+1+4*n {
			return pastEnd(data[0], "truncate relation list", len(data))
		}
	}
	return nil
}

// The control messages of protocols 2 to 4 have fixed layouts, read here
// rather than by pglogrepl: it does not know the two-phase ones, and it
// reads the others without checking that the message ends where the layout
// does, which tells the two forms of Stream Abort apart. Flags bytes are
// unused by every version so far and, as for Commit, ignored.

// streamStart is Stream Start ('S'): Int32 xid, Int8 1 for the first block
// of the transaction, else 0.
type streamStart struct {
	xid   uint64
	first bool
}

func parseStreamStart(data []byte) (streamStart, error) {
	r := fields{data: data, off: 1}
	m := streamStart{xid: r.xid()}
	first := r.u8()
	if err := r.end(); err != nil {
		return streamStart{}, err
	}
	if first > 1 {
		return streamStart{}, fmt.Errorf("%w: Stream Start of xid %d has first-block flag %d", ErrMalformed, m.xid, first)
	}
	m.first = first == 1
	return m, nil
}

// parseStreamStop checks Stream Stop ('E'), which has no fields.
func parseStreamStop(data []byte) error {
	r := fields{data: data, off: 1}
	return r.end()
}

// streamCommit is Stream Commit ('c'): Int32 xid, Int8 flags, Int64 commit
// LSN, Int64 end LSN, Int64 commit time.
type streamCommit struct {
	xid         uint64
	commit, end source.LSN
	at          time.Time
}

func parseStreamCommit(data []byte) (streamCommit, error) {
	r := fields{data: data, off: 1}
	m := streamCommit{xid: r.xid()}
	r.u8() // flags
	m.commit, m.end, m.at = r.lsn(), r.lsn(), r.time()
	if err := r.end(); err != nil {
		return streamCommit{}, err
	}
	return m, nil
}

// streamAbort is Stream Abort ('A'): Int32 xid, Int32 xid of the aborted
// subtransaction (xid itself for the whole transaction); from protocol 4,
// when the subscriber asked for streaming = parallel, also Int64 abort LSN
// and Int64 abort time, which decant does not use.
type streamAbort struct{ xid, sub uint64 }

func parseStreamAbort(data []byte, v4 bool) (streamAbort, error) {
	r := fields{data: data, off: 1}
	m := streamAbort{xid: r.xid(), sub: r.xid()}
	if v4 && len(data) == 1+4+4+8+8 {
		r.lsn()
		r.time()
	}
	if err := r.end(); err != nil {
		return streamAbort{}, err
	}
	return m, nil
}

// txnRecord is the layout Begin Prepare ('b'), Prepare ('P'), Stream
// Prepare ('p') and Commit Prepared ('K') share: Int8 flags (not in Begin
// Prepare), Int64 LSN of the prepare (the commit for Commit Prepared),
// Int64 end LSN, Int64 prepare (commit) time, Int32 xid, String GID.
type txnRecord struct {
	lsn, end source.LSN
	at       time.Time
	xid      uint64
	gid      string
}

func parseTxnRecord(data []byte, flags bool) (txnRecord, error) {
	r := fields{data: data, off: 1}
	if flags {
		r.u8()
	}
	m := txnRecord{lsn: r.lsn(), end: r.lsn(), at: r.time(), xid: r.xid(), gid: r.str()}
	if err := r.end(); err != nil {
		return txnRecord{}, err
	}
	return m, nil
}

// rollbackPrepared is Rollback Prepared ('r'): Int8 flags, Int64 end LSN
// of the prepare, Int64 end LSN of the rollback, Int64 prepare time, Int64
// rollback time, Int32 xid, String GID.
type rollbackPrepared struct {
	end source.LSN // of the rollback
	xid uint64
	gid string
}

func parseRollbackPrepared(data []byte) (rollbackPrepared, error) {
	r := fields{data: data, off: 1}
	r.u8()  // flags
	r.lsn() // end of the prepare
	end := r.lsn()
	r.time() // prepare time
	r.time() // rollback time
	m := rollbackPrepared{end: end, xid: r.xid(), gid: r.str()}
	if err := r.end(); err != nil {
		return rollbackPrepared{}, err
	}
	return m, nil
}

// fields reads a message's fields in order. A read past the end yields a
// zero value and makes end report the message truncated.
type fields struct {
	data  []byte
	off   int
	short bool
}

func (r *fields) next(n int) []byte {
	if r.short || len(r.data)-r.off < n {
		r.short = true
		return make([]byte, n)
	}
	b := r.data[r.off : r.off+n]
	r.off += n
	return b
}

func (r *fields) u8() byte    { return r.next(1)[0] }
func (r *fields) u32() uint32 { return binary.BigEndian.Uint32(r.next(4)) }

func (r *fields) lsn() source.LSN   { return source.LSN(binary.BigEndian.Uint64(r.next(8))) }
func (r *fields) micros() int64     { return int64(binary.BigEndian.Uint64(r.next(8))) }
func (r *fields) time() time.Time   { return pgTime(r.micros()) }
func (r *fields) remaining() []byte { return r.data[min(r.off, len(r.data)):] }

// xid reads an Int32 transaction id, widened: decant keeps xids in 64 bits
// for the sources whose xids are (GaussDB, openGauss).
func (r *fields) xid() uint64 { return uint64(r.u32()) }

// str reads a NUL-terminated string.
func (r *fields) str() string {
	if r.short {
		return ""
	}
	n := bytes.IndexByte(r.remaining(), 0)
	if n < 0 {
		r.short = true
		return ""
	}
	s := string(r.data[r.off : r.off+n])
	r.off += n + 1
	return s
}

// end reports a message cut short or running on past its last field.
func (r *fields) end() error {
	switch {
	case r.short:
		return fmt.Errorf("%w: message type %q truncated (%d bytes)", ErrMalformed, r.data[0], len(r.data))
	case r.off != len(r.data):
		return fmt.Errorf("%w: message type %q has %d bytes past its last field", ErrMalformed, r.data[0], len(r.data)-r.off)
	}
	return nil
}

// pgEpochUnix is PostgreSQL's timestamp epoch, 2000-01-01 UTC, in Unix
// seconds.
const pgEpochUnix = 946684800

// pgTime converts a PostgreSQL timestamp (microseconds since its epoch)
// the way pglogrepl does for Begin and Commit, without overflowing for
// timestamps far from today.
func pgTime(micros int64) time.Time {
	return time.Unix(pgEpochUnix+micros/1e6, micros%1e6*1e3)
}
