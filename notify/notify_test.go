package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const testSecret = "hush"

// receiver is a webhook endpoint that records every attempt and the
// events it accepted. answer decides the status of an attempt (the
// attempt number per event id starts at 1); nil accepts all.
type receiver struct {
	t      *testing.T
	srv    *httptest.Server
	answer func(id string, attempt int) int
	block  chan struct{} // when set, every request waits for it to close
	got    chan string   // when set, gets each request's event id on arrival

	mu       sync.Mutex
	attempts map[string]int
	accepted []Event
	raw      []map[string]any
	problems []string
}

func newReceiver(t *testing.T, answer func(id string, attempt int) int) *receiver {
	r := &receiver{t: t, answer: answer, attempts: map[string]int{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	var e Event
	if err := json.Unmarshal(body, &e); err != nil {
		r.problem("body is not an event: %v", err)
	}
	if r.got != nil {
		r.got <- e.ID
	}
	if r.block != nil {
		select {
		case <-r.block:
		case <-req.Context().Done():
			return
		}
	}
	r.check(req, e, body)
	r.mu.Lock()
	r.attempts[e.ID]++
	n := r.attempts[e.ID]
	r.mu.Unlock()
	status := http.StatusNoContent
	if r.answer != nil {
		status = r.answer(e.ID, n)
	}
	if status < 300 {
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		r.mu.Lock()
		r.accepted = append(r.accepted, e)
		r.raw = append(r.raw, m)
		r.mu.Unlock()
	}
	w.WriteHeader(status)
}

// check verifies the headers and the signature, computed here from the
// documented rule rather than with Signature.
func (r *receiver) check(req *http.Request, e Event, body []byte) {
	if req.Method != http.MethodPost || req.Header.Get("Content-Type") != "application/json" {
		r.problem("%s with Content-Type %q", req.Method, req.Header.Get("Content-Type"))
	}
	if got := req.Header.Get("Idempotency-Key"); got != e.ID || got == "" {
		r.problem("Idempotency-Key %q, body id %q", got, e.ID)
	}
	if got := req.Header.Get("X-Decant-Event"); got != string(e.Kind) {
		r.problem("X-Decant-Event %q, kind %q", got, e.Kind)
	}
	ts := req.Header.Get("X-Decant-Timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || time.Since(time.Unix(sec, 0)) > time.Minute {
		r.problem("X-Decant-Timestamp %q is not a recent unix time", ts)
	}
	m := hmac.New(sha256.New, []byte(testSecret))
	m.Write([]byte(ts + "." + string(body)))
	want := "sha256=" + hex.EncodeToString(m.Sum(nil))
	if got := req.Header.Get("X-Decant-Signature"); !hmac.Equal([]byte(got), []byte(want)) {
		r.problem("X-Decant-Signature %q, want %q", got, want)
	}
}

func (r *receiver) problem(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.problems = append(r.problems, fmt.Sprintf(format, args...))
}

// result returns what the receiver accepted, failing on any problem.
func (r *receiver) result() []Event {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.problems {
		r.t.Error(p)
	}
	return append([]Event(nil), r.accepted...)
}

func (r *receiver) attemptsOf(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.attempts[id]
}

// fast is a configuration with short waits for tests.
func fast(targets ...Target) Config {
	return Config{
		Pipeline: "shop", Targets: targets, Secret: testSecret,
		RetryWaitMin: time.Millisecond, RetryWaitMax: 5 * time.Millisecond,
		EventTimeout: 5 * time.Second, AttemptTimeout: 2 * time.Second,
	}
}

func start(t *testing.T, cfg Config) *Notifier {
	t.Helper()
	n, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func closeWithin(t *testing.T, n *Notifier, d time.Duration) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	return n.Close(ctx)
}

// A receiver that fails the first two attempts of every event still gets
// each event exactly once, in seq order, signed; so does a second target
// with its own headers.
func TestRetriedEventsArriveOnceInOrder(t *testing.T) {
	failTwice := func(_ string, attempt int) int {
		if attempt <= 2 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	}
	a, b := newReceiver(t, failTwice), newReceiver(t, failTwice)
	n := start(t, fast(Target{URL: a.srv.URL}, Target{URL: b.srv.URL + "/hook", Headers: map[string]string{"Authorization": "Bearer x"}}))
	const events = 20
	for i := range events {
		n.PipelineStopped(fmt.Sprintf("failure %d", i), At{LSN: "0/16B3748", Xid: 738, Table: "public.items"})
	}
	if err := closeWithin(t, n, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]*receiver{"first": a, "second": b} {
		got := r.result()
		if len(got) != events {
			t.Fatalf("%s target accepted %d events, want %d", name, len(got), events)
		}
		seen := map[string]bool{}
		for i, e := range got {
			if e.Seq != uint64(i+1) || e.Message != fmt.Sprintf("failure %d", i) {
				t.Errorf("%s target: event %d is seq %d %q: out of order", name, i, e.Seq, e.Message)
			}
			if seen[e.ID] || len(e.ID) != 36 {
				t.Errorf("%s target: id %q repeated or not a UUID", name, e.ID)
			}
			seen[e.ID] = true
			if n := r.attemptsOf(e.ID); n != 3 {
				t.Errorf("%s target: event %d took %d attempts, want 3", name, e.Seq, n)
			}
		}
	}
	if s := n.Stats(); s.Delivered != 2*events || s.Failed != 0 || s.Dropped != 0 || s.QueueLength != 0 {
		t.Errorf("stats %+v", s)
	}
}

// The JSON keys are the documented ones; optional ones are left out when
// empty.
func TestEventJSON(t *testing.T) {
	r := newReceiver(t, nil)
	n := start(t, fast(Target{URL: r.srv.URL}))
	n.PipelineStopped("apply insert at xid 738", At{LSN: "0/16B3748", Xid: 738, Table: "public.items"})
	n.Cutover(true, "safe to switch")
	if err := closeWithin(t, n, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	r.result()
	want := []string{
		"id kind lsn message pipeline seq table time xid",
		"id kind message pipeline seq time",
	}
	for i, m := range r.raw {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		if got := strings.Join(slices.Sorted(slices.Values(keys)), " "); got != want[i] {
			t.Errorf("event %d keys: %s, want %s", i, got, want[i])
		}
	}
	if len(r.raw) != 2 || r.raw[0]["pipeline"] != "shop" || r.raw[0]["kind"] != "pipeline_stopped" || r.raw[1]["kind"] != "cutover_safe" {
		t.Errorf("events %v", r.raw)
	}
	if ts, _ := time.Parse(time.RFC3339Nano, fmt.Sprint(r.raw[0]["time"])); time.Since(ts) > time.Minute {
		t.Errorf("time %v", r.raw[0]["time"])
	}
}

// A receiver that does not answer does not block Send: the queue stays
// within its bound by dropping the oldest events, which are counted and
// logged once; what stayed queued is delivered in order afterwards.
func TestSlowReceiverDoesNotBlockSend(t *testing.T) {
	r := newReceiver(t, nil)
	r.block, r.got = make(chan struct{}), make(chan string, 100)
	var logs bytes.Buffer
	cfg := fast(Target{URL: r.srv.URL})
	cfg.QueueLength = 5
	cfg.EventTimeout = time.Minute
	cfg.AttemptTimeout = time.Minute
	cfg.Logger = slog.New(slog.NewTextHandler(&syncWriter{w: &logs}, nil))
	n := start(t, cfg)
	n.Send(Event{Kind: LagHigh, Message: "first"})
	<-r.got // the worker holds event 1 in a request that does not end
	began := time.Now()
	for i := 2; i <= 50; i++ {
		n.Send(Event{Kind: LagHigh, Message: strconv.Itoa(i)})
	}
	if took := time.Since(began); took > time.Second {
		t.Errorf("49 sends to a stuck receiver took %s", took)
	}
	if s := n.Stats(); s.QueueLength != 5 || s.Dropped != 44 || s.Delivered != 0 {
		t.Errorf("while stuck: %+v, want 5 queued, 44 dropped", s)
	}
	close(r.block)
	if err := closeWithin(t, n, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	for _, e := range r.result() {
		seqs = append(seqs, e.Seq)
	}
	if fmt.Sprint(seqs) != "[1 46 47 48 49 50]" {
		t.Errorf("delivered seqs %v, want 1 and the newest 5", seqs)
	}
	if lines := strings.Count(logs.String(), "webhook queue full"); lines != 1 {
		t.Errorf("%d log lines about the full queue, want 1:\n%s", lines, logs.String())
	}
	if s := n.Stats(); s.Delivered != 6 || s.Dropped != 44 || s.Failed != 0 {
		t.Errorf("after: %+v", s)
	}
}

// A receiver that is down costs each event its EventTimeout and no more;
// the failure is counted and logged without the URL's secrets.
func TestReceiverDown(t *testing.T) {
	down := httptest.NewServer(http.NotFoundHandler())
	host := down.Listener.Addr().String()
	down.Close()
	var logs bytes.Buffer
	cfg := fast(Target{URL: "http://user:s3cret@" + host + "/hooks/tok3n?key=k3y"})
	cfg.EventTimeout = 300 * time.Millisecond
	cfg.RetryMax = 1000
	cfg.Logger = slog.New(slog.NewTextHandler(&syncWriter{w: &logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	n := start(t, cfg)
	began := time.Now()
	n.Send(Event{Kind: SlotLost, Message: "one"})
	n.Send(Event{Kind: SlotLost, Message: "two"})
	if err := closeWithin(t, n, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	took := time.Since(began)
	if took < 550*time.Millisecond || took > 5*time.Second {
		t.Errorf("two events to a closed port took %s, want about 2 x 300ms", took)
	}
	if s := n.Stats(); s.Failed != 2 || s.Delivered != 0 || s.Dropped != 0 {
		t.Errorf("stats %+v", s)
	}
	out := logs.String()
	for _, secret := range []string{"s3cret", "tok3n", "k3y", "user"} {
		if strings.Contains(out, secret) {
			t.Errorf("the log shows %q:\n%s", secret, out)
		}
	}
	if strings.Count(out, "webhook event not delivered") != 2 || !strings.Contains(out, `webhook="webhook 1 (`+host+`)"`) || !strings.Contains(out, "webhook retry") {
		t.Errorf("log:\n%s", out)
	}
}

// A 4xx other than 408 and 429 is final; those two and 5xx are retried.
func TestWhichAnswersAreRetried(t *testing.T) {
	for _, c := range []struct {
		status    int
		retried   bool
		delivered bool
	}{
		{http.StatusBadRequest, false, false},
		{http.StatusUnauthorized, false, false},
		{http.StatusNotFound, false, false},
		{http.StatusUnprocessableEntity, false, false},
		{http.StatusRequestTimeout, true, true},
		{http.StatusTooManyRequests, true, true},
		{http.StatusInternalServerError, true, true},
		{http.StatusBadGateway, true, true},
		{http.StatusServiceUnavailable, true, true},
	} {
		t.Run(strconv.Itoa(c.status), func(t *testing.T) {
			r := newReceiver(t, func(_ string, attempt int) int {
				if attempt == 1 {
					return c.status
				}
				return http.StatusOK
			})
			n := start(t, fast(Target{URL: r.srv.URL}))
			n.Send(Event{Kind: Recovered, Message: "x"})
			if err := closeWithin(t, n, 10*time.Second); err != nil {
				t.Fatal(err)
			}
			got := r.result()
			attempts := 0
			r.mu.Lock()
			for _, a := range r.attempts {
				attempts += a
			}
			r.mu.Unlock()
			s := n.Stats()
			if wantAttempts := map[bool]int{false: 1, true: 2}[c.retried]; attempts != wantAttempts {
				t.Errorf("%d attempts, want %d", attempts, wantAttempts)
			}
			if c.delivered != (len(got) == 1 && s.Delivered == 1 && s.Failed == 0) || !c.delivered && s.Failed != 1 {
				t.Errorf("accepted %d, stats %+v", len(got), s)
			}
		})
	}
}

// A receiver answering with a redirect gets one attempt, the event
// fails, the log says where it pointed (without the query), and the host
// it pointed at receives nothing: no signed body, no token header, no GET.
func TestRedirectsAreNotFollowed(t *testing.T) {
	for _, status := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect, http.StatusFound, http.StatusSeeOther, http.StatusMovedPermanently} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			var elsewhere, attempts atomic.Int32
			other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { elsewhere.Add(1) }))
			defer other.Close()
			redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				attempts.Add(1)
				http.Redirect(w, req, other.URL+"/moved/hook?token=t0ken", status)
			}))
			defer redirect.Close()
			var logs bytes.Buffer
			cfg := fast(Target{URL: redirect.URL + "/hook", Headers: map[string]string{"Authorization": "Bearer b3arer"}})
			cfg.Logger = slog.New(slog.NewTextHandler(&syncWriter{w: &logs}, nil))
			n := start(t, cfg)
			n.Send(Event{Kind: Recovered, Message: "x"})
			if err := closeWithin(t, n, 10*time.Second); err != nil {
				t.Fatal(err)
			}
			if got := elsewhere.Load(); got != 0 {
				t.Errorf("the redirect was followed: the other host got %d requests", got)
			}
			if s := n.Stats(); s.Failed != 1 || s.Delivered != 0 || attempts.Load() != 1 {
				t.Errorf("stats %+v after %d attempts, want one failed attempt", s, attempts.Load())
			}
			out := logs.String()
			if want := fmt.Sprintf("redirected with HTTP status %d to %s/moved/hook,", status, other.URL); !strings.Contains(out, want) || strings.Contains(out, "t0ken") {
				t.Errorf("log, want %q and no query:\n%s", want, out)
			}
		})
	}
}

