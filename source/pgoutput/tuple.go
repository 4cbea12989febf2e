package pgoutput

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/decant/decant/source"
)

// Row changes: Insert ('I'), Update ('U') and Delete ('D'), the messages
// nearly every byte of a stream is in. They are read here rather than by
// pglogrepl, which allocates twice per column and once more per tuple and
// message, so that a decoded row costs no allocation of its own: its
// values are sub-slices of one copy of the message, and its Value headers
// come from a shared slab (see arena).
//
// Layout (after the type byte, and inside a stream block the Int32 xid of
// the (sub)transaction): Int32 relation OID, then
//
//	Insert: 'N' TupleData
//	Update: ['K' or 'O' TupleData] 'N' TupleData
//	Delete: 'K' or 'O' TupleData
//
// TupleData is Int16 column count, then per column a kind byte: 'n' NULL,
// 'u' unchanged TOASTed value (not sent), 't' text or 'b' binary followed
// by Int32 length and the value's bytes.

// arena hands out the memory decoded rows live in. Bytes and Value
// headers are carved from slabs that consecutive rows share; a slab is
// never written again once a row took part of it (a new one replaces it
// when full), so a decoded change stays valid for as long as anything
// refers to it (a chunk, an insert run waiting for its COPY, a spool),
// whatever is decoded after it, and the garbage collector frees a slab
// once no change refers to it. What it costs: a change kept long keeps
// its slabs alive, at most byteSlab and valueSlab entries each, small
// next to what a transaction held for its commit may take.
type arena struct {
	bytes  []byte         // free part of the current byte slab
	values []source.Value // free part of the current Value slab
}

const (
	byteSlab  = 64 << 10
	valueSlab = 1024
)

// copy returns a copy of b. Messages larger than a quarter of a slab get
// an allocation of their own, so slabs are not left mostly unused.
func (a *arena) copy(b []byte) []byte {
	n := len(b)
	if n > len(a.bytes) {
		if n > byteSlab/4 {
			return append(make([]byte, 0, n), b...)
		}
		a.bytes = make([]byte, byteSlab)
	}
	c := a.bytes[:n:n]
	a.bytes = a.bytes[n:]
	copy(c, b)
	return c
}

// row returns n zero Values, capped at n so that an append to the row
// cannot reach into the next one.
func (a *arena) row(n int) []source.Value {
	if n > len(a.values) {
		if n > valueSlab/4 {
			return make([]source.Value, n)
		}
		a.values = make([]source.Value, valueSlab)
	}
	r := a.values[:n:n]
	a.values = a.values[n:]
	return r
}

// rowChange decodes an Insert, Update or Delete message. sub is the xid
// a message inside a stream block carries.
func (d *Decoder) rowChange(data []byte) (ev Event, sub uint64, err error) {
	kind := data[0]
	op := source.OpInsert
	switch kind {
	case 'U':
		op = source.OpUpdate
	case 'D':
		op = source.OpDelete
	}
	h := fields{data: data, off: 1}
	if d.inStream {
		sub = h.xid()
	}
	relID := h.u32()
	if h.short {
		return Event{}, 0, pastEnd(data[0], "tuple header", len(data))
	}
	xid, ok := d.current()
	if !ok {
		return Event{}, 0, fmt.Errorf("%w: %s outside a transaction", ErrMalformed, op)
	}
	rel, ok := d.rels[relID]
	if !ok {
		return Event{}, 0, fmt.Errorf("%w: %s in xid %d for relation %d that was never announced", ErrMalformed, op, xid, relID)
	}
	// One copy of the tuples; the values are slices of it.
	t := tuples{data: d.arena.copy(data[h.off:]), kind: kind, size: len(data)}
	c := source.Change{Op: op, Rel: rel}
	marker := t.marker()
	want := "'N'" // the marker of the new row
	switch {
	case kind == 'D' && marker != 'K' && marker != 'O':
		return Event{}, 0, t.markerError(marker, "'K' or 'O'")
	case kind == 'D' || kind == 'U' && (marker == 'K' || marker == 'O'):
		if c.Old, err = t.row(rel, &d.arena); err != nil {
			return Event{}, 0, fmt.Errorf("%s old row of %s in xid %d: %w", op, rel.Table(), xid, err)
		}
		if kind == 'U' {
			marker = t.marker()
		}
	case kind == 'U':
		want = "'K', 'O' or 'N'"
	}
	if kind != 'D' {
		if marker != 'N' {
			return Event{}, 0, t.markerError(marker, want)
		}
		if c.New, err = t.row(rel, &d.arena); err != nil {
			return Event{}, 0, fmt.Errorf("%s new row of %s in xid %d: %w", op, rel.Table(), xid, err)
		}
	}
	if t.off != len(t.data) {
		return Event{}, 0, fmt.Errorf("%w: message type %q has %d bytes past its last field", ErrMalformed, kind, len(t.data)-t.off)
	}
	if rel.Schema == "decant" && strings.HasPrefix(rel.Name, queuePrefix) {
		ev, err := d.queued(c, xid)
		return ev, sub, err
	}
	return Event{Kind: EventChange, Change: c}, sub, nil
}

