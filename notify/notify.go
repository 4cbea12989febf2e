// Package notify POSTs decant's events (the pipeline stopped, lag passed
// its alert threshold, the slot is at risk, a copy finished, cutover's
// verdict) as JSON to webhooks, in the background, through
// github.com/hashicorp/go-retryablehttp.
//
// Delivery is at least once per target: an event is retried with
// exponential backoff and jitter until the receiver answers 2xx, answers
// a 4xx other than 408 and 429 (its refusal is final), or the event's time
// (5 min by default) runs out; a receiver that got an event but whose
// answer was lost sees it again, with the same id and Idempotency-Key, so
// receivers dedupe by id. Each target has its own queue and one worker,
// so one target receives events in seq order and a slow target delays
// only itself. Send never blocks and never fails: a full queue drops its
// oldest event (the newest say what is true now: a pipeline_stopped must
// not be lost behind a burst of older lag events), counts it and logs
// it. Nothing here waits on the pipeline or slows it.
//
// With a secret, each request is signed: X-Decant-Timestamp is the unix
// time of the attempt in seconds, and X-Decant-Signature is
// "sha256=" + hex(HMAC-SHA256(secret, timestamp + "." + body)) over the
// exact bytes of the body, signed again on each retry with its own
// timestamp so that a receiver can refuse old (replayed) requests.
package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Target is one webhook: its URL and extra headers (an Authorization
// header, say). Neither is ever logged: a URL's path or query often holds
// a token, so logs name a target by its number and host only.
type Target struct {
	URL     string
	Headers map[string]string
}

// Config is the notifier's configuration. The zero values of the
// durations and counts mean the defaults below.
type Config struct {
	Pipeline string
	Targets  []Target
	// Secret, when set, signs every request (X-Decant-Signature).
	Secret string
	// QueueLength bounds the events waiting per target (default 1000).
	QueueLength int
	// EventTimeout bounds the time spent delivering one event to one
	// target, retries and waits included (default 5 min).
	EventTimeout time.Duration
	// AttemptTimeout bounds one HTTP request (default 30 s).
	AttemptTimeout time.Duration
	// RetryMax is how many times an event is retried at most (default 20;
	// EventTimeout usually ends the retries first).
	RetryMax int
	// RetryWaitMin and RetryWaitMax bound the wait between attempts, which
	// doubles from the first to the second, with jitter (default 1 s, 30 s).
	RetryWaitMin, RetryWaitMax time.Duration
	// AlertLag is the lag past which ObserveLag sends lag_high; 0 turns
	// lag events off.
	AlertLag time.Duration
	Logger   *slog.Logger
}

// The defaults of Config.
const (
	DefaultQueueLength    = 1000
	DefaultEventTimeout   = 5 * time.Minute
	DefaultAttemptTimeout = 30 * time.Second
	DefaultRetryMax       = 20
	DefaultRetryWaitMin   = time.Second
	DefaultRetryWaitMax   = 30 * time.Second
)

// Headers decant sets itself; a target may not set them.
var reservedHeaders = []string{"Content-Type", "Content-Length", "Host", "Idempotency-Key", "User-Agent"}

// Validate checks the configuration. Its errors name a target by its
// number, never by its URL.
func (c Config) Validate() error {
	for i, t := range c.Targets {
		if err := t.validate(); err != nil {
			return fmt.Errorf("webhook %d: %w", i+1, err)
		}
	}
	if c.QueueLength < 0 || c.RetryMax < 0 || c.EventTimeout < 0 || c.AttemptTimeout < 0 || c.AlertLag < 0 {
		return fmt.Errorf("webhooks: queue length, retries and durations cannot be negative")
	}
	if c.RetryWaitMax != 0 && c.RetryWaitMax < c.RetryWaitMin {
		return fmt.Errorf("webhooks: the longest wait between retries is shorter than the shortest")
	}
	return nil
}

func (t Target) validate() error {
	u, err := url.Parse(t.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("the URL is not an absolute http:// or https:// URL")
	}
	for name, value := range t.Headers {
		if name == "" || strings.ContainsAny(name, " \t\r\n:") {
			return fmt.Errorf("header name %q is not a valid HTTP header name", name)
		}
		if strings.ContainsAny(value, "\r\n") {
			return fmt.Errorf("header %s: the value holds a line break", name)
		}
		if isReserved(name) {
			return fmt.Errorf("header %s is set by decant; leave it out", name)
		}
	}
	return nil
}

func isReserved(name string) bool {
	for _, r := range reservedHeaders {
		if strings.EqualFold(name, r) {
			return true
		}
	}
	return strings.HasPrefix(strings.ToLower(name), "x-decant-")
}

// withDefaults fills the zero values.
func (c Config) withDefaults() Config {
	set := func(d *time.Duration, def time.Duration) {
		if *d == 0 {
			*d = def
		}
	}
	set(&c.EventTimeout, DefaultEventTimeout)
	set(&c.AttemptTimeout, DefaultAttemptTimeout)
	set(&c.RetryWaitMin, DefaultRetryWaitMin)
	set(&c.RetryWaitMax, max(DefaultRetryWaitMax, c.RetryWaitMin))
	if c.QueueLength == 0 {
		c.QueueLength = DefaultQueueLength
	}
	if c.RetryMax == 0 {
		c.RetryMax = DefaultRetryMax
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Notifier sends events to every target. Its methods are safe for
// concurrent use, and a nil *Notifier does nothing, so that code with
// webhooks switched off need not check.
type Notifier struct {
	cfg     Config
	log     *slog.Logger
	targets []*target
	cancel  context.CancelFunc

	mu     sync.Mutex // orders Send: seq and the queues' order agree
	seq    uint64
	closed bool

	counts counters

	alarm     sync.Mutex // ObserveLag's and ObserveSlot's state
	lagHigh   bool
	walStatus string
}

// counters are the totals over all targets; each event counts once per
// target.
type counters struct {
	delivered, dropped, failed atomic.Uint64
}

// Stats are the notifier's counters since New, for metrics.
type Stats struct {
	// Delivered, Dropped and Failed count (event, target) pairs: an event
	// sent to two targets counts twice. Dropped: a full queue, Send after
	// Close, or still queued when Close gave up. Failed: retries ran out,
	// the time ran out, or the receiver refused it with a 4xx.
	Delivered, Dropped, Failed uint64
	// QueueLength is the number of events waiting, over all targets (not
	// counting those being delivered).
	QueueLength int
}

// New starts one worker per target. They run until Close, or until ctx
// ends, which abandons what is queued; pass a context that outlives the
// pipeline so that its final event still goes out.
func New(ctx context.Context, cfg Config) (*Notifier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	ctx, cancel := context.WithCancel(ctx)
	n := &Notifier{cfg: cfg, log: cfg.Logger, cancel: cancel}
	for i, t := range cfg.Targets {
		n.targets = append(n.targets, newTarget(i+1, t, cfg, &n.counts))
	}
	for _, t := range n.targets {
		go t.run(ctx)
	}
	return n, nil
}

// Send queues e for every target and returns at once. It fills e's ID,
// Seq and Time, and Pipeline when empty, and cleans its Message with
// Sanitize.
func (n *Notifier) Send(e Event) {
	if n == nil || len(n.targets) == 0 {
		return
	}
	e.ID = newID()
	e.Time = time.Now().UTC()
	if e.Pipeline == "" {
		e.Pipeline = n.cfg.Pipeline
	}
	e.Message = Sanitize(e.Message)
	n.mu.Lock()
	n.seq++
	e.Seq = n.seq
	body, err := json.Marshal(e)
	if err != nil { // an Event always marshals; the seq gap shows it if not
		n.mu.Unlock()
		n.log.Error("webhook event not sent: cannot encode it", "kind", e.Kind, "seq", e.Seq, "error", err)
		return
	}
	type drop struct {
		t    *target
		lost Event
	}
	var drops []drop
	for _, t := range n.targets {
		if n.closed {
			n.counts.dropped.Add(1)
			continue
		}
		if lost, dropped, first := t.queue.push(queued{event: e, body: body}); dropped && first {
			drops = append(drops, drop{t, lost})
		}
	}
	n.mu.Unlock()
	for _, d := range drops {
		d.t.log.Warn("webhook queue full: dropping the oldest events until it has room again; decant_webhook_events_total{result=\"dropped\"} counts them",
			"queue_length", n.cfg.QueueLength, "id", d.lost.ID, "kind", d.lost.Kind, "seq", d.lost.Seq)
	}
}

// Close stops taking events and waits until every queue is delivered or
// ctx ends; then it abandons the rest, counts it as dropped, and says how
// many were not delivered.
func (n *Notifier) Close(ctx context.Context) error {
	if n == nil {
		return nil
	}
	n.mu.Lock()
	n.closed = true
	n.mu.Unlock()
	for _, t := range n.targets {
		t.queue.close()
	}
	drained := n.wait(ctx)
	n.cancel()
	if !drained {
		n.wait(context.WithoutCancel(ctx)) // the workers stop at once now
	}
	left := 0
	for _, t := range n.targets {
		left += t.queue.discard()
	}
	n.counts.dropped.Add(uint64(left))
	if !drained {
		return fmt.Errorf("webhooks: shut down before every event was delivered; %d queued events dropped", left)
	}
	return nil
}

// wait waits for every worker to end, or for ctx; it reports whether they
// all ended.
func (n *Notifier) wait(ctx context.Context) bool {
	for _, t := range n.targets {
		select {
		case <-t.done:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// Stats returns the counters.
func (n *Notifier) Stats() Stats {
	if n == nil {
		return Stats{}
	}
	s := Stats{Delivered: n.counts.delivered.Load(), Dropped: n.counts.dropped.Load(), Failed: n.counts.failed.Load()}
	for _, t := range n.targets {
		s.QueueLength += t.queue.len()
	}
	return s
}
