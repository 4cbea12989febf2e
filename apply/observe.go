package apply

import (
	"time"

	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source"
)

// Observer hears what a Pipeline does, for metrics, progress logs and
// notifications (Config.Observer). Its methods are called on the
// pipeline's own goroutines (the apply loop, the slot checker, the
// source reader) and must return at once: record what they are told
// (atomics, a non-blocking send) and never wait for I/O or for a lock
// held across I/O. They may be called concurrently.
//
// Counting happens per chunk and per target commit, never per row: the
// apply loop tallies a chunk's changes in a local value and hands the
// totals over once the target commits them.
type Observer interface {
	// SessionStarted: a session connected source and target and streams
	// from cp, what the target holds; walEnd is where the source's WAL
	// ended as it started.
	SessionStarted(cp checkpoint.Row, walEnd source.LSN)
	// SessionEnded: a session ended, how and what comes next.
	SessionEnded(SessionEnd)
	// Received: the apply loop took the first chunk of source
	// transaction txn, not yet on the target (its CommitTime is when the
	// source committed it; zero for a transaction streamed while in
	// progress, which has none yet).
	Received(txn *source.Txn)
	// Committed: the target committed a transaction with the checkpoint.
	Committed(Commit)
	// SourceEnd: the source's WAL reaches at least end (at a session's
	// start, a keepalive, an idle mark, a commit received, a slot check).
	SourceEnd(end source.LSN)
	// Acked: the position the source is told the target has flushed is
	// now pos (Pipeline.Acked).
	Acked(pos source.LSN)
	// SlotChecked: the outcome of a check of the slot while streaming:
	// the state read and the error that stops the pipeline (nil when the
	// slot is fine, the state's zero value when it could not be read).
	SlotChecked(st source.SlotState, err error)
	// ResyncStarted: the slot can no longer stream what the target lacks
	// (lost says why) and Config.OnSlotLost is repairing the target.
	ResyncStarted(lost error)
	// ResyncFinished: OnSlotLost returned err (nil: the target is
	// repaired and streaming goes on) after took.
	ResyncFinished(err error, took time.Duration)
	// DDLRejected: a schema change from the stream was refused and left
	// out (ddlscreen.go); the stream goes on.
	DDLRejected(RejectedDDL)
	// Beat: the apply loop is turning (at least every BeatInterval while
	// a session streams, except while a target round trip lasts).
	Beat(now time.Time)
}

// BeatInterval is how often a streaming session's apply loop tells its
// Observer that it turns when nothing else happens.
const BeatInterval = time.Second

// SessionEnd is how a session ended.
type SessionEnd struct {
	// Err ended the session; nil for a clean stop or a finished catch-up.
	Err   error
	Class ErrorClass
	// Retry: the pipeline resumes after Wait; otherwise Run returns.
	Retry bool
	Wait  time.Duration
	// Connected: the session had reached the source and the target
	// (a failed connection attempt has not).
	Connected bool
}

// ErrorClass sorts the errors that end a session.
type ErrorClass string

const (
	ClassNone        ErrorClass = ""             // no error
	ClassTransient   ErrorClass = "transient"    // resumed from the checkpoint
	ClassPermanent   ErrorClass = "permanent"    // stops the pipeline; a retry would fail the same way
	ClassNeedsPerson ErrorClass = "needs_person" // stops the pipeline until someone acts (NeedsPerson)
)

// Classify sorts err as the pipeline does.
func Classify(err error) ErrorClass {
	switch {
	case err == nil:
		return ClassNone
	case NeedsPerson(err):
		return ClassNeedsPerson
	case Transient(err):
		return ClassTransient
	}
	return ClassPermanent
}

// Commit is one target commit.
type Commit struct {
	// Txns is how many source transactions it applied: 0 when it only
	// moved the resume position (an idle mark) or was the first part of
	// a transaction cut before a schema change.
	Txns    int
	Changes Tally
	// Conflicts: what the commit's conflict policies resolved (each
	// also written to the conflict log table in it).
	Conflicts ConflictTally
	// Duration is the commit's round trip on the target.
	Duration time.Duration
	// Checkpoint is what the target now holds: Resume() is where a
	// restart streams from, CommitTime the source commit time of the
	// last transaction applied.
	Checkpoint checkpoint.Row
	// Backlog: more had arrived for the applier when it committed.
	Backlog bool
}

