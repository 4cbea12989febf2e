// Package service is what a long-running decant shows of itself: the
// pipeline's state as an apply.Observer keeps it (State), the Prometheus
// metrics read from it on scrape, the HTTP endpoint that serves them with
// /healthz, /readyz and /status (Server), and the periodic progress line
// (Progress). The metric names are a contract with deploy/ (its
// dashboards and alert rules) and are listed in docs/operations.md.
//
// Nothing here ever blocks the pipeline: the Observer methods store into
// atomics (a histogram observation is atomic too), and everything that
// formats, locks for long or does I/O runs on the scraping or logging
// goroutine.
package service

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/apply/bulk"
	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/notify"
	"github.com/decant/decant/source"
)

// State is the running pipeline's state, kept as it happens. Make it with
// NewState; it is an apply.Observer and a bulk.Progress (the initial
// copy), and every method is safe for concurrent use.
type State struct {
	pipeline string
	now      func() time.Time
	spill    *source.SpillUsage
	links    atomic.Pointer[source.Links] // the process's connections, for decant_connection_tls

	streaming, retrying     atomic.Bool
	sessions, reconnects    atomic.Int64
	errors                  [3]atomic.Int64 // by errorClasses
	resyncs                 [2]atomic.Int64 // by resyncResults
	sourceEnd, applied      atomic.Uint64   // LSNs
	flushed                 atomic.Uint64
	lastCommit, oldest      atomic.Int64 // unix nanoseconds; 0: none
	lastBeat, slotCheckTime atomic.Int64
	txns, bytes, commits    atomic.Int64
	changes                 [source.OpDDL + 1]atomic.Int64
	ddlRejected             atomic.Int64
	conflicts               [len(apply.ConflictTally{})][len(apply.ConflictTally{}[0])]atomic.Int64 // by apply.ConflictKind, apply.ConflictPolicy
	commitSeconds, batch    prometheus.Histogram                                                    // Observe is lock-free

	mu         sync.Mutex // guards what follows: written once per commit or check
	checkpoint checkpoint.Row
	hasCP      bool
	slot       source.SlotState
	lastErr    string // the error that ended the last session, one line, redacted as webhooks are (notify.Sanitize)
	lastClass  apply.ErrorClass
	copying    map[source.TableName]*copyTable
	copyOrder  []source.TableName
}

var (
	_ apply.Observer = (*State)(nil)
	_ bulk.Progress  = (*State)(nil)
)

// errorClasses orders State.errors.
var errorClasses = [...]apply.ErrorClass{apply.ClassTransient, apply.ClassPermanent, apply.ClassNeedsPerson}

// resyncResults orders State.resyncs: the result label of
// decant_resyncs_total.
var resyncResults = [...]string{"done", "failed"}

// copyTable is one table's initial copy.
type copyTable struct {
	rows, estRows, bytes atomic.Int64
	done                 atomic.Bool
}

// NewState keeps the state of pipeline; spill, when set, is the reader's
// count of spill files in use.
func NewState(pipeline string, spill *source.SpillUsage) *State {
	return &State{
		pipeline: pipeline, now: time.Now, spill: spill,
		commitSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "decant_target_commit_duration_seconds", Help: "Round trip of a target commit (with the checkpoint row).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}),
		batch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "decant_batch_transactions", Help: "Source transactions per target commit.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 11)}),
		copying: map[source.TableName]*copyTable{},
	}
}

// WatchLinks makes the metrics show the links l records.
func (s *State) WatchLinks(l *source.Links) { s.links.Store(l) }

// Pipeline is the pipeline's name.
func (s *State) Pipeline() string { return s.pipeline }

// SessionStarted: both ends are connected and the session streams.
func (s *State) SessionStarted(cp checkpoint.Row, walEnd source.LSN) {
	if s.retrying.Swap(false) {
		s.reconnects.Add(1)
	}
	s.sessions.Add(1)
	s.storeCheckpoint(cp)
	s.SourceEnd(walEnd)
	s.lastBeat.Store(s.now().UnixNano())
	s.streaming.Store(true)
}

// SessionEnded: the pipeline closed both connections; it retries or stops.
func (s *State) SessionEnded(e apply.SessionEnd) {
	s.streaming.Store(false)
	s.retrying.Store(e.Retry)
	if e.Err == nil {
		return
	}
	for i, c := range errorClasses {
		if c == e.Class {
			s.errors[i].Add(1)
		}
	}
	s.mu.Lock()
	s.lastErr, s.lastClass = notify.Sanitize(e.Err.Error()), e.Class
	s.mu.Unlock()
}

// Received: the oldest transaction not yet applied is txn, unless an
// older one is still pending.
func (s *State) Received(txn *source.Txn) {
	if !txn.CommitTime.IsZero() {
		s.oldest.CompareAndSwap(0, txn.CommitTime.UnixNano())
	}
}

// Committed counts a target commit. After it, nothing is pending unless
// more had arrived (a backlog), whose oldest committed on the source no
// earlier than the transaction just applied: its commit time stands in
// until the next one is received. A commit of part of a transaction (cut
// before a schema change) leaves that transaction pending.
func (s *State) Committed(c apply.Commit) {
	s.commits.Add(1)
	s.txns.Add(int64(c.Txns))
	s.bytes.Add(c.Changes.Bytes)
	for op, n := range c.Changes.Ops {
		if n != 0 {
			s.changes[op].Add(n)
		}
	}
	c.Conflicts.Each(func(k apply.ConflictKind, p apply.ConflictPolicy, n int64) { s.conflicts[k][p].Add(n) })
	s.commitSeconds.Observe(c.Duration.Seconds())
	if c.Txns > 0 {
		s.batch.Observe(float64(c.Txns))
	}
	cp := c.Checkpoint
	switch {
	case cp.PartialCommit != 0:
	case c.Backlog && !cp.CommitTime.IsZero():
		s.oldest.Store(cp.CommitTime.UnixNano())
	default:
		s.oldest.Store(0)
	}
	s.storeCheckpoint(cp)
}

