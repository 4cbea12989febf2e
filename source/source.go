// Package source is the vocabulary every stage of decant speaks: the
// committed transactions a source database's logical decoding produces
// (Txn), the row changes inside them (Change), the tables they touch
// (Relation) and positions in the source's log (LSN).
//
// Readers for concrete wire formats live in sub-packages (source/pgoutput
// for PostgreSQL's pgoutput plugin). A reader delivers Chunks in source
// commit order; every Txn's commit position is known when its first Chunk is
// delivered, so a consumer can decide at BEGIN whether it was already applied.
package source

import (
	"fmt"
	"strings"
	"time"
)

// Op is what a Change does.
type Op uint8

const (
	OpInsert Op = iota + 1
	OpUpdate
	OpDelete
	OpTruncate
	OpDDL // a schema change; Change.DDL describes it
)

func (o Op) String() string {
	switch o {
	case OpInsert:
		return "insert"
	case OpUpdate:
		return "update"
	case OpDelete:
		return "delete"
	case OpTruncate:
		return "truncate"
	case OpDDL:
		return "ddl"
	}
	return "unknown"
}

// Identity is a table's replica identity: which old values UPDATE and
// DELETE carry to find the row on the target.
type Identity byte

const (
	IdentityDefault Identity = 'd' // primary key
	IdentityNothing Identity = 'n' // no old values; UPDATE/DELETE cannot be replicated
	IdentityFull    Identity = 'f' // every column
	IdentityIndex   Identity = 'i' // a unique index
)

// Column is one column of a Relation as the source describes it.
type Column struct {
	Name    string
	Type    uint32 // type OID on the source
	TypeMod int32  // atttypmod, -1 when none
	Key     bool   // part of the replica identity
	Info    *Type  // set by the reader for user-defined types; nil for built-ins
}

// Relation is a source table as announced by the stream. A Relation value is
// immutable: when the source announces a new shape, readers make a new one,
// so changes decoded before and after a schema change each keep their own.
type Relation struct {
	ID       uint32 // source-assigned identifier (the table OID for PostgreSQL)
	Schema   string
	Name     string
	Identity Identity
	Columns  []Column
}

// Table is the relation's schema-qualified name.
func (r *Relation) Table() TableName { return TableName{Schema: r.Schema, Name: r.Name} }

// HasKey reports whether UPDATE and DELETE identify rows by a subset of
// columns (a primary key or unique index) rather than by the whole row.
func (r *Relation) HasKey() bool {
	return r.Identity == IdentityDefault || r.Identity == IdentityIndex
}

// ValueKind says what a Value holds.
type ValueKind uint8

const (
	ValueNull      ValueKind = iota // SQL NULL
	ValueText                       // Data is the type's text output
	ValueBinary                     // Data is the type's binary send format
	ValueUnchanged                  // an unchanged TOASTed value that was not sent: leave the column as it is
)

// Value is one column value of a row image, in the source's own
// representation. Values never appear in logs or errors: they may be
// personal data.
type Value struct {
	Kind ValueKind
	Data []byte
}

// Change is one row change (or one TRUNCATE) inside a transaction.
//
// Old and New are row images indexed like Rel.Columns; nil means absent.
// For UPDATE, Old is present only when the source sent an old image: the old
// key when the key changed (identity DEFAULT/INDEX; non-key columns are
// NULL), or the whole old row (identity FULL). Without Old, the key is taken
// from New.
type Change struct {
	Op  Op
	Rel *Relation
	Old []Value
	New []Value

	// TRUNCATE only: the relations truncated together and the options.
	Truncated       []*Relation
	Cascade         bool
	RestartIdentity bool

	// DDL only.
	DDL *DDL

	// Sub is the (sub)transaction xid of a change in a streamed
	// transaction; 0 otherwise.
	Sub uint64
}

// Txn is one committed source transaction.
type Txn struct {
	Xid        uint64
	Commit     LSN // position of the commit record
	CommitTime time.Time
	Origin     string // replication origin of the transaction, if any
	// CSN is the commit sequence number (GaussDB); with ByCSN set the
	// source orders and resumes by CSN rather than by commit LSN.
	CSN   uint64
	ByCSN bool
	// Streamed marks a transaction whose changes arrive while it is still
	// in progress (PostgreSQL streaming, --stream-apply immediate): its
	// chunks carry no commit position until the last, which brings a new
	// *Txn with Commit set; chunks of several such transactions
	// interleave, told apart by Xid.
	Streamed bool
}

