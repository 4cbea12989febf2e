package apply

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source"
)

// slotSource is a fakeSource that can read its slot aside (SlotReader)
// and remembers every stream request.
type slotSource struct {
	*fakeSource
	state func() (source.SlotState, error)
	mu    sync.Mutex
	reqs  []source.StreamRequest
}

var _ SlotReader = (*slotSource)(nil)

func (s *slotSource) SlotState(context.Context) (source.SlotState, error) { return s.state() }

func (s *slotSource) Stream(ctx context.Context, req source.StreamRequest, out chan<- source.Chunk) error {
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	s.mu.Unlock()
	return s.fakeSource.Stream(ctx, req, out)
}

// slotHeard records what OnSlotCheck is told.
type slotHeard struct {
	mu   sync.Mutex
	errs []error
	ok   int // checks that found the slot fine (or could not read it)
}

func (h *slotHeard) hear(_ source.SlotState, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		h.errs = append(h.errs, err)
	} else {
		h.ok++
	}
}

// TestSlotCheckStopsWhileRunning: while a session streams, the side
// check ignores a slot it cannot read and a slot at the acknowledged
// position, then finds the slot confirmed past everything applied and
// stops the pipeline with that error, permanent and needing a person;
// nothing is acknowledged past what was applied.
func TestSlotCheckStopsWhileRunning(t *testing.T) {
	tgt := &recordingTarget{cp: checkpoint.Row{Pipeline: "p1", SystemID: "sys", End: 0x10}}
	var mu sync.Mutex
	reads := 0
	src := &slotSource{fakeSource: &fakeSource{
		server:   source.Server{SystemID: "sys", WALEnd: 0x9000, Timeline: 1},
		sessions: []script{{chunks: txn(1, 0x100, 1)}}, // then the stream stays open
	}}
	src.state = func() (source.SlotState, error) {
		mu.Lock()
		defer mu.Unlock()
		reads++
		tgt.mu.Lock()
		applied := tgt.cp.End
		tgt.mu.Unlock()
		switch {
		case reads == 1:
			return source.SlotState{}, io.ErrUnexpectedEOF
		case applied < 0x108 || reads < 4:
			return source.SlotState{Slot: "p1", Exists: true, Confirmed: applied, HasRestart: true, Restart: 0x10, WALStatus: "reserved", Timeline: 1}, nil
		}
		return source.SlotState{Slot: "p1", Exists: true, Confirmed: 0x5000, HasRestart: true, Restart: 0x10, WALStatus: "reserved", Timeline: 1}, nil
	}
	heard := &slotHeard{}
	p := New(Config{IdleAdvance: time.Nanosecond, SlotCheck: 5 * time.Millisecond, OnSlotCheck: heard.hear}, src, tgt)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	err := p.Run(ctx)
	var ahead *source.SlotAheadError
	if !errors.As(err, &ahead) || !ahead.Running || ahead.Confirmed != 0x5000 {
		t.Fatalf("Run returned %v, want the slot-ahead error found while running", err)
	}
	if Transient(err) || !source.NeedsPerson(err) {
		t.Errorf("%v: transient %v, needs a person %v", err, Transient(err), source.NeedsPerson(err))
	}
	if !strings.Contains(err.Error(), "0/5000") || !strings.Contains(err.Error(), "0/108") || !strings.Contains(err.Error(), "decant resync --pipeline p1 --yes, then decant run") {
		t.Errorf("error %q lacks the positions or the way back", err)
	}
	if p.Acked() != 0x108 {
		t.Errorf("acked %s, want 0/108 (txn 1 only)", p.Acked())
	}
	heard.mu.Lock()
	defer heard.mu.Unlock()
	if len(heard.errs) != 1 || !errors.As(heard.errs[0], &ahead) || heard.ok < 3 {
		t.Errorf("OnSlotCheck heard %d fine checks and errors %v", heard.ok, heard.errs)
	}
	if len(src.starts) != 1 {
		t.Errorf("streamed %d times, want once: the verdict is not retried", len(src.starts))
	}
}

