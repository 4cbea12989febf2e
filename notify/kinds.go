package notify

import (
	"fmt"
	"time"
)

// One method per kind, for the code that sees it happen. Each is Send
// with the kind's fields filled.

// PipelineStopped reports that the pipeline stopped on an error; message
// is the error's one line.
func (n *Notifier) PipelineStopped(message string, at At) {
	n.Send(Event{Kind: PipelineStopped, Message: message, LSN: at.LSN, Xid: at.Xid, Table: at.Table})
}

// Recovered reports that the pipeline streams again after a transient
// failure, the one in lastError, and how many reconnects it took.
func (n *Notifier) Recovered(reconnects int, lastError string) {
	n.Send(Event{Kind: Recovered, Message: fmt.Sprintf("streaming again after %d reconnect(s); the last failure: %s", reconnects, lastError)})
}

// ObserveLag takes each lag measurement and sends lag_high when it first
// exceeds Config.AlertLag, then lag_ok when it is back under it: one
// event per crossing, not one per measurement.
func (n *Notifier) ObserveLag(lag time.Duration) {
	if n == nil || n.cfg.AlertLag == 0 {
		return
	}
	n.alarm.Lock()
	high := lag > n.cfg.AlertLag
	changed := high != n.lagHigh
	n.lagHigh = high
	n.alarm.Unlock()
	if !changed {
		return
	}
	secs := lag.Seconds()
	if high {
		n.Send(Event{Kind: LagHigh, LagSeconds: &secs, Message: fmt.Sprintf("replication lag %s is over --alert-lag %s", lag.Round(time.Second), n.cfg.AlertLag)})
		return
	}
	n.Send(Event{Kind: LagOK, LagSeconds: &secs, Message: fmt.Sprintf("replication lag %s is back under --alert-lag %s", lag.Round(time.Second), n.cfg.AlertLag)})
}

// ObserveSlot takes each reading of the slot's wal_status and sends
// slot_unreserved or slot_lost when the status becomes one of them.
func (n *Notifier) ObserveSlot(slot, walStatus string) {
	if n == nil {
		return
	}
	n.alarm.Lock()
	changed := walStatus != n.walStatus
	n.walStatus = walStatus
	n.alarm.Unlock()
	if !changed {
		return
	}
	switch walStatus {
	case "unreserved":
		n.Send(Event{Kind: SlotUnreserved, WALStatus: walStatus, Message: fmt.Sprintf("the source no longer reserves WAL for slot %s (wal_status unreserved, past max_slot_wal_keep_size): its next checkpoint may invalidate the slot unless decant catches up first", slot)})
	case "lost":
		n.Send(Event{Kind: SlotLost, WALStatus: walStatus, Message: fmt.Sprintf("the source invalidated slot %s (wal_status lost): decant resync, then decant run", slot)})
	}
}

// ResyncStarted says that run --on-slot-lost resync repairs the target
// because of lost, the slot's error.
func (n *Notifier) ResyncStarted(lost string) {
	n.Send(Event{Kind: ResyncStarted, Message: "resyncing the target from a new slot (--on-slot-lost resync): " + lost})
}

// ResyncFinished says how that repair ended: err nil, streaming goes on.
func (n *Notifier) ResyncFinished(err error, took time.Duration) {
	if err != nil {
		n.Send(Event{Kind: ResyncFinished, Message: fmt.Sprintf("resync failed after %s: %v", took.Round(time.Second), err)})
		return
	}
	n.Send(Event{Kind: ResyncFinished, Message: fmt.Sprintf("resync done in %s: the target equals the source as of the new slot, and streaming goes on from it", took.Round(time.Second))})
}

// DDLRejected reports a schema change the pipeline refused: the
// transaction's commit and xid, and why (never the event's content).
func (n *Notifier) DDLRejected(commit string, xid uint64, reason string) {
	n.Send(Event{Kind: DDLRejected, LSN: commit, Xid: xid, Message: "schema change from the stream not applied; streaming goes on: " + reason})
}

// CopyFinished reports that the initial copy of tables tables ended
// after took; streaming starts next.
func (n *Notifier) CopyFinished(tables int, took time.Duration) {
	n.Send(Event{Kind: CopyFinished, Message: fmt.Sprintf("initial copy finished: %d table(s) in %s", tables, took.Round(time.Second))})
}

// Cutover reports cutover's verdict: safe, or not and why.
func (n *Notifier) Cutover(safe bool, message string) {
	kind := CutoverUnsafe
	if safe {
		kind = CutoverSafe
	}
	n.Send(Event{Kind: kind, Message: message})
}