// storeCheckpoint keeps what the target holds now: its position, and
// the source commit time of the last transaction applied.
func (s *State) storeCheckpoint(cp checkpoint.Row) {
	s.applied.Store(uint64(cp.End))
	if !cp.CommitTime.IsZero() {
		s.lastCommit.Store(cp.CommitTime.UnixNano())
	}
	s.mu.Lock()
	s.checkpoint, s.hasCP = cp, true
	s.mu.Unlock()
}

// SourceEnd moves the source's known WAL end forward (never back: the
// reports come from several goroutines).
func (s *State) SourceEnd(end source.LSN) {
	for {
		cur := s.sourceEnd.Load()
		if uint64(end) <= cur || s.sourceEnd.CompareAndSwap(cur, uint64(end)) {
			return
		}
	}
}

// Acked is the position the source was told is flushed.
func (s *State) Acked(pos source.LSN) { s.flushed.Store(uint64(pos)) }

// SlotChecked keeps the slot as last read; a check that could not read
// it (the zero state) changes nothing.
func (s *State) SlotChecked(st source.SlotState, _ error) {
	if st.Slot == "" {
		return
	}
	s.SourceEnd(st.WALEnd)
	s.mu.Lock()
	s.slot = st
	s.mu.Unlock()
	s.slotCheckTime.Store(s.now().UnixNano())
}

// ResyncStarted: run --on-slot-lost resync repairs the target; the
// session's end already counted the lost slot as an error.
func (s *State) ResyncStarted(error) {}

// ResyncFinished counts a resync by its result.
func (s *State) ResyncFinished(err error, _ time.Duration) {
	if err == nil {
		s.resyncs[0].Add(1)
	} else {
		s.resyncs[1].Add(1)
	}
}

// DDLRejected counts a refused schema change.
func (s *State) DDLRejected(apply.RejectedDDL) { s.ddlRejected.Add(1) }

// Beat: the apply loop turns.
func (s *State) Beat(now time.Time) { s.lastBeat.Store(now.UnixNano()) }

// Planned starts a table's copy count (again, when the copy restarts).
func (s *State) Planned(table source.TableName, rows, _ int64) {
	s.mu.Lock()
	t := s.copying[table]
	if t == nil {
		t = &copyTable{}
		s.copying[table] = t
		s.copyOrder = append(s.copyOrder, table)
	}
	s.mu.Unlock()
	t.rows.Store(0)
	t.bytes.Store(0)
	t.estRows.Store(rows)
	t.done.Store(false)
}

// Copied adds what a copy worker copied of table.
func (s *State) Copied(table source.TableName, rows, bytes int64) {
	if t := s.copyTable(table); t != nil {
		t.rows.Add(rows)
		t.bytes.Add(bytes)
	}
}

// Done marks table copied.
func (s *State) Done(table source.TableName) {
	if t := s.copyTable(table); t != nil {
		t.done.Store(true)
	}
}

func (s *State) copyTable(table source.TableName) *copyTable {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.copying[table]
}

// Snapshot is the state at one moment, as the endpoints and the
// progress line show it.
type Snapshot struct {
	Pipeline   string
	Streaming  bool
	SourceEnd  source.LSN // 0: not heard yet
	Applied    source.LSN // the checkpoint's end position
	Flushed    source.LSN
	LagBytes   int64
	LagSeconds float64
	// LastCommit is the source commit time of the last transaction
	// applied; zero when none yet.
	LastCommit  time.Time
	Txns, Bytes int64
	Commits     int64
	Changes     int64 // all operations
	Checkpoint  checkpoint.Row
	HasCP       bool
	Slot        source.SlotState // Slot == "": not checked yet
	SlotChecked time.Time
	LastBeat    time.Time
	LastError   string
	LastClass   apply.ErrorClass
	Copying     bool // a table is being copied
}

// Snapshot reads the state now.
func (s *State) Snapshot() Snapshot {
	now := s.now()
	v := Snapshot{
		Pipeline: s.pipeline, Streaming: s.streaming.Load(),
		SourceEnd: source.LSN(s.sourceEnd.Load()), Applied: source.LSN(s.applied.Load()),
		Flushed: source.LSN(s.flushed.Load()),
		Txns:    s.txns.Load(), Bytes: s.bytes.Load(), Commits: s.commits.Load(),
		LastCommit:  unixTime(s.lastCommit.Load()),
		SlotChecked: unixTime(s.slotCheckTime.Load()),
		LastBeat:    unixTime(s.lastBeat.Load()),
	}
	for i := range s.changes {
		v.Changes += s.changes[i].Load()
	}
	if v.SourceEnd > v.Applied && v.Applied != 0 {
		v.LagBytes = int64(v.SourceEnd - v.Applied)
	}
	if o := s.oldest.Load(); o != 0 {
		v.LagSeconds = max(now.Sub(time.Unix(0, o)).Seconds(), 0)
	}
	s.mu.Lock()
	v.Checkpoint, v.HasCP, v.Slot = s.checkpoint, s.hasCP, s.slot
	v.LastError, v.LastClass = s.lastErr, s.lastClass
	for _, t := range s.copying {
		v.Copying = v.Copying || !t.done.Load()
	}
	s.mu.Unlock()
	return v
}

func unixTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}
