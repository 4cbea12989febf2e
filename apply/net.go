package apply

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"

	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
)

// Net gathers the row changes of a window inside one target transaction
// and keeps, per table, only what they add up to (mapping.NetMode says
// which tables may be gathered, and how): a writer then sends each table's
// deletes, updates and inserts as a few set-based statements rather than
// one statement per change, and a row that a window changes many times (a
// hot row) is written once. Hot rows matter beyond the statement count:
// every update of a row inside one long transaction leaves a row version
// that later updates of the row must step over.
//
// Per key, a window's changes fold so (a key is "absent" before its first
// change in the window):
//
//	absent  + insert → Insert       Insert  + update → Insert (final row)
//	absent  + update → Update       Insert  + delete → nothing
//	absent  + delete → Delete       Update  + update → Update (merged)
//	Delete  + insert → Replace      Update  + delete → Delete
//	Replace + update → Replace      Replace + delete → Delete
//	nothing + insert → Insert
//
// An update that changes the key is a delete of the old key and an insert
// of the new row, when the new row is whole (no unchanged TOAST value to
// take from the old row). Every other sequence (a second insert of a key,
// a change of a deleted row) cannot come from a consistent source and
// target: Add refuses it, so that the writer applies it on its own and
// the target reports what is wrong, as without compaction.
//
// A Net holds references to the changes' values, not copies, and is
// bounded by NetRows and NetBytes: past them the writer sends the window.
// A Net is not safe for concurrent use.
type Net[P comparable] struct {
	tables []*NetTable[P]
	// index holds the tables of this window and, for reuse of their
	// buffers, those of the last.
	index map[P]*NetTable[P]
	// byTarget holds the part of each target table in the window: one
	// plan per table, since a source may describe one table by several
	// relations (GaussDB, by the columns a record carries), and the rows
	// of two of them could not be told apart or ordered.
	byTarget map[source.TableName]*NetTable[P]
	rows     int
	bytes    int
	seed     maphash.Seed
	key      []byte // scratch key encoding
}

// Limits of a window: the writer sends it once either is reached.
const (
	NetRows  = 10000
	NetBytes = 4 << 20
)

// NetKind is what a key's changes in a window add up to.
type NetKind uint8

const (
	NetNone    NetKind = iota // inserted and deleted again
	NetInsert                 // insert Row
	NetUpdate                 // set Row's changed columns of the row at Key
	NetDelete                 // delete the row at Key
	NetReplace                // delete the row at Key, then insert Row
)

// NetRow is the net change of one key (or, for a NetAppend table, one
// insert).
type NetRow struct {
	Kind NetKind
	// Key is a row image (indexed like the relation's columns) holding
	// the key of the row the window found on the target: read its
	// mapping.Plan.Key columns. Set for NetUpdate, NetDelete, NetReplace.
	Key []source.Value
	// Row is the row to insert, or for NetUpdate the new values, with
	// source.ValueUnchanged for columns no update of the window set.
	Row []source.Value
	// Txn is the transaction of the key's last change.
	Txn   *source.Txn
	owned bool // Row is the Net's own copy, free to merge into
	// img is a row image holding the key (NetCompact); prev is 1 + the
	// index of an earlier row whose key has the same hash, 0 for none.
	img  []source.Value
	prev int32
}

// NetTable is one table's net changes, in the order of each key's first
// change.
type NetTable[P comparable] struct {
	Plan P
	Map  *mapping.Plan
	Rows []NetRow
	keys map[uint64]int32 // key hash → 1 + index in Rows of the last row with it; NetCompact only
	used bool             // in this window
	n    int              // changes folded in, and their bytes
	size int
}

// Empty reports whether the window holds nothing.
func (n *Net[P]) Empty() bool { return n.rows == 0 }

// Full reports whether the window reached a limit and should be sent.
func (n *Net[P]) Full() bool { return n.rows >= NetRows || n.bytes >= NetBytes }