// RetryMax bounds the attempts of an event that keeps failing.
func TestRetryMax(t *testing.T) {
	r := newReceiver(t, func(string, int) int { return http.StatusServiceUnavailable })
	cfg := fast(Target{URL: r.srv.URL})
	cfg.RetryMax = 3
	n := start(t, cfg)
	n.Send(Event{Kind: CopyFinished, Message: "x"})
	if err := closeWithin(t, n, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	r.result()
	total := 0
	r.mu.Lock()
	for _, a := range r.attempts {
		total += a
	}
	r.mu.Unlock()
	if total != 4 || n.Stats().Failed != 1 {
		t.Errorf("%d attempts (want 1 + 3 retries), stats %+v", total, n.Stats())
	}
}

// Close gives up at its deadline: the event in flight fails, the queued
// ones are dropped, and it says so.
func TestCloseGivesUp(t *testing.T) {
	r := newReceiver(t, nil)
	r.block, r.got = make(chan struct{}), make(chan string, 10)
	defer close(r.block)
	cfg := fast(Target{URL: r.srv.URL})
	cfg.EventTimeout, cfg.AttemptTimeout = time.Minute, time.Minute
	n := start(t, cfg)
	for range 3 {
		n.Send(Event{Kind: LagOK, Message: "x"})
	}
	<-r.got
	began := time.Now()
	err := closeWithin(t, n, 200*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "2 queued events dropped") {
		t.Errorf("Close: %v", err)
	}
	if took := time.Since(began); took > 2*time.Second {
		t.Errorf("Close took %s past its 200ms", took)
	}
	if s := n.Stats(); s.Failed != 1 || s.Dropped != 2 || s.QueueLength != 0 {
		t.Errorf("stats %+v", s)
	}
	n.Send(Event{Kind: LagOK, Message: "after close"})
	if s := n.Stats(); s.Dropped != 3 {
		t.Errorf("send after close: %+v", s)
	}
}

// ObserveLag and ObserveSlot send one event per change, not one per
// reading.
func TestObserve(t *testing.T) {
	r := newReceiver(t, nil)
	cfg := fast(Target{URL: r.srv.URL})
	cfg.AlertLag = 5 * time.Minute
	n := start(t, cfg)
	for _, m := range []int{1, 6, 7, 2, 1, 8} {
		n.ObserveLag(time.Duration(m) * time.Minute)
	}
	for _, s := range []string{"reserved", "unreserved", "unreserved", "extended", "lost", "lost"} {
		n.ObserveSlot("shop", s)
	}
	if err := closeWithin(t, n, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range r.result() {
		k := string(e.Kind)
		if e.LagSeconds != nil {
			k += "@" + strconv.Itoa(int(*e.LagSeconds))
		}
		if e.WALStatus != "" {
			k += "@" + e.WALStatus
		}
		kinds = append(kinds, k)
	}
	if got := strings.Join(kinds, " "); got != "lag_high@360 lag_ok@120 lag_high@480 slot_unreserved@unreserved slot_lost@lost" {
		t.Errorf("events: %s", got)
	}
}

// A nil Notifier, and one without targets, do nothing and do not fail.
func TestNoWebhooks(t *testing.T) {
	var nilN *Notifier
	nilN.PipelineStopped("x", At{})
	nilN.ObserveLag(time.Hour)
	nilN.ObserveSlot("s", "lost")
	if err := nilN.Close(t.Context()); err != nil || nilN.Stats() != (Stats{}) {
		t.Errorf("nil notifier: %v", err)
	}
	n := start(t, Config{Pipeline: "p", AlertLag: time.Second})
	n.ObserveLag(time.Hour)
	n.Cutover(false, "x")
	if err := closeWithin(t, n, time.Second); err != nil || n.Stats() != (Stats{}) {
		t.Errorf("no targets: %v %+v", err, n.Stats())
	}
}

// Configuration errors name the webhook by number, never by its URL.
func TestValidate(t *testing.T) {
	for _, c := range []struct {
		target Target
		want   string
	}{
		{Target{URL: "ftp://u:s3cret@h/x"}, "webhook 1: the URL is not an absolute http:// or https:// URL"},
		{Target{URL: "hooks.example/s3cret"}, "webhook 1: the URL is not an absolute"},
		{Target{URL: "https://h/x", Headers: map[string]string{"Bad Name": "v"}}, "not a valid HTTP header name"},
		{Target{URL: "https://h/x", Headers: map[string]string{"X-Token": "a\r\nb"}}, "holds a line break"},
		{Target{URL: "https://h/x", Headers: map[string]string{"x-decant-signature": "v"}}, "is set by decant"},
		{Target{URL: "https://h/x", Headers: map[string]string{"idempotency-key": "v"}}, "is set by decant"},
	} {
		err := Config{Targets: []Target{c.target}}.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%+v: %v, want %s", c.target, err, c.want)
		}
	}
	if err := (Config{Targets: []Target{{URL: "https://h/x", Headers: map[string]string{"Authorization": "Bearer t"}}}}).Validate(); err != nil {
		t.Errorf("valid target: %v", err)
	}
}

func TestSanitize(t *testing.T) {
	for in, want := range map[string]string{
		"connect postgres://repl:s3cret@db.example:5432/shop: refused":      "connect postgres://repl:xxxxx@db.example:5432/shop: refused",
		"dsn mysql://apply:p%40ss@h:3306/db failed":                         "dsn mysql://apply:xxxxx@h:3306/db failed",
		"apply@tcp(h:3306)/db and apply:s3cret@tcp(h:3306)/db":              "apply@tcp(h:3306)/db and apply:xxxxx@tcp(h:3306)/db",
		"host=h user=u password=s3cret dbname=d":                            "host=h user=u password=xxxxx dbname=d",
		"host=h password='a b\\' c' dbname=d":                               "host=h password=xxxxx dbname=d",
		"https://h/x?token=abc&x=1 and PASSWORD = s3cret":                   "https://h/x?token=xxxxx and PASSWORD = xxxxx",
		"line one\nline\ttwo\r\n":                                           "line one line two  ",
		"postgres://repl@db.example/shop (no password) at xid 7 commit 0/1": "postgres://repl@db.example/shop (no password) at xid 7 commit 0/1",
	} {
		if got := Sanitize(in); got != want {
			t.Errorf("Sanitize(%q)\n = %q\nwant %q", in, got, want)
		}
	}
	long := Sanitize(strings.Repeat("é", 2000))
	if len(long) > maxMessage || !strings.HasSuffix(long, "…") || !strings.HasPrefix(long, "éé") || strings.ContainsRune(long, '\uFFFD') {
		t.Errorf("long message: %d bytes, ends %q", len(long), long[len(long)-8:])
	}
}

// Signature follows the documented rule.
func TestSignature(t *testing.T) {
	got := Signature([]byte("k"), "1700000000", []byte(`{"id":"x"}`))
	m := hmac.New(sha256.New, []byte("k"))
	m.Write([]byte(`1700000000.{"id":"x"}`))
	if want := "sha256=" + hex.EncodeToString(m.Sum(nil)); got != want {
		t.Errorf("%s, want %s", got, want)
	}
	if Signature([]byte("k"), "1700000001", []byte(`{"id":"x"}`)) == got {
		t.Error("the timestamp is not signed")
	}
}

// syncWriter lets the workers and the test share a log buffer.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// The wait doubles up to the maximum, with jitter in its upper half; a
// 429's Retry-After is kept.
func TestBackoff(t *testing.T) {
	spread := map[time.Duration]bool{}
	for attempt, full := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second} {
		for range 50 {
			d := jitteredBackoff(time.Second, 30*time.Second, attempt, nil)
			if d < full/2 || d > full {
				t.Fatalf("attempt %d: %s, want between %s and %s", attempt, d, full/2, full)
			}
			spread[d] = true
		}
	}
	if len(spread) < 100 {
		t.Errorf("only %d distinct waits in 350: no jitter", len(spread))
	}
	resp := &http.Response{StatusCode: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"7"}}}
	if d := jitteredBackoff(time.Second, 30*time.Second, 0, resp); d != 7*time.Second {
		t.Errorf("Retry-After 7: %s", d)
	}
}
