package source

import "fmt"

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

// ConsumedAdvice is how to recover once a slot was consumed past what the
// target holds: the transactions in between cannot be streamed again.
const ConsumedAdvice = "rebuild the pipeline: run decant drop and init again, then recopy the tables"

// SlotAheadError says that the slot's confirmed position is past the
// resume position a reader was asked to stream from. Taken alone it is
// not proof of a loss: the checkpoint the request names was read before
// the slot, and a run of the same pipeline may have moved both since. The
// pipeline, which owns the checkpoint, reads it again after the slot: by
// the never-ahead invariant (a position is confirmed only once the
// target committed it) a checkpoint read after the slot is at or past the
// slot's confirmed position unless something else consumed the slot.
type SlotAheadError struct {
	Slot string
	// ByCSN: the slot is CSN-ordered and the CSN fields count, not the
	// LSN ones.
	ByCSN                  bool
	Confirmed, Start       LSN
	ConfirmedCSN, StartCSN uint64
}

func (e *SlotAheadError) Error() string {
	if e.ByCSN {
		return fmt.Sprintf("slot %s confirmed CSN %d but the target's checkpoint is CSN %d: something else consumed or advanced the slot and the transactions in between were never applied; %s",
			e.Slot, e.ConfirmedCSN, e.StartCSN, ConsumedAdvice)
	}
	return fmt.Sprintf("slot %s confirmed %s but the target's checkpoint is %s: something else consumed or advanced the slot and the transactions in between were never applied; %s",
		e.Slot, e.Confirmed, e.Start, ConsumedAdvice)
}

// Covered reports whether a checkpoint at resume position start (and
// commit CSN startCSN), read after the slot, has everything the slot
// confirmed: then no transaction was lost.
func (e *SlotAheadError) Covered(start LSN, startCSN uint64) bool {
	if e.ByCSN {
		return startCSN >= e.ConfirmedCSN
	}
	return start >= e.Confirmed
}
