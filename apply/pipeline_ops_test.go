package apply

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source"
)

// retryLog records the waits the pipeline announces before resuming.
type retryLog struct {
	mu    sync.Mutex
	waits []string
}

func (l *retryLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *retryLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *retryLog) WithGroup(string) slog.Handler            { return l }
func (l *retryLog) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "retry_in" {
			l.mu.Lock()
			l.waits = append(l.waits, a.Value.String())
			l.mu.Unlock()
		}
		return true
	})
	return nil
}

func (l *retryLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.waits, " ")
}

// TestBackoffResetsAfterACommit: sessions that each commit a transaction
// before the connection drops start every wait from the first backoff;
// sessions that fail without committing double it.
func TestBackoffResetsAfterACommit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		commit bool
		want   string
	}{
		{"each session commits", true, "1ms 1ms 1ms 1ms 1ms"},
		{"no session commits", false, "1ms 2ms 4ms 8ms 16ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &fakeSource{server: source.Server{SystemID: "sys", WALEnd: 0x608}}
			var all []source.Chunk
			for i := range 6 {
				if tc.commit || i == 5 {
					all = append(all, txn(uint64(i+1), source.LSN(0x100*(i+1)), 1)...)
				}
				end := error(io.ErrUnexpectedEOF) // the connection drops after each session's work
				if i == 5 {
					end = nil
				}
				// The server sends everything again from the checkpoint;
				// what the target has is skipped.
				src.sessions = append(src.sessions, script{chunks: append([]source.Chunk(nil), all...), end: end})
			}
			tgt := &recordingTarget{cp: checkpoint.Row{SystemID: "sys", End: 0x10}}
			log := &retryLog{}
			p := New(Config{CatchUp: true, IdleAdvance: time.Nanosecond, Backoff: time.Millisecond, Logger: slog.New(log)}, src, tgt)
			if err := p.Run(t.Context()); err != nil {
				t.Fatal(err)
			}
			if got := log.String(); got != tc.want {
				t.Errorf("waits before resuming: %s, want %s", got, tc.want)
			}
			if p.Acked() != 0x608 {
				t.Errorf("acked %s, want 0/608", p.Acked())
			}
		})
	}
}

// TestSlotAheadWhileAnotherRunApplies: the reader finds the slot confirmed
// past the checkpoint the session began with, but the checkpoint read
// again after the slot has caught up with it (another run applied
// meanwhile): the pipeline starts again from the fresh checkpoint.
func TestSlotAheadWhileAnotherRunApplies(t *testing.T) {
	tgt := &recordingTarget{cp: checkpoint.Row{SystemID: "sys", End: 0x108}}
	src := &fakeSource{
		server: source.Server{SystemID: "sys", WALEnd: 0x308},
		sessions: []script{
			{before: func() { // the other run commits txn 2 and confirms it
				tgt.mu.Lock()
				tgt.cp.End = 0x208
				tgt.mu.Unlock()
			}, end: &source.SlotAheadError{Slot: "s", Confirmed: 0x208, Start: 0x108}},
			{chunks: chunks(txn(2, 0x200, 1), txn(3, 0x300, 1))},
		},
	}
	p := New(Config{CatchUp: true, IdleAdvance: time.Nanosecond}, src, tgt)
	if err := p.Run(t.Context()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(src.starts) != 2 || src.starts[1] != 0x208 {
		t.Errorf("stream starts %v, want the second from the fresh checkpoint 0/208", src.starts)
	}
	if strings.Contains(tgt.calls(), "apply 2") || !strings.Contains(tgt.calls(), "apply 3×1") {
		t.Errorf("calls: %s", tgt.calls())
	}
}

// TestSlotAheadKeepsBusyUntilSlotWait: while another run keeps moving slot
// and checkpoint, the pipeline waits no longer than SlotWait and then
// says that another session uses the slot.
func TestSlotAheadKeepsBusyUntilSlotWait(t *testing.T) {
	tgt := &recordingTarget{cp: checkpoint.Row{SystemID: "sys", End: 0x108}}
	src := &fakeSource{server: source.Server{SystemID: "sys", WALEnd: 0x10000}}
	for i := range 20 {
		moved := source.LSN(0x208 + 0x100*i)
		busy := script{end: &source.SlotBusyError{Slot: "s", PID: 7}}
		ahead := script{before: func() {
			tgt.mu.Lock()
			tgt.cp.End = moved
			tgt.mu.Unlock()
		}, end: &source.SlotAheadError{Slot: "s", Confirmed: moved, Start: moved - 0x100}}
		src.sessions = append(src.sessions, busy, ahead)
	}
	p := New(Config{SlotWait: 600 * time.Millisecond}, src, tgt)
	start := time.Now()
	err := p.Run(t.Context())
	if err == nil || !strings.Contains(err.Error(), "still uses the slot") || strings.Contains(err.Error(), "consumed") {
		t.Fatalf("Run returned %v, want the slot-wait error", err)
	}
	if took := time.Since(start); took < 600*time.Millisecond || took > 5*time.Second {
		t.Errorf("gave up after %s, want after SlotWait 600ms", took)
	}
}

// TestSlotConsumedIsPermanent: the checkpoint read after the slot is still
// behind what the slot confirmed: the transactions in between are lost,
// and the error says so with the fresh checkpoint.
func TestSlotConsumedIsPermanent(t *testing.T) {
	tgt := &recordingTarget{cp: checkpoint.Row{SystemID: "sys", End: 0x108}}
	src := &fakeSource{
		server:   source.Server{SystemID: "sys", WALEnd: 0x308},
		sessions: []script{{end: &source.SlotAheadError{Slot: "s", Confirmed: 0x300, Start: 0x108}}},
	}
	err := New(Config{}, src, tgt).Run(t.Context())
	var ahead *source.SlotAheadError
	if !errors.As(err, &ahead) || ahead.Start != 0x108 || !strings.Contains(err.Error(), "consumed") {
		t.Fatalf("Run returned %v, want the consumed-slot error", err)
	}
	if len(src.starts) != 1 {
		t.Errorf("streamed %d times, want once", len(src.starts))
	}
}

// TestRetryForGivesUp: sessions that keep failing without a commit end
// Run with a *GaveUpError once RetryFor has passed; a session that
// commits starts the count again.
func TestRetryForGivesUp(t *testing.T) {
	src := &fakeSource{server: source.Server{SystemID: "sys", WALEnd: 0x608}}
	src.sessions = append(src.sessions, script{chunks: txn(1, 0x100, 1), end: io.ErrUnexpectedEOF})
	for range 200 {
		src.sessions = append(src.sessions, script{end: io.ErrUnexpectedEOF})
	}
	tgt := &recordingTarget{cp: checkpoint.Row{SystemID: "sys", End: 0x10}}
	p := New(Config{IdleAdvance: time.Nanosecond, Backoff: time.Millisecond, RetryFor: 30 * time.Millisecond}, src, tgt)
	began := time.Now()
	err := p.Run(t.Context())
	if !GaveUp(err) || NeedsPerson(err) || !strings.Contains(err.Error(), "--retry-for") {
		t.Fatalf("Run ended with %v, want a GaveUpError naming --retry-for", err)
	}
	if took := time.Since(began); took < 30*time.Millisecond || took > 5*time.Second {
		t.Errorf("gave up after %s, want a little over RetryFor", took)
	}
	if p.Acked() <= 0x100 {
		t.Errorf("acked %s, want past the transaction committed at 0/100", p.Acked())
	}
}