// Chunk is the unit a reader hands to the applier: a run of one
// transaction's changes, in source order, or an idle mark.
//
// A transaction arrives as one or more Chunks sharing the same *Txn; the last
// has Commit set and End holding the position just past the commit record,
// from which streaming resumes once the transaction is applied.
//
// An idle mark has a nil Txn and only End: every transaction that commits
// before End has already been delivered, so a consumer that applied all of
// them may record End as its resume position.
type Chunk struct {
	Txn     *Txn
	Changes []Change
	Commit  bool
	End     LSN
	// Abort (streamed transactions only) voids what was delivered of
	// Txn: all of it, or with Sub set only that subtransaction's changes.
	Abort bool
	Sub   uint64
	// Hold, when set, is a position before End that decant must resume
	// from after a restart: the reader holds a prepared transaction
	// decoded there, awaiting COMMIT PREPARED, which the source will not
	// send again once confirmed. The checkpoint written with this chunk
	// records it, and the source is never told more than Hold.
	Hold LSN
	// Bytes is the decoded size of Changes as the reader measured it
	// while assembling the chunk, for metrics; 0 when it did not.
	Bytes int
	// CSN, on an idle mark (no Txn) of a CSN-ordered source, says that
	// every transaction whose CSN is below it has been handed over: the
	// source's decode position at that CSN came in stream order.
	CSN uint64
}

// Size estimates the memory a chunk holds, for bounding buffers.
func (c *Chunk) Size() int {
	n := 64
	for i := range c.Changes {
		n += 64 + rowSize(c.Changes[i].Old) + rowSize(c.Changes[i].New)
	}
	return n
}

func rowSize(row []Value) int {
	n := 0
	for _, v := range row {
		n += 32 + len(v.Data)
	}
	return n
}

// Server describes the source a reader is connected to.
type Server struct {
	SystemID string // identifies the source database cluster; a replica keeps its primary's
	WALEnd   LSN    // end of the source's log when asked
	// Timeline is the source's current timeline (IDENTIFY_SYSTEM): a
	// promoted standby starts a new one. 0 when the source does not say.
	Timeline uint32
}

// Goal is where a catch-up or a cutover fence ends: once it is reached,
// everything the source committed before the goal was taken is applied.
// LSN-ordered sources reach it when the resume position reaches LSN;
// CSN-ordered ones (CSN set) when every transaction whose CSN is below CSN
// is applied, which a transaction at CSN-1 or later, or a decode position
// at CSN or later, proves (transactions come in CSN order).
type Goal struct {
	LSN LSN
	CSN uint64
}

// String names the goal for logs and errors.
func (g Goal) String() string {
	if g.CSN != 0 {
		return fmt.Sprintf("CSN %d", g.CSN)
	}
	return g.LSN.String()
}

// StreamRequest is what a consumer asks of a reader.
type StreamRequest struct {
	// Start is the resume position: transactions that commit before it are
	// already applied and are not delivered.
	Start LSN
	// SystemID, when set, makes the reader refuse a server with another
	// identifier: it would be pointed at a different database cluster.
	SystemID string
	// Acked returns the position durably applied on the target. It is the
	// only position a reader ever reports to the source as written, flushed
	// or applied, so the source never discards work the target lacks.
	Acked func() LSN
	// StartCSN and AckedCSN are the same for CSN-ordered sources (GaussDB
	// output-order 1): the last applied commit CSN.
	StartCSN uint64
	AckedCSN func() uint64
	// Timeline is the source timeline recorded with the checkpoint (0:
	// none), against which a reader explains a missing slot.
	Timeline uint32
	// WALEnd, when set, hears the end of the source's WAL whenever the
	// source tells it (a keepalive), so that lag in bytes can be known
	// while transactions are in flight; it must return at once.
	WALEnd func(LSN)
}

// DecantOriginPrefix begins the replication origin of every decant
// pipeline's PostgreSQL apply sessions (apply/pg.OriginName).
const DecantOriginPrefix = "decant_"

// IsDecantOrigin reports whether a transaction's origin says a decant
// pipeline applied it: a reader skips such a transaction when it came
// from the reader's own target (source/pgoutput echo.go), so that two
// pipelines in opposite directions never send a change back.
func IsDecantOrigin(origin string) bool { return strings.HasPrefix(origin, DecantOriginPrefix) }
