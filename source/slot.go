package source

import (
	"errors"
	"fmt"
)

// SlotBusyError says that another session holds the replication slot: a
// live run of the same pipeline, or the walsender of a previous run that
// has not yet noticed its client died. Readers return it when the slot is
// active before they start streaming, as the source's START_REPLICATION
// would (SQLSTATE 55006); the condition passes once the other session
// ends, so it is worth retrying.
type SlotBusyError struct {
	Slot string
	PID  int // the holding process on the source; 0 when unknown
}

func (e *SlotBusyError) Error() string {
	if e.PID != 0 {
		return fmt.Sprintf("replication slot %s is active for PID %d on the source", e.Slot, e.PID)
	}
	return fmt.Sprintf("replication slot %s is active on the source", e.Slot)
}

// Retryable: the slot comes free when the other session ends.
func (e *SlotBusyError) Retryable() bool { return true }

// ResyncAdvice is how to recover once the slot can no longer stream what
// the target lacks (consumed past the checkpoint, dropped, invalidated):
// the transactions in between cannot be streamed again, so decant resync
// makes a new slot and repairs the target as of its snapshot, copying
// only what differs.
func ResyncAdvice(pipeline string) string {
	return fmt.Sprintf("repair the target from a new slot: decant resync --pipeline %s --yes, then decant run", pipeline)
}

// SlotAheadError says that the slot's confirmed position is past the
// resume position a reader was asked to stream from. Taken alone it is
// not proof of a loss: the checkpoint the request names was read before
// the slot, and a run of the same pipeline may have moved both since. The
// pipeline, which owns the checkpoint, reads it again after the slot: by
// the never-ahead invariant (a position is confirmed only once the
// target committed it) a checkpoint read after the slot is at or past the
// slot's confirmed position unless something else consumed the slot.
type SlotAheadError struct {
	Slot     string
	Pipeline string // for the advice; the slot's name when empty
	// ByCSN: the slot is CSN-ordered and the CSN fields count, not the
	// LSN ones.
	ByCSN                  bool
	Confirmed, Start       LSN
	ConfirmedCSN, StartCSN uint64
	// Running: found by a check while streaming, against the position
	// acknowledged so far, rather than at the stream's start.
	Running bool
}

func (e *SlotAheadError) Error() string {
	pos := fmt.Sprintf("confirmed %s but the target's checkpoint is %s", e.Confirmed, e.Start)
	if e.ByCSN {
		pos = fmt.Sprintf("confirmed CSN %d but the target's checkpoint is CSN %d", e.ConfirmedCSN, e.StartCSN)
	}
	when := ""
	if e.Running {
		when = " while decant ran"
	}
	return fmt.Sprintf("slot %s %s: something else consumed or advanced the slot%s (or dropped and made it again) and the transactions in between were never applied; %s",
		e.Slot, pos, when, ResyncAdvice(orSlot(e.Pipeline, e.Slot)))
}

// NeedsPerson: the gap does not close by itself.
func (e *SlotAheadError) NeedsPerson() bool { return true }

// Covered reports whether a checkpoint at resume position start (and
// commit CSN startCSN), read after the slot, has everything the slot
// confirmed: then no transaction was lost.
func (e *SlotAheadError) Covered(start LSN, startCSN uint64) bool {
	if e.ByCSN {
		return startCSN >= e.ConfirmedCSN
	}
	return start >= e.Confirmed
}

// SlotState is what the source says about a pipeline's slot, read at
// every stream start and periodically while streaming.
type SlotState struct {
	Slot   string
	Exists bool
	ByCSN  bool // CSN-ordered (GaussDB): the CSN fields count
	// Confirmed and ConfirmedCSN are the slot's confirmed_flush position.
	Confirmed    LSN
	ConfirmedCSN uint64
	// Restart is restart_lsn, 0 when the source reports none (an
	// invalidated slot); HasRestart says the reader read the column.
	Restart    LSN
	HasRestart bool
	// WALStatus is wal_status (PostgreSQL 13+): reserved, extended,
	// unreserved or lost; "" where the server has no such column.
	WALStatus string
	// Timeline and WALEnd are the source's (IDENTIFY_SYSTEM).
	Timeline uint32
	WALEnd   LSN
}

// Held is what the target holds for a pipeline: the slot must not be
// confirmed past it, and must still be able to stream from it.
type Held struct {
	Pipeline string
	Start    LSN
	StartCSN uint64
	// Timeline is the source's timeline recorded with the checkpoint; 0
	// when none was recorded.
	Timeline uint32
	// Running: the check runs while streaming (Start is the position
	// acknowledged so far), not at a stream's start.
	Running bool
}

// Unreserved reports a slot whose WAL the source no longer promises to
// keep (past max_slot_wal_keep_size): the next checkpoint on the source
// may remove it and invalidate the slot.
func (s SlotState) Unreserved() bool { return s.WALStatus == "unreserved" }

