package source

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Spool keeps the changes of one transaction until they can be delivered:
// in memory up to Limit bytes, then in a temporary file, and hands them
// back in order. Memory stays bounded whatever the transaction's size.
// The zero value keeps everything in memory; set Dir and Limit to spill.
type Spool struct {
	Dir    string // where spill files go (os.TempDir() when empty)
	Prefix string // spill file name prefix, to find leftovers at start-up
	Limit  int    // bytes of changes kept in memory before spilling

	mem      []Change
	memBytes int
	file     *os.File
	w        *bufio.Writer
	onDisk   int
	rels     map[*Relation]uint32
	relList  []*Relation
}

// Len is the number of changes held.
func (s *Spool) Len() int { return len(s.mem) + s.onDisk }

// Spilled reports whether changes went to disk.
func (s *Spool) Spilled() bool { return s.file != nil }

// Add appends a change.
func (s *Spool) Add(c Change) error {
	if s.file == nil && (s.Limit <= 0 || s.memBytes+changeSize(&c) <= s.Limit) {
		s.mem = append(s.mem, c)
		s.memBytes += changeSize(&c)
		return nil
	}
	if s.file == nil {
		f, err := os.CreateTemp(s.Dir, s.Prefix+"*.spill")
		if err != nil {
			return fmt.Errorf("spill a large transaction to disk: %w", err)
		}
		s.file, s.w = f, bufio.NewWriterSize(f, 1<<16)
	}
	s.onDisk++
	if err := s.encode(&c); err != nil {
		return fmt.Errorf("spill a large transaction to %s: %w", s.file.Name(), err)
	}
	return nil
}

// Replay hands the changes back in order, at most chunk at a time. The
// slices are never reused, so fn may pass them on.
func (s *Spool) Replay(chunk int, fn func([]Change) error) error {
	for i := 0; i < len(s.mem); i += chunk {
		if err := fn(s.mem[i:min(i+chunk, len(s.mem))]); err != nil {
			return err
		}
	}
	if s.file == nil {
		return nil
	}
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("spill file %s: %w", s.file.Name(), err)
	}
	if _, err := s.file.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("spill file %s: %w", s.file.Name(), err)
	}
	r := bufio.NewReaderSize(s.file, 1<<16)
	buf := make([]Change, 0, chunk)
	for i := 0; i < s.onDisk; i++ {
		c, err := s.decode(r)
		if err != nil {
			return fmt.Errorf("read back spill file %s: %w", s.file.Name(), err)
		}
		if buf = append(buf, c); len(buf) == chunk {
			if err := fn(buf); err != nil {
				return err
			}
			buf = make([]Change, 0, chunk)
		}
	}
	if len(buf) > 0 {
		return fn(buf)
	}
	return nil
}

// Reset empties the spool and removes its file.
func (s *Spool) Reset() error {
	s.mem, s.memBytes, s.onDisk = nil, 0, 0
	s.rels, s.relList = nil, nil
	if s.file == nil {
		return nil
	}
	name := s.file.Name()
	s.file.Close()
	s.file, s.w = nil, nil
	if err := os.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove spill file: %w", err)
	}
	return nil
}

// RemoveSpills deletes spill files a previous run left behind (it was
// killed with a transaction spooled); called at start-up.
func RemoveSpills(dir, prefix string) error {
	if dir == "" {
		dir = os.TempDir()
	}
	names, err := filepath.Glob(filepath.Join(dir, prefix+"*.spill"))
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := os.Remove(n); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove leftover spill file: %w", err)
		}
	}
	return nil
}

func changeSize(c *Change) int { return 64 + rowSize(c.Old) + rowSize(c.New) }

// The spill format: per change, op, relation index, flags, truncated
// relations, then the old and new rows (a presence byte, a count, then
// per value a kind byte and a length-prefixed body). Relations stay in
// memory and are referred to by index.
func (s *Spool) encode(c *Change) error {
	var hdr [10]byte
	hdr[0] = byte(c.Op)
	binary.BigEndian.PutUint32(hdr[1:], s.relIndex(c.Rel))
	if c.Cascade {
		hdr[5] |= 1
	}
	if c.RestartIdentity {
		hdr[5] |= 2
	}
	binary.BigEndian.PutUint32(hdr[6:], uint32(len(c.Truncated)))
	if _, err := s.w.Write(hdr[:]); err != nil {
		return err
	}
	for _, r := range c.Truncated {
		if err := binary.Write(s.w, binary.BigEndian, s.relIndex(r)); err != nil {
			return err
		}
	}
	if err := writeRow(s.w, c.Old); err != nil {
		return err
	}
	return writeRow(s.w, c.New)
}

func (s *Spool) relIndex(r *Relation) uint32 {
	if s.rels == nil {
		s.rels = map[*Relation]uint32{}
	}
	i, ok := s.rels[r]
	if !ok {
		i = uint32(len(s.relList))
		s.rels[r] = i
		s.relList = append(s.relList, r)
	}
	return i
}

func writeRow(w *bufio.Writer, row []Value) error {
	if row == nil {
		return w.WriteByte(0)
	}
	var hdr [5]byte
	hdr[0] = 1
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(row)))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	for _, v := range row {
		hdr[0] = byte(v.Kind)
		binary.BigEndian.PutUint32(hdr[1:], uint32(len(v.Data)))
		if _, err := w.Write(hdr[:]); err != nil {
			return err
		}
		if _, err := w.Write(v.Data); err != nil {
			return err
		}
	}
	return nil
}

func (s *Spool) decode(r *bufio.Reader) (Change, error) {
	var hdr [10]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return Change{}, err
	}
	c := Change{Op: Op(hdr[0]), Cascade: hdr[5]&1 != 0, RestartIdentity: hdr[5]&2 != 0}
	rel, err := s.rel(binary.BigEndian.Uint32(hdr[1:]))
	if err != nil {
		return Change{}, err
	}
	c.Rel = rel
	for n := binary.BigEndian.Uint32(hdr[6:]); n > 0; n-- {
		var i uint32
		if err := binary.Read(r, binary.BigEndian, &i); err != nil {
			return Change{}, err
		}
		t, err := s.rel(i)
		if err != nil {
			return Change{}, err
		}
		c.Truncated = append(c.Truncated, t)
	}
	if c.Old, err = readRow(r); err != nil {
		return Change{}, err
	}
	c.New, err = readRow(r)
	return c, err
}

func (s *Spool) rel(i uint32) (*Relation, error) {
	if int(i) >= len(s.relList) {
		return nil, fmt.Errorf("spill file refers to relation %d of %d", i, len(s.relList))
	}
	return s.relList[i], nil
}

func readRow(r *bufio.Reader) ([]Value, error) {
	present, err := r.ReadByte()
	if err != nil || present == 0 {
		return nil, err
	}
	var n uint32
	if err := binary.Read(r, binary.BigEndian, &n); err != nil {
		return nil, err
	}
	row := make([]Value, n)
	var hdr [5]byte
	for i := range row {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return nil, err
		}
		row[i].Kind = ValueKind(hdr[0])
		if l := binary.BigEndian.Uint32(hdr[1:]); l > 0 || row[i].Kind == ValueText || row[i].Kind == ValueBinary {
			row[i].Data = make([]byte, l)
			if _, err := io.ReadFull(r, row[i].Data); err != nil {
				return nil, err
			}
		}
	}
	return row, nil
}
