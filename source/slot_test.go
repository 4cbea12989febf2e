package source

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestSlotCheck: each state a slot can be in, judged against what the
// target holds, and what the error says.
func TestSlotCheck(t *testing.T) {
	held := Held{Pipeline: "p1", Start: 0x2000, Timeline: 1}
	for _, tc := range []struct {
		name string
		st   SlotState
		held Held
		want []string // in the error; nil: no error
	}{
		{"fine", SlotState{Slot: "p1", Exists: true, Confirmed: 0x2000, Restart: 0x1000, HasRestart: true, WALStatus: "reserved", Timeline: 1}, held, nil},
		{"behind is fine", SlotState{Slot: "p1", Exists: true, Confirmed: 0x1800, Restart: 0x1000, HasRestart: true, WALStatus: "extended", Timeline: 1}, held, nil},
		{"unreserved is no error", SlotState{Slot: "p1", Exists: true, Confirmed: 0x2000, Restart: 0x1000, HasRestart: true, WALStatus: "unreserved", Timeline: 1}, held, nil},
		{"no wal_status column", SlotState{Slot: "p1", Exists: true, Confirmed: 0x2000}, held, nil},
		{"dropped", SlotState{Slot: "p1", Timeline: 1, WALEnd: 0x9000}, held,
			[]string{"slot p1 does not exist", "still on timeline 1", "likely dropped", "checkpoint is 0/2000", "recorded on timeline 1", "0/9000", "decant resync --pipeline p1 --yes, then decant run"}},
		{"failed over", SlotState{Slot: "p1", Timeline: 2, WALEnd: 0x9000}, held,
			[]string{"slot p1 does not exist", "failed over", "from 1 to 2", "checkpoint is 0/2000", "decant resync --pipeline p1 --yes, then decant run"}},
		{"no timeline recorded", SlotState{Slot: "p1", Timeline: 3}, Held{Pipeline: "p1", Start: 0x2000},
			[]string{"dropped, or the source failed over", "recorded on timeline unknown", "timeline 3"}},
		{"lost", SlotState{Slot: "p1", Exists: true, Confirmed: 0x2000, HasRestart: true, WALStatus: "lost", Timeline: 1}, held,
			[]string{"slot p1 was invalidated", "wal_status lost", "confirmed 0/2000", "checkpoint is 0/2000", "max_slot_wal_keep_size", "decant resync --pipeline p1 --yes, then decant run"}},
		{"restart_lsn null", SlotState{Slot: "p1", Exists: true, Confirmed: 0x2000, HasRestart: true, Timeline: 1}, held,
			[]string{"restart_lsn is null"}},
		{"ahead", SlotState{Slot: "p1", Exists: true, Confirmed: 0x3000, Restart: 0x1000, HasRestart: true, WALStatus: "reserved"}, held,
			[]string{"slot p1 confirmed 0/3000 but the target's checkpoint is 0/2000", "consumed", "decant resync --pipeline p1 --yes, then decant run"}},
		{"ahead while running", SlotState{Slot: "p1", Exists: true, Confirmed: 0x3000}, Held{Pipeline: "p1", Start: 0x2000, Running: true},
			[]string{"while decant ran"}},
		{"ahead by CSN", SlotState{Slot: "g", Exists: true, ByCSN: true, ConfirmedCSN: 12, Confirmed: 0x1}, Held{Start: 0x9999, StartCSN: 10},
			[]string{"confirmed CSN 12", "checkpoint is CSN 10", "--pipeline g"}},
		{"CSN slot ignores LSNs", SlotState{Slot: "g", Exists: true, ByCSN: true, ConfirmedCSN: 10, Confirmed: 0x9999}, Held{Start: 0x1, StartCSN: 10}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.st.Check(tc.held)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Check: %v, want none", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Check: no error")
			}
			if !NeedsPerson(err) {
				t.Errorf("%v: NeedsPerson false", err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q: not one line", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestNeedsPerson: only errors that say so, also wrapped.
func TestNeedsPerson(t *testing.T) {
	if NeedsPerson(nil) || NeedsPerson(errors.New("x")) || NeedsPerson(&SlotBusyError{Slot: "s"}) {
		t.Error("NeedsPerson of an ordinary error")
	}
	if !NeedsPerson(errors.Join(errors.New("run"), &SpillFullError{Err: errors.New("no space")})) {
		t.Error("a wrapped full spill directory does not need a person")
	}
	if !(SlotState{WALStatus: "unreserved"}).Unreserved() || (SlotState{WALStatus: "extended"}).Unreserved() {
		t.Error("Unreserved")
	}
}

// TestLostSlot: the three slot errors resync recovers from, also
// wrapped; nothing else.
func TestLostSlot(t *testing.T) {
	for _, err := range []error{&SlotMissingError{Slot: "s"}, &SlotLostError{Slot: "s"}, fmt.Errorf("session: %w", &SlotAheadError{Slot: "s"})} {
		if !LostSlot(err) {
			t.Errorf("LostSlot(%T) is false", err)
		}
	}
	for _, err := range []error{nil, errors.New("x"), &SlotBusyError{Slot: "s"}, &SpillFullError{Err: errors.New("no space")}} {
		if LostSlot(err) {
			t.Errorf("LostSlot(%v) is true", err)
		}
	}
}