// Check refuses a slot that cannot stream everything the target lacks: a
// missing one (*SlotMissingError), an invalidated one (*SlotLostError),
// one confirmed past what the target holds (*SlotAheadError). Readers
// check plugin and activity themselves; Check judges positions only.
func (s SlotState) Check(h Held) error {
	if !s.Exists {
		return &SlotMissingError{Slot: s.Slot, Pipeline: h.Pipeline, ByCSN: s.ByCSN, Start: h.Start, StartCSN: h.StartCSN,
			Recorded: h.Timeline, Timeline: s.Timeline, WALEnd: s.WALEnd}
	}
	if s.WALStatus == "lost" || (s.HasRestart && s.Restart == 0) {
		return &SlotLostError{Slot: s.Slot, Pipeline: h.Pipeline, WALStatus: s.WALStatus, ByCSN: s.ByCSN,
			Confirmed: s.Confirmed, ConfirmedCSN: s.ConfirmedCSN, Start: h.Start, StartCSN: h.StartCSN}
	}
	if (!s.ByCSN && s.Confirmed > h.Start) || (s.ByCSN && s.ConfirmedCSN > h.StartCSN) {
		return &SlotAheadError{Slot: s.Slot, Pipeline: h.Pipeline, ByCSN: s.ByCSN, Running: h.Running,
			Confirmed: s.Confirmed, Start: h.Start, ConfirmedCSN: s.ConfirmedCSN, StartCSN: h.StartCSN}
	}
	return nil
}

// SlotMissingError says that the pipeline's slot is gone from the source
// although the target holds a checkpoint of it: dropped, or the source
// failed over to a server that has no copy of it (PostgreSQL before 17
// copies no logical slot to a standby). The source's timeline against the
// one recorded with the checkpoint tells which is likely: a promotion
// starts a new timeline, a drop does not.
type SlotMissingError struct {
	Slot, Pipeline string
	ByCSN          bool
	Start          LSN
	StartCSN       uint64
	// Recorded is the timeline recorded with the checkpoint (0: none),
	// Timeline and WALEnd the source's now.
	Recorded, Timeline uint32
	WALEnd             LSN
}

func (e *SlotMissingError) Error() string {
	held := fmt.Sprintf("checkpoint is %s", e.Start)
	if e.ByCSN {
		held = fmt.Sprintf("checkpoint is CSN %d", e.StartCSN)
	}
	return fmt.Sprintf("slot %s does not exist on the source: %s; the target's %s (recorded on timeline %s), the source is at %s on timeline %d, and the transactions after the checkpoint cannot be streamed again; %s",
		e.Slot, e.Likely(), held, timelineText(e.Recorded), e.WALEnd, e.Timeline, ResyncAdvice(orSlot(e.Pipeline, e.Slot)))
}

// Likely says which loss the timelines point to.
func (e *SlotMissingError) Likely() string {
	switch {
	case e.Recorded == 0:
		return "it was dropped, or the source failed over to a server without a copy of it (no timeline was recorded with the checkpoint to tell which)"
	case e.Timeline > e.Recorded:
		return fmt.Sprintf("the source likely failed over (its timeline moved from %d to %d) to a server without a copy of the slot", e.Recorded, e.Timeline)
	case e.Timeline < e.Recorded:
		return fmt.Sprintf("the source is on an older timeline (%d) than the checkpoint recorded (%d): it is likely another server of the cluster, restored from a backup, without the slot", e.Timeline, e.Recorded)
	}
	return fmt.Sprintf("the source is still on timeline %d, so the slot was likely dropped", e.Timeline)
}

// NeedsPerson: a slot does not come back by itself.
func (e *SlotMissingError) NeedsPerson() bool { return true }

// Retryable: the next session would find no slot either.
func (e *SlotMissingError) Retryable() bool { return false }

// SlotLostError says that the source invalidated the slot (wal_status
// lost, or no restart_lsn): it removed WAL the slot still needed, having
// kept no more than max_slot_wal_keep_size for it.
type SlotLostError struct {
	Slot, Pipeline         string
	WALStatus              string
	ByCSN                  bool
	Confirmed, Start       LSN
	ConfirmedCSN, StartCSN uint64
}

func (e *SlotLostError) Error() string {
	why := "wal_status lost"
	if e.WALStatus != "lost" {
		why = "restart_lsn is null"
	}
	pos := fmt.Sprintf("the slot confirmed %s and the target's checkpoint is %s", e.Confirmed, e.Start)
	if e.ByCSN {
		pos = fmt.Sprintf("the slot confirmed CSN %d and the target's checkpoint is CSN %d", e.ConfirmedCSN, e.StartCSN)
	}
	return fmt.Sprintf("slot %s was invalidated by the source (%s): it removed WAL the slot still needed (see max_slot_wal_keep_size); %s, and the transactions after the checkpoint cannot be streamed again; %s",
		e.Slot, why, pos, ResyncAdvice(orSlot(e.Pipeline, e.Slot)))
}

// NeedsPerson: removed WAL does not come back.
func (e *SlotLostError) NeedsPerson() bool { return true }

// Retryable: the next session would find the same slot.
func (e *SlotLostError) Retryable() bool { return false }

func timelineText(tl uint32) string {
	if tl == 0 {
		return "unknown"
	}
	return fmt.Sprint(tl)
}

func orSlot(pipeline, slot string) string {
	if pipeline != "" {
		return pipeline
	}
	return slot
}

// NeedsPerson reports whether err is one that neither waiting nor a
// retry can clear (a full spill directory, a slot that cannot stream what
// the target lacks): a supervisor should not restart decant on it but
// call a person. decant run exits with code 3 for these.
func NeedsPerson(err error) bool {
	var n interface{ NeedsPerson() bool }
	return errors.As(err, &n) && n.NeedsPerson()
}

// LostSlot reports whether err says that the slot can no longer stream
// what the target lacks: it is missing (*SlotMissingError), invalidated
// (*SlotLostError) or confirmed past the checkpoint (*SlotAheadError).
// These are what decant resync recovers from.
func LostSlot(err error) bool {
	var missing *SlotMissingError
	var lost *SlotLostError
	var ahead *SlotAheadError
	return errors.As(err, &missing) || errors.As(err, &lost) || errors.As(err, &ahead)
}