// pastEnd says that a part of a message whose size the message gives
// itself runs past its end.
func pastEnd(kind byte, what string, size int) error {
	return fmt.Errorf("%w: message type %q: %s runs past the end of the message (%d bytes)", ErrMalformed, kind, what, size)
}

// tuples reads the tuples of a row change message.
type tuples struct {
	data []byte // the message past its relation OID, copied
	off  int
	kind byte // the message type
	size int  // the whole message's length, for errors
}

// marker reads a tuple's marker byte; 0 past the end.
func (t *tuples) marker() byte {
	if t.off >= len(t.data) {
		return 0
	}
	t.off++
	return t.data[t.off-1]
}

func (t *tuples) markerError(got byte, want string) error {
	if got == 0 && t.off >= len(t.data) {
		return t.pastEnd("tuple header")
	}
	return fmt.Errorf("%w: message type %q has tuple marker %q, want %s", ErrMalformed, t.kind, got, want)
}

func (t *tuples) pastEnd(what string) error { return pastEnd(t.kind, what, t.size) }

// row reads one TupleData of rel's shape.
func (t *tuples) row(rel *source.Relation, a *arena) ([]source.Value, error) {
	if t.off+2 > len(t.data) {
		return nil, t.pastEnd("tuple header")
	}
	n := int(binary.BigEndian.Uint16(t.data[t.off:]))
	t.off += 2
	if n != len(rel.Columns) {
		// A tuple cut short says so before its count is compared.
		if err := t.values(make([]source.Value, 1), n, rel); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %d values for %d columns", ErrMalformed, n, len(rel.Columns))
	}
	vals := a.row(n)
	if err := t.values(vals, n, rel); err != nil {
		return nil, err
	}
	return vals, nil
}

// values reads n column values into vals, or with len(vals) < n (a
// tuple of the wrong width) only checks them, overwriting vals[0].
func (t *tuples) values(vals []source.Value, n int, rel *source.Relation) error {
	data, off := t.data, t.off
	for i := 0; i < n; i++ {
		v := &vals[min(i, len(vals)-1)]
		if off >= len(data) {
			return t.pastEnd("column kind")
		}
		kind := data[off]
		off++
		switch kind {
		case 'n':
			v.Kind = source.ValueNull
			continue
		case 'u':
			v.Kind = source.ValueUnchanged
			continue
		case 't':
			v.Kind = source.ValueText
		case 'b':
			v.Kind = source.ValueBinary
		default:
			if len(vals) < n {
				return nil // the wrong width is the error to report
			}
			return fmt.Errorf("%w: column %q has value kind %q", ErrMalformed, rel.Columns[i].Name, kind)
		}
		if off+4 > len(data) {
			return t.pastEnd("column length")
		}
		l := uint64(binary.BigEndian.Uint32(data[off:]))
		off += 4
		if l > uint64(len(data)-off) {
			return t.pastEnd("column value")
		}
		end := off + int(l)
		v.Data = data[off:end:end]
		off = end
	}
	t.off = off
	return nil
}
