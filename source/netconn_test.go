package source

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestBoundDo(t *testing.T) {
	b := Bound{Peer: "target", Setting: "--target-timeout", Timeout: 20 * time.Millisecond}
	wait := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }

	err := b.Do(t.Context(), "COMMIT", wait)
	var te *TimeoutError
	if !errors.As(err, &te) || te.Op != "COMMIT" || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("expired round trip: got %v, want a *TimeoutError for COMMIT wrapping the context's error", err)
	}
	if !te.Retryable() {
		t.Error("a timeout must be retryable")
	}
	for _, want := range []string{"COMMIT", "target", "20ms", "--target-timeout"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q does not name %q", err, want)
		}
	}

	// The caller's own cancellation is not a timeout.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := b.Do(ctx, "COMMIT", wait); errors.As(err, &te) || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled by the caller: got %v, want context.Canceled only", err)
	}
	// Other errors and success pass through.
	boom := errors.New("boom")
	if err := b.Do(t.Context(), "COMMIT", func(context.Context) error { return boom }); err != boom {
		t.Errorf("got %v, want boom", err)
	}
	if err := b.Do(t.Context(), "COMMIT", func(context.Context) error { return nil }); err != nil {
		t.Errorf("got %v", err)
	}
	// No bound: the context has no deadline.
	err = Bound{}.Do(t.Context(), "COMMIT", func(ctx context.Context) error {
		if _, ok := ctx.Deadline(); ok {
			return errors.New("deadline set")
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}

func TestWatch(t *testing.T) {
	b := Bound{Peer: "source", Setting: "--source-timeout", Timeout: 20 * time.Millisecond}
	ctx, w := b.Watch(t.Context(), "setting up")
	<-ctx.Done()
	err := w.Explain(ctx.Err())
	var te *TimeoutError
	if !errors.As(err, &te) || te.Op != "setting up" {
		t.Fatalf("got %v, want a *TimeoutError", err)
	}
	w.Release()

	ctx, w = b.Watch(t.Context(), "setting up")
	w.Disarm()
	time.Sleep(40 * time.Millisecond)
	if ctx.Err() != nil {
		t.Fatal("a disarmed watchdog ended the context")
	}
	w.Release()
	if ctx.Err() == nil {
		t.Fatal("Release did not end the context")
	}
	if err := w.Explain(ctx.Err()); errors.As(err, &te) {
		t.Errorf("released, not expired: got %v", err)
	}
}

func TestSilence(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s := Silence{Limit: 10 * time.Second}
	s.Heard(t0)
	steps := []struct {
		after        time.Duration
		ask, expired bool
	}{
		{4 * time.Second, false, false},
		{5 * time.Second, true, false}, // halfway: ask once
		{7 * time.Second, false, false},
		{10 * time.Second, false, true},
	}
	for _, st := range steps {
		ask, expired := s.Check(t0.Add(st.after))
		if ask != st.ask || expired != st.expired {
			t.Errorf("after %s: ask %v expired %v, want %v %v", st.after, ask, expired, st.ask, st.expired)
		}
	}
	// A message starts a new silence, with a new question.
	s.Heard(t0.Add(10 * time.Second))
	if ask, expired := s.Check(t0.Add(16 * time.Second)); !ask || expired {
		t.Errorf("new silence: ask %v expired %v", ask, expired)
	}
	// No limit: never.
	var none Silence
	if ask, expired := none.Check(t0.Add(time.Hour)); ask || expired {
		t.Error("Silence without a limit asked or expired")
	}
}

// TestUnarmed: the deadline of a round trip answered later starts at Arm,
// not when the request went.
func TestUnarmed(t *testing.T) {
	b := Bound{Peer: "target", Setting: "--target-timeout", Timeout: 20 * time.Millisecond}
	ctx, w := b.Unarmed(t.Context(), "a batch of statements")
	time.Sleep(40 * time.Millisecond) // the caller's own work
	if ctx.Err() != nil {
		t.Fatal("the deadline ran before Arm")
	}
	w.Arm()
	<-ctx.Done()
	var te *TimeoutError
	if err := w.Explain(ctx.Err()); !errors.As(err, &te) || te.Op != "a batch of statements" {
		t.Fatalf("got %v, want a *TimeoutError", err)
	}
	w.Release()

	// Answered in time: the error passes through and Release ends it.
	ctx, w = b.Unarmed(t.Context(), "a batch of statements")
	w.Arm()
	boom := errors.New("boom")
	if err := w.Explain(boom); err != boom {
		t.Errorf("got %v, want boom", err)
	}
	w.Release()
	if ctx.Err() == nil {
		t.Error("Release did not end the context")
	}
}
