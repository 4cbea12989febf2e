package migrate

import (
	"strings"
	"testing"
	"time"

	"github.com/decant/decant/source"
)

// TestResyncWaitsForActiveSlot: within SlotWait, resync waits for an
// active slot to come free (run --on-slot-lost resync calls it as its own
// stream ends); without, an active slot is refused at once, naming the
// PID that holds it.
func TestResyncWaitsForActiveSlot(t *testing.T) {
	w := newWorld(t)
	w.slot = source.SlotStatus{Exists: true, Active: true, ActivePID: 9}
	w.releaseAfter = 2
	slot, err := w.env().inactiveSlot(t.Context(), &fakeSource{w}, 10*time.Second)
	if err != nil || slot.Active || w.slotReads != 3 {
		t.Fatalf("inactiveSlot = %+v, %v after %d reads; want the slot free after 3", slot, err, w.slotReads)
	}
	w.slot.Active, w.releaseAfter = true, 0
	_, err = w.env().inactiveSlot(t.Context(), &fakeSource{w}, 0)
	if err == nil || !strings.Contains(err.Error(), "slot p is in use (PID 9 on the source)") {
		t.Errorf("inactiveSlot without a wait = %v, want the slot in use", err)
	}
}
