package source

import (
	"context"
	"fmt"
	"net"
	"time"
)

// Every connection decant opens, to a source or a target, goes through
// Dialer, and every round trip on an established one is bounded by a
// Bound: a peer that accepts TCP but stops answering is noticed, named in
// a transient error, and the pipeline resumes from the checkpoint on a new
// connection. These two live here, beside the vocabulary, because readers
// and writers of every dialect share them.

// keepAlive probes an idle connection after 15 s and gives it up after
// three unanswered probes 5 s apart: a peer whose host vanished (no RST,
// no FIN) is noticed in about 30 s instead of the kernel's two hours. It
// does not catch a peer whose kernel still acknowledges but whose server
// is hung; Bound does.
var keepAlive = net.KeepAliveConfig{Enable: true, Idle: 15 * time.Second, Interval: 5 * time.Second, Count: 3}

// Dialer returns the dialer for decant's connections: TCP keepalives
// with short intervals. Its DialContext fits pgconn.Config.DialFunc and
// the MySQL driver's Config.DialFunc.
func Dialer() *net.Dialer {
	return &net.Dialer{KeepAliveConfig: keepAlive}
}

// Bound is the time a peer has to answer one round trip (a statement, a
// COMMIT, a message on the replication stream). Timeout 0 means no bound.
type Bound struct {
	Peer    string // "source" or "target", for messages
	Setting string // what sets it, for messages: "--target-timeout"
	Timeout time.Duration
}

// Do runs one round trip f with a context that ends after b.Timeout. When
// that deadline ended it (and not the caller's ctx), the result is a
// *TimeoutError naming op, which wraps f's error; otherwise f's error.
func (b Bound) Do(ctx context.Context, op string, f func(context.Context) error) error {
	if b.Timeout <= 0 {
		return f(ctx)
	}
	expired := &TimeoutError{Peer: b.Peer, Op: op, Timeout: b.Timeout, Setting: b.Setting}
	rctx, cancel := context.WithTimeoutCause(ctx, b.Timeout, expired)
	defer cancel()
	err := f(rctx)
	if err == nil || ctx.Err() != nil || context.Cause(rctx) != error(expired) {
		return err
	}
	expired.Err = err
	return expired
}

// TimeoutError is a peer that did not answer within its bound. The
// connection it was waiting on is given up (drivers close a connection
// whose round trip is cancelled), so it is always worth a reconnect and a
// resume from the checkpoint.
type TimeoutError struct {
	Peer    string
	Op      string // what went unanswered: "COMMIT", "the replication stream"
	Timeout time.Duration
	Setting string
	Err     error // the abandoned round trip's own error, if any
}

func (e *TimeoutError) Error() string {
	msg := fmt.Sprintf("%s: no answer from the %s within %s, so decant gave up the connection (if the %s is busy rather than stalled, raise %s)",
		e.Op, e.Peer, e.Timeout, e.Peer, e.Setting)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *TimeoutError) Unwrap() error { return e.Err }

// Retryable marks the error transient for apply.Transient.
func (e *TimeoutError) Retryable() bool { return true }

// Watch bounds a sequence of round trips on one connection that share a
// deadline (setting up a replication stream): the returned context ends
// with a *TimeoutError b.Timeout after Watch unless Disarm comes first.
// Release ends the context; Explain names the expiry in the error of
// whatever it cut short.
func (b Bound) Watch(ctx context.Context, op string) (context.Context, *Watchdog) {
	wctx, w := b.Unarmed(ctx, op)
	w.Arm()
	return wctx, w
}

// Unarmed is Watch with the deadline not started: Arm starts it. It
// bounds a round trip whose request goes now and whose answer is read
// later, so that the time between (the caller's own work) does not count
// against the peer.
func (b Bound) Unarmed(ctx context.Context, op string) (context.Context, *Watchdog) {
	wctx, cancel := context.WithCancelCause(ctx)
	return wctx, &Watchdog{ctx: wctx, cancel: cancel, expired: &TimeoutError{Peer: b.Peer, Op: op, Timeout: b.Timeout, Setting: b.Setting}}
}

// Watchdog is the deadline Watch set.
type Watchdog struct {
	ctx     context.Context
	cancel  context.CancelCauseFunc
	timer   *time.Timer
	expired *TimeoutError
}

// Arm starts the deadline: the context ends with a *TimeoutError the
// bound's Timeout from now (never, with no Timeout).
func (w *Watchdog) Arm() {
	if w.expired.Timeout > 0 {
		w.timer = time.AfterFunc(w.expired.Timeout, func() { w.cancel(w.expired) })
	}
}

// Disarm lets the context live on without the deadline.
func (w *Watchdog) Disarm() {
	if w.timer != nil {
		w.timer.Stop()
	}
}

// Release disarms the deadline and ends the context.
func (w *Watchdog) Release() {
	w.Disarm()
	w.cancel(nil)
}

// Explain returns err, or a *TimeoutError wrapping it when the deadline
// ended the context.
func (w *Watchdog) Explain(err error) error {
	if err == nil || context.Cause(w.ctx) != error(w.expired) {
		return err
	}
	e := *w.expired
	e.Err = err
	return &e
}

// Silence is how long a stream that should talk at least every so often
// (a replication stream: data or keepalives) has said nothing. A reader
// asks the server for a keepalive once halfway through a silence, so a
// healthy idle server answers well before Limit; at Limit it gives the
// connection up. Limit 0 means no limit.
type Silence struct {
	Limit time.Duration
	since time.Time
	asked bool
}

// Heard starts a new silence at now.
func (s *Silence) Heard(now time.Time) { s.since, s.asked = now, false }

// Check says what to do after waiting until now without a message: ask
// for a keepalive (once per silence), or give up (expired).
func (s *Silence) Check(now time.Time) (ask, expired bool) {
	if s.Limit <= 0 {
		return false, false
	}
	d := now.Sub(s.since)
	switch {
	case d >= s.Limit:
		return false, true
	case d >= s.Limit/2 && !s.asked:
		s.asked = true
		return true, false
	}
	return false, false
}

// Err is the error of a silence that reached Limit: the replication
// stream went unanswered, a transient fault.
func (s *Silence) Err() error {
	return &TimeoutError{Peer: "source", Op: "the replication stream", Timeout: s.Limit, Setting: "--source-timeout"}
}