// Tally counts changes by operation, and their decoded bytes.
type Tally struct {
	Ops   [source.OpDDL + 1]int64 // by source.Op
	Bytes int64
}

// add counts a chunk's changes; bytes is their size as the reader told
// (Chunk.Bytes), or 0 to have it estimated.
func (t *Tally) add(changes []source.Change, bytes int) {
	for i := range changes {
		if op := changes[i].Op; int(op) < len(t.Ops) {
			t.Ops[op]++
		}
	}
	if bytes == 0 {
		c := source.Chunk{Changes: changes}
		bytes = c.Size()
	}
	t.Bytes += int64(bytes)
}

// Total is the number of changes counted.
func (t Tally) Total() int64 {
	var n int64
	for _, v := range t.Ops {
		n += v
	}
	return n
}

// Observers hears with every Observer in the list, in order.
type Observers []Observer

var _ Observer = Observers(nil)

func (list Observers) SessionStarted(cp checkpoint.Row, walEnd source.LSN) {
	for _, o := range list {
		o.SessionStarted(cp, walEnd)
	}
}

func (list Observers) SessionEnded(e SessionEnd) {
	for _, o := range list {
		o.SessionEnded(e)
	}
}

func (list Observers) Received(txn *source.Txn) {
	for _, o := range list {
		o.Received(txn)
	}
}

func (list Observers) Committed(c Commit) {
	for _, o := range list {
		o.Committed(c)
	}
}

func (list Observers) SourceEnd(end source.LSN) {
	for _, o := range list {
		o.SourceEnd(end)
	}
}

func (list Observers) Acked(pos source.LSN) {
	for _, o := range list {
		o.Acked(pos)
	}
}

func (list Observers) SlotChecked(st source.SlotState, err error) {
	for _, o := range list {
		o.SlotChecked(st, err)
	}
}

func (list Observers) ResyncStarted(lost error) {
	for _, o := range list {
		o.ResyncStarted(lost)
	}
}

func (list Observers) ResyncFinished(err error, took time.Duration) {
	for _, o := range list {
		o.ResyncFinished(err, took)
	}
}

func (list Observers) DDLRejected(r RejectedDDL) {
	for _, o := range list {
		o.DDLRejected(r)
	}
}

func (list Observers) Beat(now time.Time) {
	for _, o := range list {
		o.Beat(now)
	}
}

// slotCheckObserver adapts Config.OnSlotCheck to an Observer.
type slotCheckObserver struct {
	NopObserver
	fn func(source.SlotState, error)
}

func (o slotCheckObserver) SlotChecked(st source.SlotState, err error) { o.fn(st, err) }

// NopObserver hears nothing; embed it to implement only some methods.
type NopObserver struct{}

var _ Observer = NopObserver{}

func (NopObserver) SessionStarted(checkpoint.Row, source.LSN) {}
func (NopObserver) SessionEnded(SessionEnd)                   {}
func (NopObserver) Received(*source.Txn)                      {}
func (NopObserver) Committed(Commit)                          {}
func (NopObserver) SourceEnd(source.LSN)                      {}
func (NopObserver) Acked(source.LSN)                          {}
func (NopObserver) SlotChecked(source.SlotState, error)       {}
func (NopObserver) ResyncStarted(error)                       {}
func (NopObserver) ResyncFinished(error, time.Duration)       {}
func (NopObserver) Beat(time.Time)                            {}
func (NopObserver) DDLRejected(RejectedDDL)                   {}

// observer is the Observer cfg asks for: its Observer and OnSlotCheck
// together, or one that hears nothing.
func observer(cfg Config) Observer {
	var list Observers
	if cfg.Observer != nil {
		list = append(list, cfg.Observer)
	}
	if cfg.OnSlotCheck != nil {
		list = append(list, slotCheckObserver{fn: cfg.OnSlotCheck})
	}
	switch len(list) {
	case 0:
		return NopObserver{}
	case 1:
		return list[0]
	}
	return list
}
