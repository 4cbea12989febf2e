package source

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
)

// Spool keeps the changes of one transaction until they can be delivered:
// in memory while the memory budget allows, then in a temporary file, and
// hands them back in order. Memory stays bounded whatever the
// transaction's size. The zero value keeps everything in memory; set Dir
// and Limit (or Budget) to spill.
type Spool struct {
	Dir    string // where spill files go (os.TempDir() when empty)
	Prefix string // spill file name prefix, to find leftovers at start-up
	Limit  int    // bytes of changes kept in memory before spilling, without a Budget
	// Budget, when set, is shared by several spools (the transactions in
	// progress at once) and bounds their memory together; Limit is then
	// ignored.
	Budget *Budget
	// Xid names the transaction held, in errors; 0 when not known yet
	// (GaussDB formats that give it only at COMMIT). Begin, when set, is
	// where it began.
	Xid   uint64
	Begin LSN
	// Usage, when set, counts the spool's file in use with those of
	// every spool sharing it, for metrics.
	Usage *SpillUsage

	mem      []Change
	memBytes int
	file     *os.File
	w        *bufio.Writer
	written  int64 // bytes the spill file took
	onDisk   int
	rels     map[*Relation]uint32
	relList  []*Relation
	subs     map[uint64]int  // changes held per subtransaction (Change.Sub), when any is set
	dropped  map[uint64]bool // subtransactions whose changes are void
	nDropped int
}

// SpillUsage counts the spill files in use and the bytes they hold,
// over every spool that shares it; safe to read from any goroutine.
type SpillUsage struct {
	bytes, files atomic.Int64
}

// Bytes is what the spill files in use hold.
func (u *SpillUsage) Bytes() int64 { return u.bytes.Load() }

// Files is how many spill files are in use.
func (u *SpillUsage) Files() int64 { return u.files.Load() }

func (u *SpillUsage) add(files, bytes int64) {
	if u != nil {
		u.files.Add(files)
		u.bytes.Add(bytes)
	}
}

// Budget is a memory allowance several spools share.
type Budget struct {
	Limit int // bytes
	used  int
}

// Used is the memory the spools sharing the budget hold now.
func (b *Budget) Used() int { return b.used }

// Len is the number of changes held, not counting dropped ones.
func (s *Spool) Len() int { return len(s.mem) + s.onDisk - s.nDropped }

// Spilled reports whether changes went to disk.
func (s *Spool) Spilled() bool { return s.file != nil }

// fits reports whether n more bytes may stay in memory.
func (s *Spool) fits(n int) bool {
	if s.Budget != nil {
		return s.Budget.used+n <= s.Budget.Limit
	}
	return s.Limit <= 0 || s.memBytes+n <= s.Limit
}

func (s *Spool) account(n int) {
	s.memBytes += n
	if s.Budget != nil {
		s.Budget.used += n
	}
}

// Add appends a change.
func (s *Spool) Add(c Change) error {
	if c.Sub != 0 {
		if s.subs == nil {
			s.subs = map[uint64]int{}
		}
		s.subs[c.Sub]++
	}
	size := changeSize(&c)
	if s.file == nil && s.fits(size) {
		s.mem = append(s.mem, c)
		s.account(size)
		return nil
	}
	if s.file == nil {
		if err := s.spill(); err != nil {
			return err
		}
	}
	s.onDisk++
	if err := s.encode(&c); err != nil {
		return s.fail(err)
	}
	return nil
}

// fail describes a failed write to the spill file.
func (s *Spool) fail(err error) error {
	if full(err) {
		return &SpillFullError{Dir: s.dir(), Xid: s.Xid, Begin: s.Begin, Written: s.written, Err: err}
	}
	return fmt.Errorf("spill a large transaction to %s: %w", s.file.Name(), err)
}

func (s *Spool) dir() string {
	if s.Dir == "" {
		return os.TempDir()
	}
	return s.Dir
}