// TestSlotCheckMissingWhileRunning: a side check that finds no slot on a
// server whose timeline moved on since the session started says that the
// source likely failed over.
func TestSlotCheckMissingWhileRunning(t *testing.T) {
	tgt := &recordingTarget{cp: checkpoint.Row{Pipeline: "p1", SystemID: "sys", End: 0x10, Timeline: 1}}
	src := &slotSource{fakeSource: &fakeSource{server: source.Server{SystemID: "sys", WALEnd: 0x9000, Timeline: 2}}}
	src.state = func() (source.SlotState, error) {
		return source.SlotState{Slot: "p1", Timeline: 3, WALEnd: 0xA000}, nil
	}
	err := New(Config{SlotCheck: time.Millisecond}, src, tgt).Run(t.Context())
	var missing *source.SlotMissingError
	if !errors.As(err, &missing) || !strings.Contains(err.Error(), "from 2 to 3") || !source.NeedsPerson(err) {
		t.Fatalf("Run returned %v, want the missing-slot error naming timelines 2 and 3", err)
	}
}

// TestSlotCheckOff: a negative SlotCheck never reads the slot.
func TestSlotCheckOff(t *testing.T) {
	tgt := &recordingTarget{cp: checkpoint.Row{Pipeline: "p1", SystemID: "sys", End: 0x10}}
	src := &slotSource{fakeSource: &fakeSource{
		server:   source.Server{SystemID: "sys", WALEnd: 0x108},
		sessions: []script{{chunks: txn(1, 0x100, 1)}},
	}}
	src.state = func() (source.SlotState, error) {
		t.Error("slot read with SlotCheck < 0")
		return source.SlotState{}, nil
	}
	if err := New(Config{CatchUp: true, IdleAdvance: time.Nanosecond, SlotCheck: -1}, src, tgt).Run(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// TestTimelineRecorded: a session records the source's timeline with the
// first checkpoint it writes, once its stream delivered something; a
// session whose stream failed to start records nothing, so the next one
// still asks with the timeline of the last that streamed.
func TestTimelineRecorded(t *testing.T) {
	tgt := &recordingTarget{cp: checkpoint.Row{Pipeline: "p1", SystemID: "sys", End: 0x10, Timeline: 1}}
	src := &slotSource{fakeSource: &fakeSource{
		server: source.Server{SystemID: "sys", WALEnd: 0x208, Timeline: 2},
		sessions: []script{
			{end: io.ErrUnexpectedEOF}, // before anything streamed
			{chunks: chunks(txn(1, 0x100, 1), txn(2, 0x200, 1))},
		},
	}}
	src.state = func() (source.SlotState, error) { return source.SlotState{}, nil }
	p := New(Config{CatchUp: true, IdleAdvance: time.Nanosecond, Backoff: time.Millisecond, SlotCheck: -1}, src, tgt)
	if err := p.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(src.reqs) != 2 || src.reqs[0].Timeline != 1 || src.reqs[1].Timeline != 1 {
		t.Errorf("stream requests %+v, want both with the recorded timeline 1", src.reqs)
	}
	if tgt.cp.Timeline != 2 || tgt.cp.End != 0x208 {
		t.Errorf("checkpoint %+v, want timeline 2 at 0/208", tgt.cp)
	}
}

// TestTimelineRecordedWhenIdle: with nothing to apply, an idle mark is
// enough to record a new timeline.
func TestTimelineRecordedWhenIdle(t *testing.T) {
	tgt := &recordingTarget{cp: checkpoint.Row{Pipeline: "p1", SystemID: "sys", End: 0x208, Timeline: 1}}
	src := &slotSource{fakeSource: &fakeSource{
		server:   source.Server{SystemID: "sys", WALEnd: 0x300, Timeline: 2},
		sessions: []script{{chunks: []source.Chunk{{End: 0x208}}}},
		sent:     make(chan struct{}),
	}}
	src.state = func() (source.SlotState, error) { return source.SlotState{}, nil }
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- New(Config{IdleAdvance: time.Nanosecond, SlotCheck: -1}, src, tgt).Run(ctx) }()
	<-src.sent
	deadline := time.After(10 * time.Second)
	for {
		tgt.mu.Lock()
		tl := tgt.cp.Timeline
		tgt.mu.Unlock()
		if tl == 2 {
			break
		}
		select {
		case <-deadline:
			t.Fatalf("timeline still %d; calls: %s", tl, tgt.calls())
		case <-time.After(time.Millisecond):
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