// Tables lists the window's tables in the order of their first change.
func (n *Net[P]) Tables() []*NetTable[P] { return n.tables }

// Reset empties the window. The tables of the window just sent stay in
// the index with their buffers, for the next; older ones go.
func (n *Net[P]) Reset() {
	for p, t := range n.index {
		if !t.used {
			delete(n.index, p)
			continue
		}
		t.empty()
	}
	clear(n.tables)
	n.tables = n.tables[:0]
	clear(n.byTarget)
	n.rows, n.bytes = 0, 0
}

// TableOf returns target table name's part of the window, nil when it
// has none.
func (n *Net[P]) TableOf(name source.TableName) *NetTable[P] {
	return n.byTarget[name]
}

// NetWriter is a target writer as the window sends through it: the
// writer's own queue (a run of inserts gathered outside the window) goes
// first, then each table's part as set-based statements.
type NetWriter[P comparable] interface {
	FlushQueued(ctx context.Context) error
	WriteNet(ctx context.Context, t *NetTable[P]) error
}

// Send writes the window through w, table by table in the order of their
// first change, and empties it, whether writing worked or not.
func (n *Net[P]) Send(ctx context.Context, w NetWriter[P]) error {
	if n.Empty() {
		return nil
	}
	defer n.Reset()
	if err := w.FlushQueued(ctx); err != nil {
		return err
	}
	for _, t := range n.tables {
		if err := w.WriteNet(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

// SendTable writes only target table name's part of the window through
// w, when it has one, and takes it out of the window; the other tables'
// parts stay: a change that cannot be folded needs only its own table's
// earlier changes before it, where the target checks nothing between
// tables (mapping.NetMode). A failed write empties the whole window.
func (n *Net[P]) SendTable(ctx context.Context, name source.TableName, w NetWriter[P]) error {
	t := n.byTarget[name]
	if t == nil {
		return nil
	}
	if err := w.FlushQueued(ctx); err != nil {
		return err
	}
	if err := w.WriteNet(ctx, t); err != nil {
		n.Reset()
		return err
	}
	n.sent(t)
	return nil
}

// sent takes table t's part out of the window once it was written.
func (n *Net[P]) sent(t *NetTable[P]) {
	if !t.used {
		return
	}
	n.rows -= t.n
	n.bytes -= t.size
	i := slices.Index(n.tables, t)
	n.tables = slices.Delete(n.tables, i, i+1)
	delete(n.byTarget, t.Map.Target)
	t.empty()
}

func (t *NetTable[P]) empty() {
	clear(t.Rows)
	t.Rows = t.Rows[:0]
	clear(t.keys)
	t.used, t.n, t.size = false, 0, 0
}

// Add folds change c of txn, a row change of table p (whose mapping is
// mp), into the window. It reports false, leaving the window as it was,
// when c cannot be folded: the writer then sends the window and applies
// c on its own.
func (n *Net[P]) Add(p P, mp *mapping.Plan, txn *source.Txn, c *source.Change) bool {
	if n.index == nil {
		n.index, n.byTarget, n.seed = map[P]*NetTable[P]{}, map[source.TableName]*NetTable[P]{}, maphash.MakeSeed()
	}
	if t := n.byTarget[mp.Target]; t != nil && t.Plan != p {
		return false // the table's part under another relation goes first
	}
	switch {
	case mp.Net == mapping.NetAppend && c.Op == source.OpInsert:
		t := n.table(p, mp)
		t.Rows = append(t.Rows, NetRow{Kind: NetInsert, Row: c.New, Txn: txn})
	case mp.Net == mapping.NetCompact:
		if !n.fold(p, mp, txn, c) {
			return false
		}
	default:
		return false
	}
	size := rowBytes(c.Old) + rowBytes(c.New)
	t := n.index[p]
	t.n++
	t.size += size
	n.rows++
	n.bytes += size
	return true
}

func (n *Net[P]) table(p P, mp *mapping.Plan) *NetTable[P] {
	t, ok := n.index[p]
	if !ok {
		t = &NetTable[P]{Plan: p, Map: mp}
		if mp.Net == mapping.NetCompact {
			t.keys = map[uint64]int32{}
		}
		n.index[p] = t
	}
	if !t.used {
		t.used = true
		n.tables = append(n.tables, t)
		n.byTarget[mp.Target] = t
	}
	return t
}

// fold applies the table of Net's doc comment.
func (n *Net[P]) fold(p P, mp *mapping.Plan, txn *source.Txn, c *source.Change) bool {
	switch c.Op {
	case source.OpInsert:
		k, ok := n.hash(mp, c.New)
		if !ok {
			return false
		}
		t := n.table(p, mp)
		i := t.find(k, c.New)
		if !t.canInsert(i) {
			return false
		}
		t.insert(i, k, c.New, txn)
	case source.OpDelete:
		k, ok := n.hash(mp, c.Old)
		if !ok {
			return false
		}
		t := n.table(p, mp)
		i := t.find(k, c.Old)
		if !t.canChange(i) {
			return false
		}
		t.delete(i, k, c.Old, txn)
	case source.OpUpdate:
		if mp.KeyChanged(c) {
			return n.move(p, mp, txn, c)
		}
		k, ok := n.hash(mp, c.New)
		if !ok {
			return false
		}
		t := n.table(p, mp)
		i := t.find(k, c.New)
		if !t.canChange(i) {
			return false
		}
		t.update(i, k, c.New, txn)
	default:
		return false
	}
	return true
}

// move folds an update that changed the key: a delete of the old key and
// an insert of the new row.
func (n *Net[P]) move(p P, mp *mapping.Plan, txn *source.Txn, c *source.Change) bool {
	for _, i := range mp.Cols {
		if c.New[i].Kind == source.ValueUnchanged {
			return false
		}
	}
	oldKey, ok := n.hash(mp, c.Old)
	if !ok {
		return false
	}
	newKey, ok := n.hash(mp, c.New)
	if !ok {
		return false
	}
	t := n.table(p, mp)
	o := t.find(oldKey, c.Old)
	if !t.canChange(o) || !t.canInsert(t.find(newKey, c.New)) {
		return false
	}
	t.delete(o, oldKey, c.Old, txn)
	t.insert(t.find(newKey, c.New), newKey, c.New, txn) // found again: delete may have added a row
	return true
}

// hash returns the hash of row's key; false when a key value is not a
// plain text or NULL value (the row cannot be told by it here).
func (n *Net[P]) hash(mp *mapping.Plan, row []source.Value) (uint64, bool) {
	if row == nil {
		return 0, false
	}
	b := n.key[:0]
	for _, i := range mp.Key {
		v := row[i]
		if v.Kind != source.ValueText && v.Kind != source.ValueNull {
			return 0, false
		}
		b = append(b, byte(v.Kind))
		b = binary.AppendUvarint(b, uint64(len(v.Data)))
		b = append(b, v.Data...)
	}
	n.key = b
	return maphash.Bytes(n.seed, b), true
}

// find returns the index in Rows of the row whose key is img's (its hash
// k), -1 for none.
func (t *NetTable[P]) find(k uint64, img []source.Value) int {
	for i := t.keys[k]; i != 0; i = t.Rows[i-1].prev {
		if sameKey(t.Map, t.Rows[i-1].img, img) {
			return int(i - 1)
		}
	}
	return -1
}

func sameKey(mp *mapping.Plan, a, b []source.Value) bool {
	for _, i := range mp.Key {
		if a[i].Kind != b[i].Kind || !bytes.Equal(a[i].Data, b[i].Data) {
			return false
		}
	}
	return true
}

// add appends a row for a key not yet in the window.
func (t *NetTable[P]) add(k uint64, r NetRow) {
	r.prev = t.keys[k]
	t.Rows = append(t.Rows, r)
	t.keys[k] = int32(len(t.Rows))
}

func (t *NetTable[P]) canInsert(i int) bool {
	return i < 0 || t.Rows[i].Kind == NetNone || t.Rows[i].Kind == NetDelete
}

func (t *NetTable[P]) canChange(i int) bool {
	return i < 0 || (t.Rows[i].Kind != NetNone && t.Rows[i].Kind != NetDelete)
}

func (t *NetTable[P]) insert(i int, k uint64, row []source.Value, txn *source.Txn) {
	if i < 0 {
		t.add(k, NetRow{Kind: NetInsert, Row: row, Txn: txn, img: row})
		return
	}
	r := &t.Rows[i]
	r.Kind, r.Row, r.Txn, r.owned = NetInsert, row, txn, false
	if r.Key != nil {
		r.Kind = NetReplace // deleted first: the target has the old row
	}
}

func (t *NetTable[P]) delete(i int, k uint64, old []source.Value, txn *source.Txn) {
	if i < 0 {
		t.add(k, NetRow{Kind: NetDelete, Key: old, Txn: txn, img: old})
		return
	}
	r := &t.Rows[i]
	r.Row, r.Txn, r.owned = nil, txn, false
	if r.Key == nil {
		r.Kind = NetNone // inserted in this window: never reached the target
	} else {
		r.Kind = NetDelete
	}
}

func (t *NetTable[P]) update(i int, k uint64, row []source.Value, txn *source.Txn) {
	if i < 0 {
		t.add(k, NetRow{Kind: NetUpdate, Key: row, Row: row, Txn: txn, img: row})
		return
	}
	r := &t.Rows[i]
	r.Txn = txn
	if !r.owned {
		r.Row, r.owned = append([]source.Value(nil), r.Row...), true
	}
	for col, v := range row {
		if v.Kind != source.ValueUnchanged {
			r.Row[col] = v
		}
	}
}

func rowBytes(row []source.Value) int {
	n := 0
	for _, v := range row {
		n += len(v.Data) + 8
	}
	return n
}

// Compaction and set-based statements apply many source changes with one
// target statement; when one fails on something other than the connection
// (a row the target lacks, a duplicate key, a value it refuses), it cannot
// say which change the target disagrees with. Replay then has the pipeline
// resume from the checkpoint while the writer applies, one change at a
// time, the transactions that were in the failed target transaction: the
// failure, if the target still disagrees, comes again, naming its change.

// ReplayError asks for that replay; it is retryable.
type ReplayError struct{ Err error }

func (e *ReplayError) Error() string {
	return fmt.Sprintf("%v; the statement applied several source changes at once, so decant applies them again one by one to name the change that fails", e.Err)
}
func (e *ReplayError) Unwrap() error   { return e.Err }
func (e *ReplayError) Retryable() bool { return true }

// Replay is a writer's account of when to gather changes (Net) and when
// to apply them one by one: after a ReplayError, for as many source
// transactions as the failed target transaction held.
type Replay struct {
	cur   *source.Txn
	plain bool // cur is applied change by change
	seen  int  // transactions begun since the last commit
	left  int  // transactions still to apply change by change
}

// Gather reports whether the changes of txn may be gathered; call it for
// every call of Apply.
func (r *Replay) Gather(txn *source.Txn) bool {
	if txn != r.cur {
		r.cur = txn
		r.seen++
		r.plain = r.left > 0
		if r.left > 0 {
			r.left--
		}
	}
	return !r.plain && !txn.Streamed
}

// Committed starts the count of the next target transaction.
func (r *Replay) Committed() { r.seen, r.cur = 0, nil }

// Fail turns err, the failure of a statement that applied gathered
// changes, into a ReplayError, and makes the next session apply the
// transactions of this target transaction one by one. A transient err
// passes through: the next session gathers again.
func (r *Replay) Fail(err error) error {
	var replay *ReplayError
	if err == nil || Transient(err) || errors.As(err, &replay) {
		return err
	}
	r.left, r.seen, r.cur = r.seen, 0, nil
	return &ReplayError{Err: err}
}
