package apply

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source"
)

// TestOnSlotLost: a session that finds its slot gone hands it to
// OnSlotLost with the target closed; after a repair (nil) the next
// session streams from the checkpoint it left, a transient failure of
// the repair is retried like a session's, and a permanent one stops the
// pipeline with both said.
func TestOnSlotLost(t *testing.T) {
	missing := &source.SlotMissingError{Slot: "p1", Pipeline: "p1", Recorded: 1, Timeline: 2}
	for _, tc := range []struct {
		name    string
		repairs []error // what OnSlotLost returns, call by call
		wantErr string  // "" for a clean catch-up
	}{
		{name: "repaired", repairs: []error{nil}},
		{name: "transient then repaired", repairs: []error{io.ErrUnexpectedEOF, nil}},
		{name: "permanent", repairs: []error{errors.New("table public.t: no key")}, wantErr: "resync after the slot was lost (--on-slot-lost resync): table public.t: no key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tgt := &recordingTarget{cp: checkpoint.Row{Pipeline: "p1", SystemID: "sys", End: 0x100}}
			src := &fakeSource{server: source.Server{SystemID: "sys", WALEnd: 0x3008, Timeline: 2}}
			// Every session before the repair finds the slot missing.
			for range tc.repairs {
				src.sessions = append(src.sessions, script{end: missing})
			}
			src.sessions = append(src.sessions, script{chunks: txn(7, 0x3000, 2)})
			obs := &recordingObserver{}
			calls := 0
			p := New(Config{CatchUp: true, IdleAdvance: time.Nanosecond, Backoff: time.Millisecond, Observer: obs,
				OnSlotLost: func(_ context.Context, err error) error {
					if !errors.Is(err, missing) {
						t.Errorf("OnSlotLost heard %v, want the missing slot", err)
					}
					r := tc.repairs[calls]
					calls++
					if r == nil {
						tgt.mu.Lock()
						tgt.cp = checkpoint.Row{Pipeline: "p1", SystemID: "sys", End: 0x2000}
						tgt.mu.Unlock()
					}
					return r
				}}, src, tgt)
			err := p.Run(t.Context())
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr || Classify(err) != ClassPermanent {
					t.Fatalf("Run: %v (%s), want %q, permanent", err, Classify(err), tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if calls != len(tc.repairs) {
				t.Errorf("OnSlotLost called %d times, want %d", calls, len(tc.repairs))
			}
			if last := src.starts[len(src.starts)-1]; last != 0x2000 {
				t.Errorf("the session after the repair streamed from %s, want 0/2000", last)
			}
			if tgt.cp.End != 0x3008 || tgt.cp.Xid != 7 {
				t.Errorf("checkpoint %s xid %d after the repair, want 0/3008 xid 7", tgt.cp.End, tgt.cp.Xid)
			}
			obs.mu.Lock()
			defer obs.mu.Unlock()
			if len(obs.resyncs) != len(tc.repairs) || len(obs.resynced) != len(tc.repairs) || obs.resynced[len(obs.resynced)-1] != nil {
				t.Errorf("observer heard resyncs %v finished %v, want %d, the last without error", obs.resyncs, obs.resynced, len(tc.repairs))
			}
			if e := obs.ended[0]; e.Class != ClassNeedsPerson || !e.Retry || !strings.Contains(e.Err.Error(), "does not exist") {
				t.Errorf("first session end %+v, want the missing slot, needs_person, retried", e)
			}
		})
	}
}