// full reports whether err says the file system has no room left.
func full(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// SpillFullError: the spill directory has no room for the changes of a
// transaction that outgrew the memory limit. It is not worth an automatic
// retry: the transaction would be decoded again from its start only to
// fill the directory again, and space seldom comes back by itself. It
// needs a person (exit code 3).
type SpillFullError struct {
	Dir     string
	Xid     uint64
	Begin   LSN
	Written int64 // bytes of the transaction on disk when the directory filled
	Err     error
}

func (e *SpillFullError) Error() string {
	txn := "a transaction"
	switch {
	case e.Xid != 0:
		txn = fmt.Sprintf("transaction xid %d", e.Xid)
	case e.Begin != 0:
		txn = fmt.Sprintf("the transaction begun at %s", e.Begin)
	}
	cause := "no space left on device"
	if errors.Is(e.Err, syscall.EDQUOT) {
		cause = "disk quota exceeded"
	}
	return fmt.Sprintf("spill directory %s is full (%s): it took %s of %s, which outgrew --max-txn-memory, and has no room for the rest; free space there, point --spill-dir elsewhere, or raise --max-txn-memory",
		e.Dir, cause, SizeText(e.Written), txn)
}

func (e *SpillFullError) Unwrap() error { return e.Err }

// Retryable: a retry would decode the transaction again into the same
// full directory.
func (e *SpillFullError) Retryable() bool { return false }

// NeedsPerson: space seldom comes back by itself.
func (e *SpillFullError) NeedsPerson() bool { return true }

// SizeText prints a byte count for people: "1.5 MiB".
func SizeText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// countingFile counts the bytes the spill file took (once per buffer
// of 64 KiB written, not per change).
type countingFile struct {
	f     *os.File
	n     *int64
	usage *SpillUsage
}

func (c countingFile) Write(b []byte) (int, error) {
	n, err := c.f.Write(b)
	*c.n += int64(n)
	c.usage.add(0, int64(n))
	return n, err
}

// spill opens the spill file and moves the changes held in memory to it,
// so that what follows them can go after them on disk.
func (s *Spool) spill() error {
	f, err := os.CreateTemp(s.Dir, s.Prefix+"*.spill")
	if err != nil {
		if full(err) {
			return &SpillFullError{Dir: s.dir(), Xid: s.Xid, Begin: s.Begin, Err: err}
		}
		return fmt.Errorf("spill a large transaction to disk: %w", err)
	}
	s.file, s.written = f, 0
	s.Usage.add(1, 0)
	s.w = bufio.NewWriterSize(countingFile{f, &s.written, s.Usage}, 1<<16)
	for i := range s.mem {
		if err := s.encode(&s.mem[i]); err != nil {
			return s.fail(err)
		}
	}
	s.onDisk += len(s.mem)
	s.mem = nil
	s.account(-s.memBytes)
	return nil
}

// DropSub voids the changes of subtransaction sub (rolled back): they are
// no longer counted or replayed.
func (s *Spool) DropSub(sub uint64) {
	if s.dropped[sub] || s.subs[sub] == 0 {
		return
	}
	if s.dropped == nil {
		s.dropped = map[uint64]bool{}
	}
	s.dropped[sub] = true
	kept := s.mem[:0]
	freed := 0
	for _, c := range s.mem {
		if c.Sub == sub {
			freed += changeSize(&c)
			continue
		}
		kept = append(kept, c)
	}
	inMem := len(s.mem) - len(kept)
	clear(s.mem[len(kept):])
	s.mem = kept
	s.account(-freed)
	// Changes in memory are gone; those on disk are skipped on replay.
	s.nDropped += s.subs[sub] - inMem
}

// Replay hands the changes back in order, at most chunk at a time. The
// slices are never reused, so fn may pass them on.
func (s *Spool) Replay(chunk int, fn func([]Change) error) error {
	if s.file != nil {
		// Changes in memory went to the file when it was opened: the
		// file holds everything.
		return s.replayFile(chunk, fn)
	}
	for i := 0; i < len(s.mem); i += chunk {
		if err := fn(s.mem[i:min(i+chunk, len(s.mem))]); err != nil {
			return err
		}
	}
	return nil
}

func (s *Spool) replayFile(chunk int, fn func([]Change) error) error {
	if err := s.w.Flush(); err != nil {
		return s.fail(err)
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
		if s.dropped[c.Sub] {
			continue
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
	s.account(-s.memBytes)
	s.mem, s.onDisk = nil, 0
	s.rels, s.relList = nil, nil
	s.subs, s.dropped, s.nDropped = nil, nil, 0
	if s.file == nil {
		return nil
	}
	name := s.file.Name()
	s.file.Close()
	s.Usage.add(-1, -s.written)
	s.file, s.w, s.written = nil, nil, 0
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

// changeSize is what a change costs in memory: the Change itself and its
// place in the spool's slice (which grows by doubling), each Value, and its
// data rounded up to the allocator's size classes.
func changeSize(c *Change) int {
	n := 192
	for _, row := range [][]Value{c.Old, c.New} {
		for _, v := range row {
			n += 32 + (len(v.Data)+15)&^15
		}
	}
	if c.DDL != nil {
		n += 256 + len(c.DDL.Statement) + len(c.DDL.JSON) + 128*len(c.DDL.Tables)
	}
	return n
}

// The spill format: per change, op, relation index, flags, the
// subtransaction, truncated relations, then the old and new rows (a
// presence byte, a count, then per value a kind byte and a length-prefixed
// body), then for a schema change its description as JSON. Relations stay
// in memory and are referred to by index.
func (s *Spool) encode(c *Change) error {
	var hdr [18]byte
	hdr[0] = byte(c.Op)
	binary.BigEndian.PutUint32(hdr[1:], s.relIndex(c.Rel))
	if c.Cascade {
		hdr[5] |= 1
	}
	if c.RestartIdentity {
		hdr[5] |= 2
	}
	var ddl []byte
	if c.DDL != nil {
		hdr[5] |= 4
		var err error
		if ddl, err = json.Marshal(c.DDL); err != nil {
			return err
		}
	}
	binary.BigEndian.PutUint64(hdr[6:], c.Sub)
	binary.BigEndian.PutUint32(hdr[14:], uint32(len(c.Truncated)))
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
	if err := writeRow(s.w, c.New); err != nil {
		return err
	}
	if ddl != nil {
		if err := binary.Write(s.w, binary.BigEndian, uint32(len(ddl))); err != nil {
			return err
		}
		_, err := s.w.Write(ddl)
		return err
	}
	return nil
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
	var hdr [18]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return Change{}, err
	}
	c := Change{Op: Op(hdr[0]), Cascade: hdr[5]&1 != 0, RestartIdentity: hdr[5]&2 != 0, Sub: binary.BigEndian.Uint64(hdr[6:])}
	rel, err := s.rel(binary.BigEndian.Uint32(hdr[1:]))
	if err != nil {
		return Change{}, err
	}
	c.Rel = rel
	for n := binary.BigEndian.Uint32(hdr[14:]); n > 0; n-- {
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
	if c.New, err = readRow(r); err != nil {
		return Change{}, err
	}
	if hdr[5]&4 != 0 {
		var n uint32
		if err := binary.Read(r, binary.BigEndian, &n); err != nil {
			return Change{}, err
		}
		data := make([]byte, n)
		if _, err := io.ReadFull(r, data); err != nil {
			return Change{}, err
		}
		c.DDL = new(DDL)
		if err := json.Unmarshal(data, c.DDL); err != nil {
			return Change{}, err
		}
	}
	return c, nil
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
